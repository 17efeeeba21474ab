/*
 * gpu-admission: GPU admission webhook and offline auditor for AKS.
 * main() only dispatches to a command of the table (cli_table.c).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

int main(int argc, char **argv)
{
	const struct cli_command *cmd;

	if (argc < 2) {
		cli_write_overview(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		argv[1] = (char *)"help";
	else if (strcmp(argv[1], "--version") == 0)
		argv[1] = (char *)"version";
	cmd = cli_find(argv[1]);
	if (cmd == NULL)
		return cli_unknown_command(argv[1]);
	return cmd->run(cmd, argc - 1, argv + 1);
}
