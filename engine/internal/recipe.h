// recipe.h — a transformer block as data (docs/comparing.md gives each placement's equations,
// docs/format.md the grammar of config.json's "block"). A block is a short list of steps over named
// slots: the residual stream x, scratch slots of its width, and the norms' weights:
//   norm N IN OUT       OUT = norm N of IN (OUT x: the stream becomes it, as in post placement)
//   attn IN OUT [N]     OUT = c_proj(Attn(c_attn(IN))), N (if given) normalising Attn's output first
//   mlp IN OUT [N]      OUT = c_proj(act(c_fc(IN))), N (if given) normalising the hidden first
//   add IN [scaled]     x = x + IN, or (scaled) residual_scale * x + IN (DeepNorm)
// One executor (transformer.c's block) runs any recipe; every question about a block's shape (which
// norms exist, what reads each one, the gain a watched site sees, the components a run has) is asked
// here, and no other file names a placement's value.
#ifndef NL_RECIPE_H
#define NL_RECIPE_H

#include <stddef.h>
#include <stdint.h>

#include "normlab.h"

#pragma GCC visibility push(hidden)

// The norms a block can hold, by their tensors' names h.{i}.NAME: ln_1, ln_2 (before or after each
// branch), ln_1_post, ln_2_post (on each branch's output), ln_1_sub, ln_2_sub (inside each branch:
// before attention's output projection, width D, and the MLP's down projection, width F).
typedef enum {
    NL_NS_LN_1,
    NL_NS_LN_2,
    NL_NS_LN_1_POST,
    NL_NS_LN_2_POST,
    NL_NS_LN_1_SUB,
    NL_NS_LN_2_SUB,
    NL_NS_COUNT
} NlNormSlot;
#define NL_NS_NONE 0xff
#define NL_RECIPE_STEPS_MAX 16  // steps in a block
#define NL_RECIPE_SLOTS_MAX 6  // scratch slots a block names beside x

typedef enum { NL_STEP_NORM, NL_STEP_ATTN, NL_STEP_MLP, NL_STEP_ADD } NlStepOp;

// One step, its slots as buffers: 0 the stream x, 1.. the scratch buffers the executor keeps.
typedef struct {
    uint8_t op;  // NlStepOp
    uint8_t norm;  // NORM: its NlNormSlot; ATTN, MLP: the inner norm or NL_NS_NONE
    uint8_t in, out;  // buffers (ADD: in only)
    uint8_t scaled;  // ADD: x scaled by residual_scale first
    uint8_t via;  // NORM into x (out 0): the scratch buffer written, which then becomes the stream
} NlStep;

typedef struct {
    NlStep step[NL_RECIPE_STEPS_MAX];
    int n_steps;
    int n_buffers;  // scratch buffers (rows, D) beside the stream
    unsigned norms;  // bit (1u << slot) for each norm it runs
    uint8_t entry_norm;  // the norm reading the stream as the block receives it, or NL_NS_NONE
    uint8_t exit_norm;  // the norm whose output the stream leaves as, or NL_NS_NONE
    int scaled;  // it has a scaled add
} NlBlockRecipe;

// A stack's recipe: layers 0..first_layers-1 run block[0], the others block[1]; the final norm
// (ln_f) between the last block and the head, or none.
typedef struct {
    NlBlockRecipe block[2];
    int first_layers;
    int final_norm;
} NlRecipe;

// The name of a norm slot ("ln_1_post").
const char *nl_recipe_norm_name(int slot);
// The component a norm slot's calls are timed as.
NlComponent nl_recipe_norm_component(int slot);
// The placements' names (NULL-terminated, room for NL_PLACEMENTS_MAX + 1) and values in the table's
// order, either NULL; their count.
#define NL_PLACEMENTS_MAX 16
size_t nl_recipe_placements(const char **names, NlPlacement *values);
// Placement p's row (normlab.h's NlPlacementInfo; the lab's nl_placement_info), NULL for none.
const NlPlacementInfo *nl_recipe_info(NlPlacement p);
// The format version that first names placement p.
int nl_recipe_placement_version(NlPlacement p);

