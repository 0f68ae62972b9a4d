#!/usr/bin/python3
"""tools/reference/reference.py's recurrent models (tools/lib/nlmodel.py's Recurrent in float64) against
PyTorch's own nn.LSTM and nn.GRU, written apart from it: random-weight LSTM and GRU models without norms,
their logits from the zero state (1e-10: any difference in the formulas shows far above that) and eval's
--segments parts. With LayerNorm, which PyTorch's cells lack: the --norm none override against the built-in
cell on the model's weights less its norms, the --norm layernorm override against a LayerNorm model of
unit gains, the float32 model against the float64 one (1e-5), and the segments against each part run
alone. The engine's own check of the same cells is tests/test_rnn.c (against tests/ref_forward.c).
Exits 1 on a failure.

    /usr/bin/python3 tests/rnn_reference_test.py
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))  # tests/
from tooltest import skip_unless  # noqa: E402

skip_unless("rnn_reference_test", "torch", "numpy")
import torch  # noqa: E402
import torch.nn.functional as Fn  # noqa: E402

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
sys.path[:0] = [os.path.join(TOOLS, d) for d in ("lib", "reference")]
import nlformat  # noqa: E402
import nlmodel  # noqa: E402
from reference import RecurrentReference, load_reference  # noqa: E402

E, S, L = 6, 5, 2
VOCAB = list("abcdefghijk")
failures = []
passes = []


def config(arch, norm):
    return {"arch": arch, "vocab_size": len(VOCAB), "n_layer": L, "n_embd": E, "n_hidden": S, "norm": norm,
            "norm_eps": 1e-5}


def random_tensors(arch, norm):
    """A random model's tensors (file names); LayerNorm gains around 1."""
    model = nlmodel.Recurrent(config(arch, norm))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if "_ln_" in name and name.endswith("_weight") else 0.0))
    return model.export_tensors()


def builtin_logits(arch, tensors, ids):
    """(n, V) float64 logits of ids through torch.nn.LSTM / torch.nn.GRU on a norm-free model's tensors.
    Their rows are i|f|g|o and r|z|n where ours are f|i|o|g and z|r|candidate, the LSTM's one bias is
    their b_ih (b_hh 0), and their z keeps the old state where ours takes the candidate: z -> -z."""
    t = {k: torch.from_numpy(v).double() for k, v in tensors.items()}
    rnn = (torch.nn.LSTM if arch == "lstm" else torch.nn.GRU)(E, S, num_layers=L, batch_first=True).double()
    order = [(1, 1), (0, 1), (3, 1), (2, 1)] if arch == "lstm" else [(1, 1), (0, -1), (2, 1)]
    with torch.no_grad():
        for i in range(L):
            p = f"rnn.{i}."
            biases = (t[p + "bias"], torch.zeros(4 * S)) if arch == "lstm" else (t[p + "bias_ih"], t[p + "bias_hh"])
            for name, m in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"),
                               (t[p + "weight_ih"], t[p + "weight_hh"]) + biases):
                getattr(rnn, f"{name}_l{i}").copy_(torch.cat([sign * m[k * S:(k + 1) * S] for k, sign in order]))
        out, _ = rnn(t["wte.weight"][torch.tensor([ids])])
    return (out @ t["lm_head.weight"].T + t["lm_head.bias"])[0]


def check(label, got, want, tol):
    d = float((got - want).abs().max()) if torch.is_tensor(got) else abs(got - want)
    ok = d <= tol
    print(f"{'ok  ' if ok else 'FAIL'} {label:<72} worst {d:.3g}  tolerance {tol:g}")
    (passes if ok else failures).append(label)


def segment_nll(logits_of, ids, K):
    """Sum of -ln p over the spec's K parts of the n-1 inputs, each part's logits from logits_of(part)."""
    n = len(ids) - 1
    total = 0.0
    for k in range(K):
        lo, hi = k * n // K, (k + 1) * n // K
        if hi > lo:
            total += float(Fn.cross_entropy(logits_of(ids[lo:hi]), torch.tensor(ids[lo + 1:hi + 1]), reduction="sum"))
    return total


