/*
 * The subcommands of gpu-admission. Each parses its own arguments and wires
 * pkg/ modules together; none holds policy logic. Each returns the process
 * exit code: 0 done, 1 a policy finding (rejection), 2 usage or input error.
 */
#ifndef GPU_ADMISSION_COMMANDS_H
#define GPU_ADMISSION_COMMANDS_H

#include <stddef.h>

#include "config.h"
#include "error.h"

#define EXIT_OK 0
#define EXIT_FINDING 1
#define EXIT_USAGE 2

int cmd_review(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_certs(int argc, char **argv);
int cmd_check_config(int argc, char **argv);
int cmd_print_default_config(int argc, char **argv);
int cmd_print_autoscaler_config(int argc, char **argv);

/* New: the config from path, or the embedded default when path is NULL. */
struct config *cli_load_config(const char *path, struct error *err);

/* Prints "gpu-admission: <what>" on stderr; returns EXIT_USAGE. */
int cli_fail(const char *what);

#endif
