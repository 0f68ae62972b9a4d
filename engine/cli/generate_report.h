// generate_report.h — generate's printing besides the streamed text (generate_report.c).
#ifndef NL_CLI_GENERATE_REPORT_H
#define NL_CLI_GENERATE_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "collect.h"

// The n collected texts to out: JSON lines ({"sample", "seed", "prompt", "text"}, llama-server's stop
// fields, --n-probs' records, and st's timings for one stream), or one block per sample under a
// '--- sample i, seed S ---' line echoing the prompt. model and run (its run name) start each JSON
// line when several models run; NULL: one model. 0, or -1 when a write failed.
int print_samples(FILE *out, const Collect *c, int n, uint64_t seed, const Options *o, const char *prompt,
                  size_t prompt_len, const NlGenerateStats *st, const char *model, const char *run);
// What ended streams early, for print_timing, as bits: 1 --stop, 2 </s>, 4 a sampled <s> (eos_ended
// holds END_BY_* bits).
int stop_kind(const Options *o, int eos_ended);
// The timing line on stderr: prefill, the n_new new tokens (unit: "character" or "token") of each of
// streams, decode's rate without the context shifts, the shifts, and what ended streams (stop_kind's
// bits, 0 none). label names the model when several run (NULL: one).
void print_timing(const NlGenerateStats *st, size_t n_new, int streams, const char *label, const char *unit,
                  int stopped);
// The new tokens of each stream: -n, or fewer when --stop or an end token ended every stream sooner.
size_t new_tokens(const Options *o, const NlGenerateStats *st);

#endif
