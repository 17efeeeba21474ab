/* file: bounded whole-file reads and atomic replacement. */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"

#define FILE_CHUNK (64 * 1024) /* first allocation when the size is not known up front */

void file_free_secret(char *buf, size_t n)
{
	if (buf == NULL)
		return;
	explicit_bzero(buf, n);
	free(buf);
}

char *file_read_stream(FILE *f, size_t max, size_t *len, struct error *err)
{
	struct stat st;
	size_t cap = FILE_CHUNK, n = 0;
	char *buf = NULL, *grown;

	/* A regular file tells its size: one exact allocation (plus one byte to see growth). */
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (size_t)st.st_size < max ? (size_t)st.st_size + 1 : max + 1;
	else if (cap > max + 1)
		cap = max + 1;
	if ((buf = malloc(cap + 1)) == NULL)
		goto nomem;
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n > max) {
			char size[32];

			error_set(err, ERROR_TOO_LARGE, "larger than %s", error_size_text(size, sizeof size, max));
			goto fail;
		}
		if (n < cap) {
			if (ferror(f)) {
				error_set(err, ERROR_SYSTEM, "read failed: %s", strerror(errno));
				goto fail;
			}
			if (feof(f))
				break;
			continue;
		}
		cap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
		/* Not realloc: the old block may hold a private key, and must be wiped, not left behind. */
		if ((grown = malloc(cap + 1)) == NULL)
			goto nomem;
		memcpy(grown, buf, n);
		file_free_secret(buf, n);
		buf = grown;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory reading input");
fail:
	file_free_secret(buf, n);
	return NULL;
}

char *file_read(const char *path, size_t max, size_t *len, struct error *err)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	if (f == NULL) {
		error_set(err, errno == ENOENT ? ERROR_NOT_FOUND : ERROR_SYSTEM, "%s: %s", path,
			  strerror(errno));
		return NULL;
	}
	buf = file_read_stream(f, max, len, err);
	if (buf == NULL)
		error_prefix(err, "%s: ", path);
	fclose(f);
	return buf;
}

int file_write_atomic(const char *path, const void *buf, size_t len, mode_t mode, struct error *err)
{
	const char *p = buf;
	size_t n = strlen(path) + sizeof ".tmp-XXXXXX", off = 0;
	char *tmp = malloc(n);
	struct stat st;
	int fd = -1, rc = -1;

	if (tmp == NULL) {
		error_set(err, ERROR_NOMEM, "%s: out of memory", path);
		return -1;
	}
	tmp[0] = '\0'; /* nothing to remove yet */
	if (mode == FILE_KEEP_MODE) {
		if (stat(path, &st) != 0) {
			error_set(err, ERROR_SYSTEM, "%s: %s", path, strerror(errno));
			goto out;
		}
		mode = st.st_mode & 07777;
	}
	snprintf(tmp, n, "%s.tmp-XXXXXX", path);
	/* mkstemp creates 0600 with O_EXCL; the mode is final before the first byte lands. */
	if ((fd = mkstemp(tmp)) < 0) {
		error_set(err, ERROR_SYSTEM, "%s: cannot create a file next to it: %s", path, strerror(errno));
		tmp[0] = '\0';
		goto out;
	}
	if (fchmod(fd, mode) != 0) {
		error_set(err, ERROR_SYSTEM, "%s: chmod: %s", path, strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			error_set(err, ERROR_SYSTEM, "%s: write failed: %s", path,
				  w < 0 ? strerror(errno) : "no progress");
			goto out;
		}
		off += (size_t)w;
	}
	/* Without fsync a crash after rename can leave an empty file under the old name. */
	{
		int synced = fsync(fd), e = errno;

		if (close(fd) != 0 && synced == 0) {
			synced = -1;
			e = errno;
		}
		fd = -1;
		if (synced != 0) {
			error_set(err, ERROR_SYSTEM, "%s: write failed: %s", path, strerror(e));
			goto out;
		}
	}
	if (rename(tmp, path) != 0) {
		error_set(err, ERROR_SYSTEM, "%s: rename failed: %s", path, strerror(errno));
		goto out;
	}
	tmp[0] = '\0';
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (tmp[0] != '\0')
		unlink(tmp);
	free(tmp);
	return rc;
}
