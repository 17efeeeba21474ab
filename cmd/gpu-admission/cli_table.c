/*
 * cli_table: the commands of gpu-admission, in the order help lists them.
 * Data only: main() dispatches through it, and help, the man page and the
 * completions (cli_help.c, cli_completion.c) read it, so none of them needs
 * main.c.
 */
#include "commands.h"

/* Every command; help, the man page and the completions follow this table. */
const struct cli_command *const cli_commands[] = {
	&cmd_review, &cmd_audit, &cmd_report, &cmd_watch, &cmd_serve, &cmd_certs, &cmd_check_config,
	&cmd_print_default_config, &cmd_print_autoscaler_config, &cmd_print_kueue_config,
	&cmd_print_match_conditions,
	&cmd_print_admission_policies,
	&cmd_completion, &cmd_version, &cmd_help,
};
const size_t cli_n_commands = sizeof cli_commands / sizeof cli_commands[0];
