// recipe.c — the placements as recipes (recipe.h), one row each, and the recipe compiler: a block's
// steps parsed, checked, and their slots given buffers by when each is last read. A new placement is
// one row here and one row in docs/comparing.md.
#include <stdio.h>
#include <string.h>

#include "normlab.h"
#include "normlab_internal.h"
#include "recipe.h"

typedef struct {
    NlPlacement value;
    NlPlacementInfo info;
    int version;  // the format version that first names it
    const char *steps;  // its block (mix: NULL, post's block then pre's)
} PlacementRow;

static const PlacementRow PLACEMENTS[] = {
    {NL_PLACE_PRE,
     {"pre", "x = x + Attn(N1(x)); x = x + MLP(N2(x)); ln_f", "GPT-2, Llama (Xiong et al. 2020)", 1, 0, NL_PLACE_POST},
     1,
     "norm ln_1 x h; attn h a; add a; norm ln_2 x g; mlp g m; add m"},
    {NL_PLACE_POST,
     {"post", "x = N1(a*x + Attn(x)); x = N2(a*x + MLP(x)) (a: DeepNorm's residual_scale)",
      "the original Transformer, BERT; DeepNorm (Wang et al. 2022)", 0, 0, NL_PLACE_PRE},
     1,
     "attn x a; add a scaled; norm ln_1 x x; mlp x m; add m scaled; norm ln_2 x x"},
    {NL_PLACE_PERI,
     {"peri", "x = x + N1post(Attn(N1(x))); x = x + N2post(MLP(N2(x))); ln_f",
      "Peri-LN (Kim et al. 2025); Gemma 2 and 3's sandwich", 1, 1, NL_PLACE_PRE},
     2,
     "norm ln_1 x h; attn h a; norm ln_1_post a p; add p; norm ln_2 x g; mlp g m; norm ln_2_post m q; add q"},
    {NL_PLACE_POST_SUBLAYER,
     {"post-sublayer", "x = x + N1post(Attn(x)); x = x + N2post(MLP(x)); ln_f", "OLMo 2 (OLMo et al. 2024)", 1, 1,
      NL_PLACE_PRE},
     5,
     "attn x a; norm ln_1_post a p; add p; mlp x m; norm ln_2_post m q; add q"},
    {NL_PLACE_PARALLEL,
     {"parallel", "x = x + Attn(N1(x)) + MLP(N2(x)); ln_f", "GPT-NeoX, Pythia (Black et al. 2022)", 1, 0,
      NL_PLACE_PARALLEL_SHARED},
     5,
     "norm ln_1 x h; attn h a; norm ln_2 x g; mlp g m; add a; add m"},
    {NL_PLACE_PARALLEL_SHARED,
     {"parallel-shared", "x = x + Attn(N1(x)) + MLP(N1(x)); ln_f", "GPT-J, Phi-2, Cohere", 1, 0, NL_PLACE_PARALLEL},
     5,
     "norm ln_1 x h; attn h a; mlp h m; add a; add m"},
    {NL_PLACE_MIX,
     {"mix", "post for the first mix_post_layers layers (default L/4), pre after; ln_f", "Mix-LN (Li et al. 2024)", 1,
      0, NL_PLACE_PRE},
     5,
     NULL},
    {NL_PLACE_SUB,
     {"sub",
      "x = x + Attn'(N1(x)); x = x + MLP'(N2(x)), Attn' and MLP' normalising before their output projection; "
      "ln_f",
      "Sub-LN, Magneto (Wang et al. 2022)", 1, 0, NL_PLACE_PRE},
     5,
     "norm ln_1 x h; attn h a ln_1_sub; add a; norm ln_2 x g; mlp g m ln_2_sub; add m"},
    {NL_PLACE_CUSTOM,
     {"custom", "config.json's \"block\" (docs/format.md)", "a model's own recipe", 1, 0, NL_PLACE_PRE},
     5,
     NULL},
};
#define N_PLACEMENTS (sizeof PLACEMENTS / sizeof PLACEMENTS[0])