// *r = the recipe of placement p (not NL_PLACE_CUSTOM) for L layers, mix's leading post layers
// mix_post (used by mix only).
int nl_recipe_of_placement(NlRecipe *r, NlPlacement p, int L, int mix_post, NlError *err);
// *r = the recipe of config.json's "block": n step strings (grammar above), checked (docs/format.md
// lists the errors); final_norm 1 ends the stack with ln_f. what names the file in errors.
int nl_recipe_parse(NlRecipe *r, const char *const *steps, size_t n, int final_norm, const char *what, NlError *err);

// c's placement, mix_post_layers and recipe from config.json: the placement named, as its place in
// nl_recipe_placements' list (-1 where the file names none: pre), its "block" steps (NULL: none),
// "final_norm" and "mix_post_layers" (-1 where not given). Needs c's n_layer.
int nl_recipe_of_config(NlConfig *c, int named, const char *const *steps, size_t n, int final_norm, int mix,
                        const char *what, NlError *err);
// 1 when run options name a placement (not "as configured").
static inline int nl_placement_named(NlPlacement p) { return p != NL_PLACE_AS_CONFIGURED; }
// The rules c's placement sets a config (its format version, residual_scale only with scaled adds,
// norm none with pre only).
int nl_recipe_check_config(const NlConfig *c, int has_scale, int version, const char *what, NlError *err);

// info's fields of c's block: placement, mix_post_layers (mix), final_norm (custom) and, with scale
// (a family whose config has it), residual_scale where adds are scaled; their count (at most 3).
size_t nl_recipe_describe(const NlConfig *c, int scale, NlConfigField *f);

// The block layer l runs.
static inline const NlBlockRecipe *nl_recipe_block(const NlRecipe *r, int l) {
    return &r->block[l < r->first_layers ? 0 : 1];
}
// Bits of the norms any layer runs.
static inline unsigned nl_recipe_norms(const NlRecipe *r) { return r->block[0].norms | r->block[1].norms; }
static inline int nl_recipe_scaled(const NlRecipe *r) { return r->block[0].scaled || r->block[1].scaled; }
// The scratch buffers the executor needs.
static inline int nl_recipe_buffers(const NlRecipe *r) {
    return r->block[0].n_buffers > r->block[1].n_buffers ? r->block[0].n_buffers : r->block[1].n_buffers;
}
// 1 when comp is one of the recipe's (the norms it runs, the final norm; every other transformer
// component always).
int nl_recipe_has_component(const NlRecipe *r, NlComponent comp);
// The norm slot whose gain a watched stream entering layer l (L: leaving the last) is named by:
// that it last passed through, else that it is about to; NL_NS_NONE when neither (final: ln_f, as -2).
#define NL_NS_FINAL 0xfe
int nl_recipe_stream_norm(const NlRecipe *r, int L, int l, int *layer);
// 1 when every read of the stream is a norm's (LayerNorm there removes the mean: fold's center is exact).
int nl_recipe_stream_read_by_norms(const NlRecipe *r);

// Fold: where the output of norm slot goes in layer l of L. FOLD_INTO: only linears read it (*readers
// bits: 1 c_attn, 2 attn c_proj, 4 c_fc, 8 mlp c_proj, 16 the head); FOLD_KEEP: the stream or a
// residual add reads it (*why says which: a format with one %s, the placement's name).
typedef enum { NL_FOLD_INTO, NL_FOLD_KEEP } NlFoldRule;
#define NL_READ_QKV 1u
#define NL_READ_PROJ 2u
#define NL_READ_FC 4u
#define NL_READ_OUT 8u
#define NL_READ_HEAD 16u
NlFoldRule nl_recipe_fold_rule(const NlRecipe *r, int L, int l, int slot, unsigned *readers, const char **why);

#pragma GCC visibility pop

#endif
