#!/usr/bin/python3
"""Write the fuzzers' seed corpora into tests/fuzz/corpus/<harness>/ from the fixtures and the
shipped models' small files (configs, tokenizers), plus small safetensors files converted from the
fixtures (one with an unaligned data section) and a few prompts of our own.

    /usr/bin/python3 tools/dev/make_fuzz_seeds.py
"""
import glob
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/dev
import needs  # noqa: E402

needs.packages("numpy")

import gpt2bpe  # noqa: E402
import nlformat  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
PROMPTS = ["ROMEO:\n", "", "é€你😀", "abc\n\n", "A b c. d? e!", b"\xc3\x28 invalid",
           "KING:\nNow speak, good friend."]


def small_bpe():
    """A Hugging Face byte-level BPE tokenizer.json of GPT-2's form: the 256 bytes, a few merges, <|endoftext|>."""
    alphabet = gpt2bpe.byte_alphabet()
    vocab = {alphabet[b]: i for i, b in enumerate(sorted(alphabet))}
    merges = ["\u0120 t", "h e", "\u0120t he", "i n", "in g", "\u0120 a"]
    for m in merges:
        vocab[m.replace(" ", "")] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {"version": "1.0", "added_tokens": [{"id": len(vocab) - 1, "content": "<|endoftext|>", "special": True}],
            "normalizer": None, "pre_tokenizer": level, "decoder": level,
            "model": {"type": "BPE", "vocab": vocab, "merges": merges}}


