// cmd_profile.c — profile: generate's run with the text dropped and the profile as its result
// (report_profile.c writes it: a summary, or with --layers the full table).
#define _GNU_SOURCE
#include "cli.h"
#include "cmd_generate.h"
#include "commands.h"
#include "option_rows.h"

// The profile command's default prompt (our own line), used when the vocabulary has its characters.
static const char *const PROFILE_PROMPT = "KING:\nNow speak, good friend, and tell me true:\nWhat news from Milan?\n";

int cmd_profile(Options *o) {
    const RunMode profile = {.keep_text = 0, .draw_seed = 0, .profile_result = 1, .default_prompt = PROFILE_PROMPT};
    if (o->n_new < 0) {
        msg_usage(o->cmd, "-n -1 goes with generate -i; give profile a count");
        return EXIT_USAGE;
    }
    return generate_run(o, &profile);
}

// ---- its options, declared once (the parser, help, the man page and completion read them;
// option_rows.h holds the rows several commands share), and the relations between them

const OptSpec PROFILE_OPTIONS[] = {
    OPT_HELP,
    OPT_MODEL,
    {.name = "prompt",
     .letter = 'p',
     .type = OT_STRING,
     .arg = "TEXT",
     .field = OPT_FIELD(prompt),
     .help = "the prompt; absent: a built-in line (named in the report), or a newline if the vocabulary lacks "
             "its characters"},
    OPT_START,
    OPT_PROMPT_FILE,
    OPT_STEPS,
    OPT_SAMPLING,
    OPT_ESCAPE,
    {.name = "seed",
     .letter = 's',
     .type = OT_SEED,
     .arg = "S",
     .range = "-1 (random) or an integer in [0, 2^64-1]",
     .def = "0",
     .help = "the sampler's seed (the run is repeatable by default)"},
    {.name = "json",
     .type = OT_FLAG,
     .field = OPT_FIELD(json),
     .value = 1,
     .help = "the report as JSON instead of the tables (every layer x component)"},
    OPT_OUTPUT,
    OPT_SAMPLES,
    OPT_BATCH,
    OPT_THREADS("as for generate; with several threads the times are summed over them"),
    OPT_NORM,
    OPT_PLACEMENT,
    OPT_QK_NORM,
    OPT_BN_STATS,
    OPT_EXACT_WINDOW,
    OPT_SKIP_UNKNOWN,
    OPT_SPECIAL,
    {.name = "layers",
     .type = OT_FLAG,
     .field = OPT_FIELD(layers),
     .value = 1,
     .help = "print the full layer x component table, as before"},
    OPT_COUNTERS,
    {.name = "trace",
     .type = OT_STRING,
     .arg = "FILE",
     .field = OPT_FIELD(trace_out),
     .help = "write a Chrome trace (Perfetto, chrome://tracing) to FILE"},
    OPT_QUANTIZE,
    OPT_QUANTIZE_ONLY,
    OPT_QUANTIZE_ACT,
    OPT_NO_MMAP,
    OPT_NO_REPACK,
    OPT_END,
};

const OptRelation PROFILE_RELATIONS[] = {QUANTIZE_ONLY(quantize), START_ALONE, PROMPT_OR_FILE, REL_END};
