// cmd_profile.c — profile: generate's run with the text dropped and the profile as its result
// (report_profile.c writes it: a summary, or with --layers the full table).
#define _GNU_SOURCE
#include "cli.h"
#include "cmd_generate.h"
#include "commands.h"

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
