// rnn_cells.c — the LSTM's and GRU's element-wise steps (kernels.h).
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vecmath.h"

void nl_lstm_cell(float *c, const float *a, size_t S) {
    const float *f = a, *i = a + S, *g = a + 3 * S;
    for (size_t k = 0; k < S; k++) c[k] = sigmoid_poly(f[k]) * c[k] + sigmoid_poly(i[k]) * tanh_poly(g[k]);
}

void nl_lstm_output(float *h, const float *a, const float *cn, size_t S) {
    const float *o = a + 2 * S;
    for (size_t k = 0; k < S; k++) h[k] = sigmoid_poly(o[k]) * tanh_poly(cn[k]);
}

void nl_gru_update(float *h, const float *zr, const float *xc, const float *hc, size_t S) {
    const float *z = zr, *r = zr + S;
    for (size_t k = 0; k < S; k++) {
        float cand = tanh_poly(xc[k] + sigmoid_poly(r[k]) * hc[k]), u = sigmoid_poly(z[k]);
        h[k] = (1.0f - u) * h[k] + u * cand;
    }
}
