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
