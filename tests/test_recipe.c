// test_recipe.c — the block as data (engine/recipe.c): each placement's row compiled to the steps,
// buffers and edges the executor and its questions rely on; a config.json "block" spelling a
// placement compiles to the same block; the fold rule, the stream's gains and the components asked
// of each. The executor's numbers are tools/reference/parity.py's (float64, every placement).
#include <string.h>

#include "check.h"
#include "normlab_internal.h"
#include "normlab_lab.h"
#include "recipe.h"

static NlRecipe recipe(NlPlacement p, int L, int mix_post) {
    NlRecipe r;
    NlError err = {NL_OK, ""};
    CHECK(nl_recipe_of_placement(&r, p, L, mix_post, &err) == 0, "placement %d: %s", (int)p, err.msg);
    return r;
}

// Field by field (a struct's padding is not compared).
static int same_block(const NlBlockRecipe *a, const NlBlockRecipe *b) {
    if (a->n_steps != b->n_steps || a->n_buffers != b->n_buffers || a->norms != b->norms ||
        a->entry_norm != b->entry_norm || a->exit_norm != b->exit_norm || a->scaled != b->scaled)
        return 0;
    for (int k = 0; k < a->n_steps; k++) {
        const NlStep *x = &a->step[k], *y = &b->step[k];
        if (x->op != y->op || x->norm != y->norm || x->in != y->in || x->out != y->out || x->scaled != y->scaled ||
            x->via != y->via)
            return 0;
    }
    return 1;
}

static int same_recipe(const NlRecipe *a, const NlRecipe *b) {
    return a->first_layers == b->first_layers && a->final_norm == b->final_norm &&
           same_block(&a->block[0], &b->block[0]) && same_block(&a->block[1], &b->block[1]);
}

static unsigned bits(int a, int b, int c, int d) {
    unsigned m = 0;
    int slots[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++)
        if (slots[i] >= 0) m |= 1u << slots[i];
    return m;
}

// Steps, scratch buffers, norms, the final norm, scaled adds and the norms at the block's edges: what
// the binder, the arena, the profiler and the watched sites take from each row.
static void each_placement_compiles_to_its_block(void) {
    static const struct {
        NlPlacement p;
        int steps, buffers, final_norm, scaled;
        unsigned norms;
        int entry, exit;
    } WANT[] = {
        {NL_PLACE_PRE, 6, 2, 1, 0, 0, NL_NS_LN_1, NL_NS_NONE},
        {NL_PLACE_POST, 6, 1, 0, 1, 0, NL_NS_NONE, NL_NS_LN_2},
        {NL_PLACE_PERI, 8, 2, 1, 0, 0, NL_NS_LN_1, NL_NS_NONE},
        {NL_PLACE_POST_SUBLAYER, 6, 2, 1, 0, 0, NL_NS_NONE, NL_NS_NONE},
        {NL_PLACE_PARALLEL, 6, 3, 1, 0, 0, NL_NS_LN_1, NL_NS_NONE},
        {NL_PLACE_PARALLEL_SHARED, 5, 3, 1, 0, 0, NL_NS_LN_1, NL_NS_NONE},
        {NL_PLACE_SUB, 6, 2, 1, 0, 0, NL_NS_LN_1, NL_NS_NONE},
    };
    unsigned norms[] = {bits(NL_NS_LN_1, NL_NS_LN_2, -1, -1),
                        bits(NL_NS_LN_1, NL_NS_LN_2, -1, -1),
                        bits(NL_NS_LN_1, NL_NS_LN_2, NL_NS_LN_1_POST, NL_NS_LN_2_POST),
                        bits(NL_NS_LN_1_POST, NL_NS_LN_2_POST, -1, -1),
                        bits(NL_NS_LN_1, NL_NS_LN_2, -1, -1),
                        bits(NL_NS_LN_1, -1, -1, -1),
                        bits(NL_NS_LN_1, NL_NS_LN_2, NL_NS_LN_1_SUB, NL_NS_LN_2_SUB)};
    for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
        NlRecipe r = recipe(WANT[i].p, 4, 1);
        const NlBlockRecipe *b = &r.block[0];
        const char *name = nl_placement_info(WANT[i].p)->name;
        CHECK(b->n_steps == WANT[i].steps && nl_recipe_buffers(&r) == WANT[i].buffers, "%s: %d steps, %d buffers", name,
              b->n_steps, nl_recipe_buffers(&r));
        CHECK(r.final_norm == WANT[i].final_norm && nl_recipe_scaled(&r) == WANT[i].scaled, "%s: final %d, scaled %d",
              name, r.final_norm, nl_recipe_scaled(&r));
        CHECK(nl_recipe_norms(&r) == norms[i], "%s: norms %#x, want %#x", name, nl_recipe_norms(&r), norms[i]);
        CHECK(b->entry_norm == WANT[i].entry && b->exit_norm == WANT[i].exit, "%s: edges %d, %d", name, b->entry_norm,
              b->exit_norm);
        CHECK(same_block(&r.block[0], &r.block[1]), "%s: every layer runs one block", name);
    }
}

