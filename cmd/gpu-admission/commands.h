/*
 * The command line of gpu-admission: one grammar for every subcommand.
 *
 * A command is a struct cli_command: its name, its help texts, its options
 * and its exit codes, next to the function that runs it. cli_table.c lists the
 * commands in cli_commands[]; `help`, `COMMAND --help`, the man page
 * (`help --man`) and the shell completions (`completion bash|zsh`) are all
 * generated from that table, so a new command is covered by adding it there.
 *
 * Every command parses its arguments with cli_next() (the same spelling of
 * options, the same one-line errors everywhere), reports failures with
 * cli_fail() / cli_usage() ("gpu-admission COMMAND: ..." on stderr) and
 * returns an exit code from cli_exit_code(): the one place errors become
 * exit codes. None holds policy logic: they parse and wire pkg/ modules.
 */
#ifndef GPU_ADMISSION_COMMANDS_H
#define GPU_ADMISSION_COMMANDS_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "policy/config.h"
#include "base/error.h"

/* The exit codes of every command (README.md "Exit codes" and cmd/gpu-admission/README.md; cli_exit_table[] words them). */
#define EXIT_OK 0       /* done; the answer is yes */
#define EXIT_FINDING 1  /* the answer is no: a rejection, or an invalid policy for check-config */
#define EXIT_USAGE 2    /* usage or input error: the command could not do its job */

/* An option. Its long form is --name (or --name=VALUE); key < 128 also gives -key. */
struct cli_option {
	const char *name;  /* "config" */
	int key;           /* what cli_next() returns: 'c' (also -c), or >= CLI_LONG_ONLY */
	const char *arg;   /* NULL: a switch; else its value's name in help: "FILE", "DIR",
	                      "N", or the choices "text|json|yaml" (cli_choice() checks them) */
	const char *help;  /* what it does; '\n' starts a new help line */
	unsigned flags;    /* CLI_HIDDEN */
};

#define CLI_LONG_ONLY 256  /* first key of options without a short form */
#define CLI_HIDDEN 1u      /* accepted but not listed (an old spelling) */

/* One line of a command's "Exit status" list. */
struct cli_exit {
	int code;
	const char *text;
};

struct cli_command {
	const char *name;          /* "audit" */
	const char *summary;       /* one line, for `gpu-admission help` */
	const char *usage;         /* after "gpu-admission NAME ": "[OPTIONS] PATH..." */
	const char *description;   /* paragraphs, lines of at most 78 columns */
	const struct cli_option *options; /* ends with { NULL }; -h/--help is implied */
	const char *operands;      /* what operands are, for completion: "FILE", "PATH" (files
	                              and directories), "COMMAND", "bash|zsh"; NULL: none */
	const struct cli_exit *exits;     /* ends with { 0, NULL }; NULL: the common table */
	const char *examples;      /* command lines, one per line; may be NULL */
	int (*run)(const struct cli_command *cmd, int argc, char **argv);
};

/* The commands, in the order `help` lists them (cli_table.c). */
extern const struct cli_command *const cli_commands[];
extern const size_t cli_n_commands;

/* What every exit code means for every command (help, man page, README.md, cmd/gpu-admission/README.md). */
extern const struct cli_exit cli_exit_table[];

/* The command named name, or NULL. */
const struct cli_command *cli_find(const char *name);

/* "0.2.0 (f800f9e)": the version and the git revision it was built from. */
const char *cli_version(void);

/* "0.2.0": the release version alone (what the server reports in its metrics). */
const char *cli_version_number(void);

/* ==== Parsing ==== */

/* What cli_next() returns besides an option's key. */
#define CLI_OPERAND 0    /* p->value is an operand */
#define CLI_END (-1)     /* all arguments read */
#define CLI_STOP (-2)    /* --help was printed, or a usage error: return cli_stop(p) */

struct cli_parser {
	const struct cli_command *cmd;
	int argc;
	char **argv;
	int i;                        /* next argv index */
	const char *shorts;           /* the rest of a "-abc" group */
	int operands_only;            /* after "--" */
	int exit;                     /* the exit code once CLI_STOP was returned */
	const char *value;            /* the option's value, or the operand */
	const struct cli_option *opt; /* the option just returned */
};

/* Starts parsing argv[1..argc) (argv[0] is the command's name; borrowed) for cmd. */
void cli_parse(struct cli_parser *p, const struct cli_command *cmd, int argc, char **argv);

/*
 * The next option's key (p->value holds its value, p->opt the option),
 * CLI_OPERAND (p->value holds it), CLI_END, or CLI_STOP after printing help
 * (-h, --help) or one line for a usage error ("unknown option --foo (see
 * gpu-admission audit --help)"). Options and operands may be mixed; "--" ends
 * the options and "-" is an operand (stdin).
 */
int cli_next(struct cli_parser *p);

/* The exit code after CLI_STOP: 0 after --help, EXIT_USAGE after an error. */
int cli_stop(const struct cli_parser *p);

/*
 * The index of p->value among the choices of p->opt->arg ("text|json|yaml"),
 * or -1 after printing "--output takes text, json or yaml, not "xml"".
 */