def small_spm():
    """A SentencePiece BPE in normlab's form and in Hugging Face's (Llama 2's): <unk> <s> </s>, the 256
    byte pieces, "▁" and a few characters, and the merges they make (scores by rank)."""
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    merges = [("\u2581", "t"), ("h", "e"), ("\u2581t", "he"), ("i", "n"), ("in", "g"), ("\u2581", "a")]
    made = [a + b for a, b in merges]
    chars = ["\u2581", "t", "h", "e", "i", "n", "g", "a", "\u00e9", "\u4f60"]
    scores = [0.0] * len(pieces) + [-float(r) for r in range(len(made) + len(chars))]
    pieces += made + chars
    ours = {"type": "sentencepiece", "pieces": [[p, s] for p, s in zip(pieces, scores)], "unk_id": 0, "bos_id": 1,
            "eos_id": 2, "add_bos": True, "add_dummy_prefix": True, "byte_fallback": True}
    added = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, c in enumerate(pieces[:3])]
    hf = {"version": "1.0", "added_tokens": added,
          "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                             {"type": "Replace", "pattern": {"String": " "},
                                                              "content": "\u2581"}]},
          "pre_tokenizer": None,
          "post_processor": {"type": "TemplateProcessing", "single": [
              {"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
              "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
          "decoder": {"type": "Sequence", "decoders": [
              {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
              {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
          "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                    "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                    "vocab": {p: i for i, p in enumerate(pieces)}, "merges": [f"{a} {b}" for a, b in merges]}}
    return ours, hf


def gguf_seeds():
    """Small GGUF files of tiny random Llamas (tools/dev/make_gguf.py): Q4_0 untied, F16 tied with one
    KV head, Q8_0 with head_dim over D / H."""
    import tempfile

    import ggufwrite
    import make_gguf
    import make_llama_snapshot
    shape = dict(dim=32, hidden=32, layers=1, heads=2, kv_heads=2, seq_len=16)
    for name, kind, extra in (("q4_0", "Q4_0", {}), ("f16-tied-mqa", "F16", dict(tied=True, kv_heads=1)),
                              ("q8_0-head-dim", "Q8_0", dict(head_dim=32))):
        with tempfile.TemporaryDirectory() as tmp:
            make_llama_snapshot.make(os.path.join(tmp, "s"), seed=1, **{**shape, **extra})
            data = ggufwrite.gguf_bytes(*make_gguf.convert(os.path.join(tmp, "s"), kind))
        with open(os.path.join(OUT, "gguf", name + ".gguf"), "wb") as f:
            f.write(data)


def main():
    for h in ("safetensors", "config", "tokenizer", "inline", "prompt", "gguf"):
        shutil.rmtree(os.path.join(OUT, h), ignore_errors=True)
        os.makedirs(os.path.join(OUT, h))
    fixtures = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.json")))
    for path in fixtures:
        name = os.path.splitext(os.path.basename(path))[0]
        config, vocab, tensors = nlformat.load_model(path)
        with open(os.path.join(OUT, "config", name + ".json"), "w") as f:
            json.dump(config, f)
        with open(os.path.join(OUT, "tokenizer", name + ".json"), "w", encoding="utf-8") as f:
            json.dump({"type": "char", "vocab": vocab}, f, ensure_ascii=False)
        if name in ("ln-pre-bias", "rms-post-nobias", "utf8", "bn-pre-bias", "ln-peri-bias", "deepnorm", "nonorm",
                    "lstm-ln", "gru-none"):
            shutil.copy(path, os.path.join(OUT, "inline", name + ".json"))
            st = os.path.join(OUT, "safetensors", name + ".safetensors")
            nlformat.write_safetensors(st, tensors, {"source": "tests/fixtures/" + name + ".json"})
    # an unaligned data section: one extra byte of header padding
    src = os.path.join(OUT, "safetensors", "ln-pre-bias.safetensors")
    data = open(src, "rb").read()
    n = int.from_bytes(data[:8], "little")
    with open(os.path.join(OUT, "safetensors", "unaligned.safetensors"), "wb") as f:
        f.write((n + 1).to_bytes(8, "little") + data[8:8 + n] + b" " + data[8 + n:])
    for model in sorted(glob.glob(os.path.join(ROOT, "weights", "*", "config.json"))):
        name = os.path.basename(os.path.dirname(model))
        shutil.copy(model, os.path.join(OUT, "config", name + ".json"))
        with open(os.path.join(os.path.dirname(model), "tokenizer.json"), encoding="utf-8") as f:
            if json.load(f).get("type") != "char":
                continue  # GPT-2's 1.8 MB tokenizer.json: the small BPE seed below stands for it
        shutil.copy(os.path.join(os.path.dirname(model), "tokenizer.json"),
                    os.path.join(OUT, "tokenizer", name + ".json"))
    # config.json's own block recipes (format version 5): pre spelled as steps, and sub's inner norms
    # with DyT and no final norm, so the fuzzer starts from the grammar's every step kind
    base = {"format": {"name": "normlab", "version": 5}, "vocab_size": 11, "n_layer": 2, "n_head": 3, "n_embd": 12,
            "block_size": 9, "n_inner": 20, "norm": "layernorm", "norm_eps": 1e-05, "activation": "gelu",
            "bias": True, "tie_embeddings": True}
    blocks = {"block-pre": (["norm ln_1 x h", "attn h a", "add a", "norm ln_2 x g", "mlp g m", "add m"], {}),
              "block-sub-dyt": (["norm ln_1 x h", "attn h a ln_1_sub", "add a scaled", "mlp x m ln_2_sub",
                                 "add m", "norm ln_2 x x"], {"norm": "dyt", "final_norm": False,
                                                              "residual_scale": 1.5})}
    for name, (steps, extra) in blocks.items():
        with open(os.path.join(OUT, "config", name + ".json"), "w") as f:
            json.dump(dict(base, block=steps, **extra), f)
    with open(os.path.join(OUT, "tokenizer", "bpe-small.json"), "w", encoding="utf-8") as f:
        json.dump(small_bpe(), f, ensure_ascii=False)
    for name, form in zip(("spm-small", "spm-small-hf"), small_spm()):
        with open(os.path.join(OUT, "tokenizer", name + ".json"), "w", encoding="utf-8") as f:
            json.dump(form, f, ensure_ascii=False)
    for i, p in enumerate(PROMPTS):
        with open(os.path.join(OUT, "prompt", f"prompt{i}.txt"), "wb") as f:
            f.write(p.encode("utf-8", "surrogateescape") if isinstance(p, str) else p)
    gguf_seeds()
    print(f"wrote seed corpora to {os.path.relpath(OUT, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: make_fuzz_seeds.py (takes no arguments; rewrites its files deterministically)")
    main()
