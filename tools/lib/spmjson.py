"""normlab's sentencepiece JSON form of a SentencePiece BPE (docs/format.md), written from a trained
SentencePiece model (train_spm.py) and readable by the tests' references:

    {"type": "sentencepiece", "pieces": [["<unk>", 0.0], ["<s>", 0.0], ...], "unk_id": 0, "bos_id": 1,
     "eos_id": 2, "add_bos": true, "add_dummy_prefix": true, "byte_fallback": true}

Pieces in id order with their scores; "▁" (U+2581) stands for a space, as in SentencePiece; a byte
piece is "<0xXX>". The standard library only (from_model_proto imports sentencepiece itself).
"""
import json
import os
import tempfile


def from_model_proto(proto):
    """The JSON form (a dict) of a serialized SentencePiece ModelProto of a BPE with byte fallback."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    m = pb.ModelProto()
    m.ParseFromString(proto)
    if m.trainer_spec.model_type != pb.TrainerSpec.BPE:
        raise ValueError("not a BPE SentencePiece model (trainer_spec.model_type)")
    sp = spm.SentencePieceProcessor(model_proto=proto)
    return {
        "type": "sentencepiece",
        "pieces": [[sp.id_to_piece(i), float(sp.get_score(i))] for i in range(sp.get_piece_size())],
        "unk_id": sp.unk_id(),
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
        "add_bos": True,  # (llama.cpp's add_bos for a SentencePiece model: the .model does not say)
        "add_dummy_prefix": bool(m.normalizer_spec.add_dummy_prefix),
        "byte_fallback": bool(m.trainer_spec.byte_fallback),
    }


def dumps(form):
    """The JSON text: one piece a line, so that a diff of two tokenizers reads piece by piece."""
    head = {k: v for k, v in form.items() if k != "pieces"}
    lines = ",\n  ".join(json.dumps(p, ensure_ascii=False) for p in form["pieces"])
    rest = "".join(f',\n "{k}": {json.dumps(v)}' for k, v in head.items() if k != "type")
    return f'{{"type": {json.dumps(form["type"])},\n "pieces": [\n  {lines}\n ]{rest}\n}}\n'


def write_whole(path, data):
    """data (bytes) into path, whole or not at all (a temporary file renamed over it)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".spm-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def to_hf(form):
    """A Hugging Face tokenizer.json (Llama 2's form) of the same pieces, its merges made as HF's
    LlamaConverter makes them from a .model (SentencePieceExtractor): for each piece, every split into
    two pieces, in the order of the piece's score, best first (splits of one piece by their ids)."""
    pieces = [p for p, _ in form["pieces"]]
    vocab = {p: i for i, p in enumerate(pieces)}
    special = {form["unk_id"], form["bos_id"], form["eos_id"]} - {-1}
    merges = []
    for i, (p, score) in enumerate(form["pieces"]):
        if i in special or (p.startswith("<0x") and len(p) == 6):
            continue
        local = [(p[:k], p[k:]) for k in range(1, len(p)) if vocab.get(p[:k], 0) > 2 and vocab.get(p[k:], 0) > 2]
        merges += [(score, vocab[a], vocab[b], a, b) for a, b in local]
    merges.sort(key=lambda m: (-m[0], m[1], m[2]))
    bos = form["bos_id"] if form["add_bos"] and form["bos_id"] >= 0 else None
    return hf_llama(pieces, [f"{a} {b}" for _, _, _, a, b in merges], sorted(special), bos,
                    form["add_dummy_prefix"], form["unk_id"])


def hf_llama(pieces, merges, special=(0, 1, 2), bos=1, dummy_prefix=True, unk=0):
    """Llama 2's tokenizer.json, as Hugging Face's LlamaConverter writes it: pieces in id order, merges
    ("A B", rank order), the ids of the special added tokens, bos the id the template puts before the
    text (None: no post-processor), the Prepend("▁") normalizer when dummy_prefix."""
    added = [{"id": i, "content": pieces[i], "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i in special]
    normalizers = [{"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]
    if dummy_prefix:
        normalizers.insert(0, {"type": "Prepend", "prepend": "\u2581"})
    post = None
    if bos is not None:
        t = pieces[bos]
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": t, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": t, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": t, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {t: {"id": t, "ids": [bos], "tokens": [t]}}}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": normalizers}, "pre_tokenizer": None,
            "post_processor": post,
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
                {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": pieces[unk], "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                      "vocab": {p: i for i, p in enumerate(pieces)}, "merges": list(merges)}}


def to_model_proto(form):
    """A serialized sentencepiece ModelProto of the form (sentencepiece's own BPE encoder then runs
    on exactly these pieces and scores): no normalization but the dummy prefix and "▁" for spaces."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    m = pb.ModelProto()
    special = {form["unk_id"]: m.SentencePiece.UNKNOWN, form["bos_id"]: m.SentencePiece.CONTROL,
               form["eos_id"]: m.SentencePiece.CONTROL}
    for i, (text, score) in enumerate(form["pieces"]):
        kind = special.get(i, m.SentencePiece.BYTE if text.startswith("<0x") and len(text) == 6 else
                           m.SentencePiece.NORMAL)
        m.pieces.add(piece=text, score=score, type=kind)
    t = m.trainer_spec
    t.model_type, t.vocab_size, t.byte_fallback = pb.TrainerSpec.BPE, len(form["pieces"]), form["byte_fallback"]
    t.unk_id, t.bos_id, t.eos_id, t.pad_id = form["unk_id"], form["bos_id"], form["eos_id"], -1
    n = m.normalizer_spec
    n.name, n.add_dummy_prefix, n.remove_extra_whitespaces, n.escape_whitespaces = \
        "identity", form["add_dummy_prefix"], False, True
    return m.SerializeToString()
