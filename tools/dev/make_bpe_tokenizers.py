#!/usr/bin/python3
"""Writes the byte-level BPE tokenizer.json of each open family the engine reads, over a vocabulary
and merges it is given, so that no test needs a download.

    /usr/bin/python3 tools/dev/make_bpe_tokenizers.py TOKENIZER_JSON --out DIR

TOKENIZER_JSON is GPT-2's form (tools/interop/gpt2_vocab.py --hf writes it from tiktoken's ranks:
r50k_base for GPT-2's 50,257 tokens, cl100k_base for cl100k's 100,257). DIR/FAMILY/tokenizer.json
gets its vocabulary and merges with the normalizer, pre-tokenizer, model flags and added tokens laid
out as that family's Hugging Face files lay them out:

  qwen2    NFC; Split(Qwen 2's pattern, Isolated) then ByteLevel without its regex; "<|endoftext|>",
           "<|im_start|>", "<|im_end|>" special and "<think>", "</think>" not, past the vocabulary
  llama3   Split(cl100k's pattern) then ByteLevel; ignore_merges; "<|begin_of_text|>",
           "<|end_of_text|>", "<|eot_id|>" special, past the vocabulary
  olmo2    Split(cl100k's pattern) then ByteLevel; "<|endoftext|>" and "<|pad|>" special and
           "|||IP_ADDRESS|||" not, past the vocabulary
  smollm2  Digits(individual_digits) then ByteLevel; "<|endoftext|>" (the vocabulary's) and
           "<|im_start|>", "<|im_end|>" special
  neox     NFC; ByteLevel (GPT-NeoX, Pythia); "<|endoftext|>" (the vocabulary's), "<|padding|>" special
           and the runs of 2 to 24 spaces not (normalized), past the vocabulary

The vocabulary's own "<|endoftext|>" is dropped where the family adds its special tokens past it.
Standard library only; each file is written whole (a temporary file renamed into place)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nltool  # noqa: E402

QWEN2 = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
         "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
CL100K = QWEN2.replace("\\p{N}|", "\\p{N}{1,3}|")
EOT = "<|endoftext|>"


def split_then_bytes(pattern):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
FAMILIES = {
    # name: (normalizer, pre_tokenizer, ignore_merges, [(content, special)] past the vocabulary, keep EOT)
    "qwen2": ({"type": "NFC"}, split_then_bytes(QWEN2), False,
              [(EOT, True), ("<|im_start|>", True), ("<|im_end|>", True), ("<think>", False), ("</think>", False)],
              False),
    "llama3": (None, split_then_bytes(CL100K), True,
               [("<|begin_of_text|>", True), ("<|end_of_text|>", True), ("<|eot_id|>", True)], False),
    "olmo2": (None, split_then_bytes(CL100K), False,
              [(EOT, True), ("<|pad|>", True), ("|||IP_ADDRESS|||", False)], False),
    "smollm2": (None, {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                             BYTE_LEVEL]}, False,
                [("<|im_start|>", True), ("<|im_end|>", True)], True),
    "neox": ({"type": "NFC"}, dict(BYTE_LEVEL), False,
             [("<|padding|>", True)] + [(" " * k, False) for k in range(24, 1, -1)], True),
}


def family_tokenizer(base, family):
    normalizer, pre, ignore_merges, extra, keep_eot = FAMILIES[family]
    model = dict(base["model"])
    vocab = dict(model["vocab"])
    added = []
    if EOT in vocab:
        eot_id = vocab[EOT]
        if keep_eot:
            added.append((EOT, True, eot_id))
        else:
            del vocab[EOT]
            vocab = {t: i - (i > eot_id) for t, i in vocab.items()}
    model.update(vocab=vocab, ignore_merges=ignore_merges)
    added += [(content, special, len(vocab) + k) for k, (content, special) in enumerate(extra)]
    tokens = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
               "normalized": not s, "special": s} for c, s, i in added]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": tokens, "normalizer": normalizer,
            "pre_tokenizer": pre, "post_processor": None, "decoder": dict(BYTE_LEVEL), "model": model}


def main(argv):
    p = nltool.ArgumentParser(prog="make_bpe_tokenizers.py", description=__doc__.split("\n\n")[0])
    p.add_argument("tokenizer_json")
    p.add_argument("--out", required=True, help="the folder for FAMILY/tokenizer.json (made if new)")
    a = p.parse_args(argv)
    try:
        with open(a.tokenizer_json, encoding="utf-8") as f:
            base = json.load(f)
        if not isinstance(base.get("model", {}).get("vocab"), dict) or base["model"].get("type") != "BPE":
            raise ValueError("not a BPE tokenizer.json with a vocabulary")
    except (OSError, ValueError, AttributeError) as e:
        raise nltool.ToolError(f"{a.tokenizer_json}: {getattr(e, 'strerror', None) or e}")
    with nltool.writing(a.out):
        for family in FAMILIES:
            folder = os.path.join(a.out, family)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "tokenizer.json")
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(family_tokenizer(base, family), f, ensure_ascii=False)
            os.replace(path + ".tmp", path)
    print(f"make_bpe_tokenizers.py: wrote {', '.join(FAMILIES)} under {a.out}")


if __name__ == "__main__":
    nltool.run("make_bpe_tokenizers.py", main, sys.argv[1:])
