// ort_bench.js — ONNX Runtime as a contestant in make bench (tools/bench/bench.py), on a graph from
// tools/interop/export_onnx.py:
//   NODE_PATH=build/ort/node_modules node tools/bench/ort_bench.js MODEL.onnx eval THREADS IDS_FILE BLOCK_SIZE
//   NODE_PATH=build/ort/node_modules node tools/bench/ort_bench.js MODEL.onnx decode THREADS IDS_FILE BLOCK_SIZE N
// IDS_FILE holds token ids, comma-separated. eval scores them with normlab's windows (the first
// BLOCK_SIZE inputs, then every BLOCK_SIZE/2 new ones with the context before them), 32 windows a
// call, as a user batching a text would; decode generates N tokens after the ids nanoGPT's way
// (each step recomputes the last BLOCK_SIZE positions; greedy). Prints one JSON object: the rate,
// the seconds, and for eval nats/char (to check it scores what normlab scores).
const fs = require('fs');
const ort = require('onnxruntime-node');

function windows(nInputs, T) {
    const out = [];
    const stride = Math.max(1, Math.floor(T / 2));
    let scored = 0;
    while (scored < nInputs) {
        const end = scored === 0 ? Math.min(nInputs, T) : Math.min(scored + stride, nInputs);
        out.push([Math.max(0, end - T), scored, end]);
        scored = end;
    }
    return out;
}

async function evalText(session, ids, T) {
    const wins = windows(ids.length - 1, T);
    let nll = 0;
    const t0 = process.hrtime.bigint();
    for (let g = 0; g < wins.length; g += 32) {
        const group = wins.slice(g, g + 32);
        const len = group[0][2] - group[0][0];
        const batch = new BigInt64Array(group.length * len);
        group.forEach(([s], b) => { for (let i = 0; i < len; i++) batch[b * len + i] = BigInt(ids[s + i]); });
        const { logits } = await session.run({ ids: new ort.Tensor('int64', batch, [group.length, len]) });
        const V = logits.dims[2];
        group.forEach(([s, first, end], b) => {
            for (let p = first; p < end; p++) {
                const row = logits.data.subarray((b * len + p - s) * V, (b * len + p - s + 1) * V);
                let max = -Infinity, sum = 0;
                for (const v of row) max = Math.max(max, v);
                for (const v of row) sum += Math.exp(v - max);
                nll += Math.log(sum) - (row[ids[p + 1]] - max);
            }
        });
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return { chars_s: (ids.length - 1) / seconds, seconds, nats_per_char: nll / (ids.length - 1) };
}

async function decode(session, ids, T, n) {
    const ctx = ids.slice();
    const t0 = process.hrtime.bigint();
    for (let step = 0; step < n; step++) {
        const win = ctx.slice(-T);
        const input = new ort.Tensor('int64', BigInt64Array.from(win.map(BigInt)), [1, win.length]);
        const { logits } = await session.run({ ids: input });
        const V = logits.dims[2];
        const last = logits.data.subarray((win.length - 1) * V, win.length * V);
        let best = 0;
        for (let v = 1; v < V; v++) if (last[v] > last[best]) best = v;
        ctx.push(best);
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return { tok_s: n / seconds, seconds };
}

async function main() {
    const [model, mode, threads, idsFile, blockSize, n] = process.argv.slice(2);
    const ids = fs.readFileSync(idsFile, 'utf8').trim().split(',').map(Number);
    const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    });
    const T = Number(blockSize);
    const r = mode === 'eval' ? await evalText(session, ids, T) : await decode(session, ids, T, Number(n));
    process.stdout.write(JSON.stringify(r) + '\n');
}

main().catch((e) => {
    process.stderr.write(`ort_bench.js: ${e.message}\n`);
    process.exit(1);
});
