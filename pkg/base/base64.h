/*
 * base64: the one codec (RFC 4648, the standard alphabet with '=' padding)
 * for what this program writes (an AdmissionReview's patch, a caBundle) and
 * reads (the patch of an answer read back, a kubeconfig's *-data fields).
 * Pure but for the allocations the functions that return memory make.
 */
#ifndef GPU_ADMISSION_BASE64_H
#define GPU_ADMISSION_BASE64_H

#include <stddef.h>

/* The largest input base64_len() can count (its text fits in a size_t). */
#define BASE64_IN_MAX ((((size_t)-1) - 3) / 4 * 3)

/* Bytes of the text of n bytes, padding included, no NUL; n at most BASE64_IN_MAX. */
size_t base64_len(size_t n);

/* Writes the text of in[0..len) to out: base64_len(len) bytes, no NUL (room is the caller's). */
void base64_encode_to(const void *in, size_t len, char *out);

/* New (free()): the text of in[0..len), NUL-terminated. NULL when memory ran out or len passes BASE64_IN_MAX. */
char *base64_encode(const void *in, size_t len);

enum base64_mode {
	/* Padded to a multiple of 4, '=' only at the end, nothing else but digits: what we write. */
	BASE64_STRICT,
	/*
	 * White space skipped, padding optional, the text ends at the first '='
	 * (a kubeconfig's certificate-authority-data as people paste it).
	 */
	BASE64_LOOSE
};

/*
 * New (free()): the bytes of the text s[0..len), NUL-terminated (binary
 * data may hold NULs: the length is *out_len). NULL when the text is not
 * base64 in that mode, or memory ran out: then *nomem is 1 (else 0).
 */
char *base64_decode(const char *s, size_t len, enum base64_mode mode, size_t *out_len, int *nomem);

#endif
