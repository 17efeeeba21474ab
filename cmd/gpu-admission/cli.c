/* The grammar every command shares: option parsing, messages, exit codes. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "commands.h"
#include "base/suggest.h"

#define PROG "gpu-admission"

const struct cli_exit cli_exit_table[] = {
	{ EXIT_OK, "done, and the answer is yes: review allowed the pod, audit found nothing to "
		   "reject, report found nothing --fail-on names, check-config found the policy valid, "
		   "serve stopped cleanly" },
	{ EXIT_FINDING, "the answer is no: review's policy rejects the pod, audit found a would-be "
			"rejection (or mutation, with --fail-on mutate), report found what --fail-on names, "
			"check-config found errors" },
	{ EXIT_USAGE, "usage or input error: an unknown option or a missing argument, a file that "
		      "cannot be read, input that is not what the command reads, an invalid --config, "
		      "serve could not start (a certificate it cannot use, an address in use; an invalid "
		      "policy does not stop serve: it runs not ready and retries)" },
	{ 0, NULL },
};

const struct cli_command *cli_find(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < cli_n_commands; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}

/* ==== "Did you mean" ==== */

/* How far typed[0..len) is from name, as a suggestion (suggest_closeness()). */
static size_t closeness(const char *typed, size_t len, const char *name)
{
	return suggest_closeness(typed, len, name, strlen(name));
}

const char *cli_suggest_command(const char *name)
{
	size_t i, best = (size_t)-1, len = strlen(name);
	const char *pick = NULL;

	for (i = 0; i < cli_n_commands; i++) {
		size_t c = closeness(name, len, cli_commands[i]->name);

		if (c < best) {
			best = c;
			pick = cli_commands[i]->name;
		}
	}
	return pick;
}

/* The closest of cmd's options (and "help") to the long name typed[0..len), or NULL. */
static const char *suggest_option(const struct cli_command *cmd, const char *typed, size_t len)
{
	const struct cli_option *o;
	size_t best = closeness(typed, len, "help");
	const char *pick = best != (size_t)-1 ? "help" : NULL;

	for (o = cmd->options; o != NULL && o->name != NULL; o++) {
		size_t c = closeness(typed, len, o->name);

		if (c < best) {
			best = c;
			pick = o->name;
		}
	}
	return pick;
}

/* An option spelled with the short form's letter: "-f" may mean --for (the one long option starting so). */
static const char *suggest_short(const struct cli_command *cmd, char c)
{
	const struct cli_option *o;
	const char *pick = NULL;

	for (o = cmd->options; o != NULL && o->name != NULL; o++) {
		if (o->name[0] != c || (o->flags & CLI_HIDDEN))
			continue;
		if (pick != NULL)
			return NULL;
		pick = o->name;
	}
	return pick;
}

int cli_unknown_command(const char *name)
{
	const char *pick;

	if (name[0] == '-') {
		/* Before a command only --help and --version are options. */
		const char *typed = name + strspn(name, "-");
		size_t len = strlen(typed), h = closeness(typed, len, "help"), v = closeness(typed, len, "version");

		if (h == (size_t)-1 && v == (size_t)-1)
			return cli_usage(NULL, "unknown option %s", name);
		return cli_usage(NULL, "unknown option %s; did you mean --%s?", name, h < v ? "help" : "version");
	}
	pick = cli_suggest_command(name);

	if (pick != NULL)
		return cli_usage(NULL, "unknown command \"%s\"; did you mean \"%s\"?", name, pick);
	return cli_usage(NULL, "unknown command \"%s\"", name);
}

/* ==== Messages and exit codes ==== */

static void say(const struct cli_command *cmd, const char *fmt, va_list ap, const char *suffix)
{
	char msg[ERROR_MSG_MAX + 256];

	vsnprintf(msg, sizeof msg, fmt, ap);
	fprintf(stderr, "%s%s%s: %s%s\n", PROG, cmd ? " " : "", cmd ? cmd->name : "", msg, suffix);
}

void cli_say(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cmd, fmt, ap, "");
	va_end(ap);
}

int cli_usage(const struct cli_command *cmd, const char *fmt, ...)
{
	char suffix[128];
	va_list ap;

	if (cmd != NULL)
		snprintf(suffix, sizeof suffix, " (see %s %s --help)", PROG, cmd->name);
	else
		snprintf(suffix, sizeof suffix, " (see %s help)", PROG);
	va_start(ap, fmt);
	say(cmd, fmt, ap, suffix);
	va_end(ap);
	return EXIT_USAGE;
}

int cli_exit_code(const struct error *err)
{
	if (err == NULL || err->kind == ERROR_NONE)
		return EXIT_OK;
	return err->kind == ERROR_POLICY ? EXIT_FINDING : EXIT_USAGE;
}

int cli_fail(const struct cli_command *cmd, const struct error *err)
{
	cli_say(cmd, "%s", err->msg[0] ? err->msg : "failed");
	return cli_exit_code(err);
}

