// bpe_reference.js FILE — GPT-2's BPE ids of a UTF-8 text file, by gpt-tokenizer (its r50k_base
// ranks: GPT-2's), as one JSON array on stdout: the independent reference tests/bpe_test.sh checks
// the C tokenizer against. "<|endoftext|>" is plain text, as in GPT-2's encoder. Needs
// tools/install-deps.sh --python (gpt-tokenizer in build/npm). Exit 1 with one line on an error.
'use strict';
const fs = require('fs');
const path = require('path');

function fail(msg) {
    process.stderr.write(`bpe_reference.js: ${msg}\n`);
    process.exit(1);
}

if (process.argv.length !== 3) fail('usage: node tools/reference/bpe_reference.js FILE');
const modules = path.join(__dirname, '..', '..', 'build', 'npm', 'node_modules');
let r50k;
try {
    r50k = require(path.join(modules, 'gpt-tokenizer', 'cjs', 'encoding', 'r50k_base'));
} catch (e) {
    fail('needs gpt-tokenizer, which is not installed: run tools/install-deps.sh --python');
}
let text;
try {
    text = fs.readFileSync(process.argv[2], 'utf8');
} catch (e) {
    fail(`${process.argv[2]}: ${e.code || e.message}`);
}
process.stdout.write(JSON.stringify(r50k.encode(text, {disallowedSpecial: new Set()})) + '\n');
