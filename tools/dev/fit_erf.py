#!/usr/bin/python3
"""Fit the rational erf approximation used by engine/vecmath.h (erf_rational, nl_erf):

    erf(x) ~= x * P(x^2) / Q(x^2),  |x| <= 3.92,  P of degree 5, Q of degree 5 with Q(0) = 1

by iteratively reweighted linear least squares on 40,001 points (a Lawson-style push towards
equal-ripple error). Prints the coefficients and the maximum error in double and in float32.

    /usr/bin/python3 tools/dev/fit_erf.py
"""
from math import erf

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))  # tools/lib
import needs  # noqa: E402

needs.packages("numpy")

import numpy as np  # noqa: E402

LIMIT = 3.92  # erf(3.92) = 1 - 2e-8: beyond it float32 erf is 1


def fit(n_p=6, n_q=5, iterations=30):
    xs = np.linspace(0.0, LIMIT, 40001)
    y = np.array([erf(x) for x in xs])
    t = xs * xs
    w = np.ones_like(xs)
    q = np.array([1.0])
    for _ in range(iterations):
        a = np.hstack([np.stack([xs * t ** k for k in range(n_p)], 1),
                       np.stack([-y * t ** k for k in range(1, n_q + 1)], 1)])
        scale = (w / np.abs(np.polyval(q[::-1], t)))[:, None]
        coef, *_ = np.linalg.lstsq(a * scale, y * scale[:, 0], rcond=None)
        p, q = coef[:n_p], np.concatenate([[1.0], coef[n_p:]])
        err = np.abs(xs * np.polyval(p[::-1], t) / np.polyval(q[::-1], t) - y)
        w = w * (1 + 2 * (err / err.max()) ** 2)
    return p, q, err.max()


def float32_error(p, q):
    x = np.linspace(-6, 6, 240001).astype(np.float32)
    c = np.clip(x, -LIMIT, LIMIT).astype(np.float32)
    t = (c * c).astype(np.float32)
    num = np.zeros_like(c)
    den = np.zeros_like(c)
    for k in p.astype(np.float32)[::-1]:
        num = (num * t + k).astype(np.float32)
    for k in q.astype(np.float32)[::-1]:
        den = (den * t + k).astype(np.float32)
    got = (c * num / den).astype(np.float64)
    return np.max(np.abs(got - np.array([erf(float(v)) for v in x])))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit("usage: fit_erf.py (takes no arguments)")
    p, q, e = fit()
    print("P (x^0 .. x^10 in x^2):", ", ".join(f"{v:.9g}" for v in p))
    print("Q:", ", ".join(f"{v:.9g}" for v in q))
    print(f"max |error| in double {e:.3g}, evaluated in float32 {float32_error(p, q):.3g}")
