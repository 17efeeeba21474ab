/*
 * Help, from the command table alone: `gpu-admission help [COMMAND]`,
 * `COMMAND --help`, and the man page (`help --man`, installed by make install).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

#define HELP_WIDTH 80     /* columns the help is wrapped to */
#define HELP_OPT_COLUMN 28 /* where an option's help starts */

static const char overview[] =
	"Kubernetes admission webhook that keeps GPU workloads and GPU node pools honest\n"
	"on AKS: GPU pods get the GPU pools' toleration and the node selector of the\n"
	"cheapest pool that fits; CPU-only pods aimed at GPU pools are rejected. The same\n"
	"policy runs in the webhook (serve), on one AdmissionReview (review), over\n"
	"manifests and live clusters (audit) and in the GPU cost report of a cluster\n"
	"(report).";

/*
 * The length of the unit of text at w that a line must not break: a word, up
 * to the next space; in a usage, up to the next space outside brackets that
 * does not part an option from its value, so that neither "[-o yaml|json]"
 * nor "--out DIR" is ever split across lines.
 */
static size_t unit_len(const char *w, int usage)
{
	const char *word = w;
	size_t n;
	int depth = 0;

	if (!usage)
		return strcspn(w, " ");
	for (n = 0; w[n] != '\0'; n++) {
		if (w[n] == '[' || w[n] == '(') {
			depth++;
		} else if ((w[n] == ']' || w[n] == ')') && depth > 0) {
			depth--;
		} else if (w[n] == ' ') {
			if (depth == 0 && !(word[0] == '-' && strchr("-[(|", w[n + 1]) == NULL))
				return n;
			word = w + n + 1;
		}
	}
	return n;
}

/*
 * Writes text wrapped at HELP_WIDTH; every line after a break starts with
 * indent spaces. A usage (usage set) breaks only between units (unit_len()).
 */
static void wrap_text(FILE *out, const char *text, size_t first_col, size_t indent, int usage)
{
	size_t col = first_col;
	const char *w = text;

	while (*w != '\0') {
		size_t n = unit_len(w, usage);

		if (col > indent && col + 1 + n > HELP_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', out);
			col++;
		}
		fwrite(w, 1, n, out);
		col += n;
		w += n;
		while (*w == ' ')
			w++;
	}
	fputc('\n', out);
}

static void wrap(FILE *out, const char *text, size_t first_col, size_t indent)
{
	wrap_text(out, text, first_col, indent, 0);
}

static void write_exits(FILE *out, const struct cli_exit *e)
{
	for (; e->text != NULL; e++) {
		fprintf(out, "  %d  ", e->code);
		wrap(out, e->text, 5, 5);
	}
}

