"""normlab's sentencepiece JSON form of a SentencePiece BPE (docs/format.md), written from a trained
SentencePiece model (train_spm.py) and readable by the tests' references:

    {"type": "sentencepiece", "pieces": [["<unk>", 0.0], ["<s>", 0.0], ...], "unk_id": 0, "bos_id": 1,
     "eos_id": 2, "add_bos": true, "add_dummy_prefix": true, "byte_fallback": true}

Pieces in id order with their scores; "▁" (U+2581) stands for a space, as in SentencePiece; a byte
piece is "<0xXX>". The standard library only (from_model_proto imports sentencepiece itself;
read_model_proto reads a .model's fields itself, for the importers).
"""
import json
import os
import struct
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


# sentencepiece_model.proto's field numbers, the ones read here (protobuf's wire format: each field a
# varint key, field << 3 | wire type; 0 a varint, 1 eight bytes, 2 a length and bytes, 5 four bytes).
MODEL_PIECES, MODEL_TRAINER, MODEL_NORMALIZER = 1, 2, 3  # ModelProto
PIECE_TEXT, PIECE_SCORE = 1, 2  # ModelProto.SentencePiece
TRAINER_TYPE, TRAINER_BYTE_FALLBACK, TRAINER_UNK, TRAINER_BOS, TRAINER_EOS = 3, 35, 40, 41, 42  # TrainerSpec
NORM_NAME, NORM_CHARSMAP, NORM_DUMMY_PREFIX, NORM_EXTRA_SPACES = 1, 2, 3, 4  # NormalizerSpec
MODEL_TYPES = {1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR"}


def _varint(data, at):
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a varint runs past the end")
        b = data[at]
        value |= (b & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if b < 0x80:
            return value, at


def _fields(data):
    """[(field, value)] of one protobuf message: varints as int (int32's negatives as 2**64 - n), eight
    and four bytes and lengths as bytes."""
    out, at = [], 0
    while at < len(data):
        key, at = _varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
        elif wire in (1, 5):
            value, at = data[at:at + (8 if wire == 1 else 4)], at + (8 if wire == 1 else 4)
        elif wire == 2:
            n, at = _varint(data, at)
            value, at = data[at:at + n], at + n
        else:
            raise ValueError(f"field {field} has wire type {wire}, which a ModelProto does not use")
        if field < 1 or at > len(data):
            raise ValueError("a field runs past the end" if at > len(data) else "a field numbered 0")
        out.append((field, value))
    return out


def _last(fields, number, default):
    found = [v for f, v in fields if f == number]
    return found[-1] if found else default


def _int32(v):
    return v - (1 << 64) if isinstance(v, int) and v >= 1 << 63 else v


def looks_like_model_proto(head):
    """Whether bytes begin as a serialized ModelProto does (its first piece: 0x0A, a length, 0x0A),
    as a llama2.c tokenizer.bin (an int32 max_token_length, then a float score) does not."""
    try:
        _, at = _varint(head, 1) if head[:1] == b"\x0a" else (None, None)
    except ValueError:
        return False
    return at is not None and head[at:at + 1] == b"\x0a"


def read_model_proto(data):
    """The JSON form (a dict) of a serialized SentencePiece ModelProto, read with the standard library
    (from_model_proto's result, without python3-sentencepiece). ValueError, in one line, for bytes
    that are not a ModelProto, a model that is not BPE, or a normalizer normlab does not run."""
    if not looks_like_model_proto(data[:16]):
        hint = " (Llama 3's tokenizer.model is tiktoken's: give its tokenizer.json)" if data[:1].isalnum() else ""
        raise ValueError(f"not a SentencePiece model (a serialized ModelProto starts with its first piece){hint}")
    try:
        top = _fields(data)
        pieces = []
        for f, v in top:
            if f == MODEL_PIECES:
                p = _fields(v)
                text = _last(p, PIECE_TEXT, b"").decode("utf-8")
                score = struct.unpack("<f", _last(p, PIECE_SCORE, bytes(4)))[0]
                pieces.append([text, float(score)])
        trainer = _fields(_last(top, MODEL_TRAINER, b""))
        norm = _fields(_last(top, MODEL_NORMALIZER, b""))
    except (ValueError, UnicodeDecodeError, struct.error) as e:
        raise ValueError(f"not a SentencePiece model ({e})")
    kind = _last(trainer, TRAINER_TYPE, 1)
    if kind != 2:
        raise ValueError(f"a SentencePiece {MODEL_TYPES.get(kind, kind)} model: normlab runs SentencePiece BPE only")
    name = _last(norm, NORM_NAME, b"").decode("utf-8", "replace")
    if _last(norm, NORM_CHARSMAP, b"") or name not in ("", "identity"):
        raise ValueError(f"normalizer {name!r}: normlab's SentencePiece tokenizer runs none (identity only)")
    if _last(norm, NORM_EXTRA_SPACES, 1):
        raise ValueError("remove_extra_whitespaces is set: normlab's SentencePiece tokenizer keeps every space")
    ids = {k: _int32(_last(trainer, f, d)) for k, f, d in (("unk_id", TRAINER_UNK, 0), ("bos_id", TRAINER_BOS, 1),
                                                           ("eos_id", TRAINER_EOS, 2))}
    return {"type": "sentencepiece", "pieces": pieces, **ids, "add_bos": True,
            "add_dummy_prefix": bool(_last(norm, NORM_DUMMY_PREFIX, 1)),
            "byte_fallback": bool(_last(trainer, TRAINER_BYTE_FALLBACK, 0))}


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