size_t cli_text_columns(FILE *out, size_t max)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;
	unsigned long cols = 0;
	char *end;

	if (!isatty(fileno(out)))
		return max;
	if (env != NULL && env[0] >= '0' && env[0] <= '9') {
		cols = strtoul(env, &end, 10);
		if (*end != '\0')
			cols = 0;
	}
	if (cols == 0 && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0)
		cols = ws.ws_col;
	if (cols == 0 || cols > max)
		return max;
	return cols < CLI_TEXT_COLUMNS_MIN ? CLI_TEXT_COLUMNS_MIN : (size_t)cols;
}

int cli_flush_stdout(struct error *err)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		error_set(err, ERROR_SYSTEM, "writing the output failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int cli_run_printer(const struct cli_command *cmd, int argc, char **argv, const struct cli_printer *pr, int arg)
{
	struct cli_parser p;
	const char *config_path = NULL;
	struct error err = { 0 };
	struct config *cfg = NULL;
	void *out = NULL;
	json_t *doc = NULL;
	int c, json = 0, rc;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		if (c == pr->opt) {
			if ((rc = pr->option(cmd, &p, &arg)) != 0)
				return rc;
			continue;
		}
		switch (c) {
		case 'c': config_path = p.value; break;
		case 'o':
			if ((json = cli_choice(&p)) < 0)
				return cli_stop(&p);
			break;
		case CLI_OPERAND: return cli_usage(cmd, "unexpected argument \"%s\"", p.value);
		default: return cli_stop(&p);
		}
	}
	if ((cfg = cli_load_config(config_path, &err)) == NULL || (out = pr->build(cfg, arg, &err)) == NULL)
		goto fail;
	if (json) {
		if ((doc = pr->json(out, &err)) == NULL)
			goto fail;
		if (json_dumpf(doc, stdout, JSON_INDENT(2)) != 0 || fputc('\n', stdout) == EOF)
			error_set(&err, ERROR_SYSTEM, "writing the output failed");
	} else if (pr->yaml(out, &err) != 0) {
		goto fail;
	}
	if (err.kind != ERROR_NONE || cli_flush_stdout(&err) != 0)
		goto fail;
	rc = EXIT_OK;
	goto out;
fail:
	rc = cli_fail(cmd, &err);
out:
	json_decref(doc);
	if (out != NULL)
		pr->free(out);
	config_free(cfg);
	return rc;
}

/* ==== Parsing ==== */

void cli_parse(struct cli_parser *p, const struct cli_command *cmd, int argc, char **argv)
{
	memset(p, 0, sizeof *p);
	p->cmd = cmd;
	p->argc = argc;
	p->argv = argv;
	p->i = 1;
}

static int stop(struct cli_parser *p, int code)
{
	p->exit = code;
	return CLI_STOP;
}

int cli_stop(const struct cli_parser *p)
{
	return p->exit;
}

static const struct cli_option *find_long(const struct cli_command *cmd, const char *name, size_t len)
{
	const struct cli_option *o;

	for (o = cmd->options; o != NULL && o->name != NULL; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	return NULL;
}

static const struct cli_option *find_short(const struct cli_command *cmd, char c)
{
	const struct cli_option *o;

	for (o = cmd->options; o != NULL && o->name != NULL; o++)
		if (o->key == (unsigned char)c)
			return o;
	return NULL;
}

/* The option found: its value from inline (after '=' or in a "-cVALUE" group) or the next argument. */
static int take(struct cli_parser *p, const struct cli_option *o, const char *spelled, const char *inline_value)
{
	p->opt = o;
	p->value = NULL;
	if (o->arg == NULL) {
		if (inline_value != NULL)
			return stop(p, cli_usage(p->cmd, "option %s takes no value", spelled));
		return o->key;
	}
	if (inline_value != NULL) {
		p->value = inline_value;
	} else if (p->i < p->argc) {
		p->value = p->argv[p->i++];
	} else {
		return stop(p, cli_usage(p->cmd, "option %s needs a value (%s)", spelled, o->arg));
	}
	return o->key;
}

int cli_next(struct cli_parser *p)
{
	const struct cli_option *o;
	const char *a;
	char spelled[4];

	if (p->shorts != NULL && *p->shorts != '\0') {
		char c = *p->shorts++;

		snprintf(spelled, sizeof spelled, "-%c", c);
		if ((o = find_short(p->cmd, c)) == NULL) {
			if (c == 'h') {
				cli_write_help(stdout, p->cmd);
				return stop(p, EXIT_OK);
			}
			{
				const char *pick = suggest_short(p->cmd, c);

				if (pick != NULL)
					return stop(p, cli_usage(p->cmd, "unknown option %s; did you mean --%s?",
								 spelled, pick));
				return stop(p, cli_usage(p->cmd, "unknown option %s", spelled));
			}
		}
		if (o->arg != NULL && *p->shorts != '\0') {
			a = p->shorts;
			p->shorts = NULL;
			return take(p, o, spelled, a);
		}
		return take(p, o, spelled, NULL);
	}
	p->shorts = NULL;
	if (p->i >= p->argc)
		return CLI_END;
	a = p->argv[p->i++];
	if (p->operands_only || a[0] != '-' || a[1] == '\0') {
		p->value = a;
		p->opt = NULL;
		return CLI_OPERAND;
	}
	if (strcmp(a, "--") == 0) {
		p->operands_only = 1;
		return cli_next(p);
	}
	if (a[1] == '-') {
		const char *eq = strchr(a + 2, '=');
		size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);

		if ((o = find_long(p->cmd, a + 2, len)) == NULL) {
			if (strncmp(a + 2, "help", len) == 0 && len == 4) {
				cli_write_help(stdout, p->cmd);
				return stop(p, EXIT_OK);
			}
			{
				const char *pick = suggest_option(p->cmd, a + 2, len);

				if (pick != NULL)
					return stop(p, cli_usage(p->cmd, "unknown option --%.*s; did you mean --%s?",
								 (int)len, a + 2, pick));
				return stop(p, cli_usage(p->cmd, "unknown option --%.*s", (int)len, a + 2));
			}
		}
		/* The option as typed, without any "=VALUE", for messages. */
		{
			char name[64];

			snprintf(name, sizeof name, "--%s", o->name);
			return take(p, o, name, eq ? eq + 1 : NULL);
		}
	}
	p->shorts = a + 1;
	return cli_next(p);
}

