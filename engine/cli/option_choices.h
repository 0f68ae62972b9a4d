// option_choices.h — the words of choice options read into their values: 0 and *out, or -1 (option_choices.c).
#ifndef NL_CLI_OPTION_CHOICES_H
#define NL_CLI_OPTION_CHOICES_H

#include <stddef.h>

int choose_norm(const char *w, int *out);
int choose_placement(const char *w, int *out);
// The placements' names from the recipes' table: "pre, post, ... or custom (any case)" (as_range) or
// "pre post ... custom".
void placement_words(char *buf, size_t cap, int as_range);

int choose_qk_norm(const char *w, int *out);
int choose_bn(const char *w, int *out);
int choose_bn_or_both(const char *w, int *out);
int choose_quant(const char *w, int *out);
int choose_act_quant(const char *w, int *out);
int choose_quant_rows(const char *w, int *out);
int choose_format(const char *w, int *out);
int choose_quant_only(const char *w, int *out);
int choose_dtype(const char *w, int *out);
int choose_lens_scale(const char *w, int *out);

#endif
