#!/usr/bin/python3
"""Convert a Hugging Face snapshot folder into a normlab model directory, by the architecture its
config.json names (`architectures`, else `model_type`):

    /usr/bin/python3 tools/interop/import_hf.py SNAPSHOT --out DIR [--dtype stored|f32|f16|bf16] [--ctx N]

GPT2LMHeadModel and GPT2Model go to tools/interop/import_hf_gpt2.py (arch gpt2, docs/gpt2.md; no
--ctx: GPT-2's context is its learned position table). Every other family is one file of
tools/interop/families/ (its config parser, its tensor layout, its summary) and one row of FAMILIES
below; each becomes arch llama (docs/format.md) on the engine's recipes (docs/families.md), through
tools/interop/hf_decoder.py. The families and their summaries are listed at the end of --help.

SNAPSHOT holds config.json; model.safetensors or shards named by model.safetensors.index.json, else
pytorch_model.bin or its shards (read by tools/lib/torchzip.py: nothing in the pickle runs), in F32,
F16 or BF16; and tokenizer.json (copied as it is), else a SentencePiece tokenizer.model (written in
normlab's sentencepiece form, tools/lib/spmjson.py). The weight matrices keep their stored type (F16,
BF16; F64 or parts of mixed types become F32) unless --dtype names one; norm gains and biases are
F32. The context is max_position_embeddings capped at --ctx (default 65536, the engine's limit).
Tensor names come with or without the family's prefix ("model."); lm_head.weight is present, or
absent with tie_word_embeddings; rotary_emb.inv_freq buffers of older checkpoints are dropped. RoPE's
rows are moved from HF's rotate_half order to normlab's interleaved pairs (hf_decoder.pair_rotary):
the same numbers in another order, so the logits are HF's exactly (tools/reference/llama_parity.py).

Refused with one line naming the file and what it says, exit 1, nothing written: an unknown
architecture (the line lists the supported ones), a config that disagrees with a tensor's shape,
hidden_size not divisible by num_attention_heads with no head_dim given, num_key_value_heads not
dividing num_attention_heads, an odd head width or one over 1024, rope_theta <= 0, rope_scaling set
(normlab has no RoPE scaling), an activation other than the family's, an MLP bias, Qwen2's
sliding-window attention, Gemma 3's layer_types other than every k-th layer global, a tensor the
family does not have or one missing, a NaN or Inf in a weight, a value past F16's range under --dtype
f16, a tokenizer.model that is not a SentencePiece BPE without normalization, and the shard index's
errors (tools/lib/hfweights.py). The written model is checked by the engine's loader (normlab info)
before it replaces anything.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import hf_decoder  # noqa: E402
import hfweights  # noqa: E402
import import_hf_gpt2  # noqa: E402
import nltool  # noqa: E402
from families import gemma, gemma2, gemma3, gpt_neox, gptj, llama, mistral, olmo2, phi, qwen2, qwen3  # noqa: E402
from nltool import ToolError  # noqa: E402

# The registry: one row a family (tools/interop/families/, hf_decoder.py's contract)
FAMILIES = (llama, mistral, qwen2, qwen3, olmo2, gemma, gemma2, gemma3, gpt_neox, phi, gptj)
BY_ARCH = {f.ARCHITECTURE: f for f in FAMILIES}
BY_TYPE = {"gpt2": "GPT2LMHeadModel", **{f.MODEL_TYPE: f.ARCHITECTURE for f in FAMILIES}}
GPT2 = ("GPT2LMHeadModel", "GPT2Model")
LISTED = __doc__ + "\nfamilies (architectures, model_type: summary):\n" + "\n".join(
    f"  {f.ARCHITECTURE} ({f.MODEL_TYPE}): {f.SUMMARY}" for f in FAMILIES)


def main(argv):
    a = hfweights.snapshot_arguments("import_hf.py", LISTED, argv, options=hf_decoder.options)
    where = os.path.join(a.snapshot, "config.json")
    cfg = hfweights.read_json(where)
    if not isinstance(cfg, dict):
        raise ToolError(f"{where}: not a JSON object")
    names = cfg.get("architectures") or [BY_TYPE.get(cfg.get("model_type"))]
    arch = names[0] if isinstance(names, list) and len(names) == 1 else None
    if arch in GPT2:
        if any(x == "--ctx" or x.startswith("--ctx=") for x in argv):
            raise ToolError(f"{where}: a GPT-2 snapshot: --ctx is for the Llama family's import; GPT-2's context "
                            "is its n_positions, the rows of its learned position table (docs/gpt2.md)")
        return import_hf_gpt2.main(argv)
    if arch in BY_ARCH:
        return hf_decoder.run(a, cfg, BY_ARCH[arch])
    given = cfg.get("architectures", cfg.get("model_type"))
    said = "neither architectures nor model_type is given" if given is None else f"architectures {given!r}"
    raise ToolError(f"{where}: {said}: normlab imports " + ", ".join([*GPT2, *BY_ARCH]))


if __name__ == "__main__":
    nltool.run("import_hf.py", main, sys.argv[1:])