int cli_choice(struct cli_parser *p)
{
	const char *c = p->opt->arg, *bar;
	char list[256] = "";
	int i = 0;
	size_t n = strlen(p->value);

	for (; c != NULL; c = bar ? bar + 1 : NULL, i++) {
		bar = strchr(c, '|');
		if ((size_t)(bar ? bar - c : (long)strlen(c)) == n && strncmp(c, p->value, n) == 0)
			return i;
	}
	/* "text|json|yaml" worded as "text, json or yaml". */
	for (c = p->opt->arg; c != NULL; c = bar ? bar + 1 : NULL) {
		size_t used = strlen(list);

		bar = strchr(c, '|');
		snprintf(list + used, sizeof list - used, "%s%.*s", used == 0 ? "" : bar ? ", " : " or ",
			 bar ? (int)(bar - c) : (int)strlen(c), c);
	}
	p->exit = cli_usage(p->cmd, "--%s takes %s, not \"%s\"", p->opt->name, list, p->value);
	return -1;
}

const char *cli_one_operand(const struct cli_command *cmd, int argc, char **argv, const char *what, int *rc)
{
	struct cli_parser p;
	const char *operand = NULL;
	int c;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		if (c != CLI_OPERAND) {
			*rc = cli_stop(&p);
			return NULL;
		}
		if (operand != NULL) {
			*rc = cli_usage(cmd, "one %s at a time", what);
			return NULL;
		}
		operand = p.value;
	}
	if (operand == NULL)
		*rc = cli_usage(cmd, "no %s given", what);
	return operand;
}

int cli_no_operands(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	int c = CLI_END;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		if (c == CLI_OPERAND)
			return cli_usage(cmd, "unexpected argument \"%s\"", p.value);
		return cli_stop(&p);
	}
	return -1;
}

int cli_number(struct cli_parser *p, unsigned long long min, unsigned long long max,
	       unsigned long long *out)
{
	const char *s = p->value;
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || *out < min || *out > max) {
		p->exit = cli_usage(p->cmd, "--%s takes a number from %llu to %llu, not \"%s\"",
				    p->opt->name, min, max, s);
		return -1;
	}
	return 0;
}

/* ==== Shared by several commands ==== */

struct config *cli_load_config(const char *path, struct error *err)
{
	struct config_errors errs = { 0 };
	struct config *cfg;
	size_t i;

	if (path == NULL)
		return config_default(err);
	cfg = config_load_file_all(path, &errs, err);
	/* One error is err itself; several are listed here, and err sums them up. */
	for (i = 0; cfg == NULL && errs.total > 1 && i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.v[i].text);
	config_errors_free(&errs);
	return cfg;
}

int cli_inputs_readable(const char *const *paths, size_t n, struct error *err)
{
	size_t i;
	int fd;

	for (i = 0; i < n; i++) {
		if (strcmp(paths[i], "-") == 0)
			continue;
		/* open(), not access(): what the command will do next, with the same errno (a directory opens too). */
		if ((fd = open(paths[i], O_RDONLY | O_CLOEXEC)) < 0) {
			error_set(err, ERROR_INPUT, "%s: cannot open: %s", paths[i], strerror(errno));
			return -1;
		}
		close(fd);
	}
	return 0;
}
