/* gpu-admission audit: the policy's dry run over manifest files, directories or stdin. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "commands.h"
#include "file.h"

#define AUDIT_INPUT_MAX (256UL * 1024 * 1024)  /* per file */
#define AUDIT_DIR_DEPTH_MAX 64
#define STDIN_NAME "<stdin>"

struct run {
	struct audit a;
	int fix, in_place;
	FILE *report;          /* where the report goes: stdout, or stderr when stdout carries --fix output */
	int wrote_any;         /* --fix to stdout: something was written already */
	int last_newline;      /* ... and it ended with a line break */
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-admission audit [OPTIONS] PATH...\n\n"
		"Dry-runs the admission policy over Kubernetes manifests: every pod template in\n"
		"PATH (files; directories, recursively: *.yaml *.yml *.json; '-' for stdin) is\n"
		"reported as ok, mutate, reject, exempt or warn, as enforce mode would decide.\n\n"
		"  -c, --config FILE       policy file (default: the embedded policy)\n"
		"  -o, --output text|json  report format (default text)\n"
		"      --fix               write the manifests with the mutations applied to stdout\n"
		"                          (the report then goes to stderr)\n"
		"      --in-place          with --fix: rewrite the changed files instead\n"
		"      --fail-on reject|mutate\n"
		"                          exit 1 on would-be rejections (default), or on mutations too\n"
		"      --no-color          no colour even on a terminal (NO_COLOR is honoured too)\n"
		"  -h, --help              this help\n\n"
		"Example: kubectl get pods,deploy,sts,ds,job,cronjob -A -o json | gpu-admission audit -\n\n"
		"Exit: 0 nothing would be rejected, 1 something would be rejected (or mutated, with\n"
		"      --fail-on mutate), 2 usage or input errors (unreadable files, invalid YAML).\n");
}

/* --fix to stdout: inputs joined into one stream, "---" between files. */
static void write_fixed_stdout(struct run *r, const char *buf, size_t len)
{
	if (r->wrote_any) {
		if (!r->last_newline)
			fputc('\n', stdout);
		if (!(len >= 3 && memcmp(buf, "---", 3) == 0))
			fputs("---\n", stdout);
	}
	fwrite(buf, 1, len, stdout);
	if (len > 0) {
		r->wrote_any = 1;
		r->last_newline = buf[len - 1] == '\n';
	}
}

/* Audits one file (or stdin when path is "-"). Returns 0, or -1 when the run must stop. */
static int audit_file(struct run *r, const char *path, struct error *err)
{
	int is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? STDIN_NAME : path;
	FILE *in = is_stdin ? stdin : fopen(path, "rb");
	struct error rerr = { 0 };
	char *buf = NULL, *fixed = NULL;
	size_t len = 0, fixed_len = 0;
	int changed = 0, rc = -1;

	if (in == NULL) {
		char msg[256];

		snprintf(msg, sizeof msg, "cannot open: %s", strerror(errno));
		rc = audit_add_error(&r->a, name, 0, msg, err);
		goto out;
	}
	buf = file_read_stream(in, AUDIT_INPUT_MAX, &len, &rerr);
	if (buf == NULL) {
		if (rerr.kind == ERROR_NOMEM) {
			*err = rerr;
			goto out;
		}
		rc = audit_add_error(&r->a, name, 0, rerr.msg, err);
		goto out;
	}
	if (audit_input(&r->a, name, buf, len, r->fix ? &fixed : NULL, &fixed_len, &changed, err) != 0)
		goto out;
	if (r->fix && r->in_place) {
		if (changed && file_write_atomic(path, fixed, fixed_len, FILE_KEEP_MODE, &rerr) != 0) {
			rc = audit_add_error(&r->a, name, 0, rerr.msg, err);
			goto out;
		}
	} else if (r->fix) {
		write_fixed_stdout(r, fixed, fixed_len);
	}
	rc = 0;
out:
	if (in != NULL && in != stdin)
		fclose(in);
	free(buf);
	free(fixed);
	return rc;
}

