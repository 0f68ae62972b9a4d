#!/usr/bin/python3
"""tools/reference/reference.py's recurrent models (RecurrentReference, float64) against
tools/train/train.py's Recurrent, two implementations written apart: random-weight LSTM and GRU models,
with LayerNorm and without, their logits from the zero state, the --norm none and --norm layernorm overrides (each against a Recurrent built
to compute the same function) and eval's --segments parts. Each check runs Recurrent in float32 (tolerance
1e-5) and in float64 (1e-10: any difference in the formulas shows far above that). Exits 1 on a failure.

    /usr/bin/python3 tests/rnn_reference_test.py
"""
import os
import sys
import tempfile

try:
    import torch
    import torch.nn.functional as Fn
except ImportError:
    print("note: python3-torch missing; the recurrent reference is not tested here (tools/install-deps.sh --python)")
    print("rnn_reference_test: 0 passed, 0 failed")
    sys.exit(0)

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
sys.path[:0] = [os.path.join(TOOLS, d) for d in ("lib", "reference", "train")]
import nlformat  # noqa: E402
from reference import RecurrentReference, load_reference  # noqa: E402
from train import Recurrent  # noqa: E402

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
VOCAB = list("abcdefghijk")
failures = []
passes = []


def config(arch, norm):
    return {"arch": arch, "vocab_size": len(VOCAB), "n_layer": 2, "n_embd": 6, "n_hidden": 5, "norm": norm,
            "norm_eps": 1e-5}


def random_recurrent(arch, norm):
    model = Recurrent(config(arch, norm))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if "_ln_" in name and name.endswith("_weight") else 0.0))
    return model


def load_into(model, tensors):
    """Set a Recurrent's parameters from nlformat tensors (name -> array): the inverse of export_tensors."""
    own = {"wte.weight": model.wte.weight, "lm_head.weight": model.lm_head.weight, "lm_head.bias": model.lm_head.bias}
    with torch.no_grad():
        for name, a in tensors.items():
            (own.get(name) if name in own else model.params[name.replace(".", "_")]).copy_(torch.from_numpy(a))
    return model


def forward(model, ids, dtype):
    """Recurrent's (n, V) logits of ids from the zero state, in dtype, as float64."""
    m = model.to(dtype).eval()
    with torch.no_grad():
        state = [tuple(t.to(dtype) for t in s) for s in m.zero_state(1, "cpu")]  # it makes float32 zeros
        out = m(torch.tensor([ids]), state)[0][0].double()
    model.float()
    return out


def check(label, got, want, tol):
    d = float((got - want).abs().max()) if torch.is_tensor(got) else abs(got - want)
    ok = d <= tol
    print(f"{'ok  ' if ok else 'FAIL'} {label:<70} worst {d:.3g}  tolerance {tol:g}")
    (passes if ok else failures).append(label)


def segment_nll(model, ids, K, dtype):
    """Sum of -ln p over the spec's K parts of the n-1 inputs, each run by Recurrent from the zero state."""
    n = len(ids) - 1
    total = 0.0
    for k in range(K):
        lo, hi = k * n // K, (k + 1) * n // K
        if hi > lo:
            logits = forward(model, ids[lo:hi], dtype)
            total += float(Fn.cross_entropy(logits, torch.tensor(ids[lo + 1:hi + 1]), reduction="sum"))
    return total