static const char *const NORM_NAMES[NL_NS_COUNT] = {"ln_1", "ln_2", "ln_1_post", "ln_2_post", "ln_1_sub", "ln_2_sub"};
static const NlComponent NORM_COMPONENTS[NL_NS_COUNT] = {NL_COMP_NORM1,      NL_COMP_NORM2,     NL_COMP_NORM1_POST,
                                                         NL_COMP_NORM2_POST, NL_COMP_NORM1_SUB, NL_COMP_NORM2_SUB};

static const PlacementRow *row_of(NlPlacement p) {
    for (size_t i = 0; i < N_PLACEMENTS; i++)
        if (PLACEMENTS[i].value == p) return &PLACEMENTS[i];
    return NULL;
}

const NlPlacementInfo *nl_recipe_info(NlPlacement p) {
    const PlacementRow *row = row_of(p);
    return row ? &row->info : NULL;
}

size_t nl_recipe_placements(const char **names, NlPlacement *values) {
    for (size_t i = 0; i < N_PLACEMENTS; i++) {
        if (names) names[i] = PLACEMENTS[i].info.name;
        if (values) values[i] = PLACEMENTS[i].value;
    }
    if (names) names[N_PLACEMENTS] = NULL;
    return N_PLACEMENTS;
}

int nl_recipe_placement_version(NlPlacement p) {
    const PlacementRow *row = row_of(p);
    return row ? row->version : 1;
}

const char *nl_recipe_norm_name(int slot) { return slot >= 0 && slot < NL_NS_COUNT ? NORM_NAMES[slot] : "?"; }
NlComponent nl_recipe_norm_component(int slot) { return NORM_COMPONENTS[slot]; }

// ---- parsing a block

typedef struct {
    char names[NL_RECIPE_SLOTS_MAX + 1][16];  // [0] "x"
    int n;
    int def[NL_RECIPE_SLOTS_MAX + 1], last[NL_RECIPE_SLOTS_MAX + 1];  // the step writing each, the last reading it
    int branch[NL_RECIPE_SLOTS_MAX + 1];  // 1: holds a branch's output not yet added
    unsigned added;  // bit i: slot i was added to x
} Slots;

typedef struct {
    const char *what;
    int k;  // the step being read, from 1
    const char *text;
    NlError *err;
} Where;

static int fail(const Where *w, const char *msg, const char *arg) {
    return nl_error(w->err, NL_ERR_FORMAT, "%s: \"block\" step %d \"%.60s\": %s%s", w->what, w->k, w->text, msg,
                    arg ? arg : "");
}

// The slot named name, read (write 0) or written (write 1) at step k; -1 with an error.
static int slot(Slots *s, const char *name, int write, int k, const Where *w) {
    size_t len = strlen(name);
    int ok = len >= 1 && len < sizeof s->names[0] && name[0] >= 'a' && name[0] <= 'z';
    for (size_t i = 0; ok && i < len; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_';
    if (!ok) return fail(w, "a slot is a lowercase name of at most 15 letters, digits or '_': ", name);
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0) {
            if (write && i > 0) return fail(w, "a slot written twice: ", name);
            if (!write) s->last[i] = k;
            return i;
        }
    if (!write) return fail(w, "an unknown slot (no earlier step writes it): ", name);
    if (s->n > NL_RECIPE_SLOTS_MAX) return fail(w, "more slots than the 6 allowed beside x: ", name);
    snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
    s->def[s->n] = k;
    s->last[s->n] = -1;
    s->branch[s->n] = 0;
    return s->n++;
}

static int norm_slot(const char *name, const Where *w) {
    for (int i = 0; i < NL_NS_COUNT; i++)
        if (strcmp(NORM_NAMES[i], name) == 0) return i;
    return fail(w, "an unknown norm (ln_1, ln_2, ln_1_post, ln_2_post, ln_1_sub, ln_2_sub): ", name);
}

// One step's words (at most 5, space-separated) into word[]; their count.
static int split(const char *text, char word[6][24]) {
    int n = 0;
    for (const char *p = text; *p && n < 6;) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ");
        snprintf(word[n++], sizeof word[0], "%.*s", (int)(len < 23 ? len : 23), p);
        if (len >= 23) word[n - 1][22] = '!';  // too long for any name: refused as one
        p += len;
    }
    return n;
}