static int has_manifest_ext(const char *name)
{
	static const char *const exts[] = { ".yaml", ".yml", ".json" };
	size_t n = strlen(name), i;

	for (i = 0; i < sizeof exts / sizeof exts[0]; i++) {
		size_t e = strlen(exts[i]);

		if (n > e && strcmp(name + n - e, exts[i]) == 0)
			return 1;
	}
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int audit_path(struct run *r, const char *path, int depth, struct error *err);

/* A directory: its manifests in name order, recursively; dot-files and symlinked dirs skipped. */
static int audit_dir(struct run *r, const char *path, int depth, struct error *err)
{
	DIR *dir;
	struct dirent *de;
	char **names = NULL, **grown;
	size_t n = 0, cap = 0, i;
	int rc = -1;

	if (depth > AUDIT_DIR_DEPTH_MAX)
		return audit_add_error(&r->a, path, 0, "directories nested too deep", err);
	if ((dir = opendir(path)) == NULL)
		return audit_add_error(&r->a, path, 0, strerror(errno), err);
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			if ((grown = realloc(names, cap * sizeof *names)) == NULL)
				goto nomem;
			names = grown;
		}
		if ((names[n] = malloc(strlen(path) + strlen(de->d_name) + 2)) == NULL)
			goto nomem;
		sprintf(names[n], "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", de->d_name);
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof *names, name_cmp);
	for (i = 0; i < n; i++) {
		struct stat st;

		if (lstat(names[i], &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (audit_dir(r, names[i], depth + 1, err) != 0)
				goto out;
		} else if (has_manifest_ext(names[i]) && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			if (audit_path(r, names[i], depth + 1, err) != 0)
				goto out;
		}
	}
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory listing %s", path);
out:
	closedir(dir);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

static int audit_path(struct run *r, const char *path, int depth, struct error *err)
{
	struct stat st;

	if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return audit_dir(r, path, depth, err);
	return audit_file(r, path, err);
}

int cmd_audit(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "fix", no_argument, NULL, 'F' },
		{ "in-place", no_argument, NULL, 'I' },
		{ "fail-on", required_argument, NULL, 'f' },
		{ "no-color", no_argument, NULL, 'N' },
		{ "no-colour", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *output = "text";
	struct config *cfg = NULL;
	struct error err = { 0 };
	struct run r;
	int c, i, no_color = 0, fail_on_mutate = 0, rc = EXIT_USAGE, json, color;

	memset(&r, 0, sizeof r);
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'o': output = optarg; break;
		case 'F': r.fix = 1; break;
		case 'I': r.in_place = 1; break;
		case 'N': no_color = 1; break;
		case 'f':
			if (strcmp(optarg, "reject") == 0)
				fail_on_mutate = 0;
			else if (strcmp(optarg, "mutate") == 0)
				fail_on_mutate = 1;
			else
				return cli_fail("audit: --fail-on takes reject or mutate");
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (strcmp(output, "text") != 0 && strcmp(output, "json") != 0)
		return cli_fail("audit: -o takes text or json");
	json = strcmp(output, "json") == 0;
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (r.in_place && !r.fix)
		return cli_fail("audit: --in-place needs --fix");
	for (i = optind; i < argc; i++)
		if (r.in_place && strcmp(argv[i], "-") == 0)
			return cli_fail("audit: --in-place cannot rewrite stdin; use --fix alone");

	cfg = cli_load_config(config_path, &err);
	if (cfg == NULL)
		goto fail;
	if (audit_init(&r.a, cfg, &err) != 0)
		goto fail;
	r.a.fail_on_mutate = fail_on_mutate;
	r.report = r.fix && !r.in_place ? stderr : stdout;
	for (i = optind; i < argc; i++)
		if (audit_path(&r, argv[i], 0, &err) != 0)
			goto fail;
	color = !json && !no_color && getenv("NO_COLOR") == NULL && isatty(fileno(r.report));
	if ((json ? audit_write_json(&r.a, r.report) : audit_write_text(&r.a, r.report, color)) != 0 ||
	    fflush(stdout) != 0) {
		error_set(&err, ERROR_SYSTEM, "writing the report failed");
		goto fail;
	}
	rc = audit_exit_code(&r.a);
	goto out;
fail:
	cli_fail(err.msg);
	rc = EXIT_USAGE;
out:
	audit_free(&r.a);
	config_free(cfg);
	return rc;
}
