/* Helpers shared by the subcommands: loading config, failing. */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"

struct config *cli_load_config(const char *path, struct error *err)
{
	return path ? config_load_file(path, err) : config_default(err);
}

int cli_fail(const char *what)
{
	fprintf(stderr, "gpu-admission: %s\n", what);
	return EXIT_USAGE;
}