static int parse_step(NlBlockRecipe *b, Slots *s, const Where *w, int *attns, int *mlps) {
    char word[6][24];
    int n = split(w->text, word), k = w->k;
    NlStep *st = &b->step[b->n_steps++];
    *st = (NlStep){.norm = NL_NS_NONE};
    if (n >= 1 && strcmp(word[0], "norm") == 0 && n == 4) {
        int ns = norm_slot(word[1], w), in = ns < 0 ? -1 : slot(s, word[2], 0, k, w);
        if (in < 0) return -1;
        if (ns == NL_NS_LN_1_SUB || ns == NL_NS_LN_2_SUB)
            return fail(w, "a _sub norm is a branch's inner norm: name it as attn's or mlp's fourth word", NULL);
        int out = strcmp(word[3], "x") == 0 ? 0 : slot(s, word[3], 1, k, w);
        if (out < 0) return -1;
        if (b->norms & (1u << ns)) return fail(w, "a norm that runs twice in the block: ", word[1]);
        s->branch[out] = s->branch[in];  // a normalised branch is still to be added
        s->branch[in] = 0;
        *st = (NlStep){NL_STEP_NORM, (uint8_t)ns, (uint8_t)in, (uint8_t)out, 0, 0};
        b->norms |= 1u << ns;
        return 0;
    }
    if (n >= 1 && (strcmp(word[0], "attn") == 0 || strcmp(word[0], "mlp") == 0) && (n == 3 || n == 4)) {
        int mlp = word[0][0] == 'm', in = slot(s, word[1], 0, k, w), inner = NL_NS_NONE;
        if (in < 0) return -1;
        if (strcmp(word[2], "x") == 0) return fail(w, "a branch writes a slot, which an add then adds to x", NULL);
        int out = slot(s, word[2], 1, k, w);
        if (out < 0) return -1;
        if (n == 4 && (inner = norm_slot(word[3], w)) < 0) return -1;
        if (n == 4 && inner != (mlp ? NL_NS_LN_2_SUB : NL_NS_LN_1_SUB))
            return fail(w, mlp ? "mlp's inner norm is ln_2_sub, not " : "attn's inner norm is ln_1_sub, not ", word[3]);
        if (++*(mlp ? mlps : attns) > 1) return fail(w, "a second ", word[0]);
        s->branch[out] = 1;
        *st = (NlStep){(uint8_t)(mlp ? NL_STEP_MLP : NL_STEP_ATTN), (uint8_t)inner, (uint8_t)in, (uint8_t)out, 0, 0};
        if (inner != NL_NS_NONE) b->norms |= 1u << inner;
        return 0;
    }
    if (n >= 1 && strcmp(word[0], "add") == 0 && (n == 2 || (n == 3 && strcmp(word[2], "scaled") == 0))) {
        int in = slot(s, word[1], 0, k, w);
        if (in < 0) return -1;
        if (in == 0) return fail(w, "x added to itself", NULL);
        if (s->added & (1u << in)) return fail(w, "a slot added twice: ", word[1]);
        s->added |= 1u << in;
        s->branch[in] = 0;
        *st = (NlStep){NL_STEP_ADD, NL_NS_NONE, (uint8_t)in, 0, (uint8_t)(n == 3), 0};
        b->scaled |= n == 3;
        return 0;
    }
    return fail(w,
                "a step is \"norm N IN OUT\", \"attn IN OUT [ln_1_sub]\", \"mlp IN OUT [ln_2_sub]\" or \"add IN "
                "[scaled]\"",
                NULL);
}

// The lowest buffer (from 1) that no slot live at step k holds: written before k, read at k or later.
static int free_buffer(NlBlockRecipe *b, const Slots *s, const int *buf, int k) {
    unsigned busy = 0;
    for (int j = 1; j < s->n; j++)
        if (s->def[j] < k && s->last[j] >= k) busy |= 1u << buf[j];
    int p = 1;
    while (busy & (1u << p)) p++;
    if (p > b->n_buffers) b->n_buffers = p;
    return p;
}

