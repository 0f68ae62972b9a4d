// help.h — every help text, from the command and option tables (help.c).
#ifndef NL_CLI_HELP_H
#define NL_CLI_HELP_H

#include <stdio.h>

#include "commands.h"

int help_main(FILE *f);  // `normlab --help`: the commands from the table
int help_command(FILE *f, const Command *c);  // `normlab help CMD`: its usage, paragraph and rows
int help_options_table(FILE *f);  // `normlab help --options-table`: every row, tab-separated
int help_markdown(FILE *f);  // `normlab help --markdown`: docs/cli.md
int help_man(FILE *f);  // `normlab help --man`: the man page's COMMANDS section, in roff (tools/dev/make_man.sh)

#endif
