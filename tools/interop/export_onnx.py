#!/usr/bin/python3
"""Export a normlab model to ONNX (opset 17): the full-window forward pass, token ids (B, T) int64 ->
logits (B, T, V) float32, B and T dynamic (T at most block_size), for every norm type and placement
the engine runs: tools/lib/nlmodel.py's model (docs/forward.md), or nlmodel_llama.py's for arch llama
(RoPE's angles for positions 0..T-1, GQA as query groups broadcast over their KV head), traced. The model is first
loaded by the engine (normlab info), so only what normlab runs is exported; --out may not be the model
or lie inside it.
BatchNorm exports with its running statistics (the inference function; batch statistics are a
property of a call, not of the graph). The vocabulary (JSON list, token id = index; a BPE model's:
its whole tokenizer.json) and the config go into the model's metadata properties as normlab_vocab
and normlab_config.

    /usr/bin/python3 tools/interop/export_onnx.py weights/shakespeare-pre-ln --out pre-ln.onnx
    NODE_PATH=build/ort/node_modules node tools/interop/ort_logits.js pre-ln.onnx 1,2,3     # ONNX Runtime's logits

Needs python3-torch and python3-onnx (tools/install-deps.sh --python). Dimension letters: B batch,
T positions, D width, H heads, V vocabulary.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy", "torch", "onnx")

import torch  # noqa: E402

import nlformat  # noqa: E402
import nlmodel  # noqa: E402
import nltool  # noqa: E402

OPSET = 17
BPE_NAMES = {"bpe": "GPT-2's BPE", "sentencepiece": "a sentencepiece BPE"}  # normlab info's "tokenizer"


def export(model_path, out):
    import onnx  # python3-onnx

    config, vocab, tensors = nlformat.load_model(model_path)
    module = nlmodel.build(config, tensors)  # float32, eval mode: BatchNorm on its running statistics
    T = min(8, config["block_size"])
    dummy = torch.zeros(2, T, dtype=torch.long)
    d = os.path.dirname(os.path.abspath(out))
    with tempfile.TemporaryDirectory(dir=d) as tmp:
        raw = os.path.join(tmp, "raw.onnx")
        with torch.no_grad():
            torch.onnx.export(module, (dummy,), raw, input_names=["ids"], output_names=["logits"],
                              dynamic_axes={"ids": {0: "B", 1: "T"}, "logits": {0: "B", 1: "T"}},
                              opset_version=OPSET, do_constant_folding=True)
        m = onnx.load(raw)
        for key, value in (("normlab_vocab", json.dumps(vocab, ensure_ascii=False)),
                           ("normlab_config", json.dumps(config, sort_keys=True)),
                           ("normlab_source", os.path.basename(os.path.normpath(model_path)))):
            p = m.metadata_props.add()
            p.key, p.value = key, value
        m.producer_name = "normlab tools/interop/export_onnx.py"
        onnx.checker.check_model(m)
        nlformat.atomic_write(out, m.SerializeToString())
    return config, vocab


def main(argv):
    p = nltool.ArgumentParser(prog="export_onnx.py", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a normlab model directory or .json file, or a shipped model's name")
    p.add_argument("--out", required=True, help="the .onnx file to write (replaced whole)")
    a = p.parse_args(argv)
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise nltool.ToolError("needs python3-onnx (tools/install-deps.sh --python)")
    a.model = nltool.model_arg(a.model)  # a path, or a shipped model by name
    if not os.path.exists(a.model):
        raise nltool.ToolError(f"{a.model}: no such model")
    out = nltool.check_out(a.out, [a.model], want_dir=False)  # a symlink's target is replaced, the link kept
    info = nltool.check_model(a.model)  # the engine's rules: what it loads is what is exported
    if info.get("arch", "transformer") not in ("transformer", "llama"):
        raise nltool.ToolError(f"{a.model}: a recurrent model (lstm, gru); only transformers and llama are exported")
    torch.set_num_threads(1)
    with nltool.writing(a.out):
        config, vocab = export(a.model, out)
    print(f"wrote {a.out}: opset {OPSET}, {config['norm']}/{config.get('placement', 'pre')}, "
          f"{config['n_layer']} layers, " + (f"{len(vocab)} characters" if isinstance(vocab, list) else
                                              f"{BPE_NAMES.get(info.get('tokenizer'), 'a BPE')} "
                                              f"({config['vocab_size']} tokens)"),
          file=sys.stderr)


if __name__ == "__main__":
    nltool.run("export_onnx.py", main, sys.argv[1:])