def write(tmp, name, arch, norm, tensors):
    path = os.path.join(tmp, name)
    nlformat.write_model_dir(path, config(arch, norm), VOCAB, tensors)
    return path


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
        paths = {}
        for norm in ("layernorm", "none"):
            tensors = random_tensors(arch, norm)
            paths[norm] = path = write(tmp, f"{arch}-{norm}", arch, norm, tensors)
            ref = load_reference(path)
            assert isinstance(ref, RecurrentReference)
            want = ref.logits(ids)
            if norm == "none":
                check(f"{arch}/none logits, {len(ids)} positions, against torch.nn.{arch.upper()}",
                      builtin_logits(arch, tensors, ids), want, 1e-10)
            f32 = nlmodel.build(config(arch, norm), tensors)
            with torch.no_grad():
                check(f"{arch}/{norm} logits, float32 model against the float64 one",
                      f32(torch.tensor([ids]))[0][0].double(), want, 1e-5)
            # eval: parts of unequal length, K > 1 parts of 1, K > n-1 (empty parts); count n-1 always
            alone = (lambda part: builtin_logits(arch, tensors, part)) if norm == "none" else ref.logits
            for K, text in ((1, ids), (4, ids), (7, ids), (5, ids[:4])):
                nll, count = ref.eval_nll(text, K)
                assert count == len(text) - 1, count
                check(f"{arch}/{norm} eval_nll segments={K} over {len(text)} ids, each part alone (relative)",
                      abs(nll - segment_nll(alone, text, K)) / nll, 0.0, 1e-10)
            # logits_batch pads shorter sequences at the end: their rows must be those of a lone run
            rows = ref.logits_batch([ids[:7], ids, ids[3:20]])
            check(f"{arch}/{norm} logits_batch of 3 lengths vs one at a time",
                  max(float((rows[b, :len(s)] - ref.logits(s)).abs().max())
                      for b, s in enumerate([ids[:7], ids, ids[3:20]])), 0.0, 1e-12)

        # --norm none on the LN model: its tensors less its norms (its GRU has no biases: zero)
        tensors = {k: v for k, v in nlformat.load_model(paths["layernorm"])[2].items() if ".ln_" not in k}
        if arch == "gru":
            for i in range(L):
                tensors[f"rnn.{i}.bias_ih"] = tensors[f"rnn.{i}.bias_hh"] = torch.zeros(3 * S).numpy()
        want = load_reference(paths["layernorm"], norm="none").logits(ids)
        check(f"{arch}/layernorm --norm none against torch.nn.{arch.upper()} of its weights less the norms",
              builtin_logits(arch, tensors, ids), want, 1e-10)

        # --norm layernorm on the plain model: an LN model of unit gains; the LSTM keeps its bias, the
        # GRU's biases (added right after each norm) become the LN biases
        tensors = dict(nlformat.load_model(paths["none"])[2])
        for i in range(L):
            p = f"rnn.{i}."
            if arch == "lstm":
                widths = {"ln_ih": 4 * S, "ln_hh": 4 * S, "ln_cell": S}
                tensors.update({p + n + ".bias": torch.zeros(w).numpy() for n, w in widths.items()})
            else:
                b_ih, b_hh = tensors.pop(p + "bias_ih"), tensors.pop(p + "bias_hh")
                widths = {"ln_ih": 2 * S, "ln_hh": 2 * S, "ln_ih_cand": S, "ln_hh_cand": S}
                tensors.update({p + "ln_ih.bias": b_ih[:2 * S], p + "ln_ih_cand.bias": b_ih[2 * S:],
                                p + "ln_hh.bias": b_hh[:2 * S], p + "ln_hh_cand.bias": b_hh[2 * S:]})
            tensors.update({p + n + ".weight": torch.ones(w).numpy() for n, w in widths.items()})
        lifted = write(tmp, f"{arch}-lifted", arch, "layernorm", tensors)
        check(f"{arch}/none --norm layernorm against a LayerNorm model of unit gain",
              load_reference(lifted).logits(ids), load_reference(paths["none"], norm="layernorm").logits(ids), 1e-12)

    for bad in ({"norm": "rmsnorm"}, {"norm": "batchnorm"}, {"placement": "pre"}, {"bn_stats": "batch"}):
        try:
            load_reference(os.path.join(tmp, "lstm-none"), **bad)
            refused = False
        except ValueError:
            refused = True
        print(f"{'ok  ' if refused else 'FAIL'} refuses {bad}")
        (passes if refused else failures).append(str(bad))


if __name__ == "__main__":
    sys.exit(main())