int cli_choice(struct cli_parser *p);

/*
 * For commands whose only arguments are operands: parses argv and returns
 * the one operand (what says what it is, for messages: "FILE"), or NULL with
 * *rc the exit code to return (after --help, or a usage error: none, or more
 * than one). cli_no_operands() is the same for commands that take none:
 * -1 to go on, else the exit code.
 */
const char *cli_one_operand(const struct cli_command *cmd, int argc, char **argv, const char *what, int *rc);
int cli_no_operands(const struct cli_command *cmd, int argc, char **argv);

/* p->value as a decimal in [min, max]: 0, or -1 after printing why not. */
int cli_number(struct cli_parser *p, unsigned long long min, unsigned long long max,
	       unsigned long long *out);

/* ==== Reporting ==== */

/*
 * Prints "gpu-admission CMD: <message> (see gpu-admission CMD --help)" on
 * stderr and returns EXIT_USAGE: for arguments that do not fit the grammar.
 */
int cli_usage(const struct cli_command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * For a first argument that names no command: "unknown command "reveiw"; did
 * you mean "review"?" (the suggestion when one is close), or for an option
 * there "unknown option --verison; did you mean --version?", on stderr;
 * returns EXIT_USAGE. Unknown options of a command get the same from cli_next().
 */
int cli_unknown_command(const char *name);

/* The command closest to name, as a "did you mean" (a typo, or a prefix of it), or NULL. */
const char *cli_suggest_command(const char *name);

/* Prints "gpu-admission CMD: <err's message>" on stderr; returns cli_exit_code(err). */
int cli_fail(const struct cli_command *cmd, const struct error *err);

/* Prints "gpu-admission CMD: <message>" on stderr (notes, warnings). */
void cli_say(const struct cli_command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The exit code for an error that stopped a command: EXIT_FINDING for a
 * policy rejection (ERROR_POLICY), EXIT_USAGE for everything else (usage,
 * unreadable or malformed input, an invalid --config, out of memory).
 * check-config, whose finding is an invalid policy, is the one exception.
 */
int cli_exit_code(const struct error *err);

/*
 * The columns a text report written to out is wrapped to, at most max: on a
 * terminal, COLUMNS when it is a number, else the terminal's width (at least
 * CLI_TEXT_COLUMNS_MIN); elsewhere (a pipe, a file) max, so that what scripts
 * read never depends on who ran them.
 */
size_t cli_text_columns(FILE *out, size_t max);
#define CLI_TEXT_COLUMNS_MIN 40  /* narrower than this, wrapping helps no one: lines overflow */

/* Flushes stdout: 0, or -1 with err when the output was lost (a full disk, a closed pipe). */
int cli_flush_stdout(struct error *err);

/* ==== Shared by several commands ==== */

/* The --config option, worded once. */
#define CLI_OPTION_CONFIG \
	{ "config", 'c', "FILE", "policy file (default: the embedded policy, see print-default-config)", 0 }

/*
 * New: the policy from path, or the embedded default when path is NULL.
 * On failure every error of the file is printed on stderr, one a line, and
 * err says how many (NULL returned).
 */
struct config *cli_load_config(const char *path, struct error *err);

/*
 * Whether every path of paths[0..n) but "-" (stdin) can be opened for
 * reading: 0, or -1 with err ("nope.yaml: cannot open: No such file or
 * directory", ERROR_INPUT) for the first that cannot. audit and report ask
 * before reading anything, so a mistyped name stops the command with
 * nothing on stdout rather than an empty report.
 */
int cli_inputs_readable(const char *const *paths, size_t n, struct error *err);

/*
 * The print-* commands that turn the policy into objects (print-match-conditions,
 * print-admission-policies): -c FILE, -o yaml|json and one option of their own.
 * cli_run_printer() parses them, loads the policy, builds, prints and flushes.
 */
struct cli_printer {
	int opt;  /* the key of the command's own option */
	/* Its value into *arg: 0, or the exit code after a usage error (cli_usage(), cli_stop()). */
	int (*option)(const struct cli_command *cmd, struct cli_parser *p, int *arg);
	void *(*build)(const struct config *cfg, int arg, struct error *err);  /* NULL with err */
	json_t *(*json)(const void *out, struct error *err);                  /* -o json: a new reference */
	int (*yaml)(const void *out, struct error *err);                       /* -o yaml: onto stdout, 0/-1 */
	void (*free)(void *out);
};

/* Runs a print-* command (arg: the option's default); its exit code. */
int cli_run_printer(const struct cli_command *cmd, int argc, char **argv, const struct cli_printer *pr, int arg);

/* ==== The commands ==== */

extern const struct cli_command cmd_review, cmd_audit, cmd_report, cmd_watch, cmd_serve, cmd_certs, cmd_check_config,
	cmd_print_default_config, cmd_print_autoscaler_config, cmd_print_kueue_config, cmd_print_match_conditions,
	cmd_print_admission_policies, cmd_version, cmd_help, cmd_completion;

/* Help texts, shared by `help`, --help and the man page (cli_help.c). */
void cli_write_help(FILE *out, const struct cli_command *cmd);
void cli_write_overview(FILE *out);

#endif
