/*
 * audit_path: feeding audit_input() from the file system — files, directory
 * trees in name order, stdin — and writing --fix results back out.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "audit/audit.h"
#include "base/file.h"
#include "base/limit.h"

#define AUDIT_DIR_DEPTH_MAX 64
#define AUDIT_PATH_MSG_MAX 4096  /* a message naming a path (PATH_MAX) */

/* --fix to a stream: inputs joined into one, "---" between files. */
static void write_fixed(struct audit_walk *w, const char *buf, size_t len)
{
	if (w->wrote_any) {
		if (!w->last_newline)
			fputc('\n', w->out);
		if (!(len >= 3 && memcmp(buf, "---", 3) == 0))
			fputs("---\n", w->out);
	}
	fwrite(buf, 1, len, w->out);
	if (len > 0) {
		w->wrote_any = 1;
		w->last_newline = buf[len - 1] == '\n';
	}
}

/* Audits one file (or stdin when path is "-"). Returns 0, or -1 when the run must stop. */
static int audit_file(struct audit_walk *w, const char *path, struct error *err)
{
	int is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? FILE_STDIN_NAME : path;
	FILE *in = is_stdin ? stdin : fopen(path, "rb");
	struct error rerr = { 0 };
	char *buf = NULL, *fixed = NULL;
	size_t len = 0, fixed_len = 0;
	int changed = 0, rc = -1;

	w->files_seen++;
	if (in == NULL && w->collect)
		return 0;
	if (in == NULL) {
		char msg[256];

		snprintf(msg, sizeof msg, "cannot open: %s", strerror(errno));
		rc = audit_add_error(w->a, name, 0, msg, err);
		goto out;
	}
	buf = file_read_stream(in, LIMIT_INPUT_FILE_MAX, &len, &rerr);
	if (buf == NULL && w->collect && rerr.kind != ERROR_NOMEM) {
		rc = 0;
		goto out;
	}
	if (buf == NULL) {
		if (rerr.kind == ERROR_NOMEM) {
			*err = rerr;
			goto out;
		}
		rc = audit_add_error(w->a, name, 0, rerr.msg, err);
		goto out;
	}
	if (w->collect) {
		rc = audit_collect(w->a, buf, len, err);
		goto out;
	}
	if (audit_input(w->a, name, buf, len, w->fix ? &fixed : NULL, &fixed_len, &changed, err) != 0)
		goto out;
	if (w->fix && w->in_place) {
		if (changed && file_write_atomic(path, fixed, fixed_len, FILE_KEEP_MODE, &rerr) != 0) {
			/* The report names the file already: "FILE: FILE: ..." would say it twice. */
			const char *msg = rerr.msg;
			size_t n = strlen(path);

			if (strncmp(msg, path, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
				msg += n + 2;
			rc = audit_add_error(w->a, name, 0, msg, err);
			goto out;
		}
		if (changed && json_array_append_new(w->a->rewritten, json_string(name)) != 0) {
			error_set(err, ERROR_NOMEM, "out of memory");
			goto out;
		}
	} else if (w->fix) {
		write_fixed(w, fixed, fixed_len);
	}
	rc = 0;
out:
	if (in != NULL && in != stdin)
		fclose(in);
	free(buf);
	free(fixed);
	return rc;
}

/*
 * What kubectl apply -f DIR reads: *.json, *.yaml and *.yml, compared as they
 * are spelled (k8s.io/cli-runtime resource.FileExtensions and ignoreFile()),
 * so a file kubectl would skip (APP.YAML) is skipped here too, and said so.
 */
static int has_manifest_ext(const char *name, int ignore_case)
{
	static const char *const exts[] = { ".yaml", ".yml", ".json" };
	size_t n = strlen(name), i;

	for (i = 0; i < sizeof exts / sizeof exts[0]; i++) {
		size_t e = strlen(exts[i]);

		if (n > e && (ignore_case ? strcasecmp(name + n - e, exts[i]) : strcmp(name + n - e, exts[i])) == 0)
			return 1;
	}
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_path(struct audit_walk *w, const char *path, int depth, struct error *err);

/*
 * Whether directory path is a Helm chart (it holds a Chart.yaml), or the
 * templates directory of one: 1 with the chart's directory in chart[cap], else 0.
 */
static int chart_of(const char *path, char *chart, size_t cap)
{
	char probe[AUDIT_PATH_MSG_MAX];
	size_t len = strlen(path);
	struct stat st;
	int n;

	while (len > 1 && path[len - 1] == '/')
		len--;
	n = snprintf(probe, sizeof probe, "%.*s/Chart.yaml", (int)len, path);
	if (n > 0 && (size_t)n < sizeof probe && stat(probe, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(chart, cap, "%.*s", (int)len, path);
		return 1;
	}
	/* DIR/templates: the chart is DIR ("." for a bare "templates"). */
	if (len < 9 || strncmp(path + len - 9, "templates", 9) != 0 || (len > 9 && path[len - 10] != '/'))
		return 0;
	len = len > 9 ? len - 10 : 0;
	n = snprintf(probe, sizeof probe, "%.*s%sChart.yaml", (int)len, path, len ? "/" : "");
	if (n <= 0 || (size_t)n >= sizeof probe || stat(probe, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	snprintf(chart, cap, "%.*s", len ? (int)len : 1, len ? path : ".");
	return 1;
}

/* Says why a directory entry is not read, as a note. */
static int skipped(struct audit_walk *w, const char *path, const char *why, struct error *err)
{
	char msg[128];

	snprintf(msg, sizeof msg, "skipped (%s)", why);
	return audit_add_note(w->a, path, 0, msg, err);
}

/*
 * A directory: its manifests in name order, recursively. What it holds but
 * is not read is said (a note each), and so is a directory that gave no pod
 * template: nothing passes silently.
 */
static int audit_dir(struct audit_walk *w, const char *path, int depth, struct error *err)
{
	DIR *dir;
	struct dirent *de;
	char **names = NULL, **grown;
	size_t n = 0, cap = 0, i;
	unsigned long files = w->files_seen, templates = w->a->templates;
	size_t errors = json_array_size(w->a->errors);
	char chart[AUDIT_PATH_MSG_MAX];
	int rc = -1;

	if (depth > AUDIT_DIR_DEPTH_MAX)
		return audit_add_error(w->a, path, 0, "directories nested too deep", err);
	if (chart_of(path, chart, sizeof chart)) {
		/* Its templates are Go templates, not manifests: one error that says what to run, not one per file. */
		char msg[AUDIT_PATH_MSG_MAX + 128];

		snprintf(msg, sizeof msg, "a Helm chart's templates are manifests only once rendered; "
			 "run: helm template %s | gpu-admission audit -", chart);
		return audit_add_error(w->a, path, 0, msg, err);
	}
	if ((dir = opendir(path)) == NULL)
		return audit_add_error(w->a, path, 0, strerror(errno), err);
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
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
		const char *base = strrchr(names[i], '/') + 1;
		struct stat st;
		int r = 0;

		if (base[0] == '.')
			r = skipped(w, names[i], "a dot-file", err);
		else if (lstat(names[i], &st) != 0)
			r = audit_add_error(w->a, names[i], 0, strerror(errno), err);
		else if (S_ISDIR(st.st_mode))
			r = audit_dir(w, names[i], depth + 1, err);
		else if (S_ISLNK(st.st_mode) && stat(names[i], &st) == 0 && S_ISDIR(st.st_mode))
			r = skipped(w, names[i], "a symbolic link to a directory", err);
		else if (!has_manifest_ext(names[i], 0))
			r = skipped(w, names[i], has_manifest_ext(names[i], 1)
				    ? "extensions are read as spelled, as kubectl does: rename it *.yaml, *.yml or *.json"
				    : "not *.yaml, *.yml or *.json", err);
		else if (stat(names[i], &st) == 0 && !S_ISREG(st.st_mode))
			r = skipped(w, names[i], "not a regular file", err);
		else
			r = walk_path(w, names[i], depth + 1, err);
		if (r != 0)
			goto out;
	}
	if (json_array_size(w->a->errors) > errors && w->a->templates == templates)
		rc = 0;  /* the errors say why nothing came of it */
	else if (n == 0)
		rc = audit_add_note(w->a, path, 0, "an empty directory", err);
	else if (w->files_seen == files)
		rc = audit_add_note(w->a, path, 0, "no *.yaml, *.yml or *.json file in it", err);
	else if (w->a->templates == templates)
		rc = audit_add_note(w->a, path, 0, "none of its files holds a pod template", err);
	else
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

static int walk_path(struct audit_walk *w, const char *path, int depth, struct error *err)
{
	struct stat st;

	if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return audit_dir(w, path, depth, err);
	return audit_file(w, path, err);
}

int audit_collect_path(struct audit_walk *w, const char *path, struct error *err)
{
	struct audit_walk quiet = *w;
	struct audit shadow;
	int rc;

	if (strcmp(path, "-") == 0)
		return 0;
	/*
	 * The same walk, into a shadow audit that takes its notes and errors
	 * (audit_path() reports them) and hands the claims back.
	 */
	if (audit_init(&shadow, w->a->cfg, err) != 0) {
		audit_free(&shadow);
		return -1;
	}
	shadow.claim_keep = w->a->claim_keep;
	shadow.claims = w->a->claims;
	quiet.a = &shadow;
	quiet.collect = 1;
	quiet.fix = 0;
	rc = walk_path(&quiet, path, 0, err);
	w->a->claim_keep = shadow.claim_keep;
	w->a->claims = shadow.claims;
	shadow.claim_keep = NULL;
	memset(&shadow.claims, 0, sizeof shadow.claims);
	audit_free(&shadow);
	return rc;
}

int audit_path(struct audit_walk *w, const char *path, struct error *err)
{
	return walk_path(w, path, 0, err);
}
