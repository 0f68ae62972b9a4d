// ort_logits.js — ONNX Runtime's logits for token ids, to check tools/interop/export_onnx.py's graphs:
//   NODE_PATH=build/ort/node_modules node tools/interop/ort_logits.js MODEL.onnx IDS [IDS ...]
// IDS is one sequence, comma-separated; several sequences (of one length) run as one batch (B, T).
// Prints the logits of every position of every sequence, one JSON array per line (like normlab
// logits), sequences one after another. onnxruntime-node comes from tools/install-deps.sh --python.
let ort;
try {
    ort = require('onnxruntime-node');
} catch (e) {
    process.stderr.write('ort_logits.js: onnxruntime-node is not installed (tools/install-deps.sh --python puts it in ' +
                         'build/ort; run with NODE_PATH=build/ort/node_modules)\n');
    process.exit(1);
}

async function main() {
    const [model, ...seqs] = process.argv.slice(2);
    if (!model || seqs.length === 0) throw new Error('usage: ort_logits.js MODEL.onnx IDS [IDS ...]');
    const rows = seqs.map((s) => s.split(',').map((v) => BigInt(v)));
    const T = rows[0].length;
    if (rows.some((r) => r.length !== T)) throw new Error('every sequence needs the same length');
    const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
    const ids = new ort.Tensor('int64', BigInt64Array.from(rows.flat()), [rows.length, T]);
    const { logits } = await session.run({ ids });
    const V = logits.dims[2];
    const out = [];
    for (let r = 0; r < rows.length * T; r++) out.push(JSON.stringify(Array.from(logits.data.slice(r * V, (r + 1) * V))));
    process.stdout.write(out.join('\n') + '\n');
}

main().catch((e) => {
    process.stderr.write(`ort_logits.js: ${e.message}\n`);
    process.exit(1);
});