// The slots' buffers: each written slot takes the lowest buffer no live slot holds (a slot lives from
// the step writing it to the last reading it; x is buffer 0); a norm into the stream writes a free
// one (via), which then becomes the stream.
static void assign_buffers(NlBlockRecipe *b, const Slots *s) {
    int buf[NL_RECIPE_SLOTS_MAX + 1] = {0};
    for (int k = 1; k <= b->n_steps; k++) {
        NlStep *st = &b->step[k - 1];
        for (int i = 1; i < s->n; i++)
            if (s->def[i] == k) buf[i] = free_buffer(b, s, buf, k);
        if (st->op == NL_STEP_NORM && st->out == 0) st->via = (uint8_t)free_buffer(b, s, buf, k);
        st->in = (uint8_t)buf[st->in];
        if (st->op != NL_STEP_ADD) st->out = (uint8_t)buf[st->out];
    }
}

// The norms at the block's edges: the first reading x before anything writes it, the last writing it.
static void find_edges(NlBlockRecipe *b) {
    int written = 0;
    b->entry_norm = b->exit_norm = NL_NS_NONE;
    for (int k = 0; k < b->n_steps; k++) {
        const NlStep *st = &b->step[k];
        int reads_x = st->in == 0, writes_x = st->op == NL_STEP_ADD || (st->op == NL_STEP_NORM && st->out == 0);
        if (!written && reads_x && b->entry_norm == NL_NS_NONE && st->op == NL_STEP_NORM) b->entry_norm = st->norm;
        if (writes_x) {
            written = 1;
            b->exit_norm = st->op == NL_STEP_NORM ? st->norm : NL_NS_NONE;
        }
    }
}

static int parse_block(NlBlockRecipe *b, const char *const *steps, size_t n, const char *what, NlError *err) {
    Slots s = {.n = 1, .names = {"x"}};
    int attns = 0, mlps = 0, adds = 0;
    *b = (NlBlockRecipe){0};
    if (n > NL_RECIPE_STEPS_MAX)
        return nl_error(err, NL_ERR_FORMAT, "%s: \"block\" has %zu steps, more than the %d allowed", what, n,
                        NL_RECIPE_STEPS_MAX);
    for (size_t k = 0; k < n; k++) {
        Where w = {what, (int)k + 1, steps[k], err};
        if (parse_step(b, &s, &w, &attns, &mlps) != 0) return -1;
        adds += b->step[k].op == NL_STEP_ADD;
    }
    if (attns != 1 || mlps != 1)
        return nl_error(err, NL_ERR_FORMAT, "%s: \"block\" needs one attn step and one mlp step", what);
    if (!adds) return nl_error(err, NL_ERR_FORMAT, "%s: \"block\" has no residual add", what);
    for (int i = 1; i < s.n; i++) {
        if (s.branch[i])
            return nl_error(err, NL_ERR_FORMAT, "%s: \"block\": slot %s holds a branch that is never added to x", what,
                            s.names[i]);
        if (s.last[i] < 0)
            return nl_error(err, NL_ERR_FORMAT, "%s: \"block\": slot %s is written and never read", what, s.names[i]);
    }
    assign_buffers(b, &s);
    find_edges(b);
    return 0;
}

// ---- recipes

// Splits text at ';' into at most NL_RECIPE_STEPS_MAX steps (buffer: their storage).
static size_t split_steps(const char *text, char buf[NL_RECIPE_STEPS_MAX][96], const char **steps) {
    size_t n = 0;
    for (const char *p = text; *p && n < NL_RECIPE_STEPS_MAX; n++) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, ";");
        snprintf(buf[n], sizeof buf[0], "%.*s", (int)len, p);
        steps[n] = buf[n];
        p += len + (p[len] == ';');
    }
    return n;
}

static int block_of(NlBlockRecipe *b, NlPlacement p, NlError *err) {
    char buf[NL_RECIPE_STEPS_MAX][96];
    const char *steps[NL_RECIPE_STEPS_MAX];
    size_t n = split_steps(row_of(p)->steps, buf, steps);
    return parse_block(b, steps, n, row_of(p)->info.name, err);
}

int nl_recipe_of_placement(NlRecipe *r, NlPlacement p, int L, int mix_post, NlError *err) {
    const PlacementRow *row = row_of(p);
    *r = (NlRecipe){0};
    if (!row || (!row->steps && p != NL_PLACE_MIX))
        return nl_error(err, NL_ERR_ARG,
                        "placement \"%s\" runs a model's own \"block\" recipe, which this model has not",
                        row ? row->info.name : "?");
    r->final_norm = row->info.final_norm;
    if (p == NL_PLACE_MIX) {
        r->first_layers = mix_post < L ? mix_post : L;
        return block_of(&r->block[0], NL_PLACE_POST, err) != 0 ? -1 : block_of(&r->block[1], NL_PLACE_PRE, err);
    }
    if (block_of(&r->block[0], p, err) != 0) return -1;
    r->block[1] = r->block[0];
    return 0;
}

