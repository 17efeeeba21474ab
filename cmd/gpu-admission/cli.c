/* Helpers shared by the subcommands: reading input, loading config, failing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

char *cli_read_all(FILE *f, size_t max, size_t *len, struct error *err)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap + 1), *grown;

	if (buf == NULL)
		goto nomem;
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n > max) {
			error_set(err, ERROR_TOO_LARGE, "input larger than %zu bytes", max);
			free(buf);
			return NULL;
		}
		if (got == 0 || n < cap) {
			if (ferror(f)) {
				error_set(err, ERROR_SYSTEM, "read failed: %s", strerror(errno));
				free(buf);
				return NULL;
			}
			if (feof(f))
				break;
			continue;
		}
		cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
		grown = realloc(buf, cap + 1);
		if (grown == NULL)
			goto nomem;
		buf = grown;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
nomem:
	free(buf);
	error_set(err, ERROR_NOMEM, "out of memory reading input");
	return NULL;
}

struct config *cli_load_config(const char *path, struct error *err)
{
	return path ? config_load_file(path, err) : config_default(err);
}

int cli_fail(const char *what)
{
	fprintf(stderr, "gpu-admission: %s\n", what);
	return EXIT_USAGE;
}