// Mix: post's block for the first mix_post layers (at most L), pre's after.
static void mix_runs_post_then_pre(void) {
    NlRecipe mix = recipe(NL_PLACE_MIX, 8, 2), pre = recipe(NL_PLACE_PRE, 8, 0), post = recipe(NL_PLACE_POST, 8, 0);
    CHECK(mix.first_layers == 2 && mix.final_norm && nl_recipe_scaled(&mix), "first %d", mix.first_layers);
    CHECK(same_block(nl_recipe_block(&mix, 1), &post.block[0]) && same_block(nl_recipe_block(&mix, 2), &pre.block[0]),
          "layers 0-1 post, 2- pre");
    mix = recipe(NL_PLACE_MIX, 3, 9);
    CHECK(mix.first_layers == 3, "mix_post clamped to L: %d", mix.first_layers);
}

// A config.json "block" spelling pre, or peri, compiles to the placement's own block: the executor
// then runs the same steps on the same buffers, so the two give the same bits.
static void a_block_spelling_a_placement_compiles_alike(void) {
    static const char *const PRE[] = {"norm ln_1 x h", "attn h a", "add a", "norm ln_2 x g", "mlp g m", "add m"};
    static const char *const PERI[] = {"norm ln_1 x n1", "attn n1 att", "norm ln_1_post att o1", "add o1",
                                       "norm ln_2 x n2", "mlp n2 mlp",  "norm ln_2_post mlp o2", "add o2"};
    NlRecipe got, pre = recipe(NL_PLACE_PRE, 2, 0), peri = recipe(NL_PLACE_PERI, 2, 0);
    NlError err = {NL_OK, ""};
    CHECK(nl_recipe_parse(&got, PRE, 6, 1, "test", &err) == 0, "%s", err.msg);
    CHECK(same_recipe(&got, &pre), "pre spelled as a block");
    CHECK(nl_recipe_parse(&got, PERI, 8, 1, "test", &err) == 0, "%s", err.msg);
    CHECK(same_recipe(&got, &peri), "peri spelled with other slot names");
    CHECK(nl_recipe_parse(&got, PRE, 6, 0, "test", &err) == 0 && !got.final_norm, "final_norm false kept");
}

// Which linears read each norm (fold), for the last of L = 2 layers and the first.
static void the_fold_rule_reads_the_recipe(void) {
    static const struct {
        NlPlacement p;
        int layer, slot;
        NlFoldRule rule;
        unsigned readers;
    } WANT[] = {
        {NL_PLACE_PRE, 0, NL_NS_LN_1, NL_FOLD_INTO, NL_READ_QKV},
        {NL_PLACE_PRE, 1, NL_NS_LN_2, NL_FOLD_INTO, NL_READ_FC},
        {NL_PLACE_PERI, 0, NL_NS_LN_1_POST, NL_FOLD_KEEP, 0},
        {NL_PLACE_POST, 0, NL_NS_LN_1, NL_FOLD_KEEP, NL_READ_FC},
        {NL_PLACE_POST, 0, NL_NS_LN_2, NL_FOLD_KEEP, 0},
        {NL_PLACE_POST, 1, NL_NS_LN_2, NL_FOLD_INTO, NL_READ_HEAD},
        {NL_PLACE_POST_SUBLAYER, 1, NL_NS_LN_2_POST, NL_FOLD_KEEP, 0},
        {NL_PLACE_PARALLEL, 0, NL_NS_LN_2, NL_FOLD_INTO, NL_READ_FC},
        {NL_PLACE_PARALLEL_SHARED, 0, NL_NS_LN_1, NL_FOLD_INTO, NL_READ_QKV | NL_READ_FC},
        {NL_PLACE_SUB, 0, NL_NS_LN_1_SUB, NL_FOLD_INTO, NL_READ_PROJ},
        {NL_PLACE_SUB, 1, NL_NS_LN_2_SUB, NL_FOLD_INTO, NL_READ_OUT},
    };
    for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) {
        NlRecipe r = recipe(WANT[i].p, 2, 0);
        unsigned readers;
        const char *why;
        NlFoldRule rule = nl_recipe_fold_rule(&r, 2, WANT[i].layer, WANT[i].slot, &readers, &why);
        CHECK(rule == WANT[i].rule && readers == WANT[i].readers && (rule == NL_FOLD_INTO) == (why[0] == '\0'),
              "%s layer %d %s: rule %d readers %#x '%s'", nl_placement_info(WANT[i].p)->name, WANT[i].layer,
              nl_recipe_norm_name(WANT[i].slot), (int)rule, readers, why);
    }
    unsigned readers;
    const char *why;
    NlRecipe post = recipe(NL_PLACE_POST, 2, 0);
    nl_recipe_fold_rule(&post, 2, 0, NL_NS_LN_1, &readers, &why);
    CHECK(strstr(why, "read by the MLP and by its skip") != NULL, "post ln_1: '%s'", why);
}

