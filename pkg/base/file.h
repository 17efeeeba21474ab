/*
 * file: reading whole inputs under a size limit, and replacing files
 * atomically. Policy files, certificates, manifests and AdmissionReviews on
 * stdin all come in through file_read*(); certificates, keys and fixed
 * manifests go out through file_write_atomic().
 */
#ifndef GPU_ADMISSION_FILE_H
#define GPU_ADMISSION_FILE_H

#include <stdio.h>
#include <sys/types.h>

/* A mode for file_write_atomic(): keep the mode of the file being replaced. */
#define FILE_KEEP_MODE ((mode_t)-1)

/* What messages call standard input (the operand "-"). */
#define FILE_STDIN_NAME "<stdin>"

struct error;

/*
 * New: all of f (borrowed; read to EOF, not closed), at most max bytes, as a
 * NUL-terminated buffer; *len gets the length without the NUL. NULL with err:
 * ERROR_TOO_LARGE over max, ERROR_SYSTEM on a read error, ERROR_NOMEM.
 * A regular file is read into one allocation of its size; any buffer given
 * up on the way (growth, an error) is wiped first, so a secret read this way
 * leaves no stray copies behind when the caller wipes the result.
 */
char *file_read_stream(FILE *f, size_t max, size_t *len, struct error *err);

/*
 * New: the whole file at path (borrowed), as file_read_stream() reads it.
 * Messages start with the path. ERROR_NOT_FOUND when it does not exist.
 */
char *file_read(const char *path, size_t max, size_t *len, struct error *err);

/*
 * Replaces path (borrowed) with buf[0..len) (borrowed) so that a reader sees
 * either the old or the new content, never a mix: a new temporary file in
 * the same directory (mkstemp: never a symlink someone planted), its mode set
 * before any byte is written, fsync, then rename(2). mode is the new file's
 * permission bits, or FILE_KEEP_MODE to keep those of the file replaced.
 * Returns 0, or -1 with err (ERROR_SYSTEM, ERROR_NOMEM) naming path (never
 * the temporary file, an implementation detail); the temporary file is
 * removed on failure.
 */
int file_write_atomic(const char *path, const void *buf, size_t len, mode_t mode, struct error *err);

/* Frees buf (may be NULL) after zeroing its first n bytes: what was read may be secret (a key). */
void file_free_secret(char *buf, size_t n);

#endif