def main():
    torch.manual_seed(20261201)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(len(VOCAB), (41,), generator=g).tolist()
    with tempfile.TemporaryDirectory(prefix="rnn_reference_test.") as tmp:
        run(ids, tmp)
    print(f"rnn_reference_test: {len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


def run(ids, tmp):
    for arch in ("lstm", "gru"):
        models = {}
        for norm in ("layernorm", "none"):
            model = random_recurrent(arch, norm)
            path = os.path.join(tmp, f"{arch}-{norm}")
            nlformat.write_model_dir(path, config(arch, norm), VOCAB, model.export_tensors())
            models[norm] = (model, path)
            ref = load_reference(path)
            assert isinstance(ref, RecurrentReference)
            want = ref.logits(ids)
            for dtype in TOL:
                check(f"{arch}/{norm} logits, {len(ids)} positions, Recurrent {dtype}", forward(model, ids, dtype),
                      want, TOL[dtype])
            # eval: parts of unequal length, K > 1 parts of 1, K > n-1 (empty parts); count n-1 always
            for K in (1, 4, 7):
                nll, count = ref.eval_nll(ids, K)
                assert count == len(ids) - 1, count
                for dtype in TOL:
                    check(f"{arch}/{norm} eval_nll segments={K}, Recurrent {dtype} (relative)",
                          abs(nll - segment_nll(model, ids, K, dtype)) / nll, 0.0, TOL[dtype])
            nll, count = ref.eval_nll(ids[:4], 5)
            check(f"{arch}/{norm} eval_nll 4 ids, segments=5 (relative)",
                  abs(nll - segment_nll(model, ids[:4], 5, torch.float64)) / nll, 0.0, TOL[torch.float64])
            # logits_batch pads shorter sequences at the end: their rows must be those of a lone run
            rows = ref.logits_batch([ids[:7], ids, ids[3:20]])
            check(f"{arch}/{norm} logits_batch of 3 lengths vs one at a time",
                  max(float((rows[b, :len(s)] - ref.logits(s)).abs().max())
                      for b, s in enumerate([ids[:7], ids, ids[3:20]])), 0.0, 1e-12)

        # --norm none on the LN model: the LN model's tensors less its norms (its GRU has no biases: zero)
        ln_model, ln_path = models["layernorm"]
        tensors = {k: v for k, v in nlformat.load_model(ln_path)[2].items() if ".ln_" not in k}
        if arch == "gru":
            for i in range(2):
                tensors[f"rnn.{i}.bias_ih"] = tensors[f"rnn.{i}.bias_hh"] = torch.zeros(15).numpy()
        stripped = os.path.join(tmp, f"{arch}-layernorm-stripped")
        nlformat.write_model_dir(stripped, config(arch, "none"), VOCAB, tensors)
        want = load_reference(ln_path, norm="none").logits(ids)
        check(f"{arch}/layernorm --norm none vs reference of the stripped copy",
              load_reference(stripped).logits(ids), want, 1e-12)
        plain = load_into(Recurrent(config(arch, "none")), tensors)
        for dtype in TOL:
            check(f"{arch}/layernorm --norm none vs Recurrent none of its weights, {dtype}",
                  forward(plain, ids, dtype), want, TOL[dtype])

        # --norm layernorm on the plain model: a Recurrent LN with unit gains; the LSTM keeps its bias, the
        # GRU's biases (added right after each norm) become the LN biases
        _, plain_path = models["none"]
        tensors = dict(nlformat.load_model(plain_path)[2])
        lifted = Recurrent(config(arch, "layernorm"))  # LN gains 1, biases 0 as initialised
        if arch == "gru":
            S = 5
            for i in range(2):
                b_ih, b_hh = tensors.pop(f"rnn.{i}.bias_ih"), tensors.pop(f"rnn.{i}.bias_hh")
                tensors.update({f"rnn.{i}.ln_ih.bias": b_ih[:2 * S], f"rnn.{i}.ln_ih_cand.bias": b_ih[2 * S:],
                                f"rnn.{i}.ln_hh.bias": b_hh[:2 * S], f"rnn.{i}.ln_hh_cand.bias": b_hh[2 * S:]})
        load_into(lifted, tensors)
        want = load_reference(plain_path, norm="layernorm").logits(ids)
        for dtype in TOL:
            check(f"{arch}/none --norm layernorm vs Recurrent LN of unit gain, {dtype}",
                  forward(lifted, ids, dtype), want, TOL[dtype])

    for bad in ({"norm": "rmsnorm"}, {"norm": "batchnorm"}, {"placement": "pre"}):
        try:
            load_reference(os.path.join(tmp, "lstm-none"), **bad)
            refused = False
        except ValueError:
            refused = True
        print(f"{'ok  ' if refused else 'FAIL'} refuses {bad}")
        (passes if refused else failures).append(str(bad))


if __name__ == "__main__":
    sys.exit(main())
