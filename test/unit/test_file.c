/* file: bounded reads (regular files and pipes) and atomic replacement. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "base/error.h"
#include "base/file.h"

static char dir[] = "/tmp/test_file.XXXXXX";

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_read_limits(void)
{
	struct error err = { 0 };
	char path[256];
	size_t len = 99;
	char *buf;

	put("five", "12345");
	snprintf(path, sizeof path, "%s/five", dir);
	buf = file_read(path, 5, &len, &err);
	CHECK(buf != NULL && len == 5 && strcmp(buf, "12345") == 0);
	free(buf);
	CHECK(file_read(path, 4, &len, &err) == NULL);
	CHECK_INT(err.kind, ERROR_TOO_LARGE);
	CHECK(strncmp(err.msg, path, strlen(path)) == 0); /* the message names the file */
	CHECK(strstr(err.msg, ": larger than 4 bytes") != NULL);

	put("empty", "");
	snprintf(path, sizeof path, "%s/empty", dir);
	buf = file_read(path, 5, &len, &err);
	CHECK(buf != NULL && len == 0 && buf[0] == '\0');
	free(buf);

	snprintf(path, sizeof path, "%s/missing", dir);
	CHECK(file_read(path, 5, &len, &err) == NULL);
	CHECK_INT(err.kind, ERROR_NOT_FOUND);
	CHECK(file_read(dir, 5, &len, &err) == NULL); /* a directory reads as an error, not as empty */
}

/* A pipe has no size up front: the buffer grows, and the limit still holds. */
static void test_read_pipe(void)
{
	struct error err = { 0 };
	size_t len = 0;
	FILE *f = popen("head -c 200000 /dev/zero | tr '\\0' x", "r");
	char *buf = f ? file_read_stream(f, 200000, &len, &err) : NULL;

	CHECK(buf != NULL && len == 200000 && buf[199999] == 'x' && buf[200000] == '\0');
	free(buf);
	if (f)
		pclose(f);
	f = popen("head -c 204801 /dev/zero", "r");
	CHECK(f != NULL && file_read_stream(f, 204800, &len, &err) == NULL);
	CHECK_INT(err.kind, ERROR_TOO_LARGE);
	CHECK_STR(err.msg, "larger than 200 KiB"); /* a limit in the unit it was set in, not 204800 bytes */
	if (f)
		pclose(f);
}

static void test_write_atomic(void)
{
	struct error err = { 0 };
	char path[256], link[256];
	struct stat st;
	size_t len = 0;
	char *buf;

	snprintf(path, sizeof path, "%s/out", dir);
	CHECK_INT(file_write_atomic(path, "secret\n", 7, 0600, &err), 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	buf = file_read(path, 100, &len, &err);
	CHECK(buf != NULL && strcmp(buf, "secret\n") == 0);
	free(buf);

	chmod(path, 0640);
	CHECK_INT(file_write_atomic(path, "again", 5, FILE_KEEP_MODE, &err), 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640);

	snprintf(path, sizeof path, "%s/nothere", dir);
	CHECK_INT(file_write_atomic(path, "x", 1, FILE_KEEP_MODE, &err), -1); /* no mode to keep */
	CHECK_INT(err.kind, ERROR_SYSTEM);

	/* path is a symlink: the link is replaced, its target is never written through. */
	put("target", "keep");
	snprintf(path, sizeof path, "%s/link", dir);
	snprintf(link, sizeof link, "%s/target", dir);
	CHECK(symlink(link, path) == 0);
	CHECK_INT(file_write_atomic(path, "new", 3, 0644, &err), 0);
	buf = file_read(link, 100, &len, &err);
	CHECK(buf != NULL && strcmp(buf, "keep") == 0);
	free(buf);

	snprintf(path, sizeof path, "%s/no/such/dir/file", dir);
	CHECK_INT(file_write_atomic(path, "x", 1, 0644, &err), -1);
	CHECK(strstr(err.msg, "No such file") != NULL);
}

/* A failed replacement names the file asked for, never the temporary one beside it. */
static void test_write_errors_name_the_file(void)
{
	struct error err = { 0 };

	CHECK_INT(file_write_atomic("/nonexistent-dir/tls.key", "k", 1, 0600, &err), -1);
	CHECK(strncmp(err.msg, "/nonexistent-dir/tls.key: ", 26) == 0);
	CHECK(strstr(err.msg, ".tmp-") == NULL);
	CHECK_INT(file_write_atomic("/nonexistent-dir/x.yaml", "k", 1, FILE_KEEP_MODE, &err), -1);
	CHECK(strstr(err.msg, ".tmp-") == NULL);
}

/* Sizes in messages read as they were set: 256 MiB, not 268435456 bytes. */
static void test_size_text(void)
{
	char b[32];

	CHECK_STR(error_size_text(b, sizeof b, 256UL * 1024 * 1024), "256 MiB");
	CHECK_STR(error_size_text(b, sizeof b, 3UL * 1024 * 1024), "3 MiB");
	CHECK_STR(error_size_text(b, sizeof b, 64 * 1024), "64 KiB");
	CHECK_STR(error_size_text(b, sizeof b, 1024 * 1024 + 1024), "1025 KiB");
	CHECK_STR(error_size_text(b, sizeof b, 1000), "1000 bytes");
	CHECK_STR(error_size_text(b, sizeof b, 0), "0 bytes");
}

/* libyaml stopping at a tab says "tab"; anything else keeps libyaml's words. */
static void test_yaml_problem(void)
{
	char m[128];

	error_yaml_problem(m, sizeof m, "found character that cannot start any token", "while scanning",
			   "a:\n\tb: 1\n", 8, 3);
	CHECK_STR(m, "a tab character: YAML indents with spaces only");
	error_yaml_problem(m, sizeof m, "found character that cannot start any token", "while scanning",
			   "a: @\n", 5, 3);
	CHECK_STR(m, "found character that cannot start any token while scanning");
	error_yaml_problem(m, sizeof m, NULL, NULL, "", 0, 0);
	CHECK_STR(m, "syntax error");
}

int main(void)
{
	char cmd[64];
	int rc;

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		printf("file: 0 passed, 1 failed\n");
		return 1;
	}
	RUN(test_read_limits);
	RUN(test_read_pipe);
	RUN(test_write_atomic);
	RUN(test_write_errors_name_the_file);
	RUN(test_size_text);
	RUN(test_yaml_problem);
	rc = check_done("file");
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return rc;
}