int nl_recipe_parse(NlRecipe *r, const char *const *steps, size_t n, int final_norm, const char *what, NlError *err) {
    *r = (NlRecipe){.final_norm = final_norm};
    if (parse_block(&r->block[0], steps, n, what, err) != 0) return -1;
    r->block[1] = r->block[0];
    return 0;
}

int nl_recipe_of_config(NlConfig *c, int named, const char *const *steps, size_t n, int final_norm, int mix,
                        const char *what, NlError *err) {
    NlPlacement given = named >= 0 && named < (int)N_PLACEMENTS ? PLACEMENTS[named].value : NL_PLACE_AS_CONFIGURED;
    NlPlacement p = steps ? NL_PLACE_CUSTOM : given == NL_PLACE_AS_CONFIGURED ? NL_PLACE_PRE : given;
    if (steps && given != NL_PLACE_AS_CONFIGURED && given != NL_PLACE_CUSTOM)
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: a \"block\" recipe goes with placement \"custom\" (or none), not \"%s\"", what,
                        row_of(given)->info.name);
    if (!steps && p == NL_PLACE_CUSTOM)
        return nl_error(err, NL_ERR_FORMAT, "%s: placement \"custom\" needs its \"block\" recipe", what);
    if (final_norm >= 0 && !steps)
        return nl_error(err, NL_ERR_FORMAT, "%s: \"final_norm\" belongs to a \"block\" recipe", what);
    if (mix >= 0 && p != NL_PLACE_MIX)
        return nl_error(err, NL_ERR_FORMAT, "%s: \"mix_post_layers\" belongs to placement \"mix\"", what);
    c->placement = p;
    c->mix_post_layers = mix >= 0 ? mix : c->n_layer / 4;
    if (steps) return nl_recipe_parse(&c->recipe, steps, n, final_norm != 0, what, err);
    return nl_recipe_of_placement(&c->recipe, p, c->n_layer, c->mix_post_layers, err);
}

int nl_recipe_check_config(const NlConfig *c, int has_scale, int version, const char *what, NlError *err) {
    int need = row_of(c->placement)->version;
    if (version < need)
        return nl_error(err, NL_ERR_FORMAT, "%s: %s%s%s needs format version %d (the file says version %d)", what,
                        c->placement == NL_PLACE_CUSTOM ? "\"block\"" : "placement \"",
                        c->placement == NL_PLACE_CUSTOM ? "" : row_of(c->placement)->info.name,
                        c->placement == NL_PLACE_CUSTOM ? "" : "\"", need, version);
    if (has_scale && !nl_recipe_scaled(&c->recipe))
        return nl_error(err, NL_ERR_FORMAT,
                        "%s: \"residual_scale\" is allowed only where the block's adds are scaled (placement "
                        "\"post\", \"mix\", or a \"block\" with \"add IN scaled\")",
                        what);
    if (c->norm == NL_NORM_NONE && c->placement != NL_PLACE_PRE)
        return nl_error(err, NL_ERR_FORMAT, "%s: norm \"none\" needs placement \"pre\" (or none given%s)", what,
                        c->placement == NL_PLACE_CUSTOM ? ", and no \"block\"" : "");
    return 0;
}

size_t nl_recipe_describe(const NlConfig *c, int scale, NlConfigField *f) {
    size_t k = 0;
    f[k++] = (NlConfigField){"placement", NL_FIELD_STRING, 0, row_of(c->placement)->info.name};
    if (c->placement == NL_PLACE_MIX)
        f[k++] = (NlConfigField){"mix_post_layers", NL_FIELD_NUMBER, c->mix_post_layers, NULL};
    if (c->placement == NL_PLACE_CUSTOM)
        f[k++] = (NlConfigField){"final_norm", NL_FIELD_BOOL, c->recipe.final_norm, NULL};
    if (scale && nl_recipe_scaled(&c->recipe))
        f[k++] = (NlConfigField){"residual_scale", NL_FIELD_NUMBER, c->residual_scale, NULL};
    return k;
}

