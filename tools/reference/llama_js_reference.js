// llama_js_reference.js FILE — the ids of a UTF-8 text file by llama-tokenizer-js (npm; Llama 2's
// vocabulary and merges as data, its own BPE in JavaScript): a third reference tests/spm_test.sh
// checks the sentencepiece tokenizer against, beside Hugging Face's tokenizers and sentencepiece.
// The dummy prefix's space is added, no <s>. One JSON array on stdout. Needs
// tools/install-deps.sh --python (llama-tokenizer-js in build/llama). Exit 1 with one line on an error.
'use strict';
const fs = require('fs');
const path = require('path');

function fail(msg) {
    process.stderr.write(`llama_js_reference.js: ${msg}\n`);
    process.exit(1);
}

if (process.argv.length !== 3) fail('usage: node tools/reference/llama_js_reference.js FILE');
const js = path.join(__dirname, '..', '..', 'build', 'llama', 'node_modules', 'llama-tokenizer-js',
    'llama-tokenizer.js');
let text;
try {
    text = fs.readFileSync(process.argv[2], 'utf8');
} catch (e) {
    fail(`${e.code || e.message}`.split('\n')[0]);
}
import(js)
    .then((m) => process.stdout.write(JSON.stringify(m.default.encode(text, false, true)) + '\n'))
    .catch((e) => fail(e.code === 'ERR_MODULE_NOT_FOUND'
        ? 'needs llama-tokenizer-js (npm), which is not installed: run tools/install-deps.sh --python'
        : `${e.message}`.split('\n')[0]));
