#!/usr/bin/python3
"""Train shakespeare-llama's tokenizer: a SentencePiece BPE of 512 pieces with byte fallback, by
Debian's python3-sentencepiece, on the training split (the first 90% of the corpus's characters, as
tools/train/split.py and train.py cut it), written in normlab's sentencepiece JSON form
(docs/format.md).

    /usr/bin/python3 tools/train/train_spm.py ../shared/data/tinyshakespeare.txt \
        weights/shakespeare-llama/tokenizer.json [--model build/spm/shakespeare.model]

The trainer's options are fixed (TRAINER below) and it runs on one thread, so the same corpus gives
the same file byte for byte. --model also writes the trainer's own .model, for the references
(tests/spm_test.sh). The corpus text itself is never written.
"""
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import needs  # noqa: E402
import nltool  # noqa: E402
import spmjson  # noqa: E402

# As Llama 2's tokenizer was trained (its .model's trainer_spec), at 512 pieces: BPE, byte fallback,
# digits split, no normalization (identity: no NFKC, extra spaces kept), a dummy "▁" prefix;
# <unk> <s> </s> are ids 0 1 2, no <pad>. One thread and no sampling or shuffling of the lines
# keep it deterministic.
TRAINER = dict(
    model_type="bpe",
    vocab_size=512,
    byte_fallback=True,
    character_coverage=1.0,
    split_digits=True,
    allow_whitespace_only_pieces=True,
    normalization_rule_name="identity",
    remove_extra_whitespaces=False,
    add_dummy_prefix=True,
    unk_id=0,
    bos_id=1,
    eos_id=2,
    pad_id=-1,
    num_threads=1,
    input_sentence_size=0,
    shuffle_input_sentence=False,
    max_sentence_length=1 << 16,
    minloglevel=2,
)


def train(text):
    """The trained model's serialized proto, from the lines of text (a sentence each, as the
    trainer reads a file: a newline is never inside a piece)."""
    import sentencepiece as spm

    lines = [line for line in text.split("\n") if line]
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, **TRAINER)
    return out.getvalue()


def main(argv):
    a = nltool.ArgumentParser(prog="train_spm.py", description=__doc__.split("\n\n")[0])
    a.add_argument("corpus")
    a.add_argument("out", help="the tokenizer.json to write")
    a.add_argument("--model", help="also write the trainer's .model here")
    args = a.parse_args(argv)
    needs.packages("sentencepiece")
    real = nltool.check_out(args.out, [args.corpus], want_dir=False)
    try:
        with open(args.corpus, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise nltool.ToolError(f"{args.corpus}: not UTF-8 text (byte {e.start})")
    proto = train(text[: int(0.9 * len(text))])
    if args.model:
        spmjson.write_whole(nltool.check_out(args.model, [args.corpus], want_dir=False), proto)
    form = spmjson.from_model_proto(proto)
    # train.py encodes each split as one document without a BOS, so the model never sees one: its
    # tokenizer adds none (eval and generate then feed the text as training did).
    form["add_bos"] = False
    spmjson.write_whole(real, spmjson.dumps(form).encode("utf-8"))
    print(f"{args.out}: {TRAINER['vocab_size']} pieces", file=sys.stderr)


if __name__ == "__main__":
    nltool.run("train_spm.py", main, sys.argv[1:])
