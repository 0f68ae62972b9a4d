// help.c — every help text, generated from the command and option tables: `normlab --help`,
// `normlab help CMD`, the tab-separated table the man page and completion scripts read, and
// docs/cli.md. None of them is written by hand, so none can disagree with the parser.
#define _GNU_SOURCE
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "help.h"
#include "options.h"

#define WIDTH 100  // help lines at most this long
#define INDENT 25  // where an option's text starts

// Writes text from column col, wrapped at WIDTH, continuing at column indent; ends the line.
static int wrap(FILE *f, const char *text, size_t col, size_t indent) {
    int ok = 1;
    for (const char *p = text; *p;) {
        size_t word = strcspn(p, " ");
        if (col > indent && col + 1 + word > WIDTH) {
            ok &= fprintf(f, "\n%*s", (int)indent, "") > 0;
            col = indent;
        } else if (col > indent) {
            ok &= fputc(' ', f) != EOF;
            col++;
        }
        ok &= fwrite(p, 1, word, f) == word;
        col += word;
        p += word;
        p += strspn(p, " ");
    }
    return ok && fputc('\n', f) != EOF;
}

// An option's text: its help, then its values and default ("N is an integer in [1, 256]; default 1").
static void option_text(char *buf, size_t cap, const OptSpec *s) {
    const char *def = s->def_text ? s->def_text : s->def;
    char words[256];
    const char *range = option_range(s, words, sizeof words);
    int n = snprintf(buf, cap, "%s", s->help);
    if (range && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, ". %s is %s%s%s", s->arg, range, def ? "; default " : "",
                      def ? def : "");
    else if (def && n >= 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, ". Default: %s", def);
    if (n >= 0 && (size_t)n + 1 < cap && s->type != OT_HELP) strcat(buf, ".");
}

// "  -n, --steps N" or "      --json".
static void option_left(char *buf, size_t cap, const OptSpec *s) {
    char letter[8] = "    ";
    if (s->letter) snprintf(letter, sizeof letter, "-%c, ", s->letter);
    snprintf(buf, cap, "  %s--%s%s%s", letter, s->name, s->arg ? " " : "", s->arg ? s->arg : "");
}

int help_main(FILE *f) {
    int ok = fprintf(f, "usage: normlab COMMAND [options]\n\ncommands:\n") > 0;
    for (size_t i = 0; i < N_COMMANDS; i++) ok &= fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary) > 0;
    ok &= fprintf(f, "  %-10s %s\n", "help CMD", "the options of one command") > 0;
    ok &= fprintf(f, "  %-10s %s\n\n", "version", "the version (also --version)") > 0;
    ok &= fprintf(f, "Models are named by path or by name (-m shakespeare-post-rms), looked up in $NORMLAB_MODELS,\n"
                     "weights/ beside the binary, and the installed share/normlab/models ('normlab list'). A name\n"
                     "with a '/' is a path; a bare name found in none of those folders is one in the working folder.\n"
                     "Exit status: 0 ok, 1 runtime or data error, 2 usage error.\n") > 0;
    return ok ? 0 : -1;
}

int help_command(FILE *f, const Command *c) {
    char left[64], text[1024];
    int ok = fprintf(f, "usage: normlab %s", c->name) > 0 && wrap(f, c->usage, 15 + strlen(c->name), 16);
    ok &= fputc('\n', f) != EOF && wrap(f, c->about, 0, 0);
    if (c->positional) {
        snprintf(left, sizeof left, "  %s", c->positional);
        ok &= fprintf(f, "%-*s", INDENT, left) > 0 && wrap(f, c->positional_help, INDENT, INDENT);
    }
    for (const OptSpec *s = c->options; s->name; s++) {
        option_left(left, sizeof left, s);
        option_text(text, sizeof text, s);
        size_t col = strlen(left) + 2 <= INDENT ? INDENT : strlen(left) + 2;
        ok &= fprintf(f, "%-*s", (int)col, left) > 0 && wrap(f, text, col, INDENT);
    }
    ok &= fprintf(f, "A long option may be shortened to any unambiguous prefix after two dashes, written with one\n"
                     "dash by its exact name, and with _ for - (--max_new_tokens).\n") > 0;
    return ok ? 0 : -1;
}

static const char *const TYPE_NAMES[] = {"help", "flag",   "string", "models", "list",  "int",
                                         "long", "double", "seed",   "choice", "string"};
// (an integer list is "string" to the table's readers, the man page and the completion: a word to type)
_Static_assert(sizeof TYPE_NAMES / sizeof TYPE_NAMES[0] == OT_INT_LIST + 1, "a name for every OptType");

