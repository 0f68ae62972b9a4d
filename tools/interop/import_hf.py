#!/usr/bin/python3
"""Convert a Hugging Face snapshot folder into a normlab model directory, by the architecture its
config.json names (`architectures`, else `model_type`):

    /usr/bin/python3 tools/interop/import_hf.py SNAPSHOT --out DIR

    GPT2LMHeadModel, GPT2Model (gpt2)           tools/interop/import_hf_gpt2.py (docs/gpt2.md)
    LlamaForCausalLM (llama), Qwen2ForCausalLM  tools/interop/import_hf_llama.py: arch llama
    (qwen2, its qkv bias), Qwen3ForCausalLM     (docs/format.md), HF's q/k rows un-permuted to
    (qwen3, its QK-norm, head_dim),             RoPE's interleaved pairs (docs/interop.md); options
    Olmo2ForCausalLM (olmo2: post-sublayer,     --ctx N (the context cap, default 65536)
    QK-norm over the projection),
    GemmaForCausalLM (gemma: (1 + w) norms,
    sqrt(D) embeddings, GeGLU), Gemma2ForCausalLM
    (gemma2: its sandwich and soft-caps, within
    its sliding_window),
    MistralForCausalLM (mistral: a window no
    shorter than the context imported)
    GPTNeoXForCausalLM (gpt_neox: Pythia),      tools/interop/import_hf_parallel.py: arch llama,
    PhiForCausalLM (phi: Phi-2)                 their parallel blocks and partial rotary

Both keep the weight matrices' stored type (F16 and BF16 as stored) unless --dtype f32|f16|bf16 names one.

Any other architecture is refused by name, in one line, exit 1, with nothing written.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import hfweights  # noqa: E402
import import_hf_gpt2  # noqa: E402
import import_hf_llama  # noqa: E402
import import_hf_parallel  # noqa: E402
import nltool  # noqa: E402
from nltool import ToolError  # noqa: E402

BY_TYPE = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
           "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "olmo2": "Olmo2ForCausalLM",
           "gpt_neox": "GPTNeoXForCausalLM", "phi": "PhiForCausalLM"}


def main(argv):
    a = hfweights.snapshot_arguments("import_hf.py", __doc__, argv, options=import_hf_llama.options)
    where = os.path.join(a.snapshot, "config.json")
    cfg = hfweights.read_json(where)
    if not isinstance(cfg, dict):
        raise ToolError(f"{where}: not a JSON object")
    names = cfg.get("architectures") or [BY_TYPE.get(cfg.get("model_type"))]
    arch = names[0] if isinstance(names, list) and len(names) == 1 else None
    if arch in ("GPT2LMHeadModel", "GPT2Model"):
        if any(x == "--ctx" or x.startswith("--ctx=") for x in argv):
            raise ToolError(f"{where}: a GPT-2 snapshot: --ctx is for the Llama family's import; GPT-2's context "
                            "is its n_positions, the rows of its learned position table (docs/gpt2.md)")
        return import_hf_gpt2.main(argv)
    if arch in import_hf_llama.ARCHES:
        return import_hf_llama.main(argv, cfg, arch)
    if arch in import_hf_parallel.ARCHES:
        return import_hf_parallel.main(argv, cfg, arch)
    given = cfg.get("architectures", cfg.get("model_type"))
    said = "neither architectures nor model_type is given" if given is None else f"architectures {given!r}"
    raise ToolError(f"{where}: {said}: normlab imports " + ", ".join(["GPT2LMHeadModel", "GPT2Model",
                                                                    *import_hf_llama.ARCHES,
                                                                    *import_hf_parallel.ARCHES]))


if __name__ == "__main__":
    nltool.run("import_hf.py", main, sys.argv[1:])