// The norm whose gain a watched stream is named by, entering layer l of L = 2 (2: leaving the last),
// and whether only norms read the stream (fold --center's exactness).
static void the_stream_gains_and_readers(void) {
    int layer;
    NlRecipe pre = recipe(NL_PLACE_PRE, 2, 0), post = recipe(NL_PLACE_POST, 2, 0);
    NlRecipe sublayer = recipe(NL_PLACE_POST_SUBLAYER, 2, 0), mix = recipe(NL_PLACE_MIX, 2, 1);
    CHECK(nl_recipe_stream_norm(&pre, 2, 0, &layer) == NL_NS_LN_1 && layer == 0, "pre, entering 0: its ln_1");
    CHECK(nl_recipe_stream_norm(&pre, 2, 2, &layer) == NL_NS_FINAL, "pre, leaving: ln_f");
    CHECK(nl_recipe_stream_norm(&post, 2, 0, &layer) == NL_NS_NONE, "post, the embeddings: none");
    CHECK(nl_recipe_stream_norm(&post, 2, 1, &layer) == NL_NS_LN_2 && layer == 0, "post, entering 1: 0's ln_2");
    CHECK(nl_recipe_stream_norm(&post, 2, 2, &layer) == NL_NS_LN_2 && layer == 1, "post, leaving: 1's ln_2");
    CHECK(nl_recipe_stream_norm(&sublayer, 2, 1, &layer) == NL_NS_NONE, "post-sublayer: the raw stream");
    CHECK(nl_recipe_stream_norm(&mix, 2, 1, &layer) == NL_NS_LN_2 && layer == 0, "mix: after a post layer");
    static const NlPlacement EXACT[] = {NL_PLACE_PRE, NL_PLACE_PERI, NL_PLACE_PARALLEL, NL_PLACE_PARALLEL_SHARED,
                                        NL_PLACE_SUB};
    static const NlPlacement INEXACT[] = {NL_PLACE_POST, NL_PLACE_POST_SUBLAYER, NL_PLACE_MIX};
    for (size_t i = 0; i < sizeof EXACT / sizeof EXACT[0]; i++) {
        NlRecipe r = recipe(EXACT[i], 2, 1);
        CHECK(nl_recipe_stream_read_by_norms(&r), "%s: only norms read the stream", nl_placement_info(EXACT[i])->name);
    }
    for (size_t i = 0; i < sizeof INEXACT / sizeof INEXACT[0]; i++) {
        NlRecipe r = recipe(INEXACT[i], 2, 1);
        CHECK(!nl_recipe_stream_read_by_norms(&r), "%s: a branch reads the raw stream",
              nl_placement_info(INEXACT[i])->name);
    }
}

// The profiler's components: the norms a recipe runs (the final norm always listed), and the table's
// public rows: every name parses back to its placement, every swap is a placement of the table.
static void components_and_the_public_table(void) {
    NlRecipe sub = recipe(NL_PLACE_SUB, 2, 0), pre = recipe(NL_PLACE_PRE, 2, 0), peri = recipe(NL_PLACE_PERI, 2, 0);
    CHECK(nl_recipe_has_component(&sub, NL_COMP_NORM1_SUB) && nl_recipe_has_component(&sub, NL_COMP_NORM2_SUB) &&
              !nl_recipe_has_component(&pre, NL_COMP_NORM1_SUB) && !nl_recipe_has_component(&pre, NL_COMP_NORM1_POST),
          "sub's inner norms, pre's none");
    CHECK(nl_recipe_has_component(&peri, NL_COMP_NORM2_POST) && nl_recipe_has_component(&pre, NL_COMP_QKV),
          "peri's output norms; every branch component");
    const char *names[NL_PLACEMENTS_MAX + 1];
    NlPlacement values[NL_PLACEMENTS_MAX];
    size_t n = nl_recipe_placements(names, values);
    CHECK(n == 9 && names[n] == NULL, "%zu placements", n);
    for (size_t i = 0; i < n; i++) {
        int v = -1;
        const NlPlacementInfo *info = nl_placement_info(values[i]);
        CHECK(nl_name_parse(NL_NAMES_PLACEMENT, names[i], &v) == 0 && v == (int)values[i] && info &&
                  strcmp(info->name, names[i]) == 0 && nl_placement_info(info->swap) && info->swap != values[i],
              "%s", names[i]);
    }
    CHECK(nl_placement_info(NL_PLACE_AS_CONFIGURED) == NULL, "as configured has no row");
}

int main(void) {
    RUN(each_placement_compiles_to_its_block);
    RUN(mix_runs_post_then_pre);
    RUN(a_block_spelling_a_placement_compiles_alike);
    RUN(the_fold_rule_reads_the_recipe);
    RUN(the_stream_gains_and_readers);
    RUN(components_and_the_public_table);
    return check_summary("test_recipe");
}