// The values at the edges of a numeric row's range, space-separated: the smallest and largest
// accepted (and the default) into acc, the nearest refused ones into ref.
static void edges(const OptSpec *s, char *acc, size_t na, char *ref, size_t nr) {
    const char *def = s->def ? s->def : "";
    acc[0] = ref[0] = '\0';
    if (s->type == OT_INT || s->type == OT_LONG) {
        snprintf(acc, na, "%lld %lld%s%s", s->lo, s->hi, *def ? " " : "", def);
        snprintf(ref, nr, "%lld %llu", s->lo - 1, (unsigned long long)s->hi + 1);
    } else if (s->type == OT_SEED) {
        snprintf(acc, na, "-1 0 18446744073709551615%s%s", *def ? " " : "", def);
        snprintf(ref, nr, "-2 18446744073709551616");
    } else if (s->type == OT_DOUBLE) {
        int open = s->flags & OPT_MIN_OPEN, zero = s->flags & OPT_ZERO_OK;
        // (the smallest normal double above an open 0: subnormal numbers are refused)
        double lo = open ? (s->dlo == 0 ? DBL_MIN : nextafter(s->dlo, INFINITY)) : s->dlo;
        snprintf(acc, na, "%.17g %.17g%s%s%s", lo, s->dhi, zero ? " 0" : "", *def ? " " : "", def);
        snprintf(ref, nr, "%.17g %.17g", open ? s->dlo : nextafter(s->dlo, -INFINITY), nextafter(s->dhi, INFINITY));
        if (zero) snprintf(ref + strlen(ref), nr - strlen(ref), " %.17g", -DBL_MIN);  // the nearest below 0
    }
}

int help_options_table(FILE *f) {
    int ok = fprintf(f, "# command\tlong\talias\tshort\ttype\targ\tdefault\tchoices\taccepted\trefused\n") > 0;
    char acc[128], ref[128], words[256];
    for (size_t c = 0; c < N_COMMANDS; c++)
        for (const OptSpec *s = COMMANDS[c].options; s->name; s++) {
            const char *choices = option_choices(s, words, sizeof words);
            edges(s, acc, sizeof acc, ref, sizeof ref);
            char letter[4] = "-";
            if (s->letter) snprintf(letter, sizeof letter, "-%c", s->letter);
            ok &= fprintf(f, "%s\t--%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", COMMANDS[c].name, s->name,
                          s->alias ? s->alias : "-", letter, TYPE_NAMES[s->type], s->arg ? s->arg : "-",
                          s->def ? s->def : "-", choices ? choices : "-", *acc ? acc : "-", *ref ? ref : "-") > 0;
        }
    return ok ? 0 : -1;
}

int help_markdown(FILE *f) {
    int ok =
        fprintf(f,
                "# The normlab command line\n\n"
                "Generated from the option rows (each command's, in engine/cli/cmd_*.c) by `normlab help --markdown`;\n"
                "tests/options_test.sh checks that this file, `normlab help CMD`, the man page and the bash\n"
                "completion agree with it. Exit status: 0 ok, 1 runtime or data error, 2 usage error.\n\n"
                "```text\n") > 0;
    ok &= help_main(f) == 0 && fprintf(f, "```\n") > 0;
    for (size_t c = 0; c < N_COMMANDS; c++) {
        ok &= fprintf(f, "\n## %s\n\n```text\n", COMMANDS[c].name) > 0;
        ok &= help_command(f, &COMMANDS[c]) == 0 && fprintf(f, "```\n") > 0;
    }
    return ok ? 0 : -1;
}

// Text for roff: a backslash as \e, a dash as \- (an option's, so that it is not a hyphen), and a
// line's leading . or ' escaped (the texts are one line each, so only their start).
static int roff(FILE *f, const char *s) {
    int ok = !(*s == '.' || *s == '\'') || fputs("\\&", f) != EOF;
    for (; *s && ok; s++)
        ok = *s == '\\' ? fputs("\\e", f) != EOF : *s == '-' ? fputs("\\-", f) != EOF : fputc(*s, f) != EOF;
    return ok;
}

// Each command as a subsection: its usage, its paragraph, then each option as a tagged paragraph
// (.TP: the option in bold, its value in italics, then its text).
int help_man(FILE *f) {
    char text[1024];
    int ok = fprintf(f, ".SH COMMANDS\n") > 0;
    for (size_t c = 0; c < N_COMMANDS && ok; c++) {
        const Command *cmd = &COMMANDS[c];
        ok &= fprintf(f, ".SS %s\n.B normlab %s\n", cmd->name, cmd->name) > 0 && roff(f, cmd->usage);
        ok &= fprintf(f, "\n.PP\n") > 0 && roff(f, cmd->about) && fputc('\n', f) != EOF;
        if (cmd->positional)
            ok &= fprintf(f, ".TP\n.I %s\n", cmd->positional) > 0 && roff(f, cmd->positional_help) &&
                  fputc('\n', f) != EOF;
        for (const OptSpec *s = cmd->options; s->name && ok; s++) {
            ok &= fputs(".TP\n", f) != EOF;
            if (s->letter) ok &= fprintf(f, "\\fB\\-%c\\fR, ", s->letter) > 0;
            ok &= fputs("\\fB", f) != EOF && roff(f, "--") && roff(f, s->name) && fputs("\\fR", f) != EOF;
            if (s->arg) ok &= fputs(" \\fI", f) != EOF && roff(f, s->arg) && fputs("\\fR", f) != EOF;
            option_text(text, sizeof text, s);
            ok &= fputc('\n', f) != EOF && roff(f, text) && fputc('\n', f) != EOF;
        }
    }
    return ok ? 0 : -1;
}