// ---- questions about a recipe

int nl_recipe_has_component(const NlRecipe *r, NlComponent comp) {
    if (comp == NL_COMP_FINAL_NORM) return r->final_norm;
    for (int i = 0; i < NL_NS_COUNT; i++)
        if (NORM_COMPONENTS[i] == comp) return (nl_recipe_norms(r) >> i) & 1u;
    return 1;
}

int nl_recipe_stream_norm(const NlRecipe *r, int L, int l, int *layer) {
    if (l > 0 && nl_recipe_block(r, l - 1)->exit_norm != NL_NS_NONE) {
        *layer = l - 1;
        return nl_recipe_block(r, l - 1)->exit_norm;
    }
    *layer = l;
    if (l == L) return r->final_norm ? NL_NS_FINAL : NL_NS_NONE;
    return nl_recipe_block(r, l)->entry_norm;
}

int nl_recipe_stream_read_by_norms(const NlRecipe *r) {
    for (int b = 0; b < 2; b++) {
        const NlBlockRecipe *blk = &r->block[b];
        int stream_is_x = 1;  // x not yet replaced by a norm's output
        for (int k = 0; k < blk->n_steps; k++) {
            const NlStep *st = &blk->step[k];
            if (st->in == 0 && st->op != NL_STEP_NORM) return 0;
            if (st->op == NL_STEP_NORM && st->out == 0) stream_is_x = 0;
        }
        if (!stream_is_x) return 0;
    }
    return r->final_norm;
}

// The steps after step k of layer l's block that read buffer buf before it is rewritten (bits of the
// readers); *stream 1 when buf is x and the block's end comes with it unrewritten.
static unsigned readers_after(const NlBlockRecipe *b, int k, int buf, int *added, int *to_end) {
    unsigned bits = 0;
    *added = 0;
    *to_end = 1;
    for (int j = k + 1; j < b->n_steps; j++) {
        const NlStep *st = &b->step[j];
        if (st->in == buf) {
            if (st->op == NL_STEP_ATTN) bits |= NL_READ_QKV;
            else if (st->op == NL_STEP_MLP) bits |= NL_READ_FC;
            else *added = 1;  // an add reads it, or a norm does (the stream's skip, or another norm)
        }
        int rewrites = buf == 0 ? (st->op == NL_STEP_ADD || (st->op == NL_STEP_NORM && st->out == 0))
                                : (st->op != NL_STEP_ADD && st->out == buf && j > k);
        if (rewrites) {
            if (buf == 0 && st->op == NL_STEP_ADD) *added = 1;  // x + branch: the skip reads it
            *to_end = 0;
            break;
        }
    }
    return bits;
}

NlFoldRule nl_recipe_fold_rule(const NlRecipe *r, int L, int l, int slot, unsigned *readers, const char **why) {
    const NlBlockRecipe *b = nl_recipe_block(r, l);
    *readers = 0;
    *why = "";
    for (int k = 0; k < b->n_steps; k++) {
        const NlStep *st = &b->step[k];
        if (st->norm != slot) continue;
        if (st->op != NL_STEP_NORM) {  // an inner norm: its branch's output projection reads it
            *readers = st->op == NL_STEP_ATTN ? NL_READ_PROJ : NL_READ_OUT;
            return NL_FOLD_INTO;
        }
        int added, to_end;
        *readers = readers_after(b, k, st->out, &added, &to_end);
        if (st->out != 0) {
            if (!added) return NL_FOLD_INTO;
            *why = "%s's output norm: added to the residual stream, which later blocks read through their skips";
            return NL_FOLD_KEEP;
        }
        int last = to_end && !added && l + 1 == L && !r->final_norm;  // the stream the head alone reads
        if (last) {
            *readers |= NL_READ_HEAD;
            return NL_FOLD_INTO;
        }
        *why = to_end && !added ? "%s placement: its output is the residual stream, read by the next block and its skip"
                                : "%s placement: its output is the residual stream, read by the MLP and by its skip";
        return NL_FOLD_KEEP;  // the stream: its skip reads it
    }
    return NL_FOLD_KEEP;  // not in this block
}
