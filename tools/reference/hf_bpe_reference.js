// hf_bpe_reference.js TOKENIZER_JSON FILE — the ids of a UTF-8 text file by Hugging Face's own
// tokenizers (npm; its Rust library, whose binary ships in the package), reading a tokenizer.json:
// the second independent reference tests/bpe_test.sh checks the C tokenizer against. Added tokens
// ("<|endoftext|>") are special here, as the library always has them; no special tokens are added
// around the text. One JSON array on stdout. Needs tools/install-deps.sh --python (tokenizers in
// build/hf). Exit 1 with one line on an error.
'use strict';
const fs = require('fs');
const path = require('path');

function fail(msg) {
    process.stderr.write(`hf_bpe_reference.js: ${msg}\n`);
    process.exit(1);
}

if (process.argv.length !== 4) fail('usage: node tools/reference/hf_bpe_reference.js TOKENIZER_JSON FILE');
let Tokenizer;
try {
    ({Tokenizer} = require(path.join(__dirname, '..', '..', 'build', 'hf', 'node_modules', 'tokenizers')));
} catch (e) {
    fail('needs tokenizers (npm), which is not installed: run tools/install-deps.sh --python');
}
let tok, text;
try {
    tok = Tokenizer.fromFile(process.argv[2]);
    text = fs.readFileSync(process.argv[3], 'utf8');
} catch (e) {
    fail(`${e.code || e.message}`.split('\n')[0]);
}
tok.encode(text, null, {addSpecialTokens: false})
    .then((e) => process.stdout.write(JSON.stringify(Array.from(e.getIds())) + '\n'))
    .catch((e) => fail(`${e.message}`.split('\n')[0]));
