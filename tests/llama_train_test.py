#!/usr/bin/python3
"""tools/train/train.py --arch llama and tools/lib/spmbpe.py (normlab's sentencepiece tokenizer.json).

- The encoder on hand-made pieces and scores: the merge order by score, the leftmost of equal
  scores, byte fallback (and unk without it), the dummy prefix, no merge across a byte token, and
  refusals of bad files. Standard library only.
- The encoder against SentencePiece itself (python3-sentencepiece): a BPE of 512 pieces with byte
  fallback, trained by spm_train on 200,000 characters of the corpus's training split (identity
  normalisation, spaces kept as they are), must give SentencePiece's ids on the validation split as
  one document and on hard cases (leading and repeated spaces, newlines, digits, emoji, CJK,
  combining marks, a literal U+2581).
- Five tiny Llamas (2 layers, width 32, 4 query heads, 20 steps on tests/data/held_out.txt): grouped,
  one and as many KV heads; RMSNorm, LayerNorm and none; pre, post and peri; QK-norm; tied and
  untied. Each export has exactly docs/format.md's config keys and tensors, and `normlab logits`
  gives nlmodel's float64 forward of the same file within LOGIT_ATOL, on the trained weights and on
  the same weights made larger (logits that spread), so that the check has something to measure.
- A llama trained on a sentencepiece tokenizer.json: its ids are spmbpe's, the file is copied as it is.
- Bad inputs (n_kv_head not dividing n_head, an odd or fractional head width, a bad tokenizer file,
  options of another arch): one line, exit 1, nothing written.

    /usr/bin/python3 tests/llama_train_test.py [NORMLAB_BINARY]      (make test runs it)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "normlab"))
TRAIN = os.path.join(ROOT, "tools", "train", "train.py")
TEXT = os.path.join(ROOT, "tests", "data", "held_out.txt")
CORPUS = os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")
LOGIT_ATOL = 1e-4
sys.path.insert(0, os.path.join(ROOT, "tests"))
from tooltest import Checks  # noqa: E402
import spmbpe  # noqa: E402  (tools/lib, on the path through tooltest)

check = Checks("llama_train_test")
BYTES = [[f"<0x{b:02X}>", 0.0] for b in range(256)]


def spm_doc(more, **kw):
    """A sentencepiece document: <unk> <s> </s>, the 256 byte pieces, then more ([piece, score]); kw replace keys."""
    doc = {"type": "sentencepiece", "pieces": [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0]] + BYTES + more,
           "unk_id": 0, "bos_id": 1, "eos_id": 2, "add_bos": True, "add_dummy_prefix": True, "byte_fallback": True}
    doc.update(kw)
    return doc


def pieces_of(spm, text):
    return [spm.pieces[i] for i in spm.encode(text)]


def hand_made():
    S = spmbpe.SPACE
    base = [[S, -1.0], ["a", -1.0], ["b", -1.0], ["c", -1.0]]
    by_score = spmbpe.Spm(spm_doc(base + [["ab", -2.0], ["bc", -1.5]], add_dummy_prefix=False), "t")
    check(pieces_of(by_score, "abc") == ["a", "bc"], "spm_merges_the_highest_score_first", pieces_of(by_score, "abc"))
    tie = spmbpe.Spm(spm_doc(base + [["aa", -2.0]], add_dummy_prefix=False), "t")
    check(pieces_of(tie, "aaa") == ["aa", "a"], "spm_merges_the_leftmost_of_equal_scores", pieces_of(tie, "aaa"))
    deep = spmbpe.Spm(spm_doc(base + [["ab", -3.0], ["abab", -9.0], [S + "abab", -10.0]]), "t")
    check(pieces_of(deep, "abab") == [S + "abab"], "spm_merges_merged_pieces_again", pieces_of(deep, "abab"))
    prefix = spmbpe.Spm(spm_doc(base + [[S + "a", -2.0]]), "t")
    check(pieces_of(prefix, "a a") == [S + "a", S + "a"] and prefix.encode("") == [],
          "spm_adds_the_dummy_prefix_to_a_non_empty_text", pieces_of(prefix, "a a"))
    check(pieces_of(prefix, "aé\nb") == [S + "a", "<0xC3>", "<0xA9>", "<0x0A>", "b"],
          "spm_falls_back_to_utf8_bytes", pieces_of(prefix, "aé\nb"))
    across = spmbpe.Spm(spm_doc(base + [["ab", -2.0]], add_dummy_prefix=False), "t")
    check(pieces_of(across, "a\nb") == ["a", "<0x0A>", "b"], "spm_never_merges_across_a_byte_token")
    unk = spmbpe.Spm(spm_doc(base, byte_fallback=False, add_dummy_prefix=False), "t")
    check(unk.encode("aé") == [unk.id_of["a"], 0], "spm_without_byte_fallback_gives_unk", unk.encode("aé"))
    check(prefix.decode(prefix.encode("a aé\n")) == "a aé\n", "spm_decode_inverts_encode")
    bad = [("a byte piece missing", spm_doc(base)["pieces"][:10] + base, "<0x07> is missing"),
           ("a piece twice", spm_doc(base + [["a", -5.0]])["pieces"], "is also piece"),
           ("a piece without a score", spm_doc(base + [["ab"]])["pieces"], "not [non-empty string, score]")]
    for label, pieces, word in bad:
        try:
            spmbpe.Spm(spm_doc([], pieces=pieces), "t")
            check(False, f"spm_refuses {label}", "accepted")
        except spmbpe.SpmError as e:
            check(word in str(e), f"spm_refuses {label}", str(e))


def against_sentencepiece(tmp):
    if not check.unless_missing("sentencepiece", what="the encoder against SentencePiece", count=2):
        return
    if not os.path.exists(CORPUS):
        check.skip(2, [CORPUS], "the encoder against SentencePiece (no corpus)")
        return
    import sentencepiece as spm
    text = open(CORPUS, encoding="utf-8").read()
    cut = int(0.9 * len(text))
    part = os.path.join(tmp, "part.txt")
    with open(part, "w", encoding="utf-8") as f:
        f.write(text[:200000])
    spm.SentencePieceTrainer.train(input=part, model_prefix=os.path.join(tmp, "m"), model_type="bpe", vocab_size=512,
                                   byte_fallback=True, normalization_rule_name="identity",
                                   remove_extra_whitespaces=False, character_coverage=1.0, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(tmp, "m.model"))
    doc = spm_doc([], pieces=[[sp.id_to_piece(i), sp.get_score(i)] for i in range(sp.get_piece_size())],
                  unk_id=sp.unk_id(), bos_id=sp.bos_id(), eos_id=sp.eos_id())
    ours = spmbpe.Spm(doc, "spm_train's model")
    got, want = ours.encode(text[cut:]), sp.encode(text[cut:])
    check(got == want, f"spm_gives_sentencepiece_ids_on_the_validation_split ({len(want)} ids)",
          f"{len(got)} ids against {len(want)}")
    hard = ["  two leading", "runs   of    spaces ", "new\nlines\n\n", "digits 12345 67",
            "emoji \U0001F600\U0001F389 ok", "CJK \u6f22\u5b57\u304b\u306a", "combining e\u0301 a\u0308",
            "literal \u2581 mark", " ", "\n", "tab\there"]
    wrong = [h for h in hard if ours.encode(h) != sp.encode(h)]
    check(not wrong, f"spm_gives_sentencepiece_ids_on_{len(hard)}_hard_cases", repr(wrong[:2]))


def train(out, *args, data=TEXT):
    r = subprocess.run(["/usr/bin/python3", TRAIN, "--data", data, "--out", out, "--arch", "llama", "--n-layer", "2",
                        "--n-embd", "32", "--n-head", "4", "--block-size", "32", "--batch-size", "4", "--steps", "20",
                        "--eval-every", "10", "--eval-batches", "2", "--threads", "1", "--no-progress", *args],
                       capture_output=True, text=True, timeout=600)
    return r.returncode, r.stderr.strip()


def engine(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1])
    return r.stdout


CONFIG_KEYS = ["format", "arch", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd", "block_size", "n_inner",
               "norm", "placement", "norm_eps", "rope_theta", "tie_embeddings", "qk_norm", "attn_bias"]
VARIANTS = [  # (label, train.py options)
    ("GQA 4/2, RMSNorm, pre, tied (the default)", ["--n-kv-head", "2"]),
    ("MHA 4/4, RMSNorm, post, untied", ["--placement", "post", "--untied"]),
    ("GQA 4/2, RMSNorm, peri, QK-norm", ["--n-kv-head", "2", "--placement", "peri", "--qk-norm"]),
    ("MQA 4/1, LayerNorm, pre, QK-norm, untied, theta 500", ["--n-kv-head", "1", "--norm", "layernorm", "--qk-norm",
                                                             "--untied", "--rope-theta", "500"]),
    ("GQA 4/2, no norm, n_inner 40", ["--n-kv-head", "2", "--norm", "none", "--n-inner", "40"]),
]


def trained_models(tmp):
    import numpy as np
    import torch
    import nlformat
    import nlmodel
    rng = np.random.default_rng(7)
    prompt = "ROMEO: the king, thou art so"  # within the context of 32
    for k, (label, args) in enumerate(VARIANTS):
        out = os.path.join(tmp, f"llama{k}")
        rc, err = train(out, *args, "--lr", "1e-2")
        if rc != 0:
            check(False, f"{label}: trains", err.splitlines()[-1] if err else f"exit {rc}")
            continue
        config, vocab, tensors = nlformat.load_model(out)
        with open(os.path.join(out, "config.json")) as f:
            keys = list(json.load(f))
        want_tensors = nlformat.llama_tensor_shapes(config)
        check(keys == CONFIG_KEYS and config["format"]["version"] == 4 and config["attn_bias"] is False
              and {n: tuple(t.shape) for n, t in tensors.items()} == want_tensors and "wpe.weight" not in tensors,
              f"{label}: the export is docs/format.md's Llama layout", f"keys {keys}, tensors {sorted(tensors)}")
        big = os.path.join(tmp, f"llama{k}-big")
        larger = {n: (t * rng.uniform(0.5, 1.5, t.shape) if t.ndim == 1 else t * 6.0).astype(np.float32)
                  for n, t in tensors.items()}
        nlformat.write_model_dir(big, {c: v for c, v in config.items() if c != "format"}, vocab, larger)
        for what, model_dir in (("trained", out), ("made larger", big)):
            try:
                rows = engine("logits", "-m", model_dir, "-p", prompt).splitlines()
                got = np.array([json.loads(line) for line in rows])
                ids = json.loads(engine("tokenize", "-m", model_dir, "-p", prompt, "--json"))["ids"]
            except RuntimeError as e:
                check(False, f"{label}, {what}: normlab logits runs", str(e))
                continue
            model, _ = nlmodel.load(model_dir, dtype=torch.float64)
            with torch.no_grad():
                want = model(torch.tensor([ids]))[0].numpy()
            diff = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
            check(diff <= LOGIT_ATOL, f"{label}, {what}: normlab logits = nlmodel float64 (max |diff| {diff:.1e}, "
                  f"tolerance {LOGIT_ATOL:g}, logit std {want.std():.2f})",
                  f"shapes {got.shape} and {want.shape}" if got.shape != want.shape else "too far apart")


def with_sentencepiece(tmp):
    chars = sorted(set(open(TEXT, encoding="utf-8").read().replace(" ", spmbpe.SPACE)) - {"\n"})
    S = spmbpe.SPACE
    doc = spm_doc([[c, -1.0] for c in chars] + [[S + "t", -2.0], ["he", -3.0], [S + "the", -4.0], ["ou", -5.0]])
    path = os.path.join(tmp, "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    out = os.path.join(tmp, "spm-llama")
    rc, err = train(out, "--tokenizer", path, "--steps", "3")
    if rc != 0:
        check(False, "train.py --tokenizer takes a sentencepiece tokenizer.json", err)
        return
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(out, "train_log.json")) as f:
        log = json.load(f)
    spm = spmbpe.Spm(doc, path)
    text = open(TEXT, encoding="utf-8").read()
    n_train = int(0.9 * len(text))
    copied = open(os.path.join(out, "tokenizer.json"), encoding="utf-8").read() == open(path, encoding="utf-8").read()
    check(copied and cfg["vocab_size"] == len(doc["pieces"]) and log["train_tokens"] == len(spm.encode(text[:n_train]))
          and log["val_tokens"] == len(spm.encode(text[n_train:])) and log["tokenizer"].startswith("SentencePiece"),
          "train.py --tokenizer takes a sentencepiece tokenizer.json (each split one document)",
          str(log.get("tokenizer")))


def refusals(tmp):
    bad_tok = os.path.join(tmp, "bad-tokenizer.json")
    with open(bad_tok, "w") as f:
        json.dump(spm_doc([["a", -1.0]], pieces=BYTES[:3] + [["a", -1.0]], unk_id=0, bos_id=1, eos_id=2), f)
    cases = [("n_kv_head not dividing n_head", ["--n-kv-head", "3"], "--n-kv-head 3 does not divide --n-head 4"),
             ("an odd head width", ["--n-embd", "36"], "not a whole, even head width"),
             ("a fractional head width", ["--n-embd", "30"], "not a whole, even head width"),
             ("a sentencepiece file without its byte pieces", ["--tokenizer", bad_tok], "<0x03> is missing"),
             ("QK-norm without a norm", ["--norm", "none", "--qk-norm"], "--qk-norm needs a norm"),
             ("BatchNorm", ["--norm", "batchnorm"], "--arch llama takes --norm"),
             ("a rope_theta of 0", ["--rope-theta", "0"], "must be positive")]
    for k, (label, args, word) in enumerate(cases):
        out = os.path.join(tmp, f"refused{k}")
        rc, err = train(out, *args)
        check(rc == 1 and len(err.splitlines()) == 1 and word in err and not os.path.exists(out),
              f"train.py --arch llama refuses {label}: one line, exit 1, nothing written", f"exit {rc}: {err[-300:]}")
    out = os.path.join(tmp, "refused-arch")
    r = subprocess.run(["/usr/bin/python3", TRAIN, "--data", TEXT, "--out", out, "--n-kv-head", "2"],
                       capture_output=True, text=True, timeout=300)
    err = r.stderr.strip()
    check(r.returncode == 1 and err == "train.py: --n-kv-head is for --arch llama" and not os.path.exists(out),
          "train.py refuses a llama option on another arch", f"exit {r.returncode}: {err[-300:]}")


def main():
    hand_made()
    with tempfile.TemporaryDirectory(prefix="normlab-llama-train-") as tmp:
        against_sentencepiece(tmp)
        if check.unless_missing("torch", "numpy", what="the trained Llamas", count=3 * len(VARIANTS) + 9):
            trained_models(tmp)
            with_sentencepiece(tmp)
            refusals(tmp)
    sys.exit(check.summary())


if __name__ == "__main__":
    main()