/* "-c, --config FILE" / "    --fix", as help and the man page show an option. */
static void spell_option(char *buf, size_t cap, const struct cli_option *o)
{
	if (o->key > 0 && o->key < CLI_LONG_ONLY)
		snprintf(buf, cap, "-%c, --%s%s%s", o->key, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	else
		snprintf(buf, cap, "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

void cli_write_help(FILE *out, const struct cli_command *cmd)
{
	const struct cli_option *o;
	static const struct cli_option help = { "help", 'h', NULL, "this help", 0 };
	char left[128], text[1024];

	/* A long usage goes on under itself, indented past "usage: gpu-admission NAME ". */
	fprintf(out, "usage: gpu-admission %s%s", cmd->name, cmd->usage[0] != '\0' ? " " : "");
	wrap_text(out, cmd->usage, strlen("usage: gpu-admission ") + strlen(cmd->name) + 1,
		  strlen("usage: gpu-admission ") + strlen(cmd->name) + 1, 1);
	fprintf(out, "\n%s\n", cmd->description);
	fprintf(out, "\nOptions:\n");
	for (o = cmd->options; ; o++) {
		char *h;

		if (o == NULL || o->name == NULL)
			o = &help;
		if (o->flags & CLI_HIDDEN)
			continue;
		spell_option(left, sizeof left, o);
		fprintf(out, "  %s", left);
		if (strlen(left) + 2 >= HELP_OPT_COLUMN - 1)
			fprintf(out, "\n%*s", HELP_OPT_COLUMN, "");
		else
			fprintf(out, "%*s", (int)(HELP_OPT_COLUMN - 2 - strlen(left)), "");
		/* The help's own line breaks are only hints: it is wrapped to the width. */
		snprintf(text, sizeof text, "%s", o->help);
		for (h = text; (h = strchr(h, '\n')) != NULL; )
			*h = ' ';
		wrap(out, text, HELP_OPT_COLUMN, HELP_OPT_COLUMN);
		if (o == &help)
			break;
	}
	fprintf(out, "\nExit status:\n");
	write_exits(out, cmd->exits ? cmd->exits : cli_exit_table);
	if (cmd->examples != NULL) {
		const char *e, *nl;

		fprintf(out, "\nExamples:\n");
		for (e = cmd->examples; *e != '\0'; e = nl ? nl + 1 : e + strlen(e)) {
			nl = strchr(e, '\n');
			fprintf(out, "  %.*s\n", nl ? (int)(nl - e) : (int)strlen(e), e);
		}
	}
}

void cli_write_overview(FILE *out)
{
	size_t i, width = 0;

	/* The summaries line up one column after the longest command name. */
	for (i = 0; i < cli_n_commands; i++)
		if (strlen(cli_commands[i]->name) > width)
			width = strlen(cli_commands[i]->name);
	fprintf(out, "usage: gpu-admission COMMAND [OPTIONS] [ARGS]\n\n%s\n\nCommands:\n", overview);
	for (i = 0; i < cli_n_commands; i++)
		fprintf(out, "  %-*s %s\n", (int)width, cli_commands[i]->name, cli_commands[i]->summary);
	fprintf(out, "\nRun 'gpu-admission help COMMAND' or 'gpu-admission COMMAND --help' for a\n"
		     "command's options; 'gpu-admission help --man' prints the manual page.\n"
		     "\nExit status (every command):\n");
	write_exits(out, cli_exit_table);
}

/* ==== The man page (roff, man macros) ==== */

/* Text for roff: backslashes and hyphens escaped, no line starting with a control character. */
static void roff(FILE *out, const char *s, size_t n)
{
	size_t i;
	int bol = 1;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (bol && (c == '.' || c == '\''))
			fputs("\\&", out);
		if (c == '\\')
			fputs("\\e", out);
		else if (c == '-')
			fputs("\\-", out);
		else
			fputc(c, out);
		bol = c == '\n';
	}
}

static void roff_str(FILE *out, const char *s)
{
	roff(out, s, strlen(s));
}

/* Paragraphs (blank-line separated) as .PP blocks; lines within one are filled by roff. */
static void roff_paragraphs(FILE *out, const char *text)
{
	const char *p = text, *blank;

	while (*p != '\0') {
		blank = strstr(p, "\n\n");
		fputs(".PP\n", out);
		roff(out, p, blank ? (size_t)(blank - p) : strlen(p));
		fputc('\n', out);
		if (blank == NULL)
			break;
		p = blank + 2;
	}
}

static void roff_exits(FILE *out, const struct cli_exit *e)
{
	for (; e->text != NULL; e++) {
		fprintf(out, ".TP\n.B %d\n", e->code);
		roff_str(out, e->text);
		fputc('\n', out);
	}
}

static void man_command(FILE *out, const struct cli_command *cmd)
{
	const struct cli_option *o;
	char left[128];

	fprintf(out, ".SS \"gpu-admission %s\"\n.B gpu-admission %s\n", cmd->name, cmd->name);
	if (cmd->usage[0] != '\0') {
		roff_str(out, cmd->usage);
		fputc('\n', out);
	}
	roff_paragraphs(out, cmd->description);
	for (o = cmd->options; o != NULL && o->name != NULL; o++) {
		const char *h;

		if (o->flags & CLI_HIDDEN)
			continue;
		spell_option(left, sizeof left, o);
		fputs(".TP\n.B ", out);
		roff_str(out, left + strspn(left, " "));
		fputc('\n', out);
		for (h = o->help; *h != '\0'; h++)
			if (*h == '\n')
				fputc(' ', out);
			else
				roff(out, h, 1);
		fputc('\n', out);
	}
	fputs(".TP\n.B \\-h, \\-\\-help\nthis help\n.PP\nExit status:\n", out);
	roff_exits(out, cmd->exits ? cmd->exits : cli_exit_table);
	if (cmd->examples != NULL) {
		fputs(".PP\nExamples:\n.RS\n.nf\n", out);
		roff_str(out, cmd->examples);
		if (cmd->examples[0] != '\0' && cmd->examples[strlen(cmd->examples) - 1] != '\n')
			fputc('\n', out);
		fputs(".fi\n.RE\n", out);
	}
}

static void write_man(FILE *out)
{
	size_t i;

	fprintf(out, ".\\\" gpu-admission(1), generated by `gpu-admission help --man` from the help texts.\n"
		     ".TH GPU-ADMISSION 1 \"\" \"gpu-admission %s\" \"gpu-admission manual\"\n"
		     ".SH NAME\ngpu-admission \\- admission webhook and offline auditor for GPU node pools on AKS\n"
		     ".SH SYNOPSIS\n", cli_version());
	for (i = 0; i < cli_n_commands; i++) {
		fprintf(out, ".B gpu-admission %s\n", cli_commands[i]->name);
		if (cli_commands[i]->usage[0] != '\0') {
			roff_str(out, cli_commands[i]->usage);
			fputc('\n', out);
		}
		fputs(".br\n", out);
	}
	fputs(".SH DESCRIPTION\n", out);
	roff_paragraphs(out, overview);
	fputs(".SH COMMANDS\n", out);
	for (i = 0; i < cli_n_commands; i++)
		man_command(out, cli_commands[i]);
	fputs(".SH \"EXIT STATUS\"\n", out);
	roff_exits(out, cli_exit_table);
	fputs(".SH ENVIRONMENT\n.TP\n.B NO_COLOR\nWhen set, audit never colours its report.\n"
	      ".SH \"SEE ALSO\"\nIn the gpu-admission sources: README.md, and the pages it links: "
	      "pkg/policy/README.md (the policy and its configuration), cmd/gpu-admission/README.md "
	      "(the commands), charts/gpu-admission/README.md (the Helm chart) and "
	      "pkg/webhook/README.md (the threat model and limits).\n", out);
}

/* ==== gpu-admission help ==== */

enum { OPT_MAN = CLI_LONG_ONLY };

static const struct cli_option help_options[] = {
	{ "man", OPT_MAN, NULL, "print the manual page (roff), as make install installs it", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

static int run_help(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	const struct cli_command *about = NULL;
	const char *topic = NULL;
	struct error err = { 0 };
	int c, man = 0;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case OPT_MAN: man = 1; break;
		case CLI_OPERAND:
			if (topic != NULL)
				return cli_usage(cmd, "one COMMAND at a time");
			topic = p.value;
			break;
		default: return cli_stop(&p);
		}
	}
	if (topic != NULL && (about = cli_find(topic)) == NULL) {
		const char *pick = cli_suggest_command(topic);

		if (pick != NULL)
			return cli_usage(cmd, "unknown command \"%s\"; did you mean \"%s\"?", topic, pick);
		return cli_usage(cmd, "unknown command \"%s\"", topic);
	}
	if (man)
		write_man(stdout);
	else if (about != NULL)
		cli_write_help(stdout, about);
	else
		cli_write_overview(stdout);
	return cli_flush_stdout(&err) == 0 ? EXIT_OK : cli_fail(cmd, &err);
}

const struct cli_command cmd_help = {
	.name = "help",
	.summary = "this overview, or a command's help: help COMMAND",
	.usage = "[COMMAND] [--man]",
	.description =
		"Prints the list of commands, or the help of COMMAND (the same as\n"
		"gpu-admission COMMAND --help), or with --man the manual page.",
	.options = help_options,
	.operands = "COMMAND",
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "help printed" },
		{ EXIT_USAGE, "no such command" },
		{ 0, NULL },
	},
	.examples = "gpu-admission help audit\ngpu-admission help --man | man -l -",
	.run = run_help,
};
