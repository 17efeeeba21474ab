/*
 * base64: RFC 4648's test vectors both ways, binary bytes, and what each
 * decoding mode refuses (strict: what we write; loose: a kubeconfig's).
 */
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "check.h"

static const struct { const char *plain, *text; } rfc4648[] = {
	{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
};

static void test_encode(void)
{
	size_t i;
	char out[16];

	for (i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
		char *s = base64_encode(rfc4648[i].plain, strlen(rfc4648[i].plain));

		CHECK_STR(s, rfc4648[i].text);
		CHECK_INT(base64_len(strlen(rfc4648[i].plain)), strlen(rfc4648[i].text));
		free(s);
	}
	/* Every byte value, the high bit included: "\xff\x00\xfe" is "/wD+". */
	base64_encode_to("\xff\x00\xfe", 3, out);
	CHECK(memcmp(out, "/wD+", 4) == 0);
	CHECK(base64_encode("x", BASE64_IN_MAX + 1) == NULL);  /* its length would not fit */
}

static void test_decode_strict(void)
{
	static const char *const bad[] = { "Zg=", "Zg", "Z===", "Zg=a", "Zg==Zm8=", "Zm 9v", "Zm9v\n", "Zm-v", "====" };
	size_t i, len;
	int nomem;
	char *s;

	for (i = 0; i < sizeof rfc4648 / sizeof rfc4648[0]; i++) {
		s = base64_decode(rfc4648[i].text, strlen(rfc4648[i].text), BASE64_STRICT, &len, &nomem);
		CHECK_STR(s, rfc4648[i].plain);
		CHECK_INT(len, strlen(rfc4648[i].plain));
		free(s);
	}
	s = base64_decode("/wD+", 4, BASE64_STRICT, &len, &nomem);
	CHECK(s != NULL && len == 3 && memcmp(s, "\xff\x00\xfe", 3) == 0);
	free(s);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		s = base64_decode(bad[i], strlen(bad[i]), BASE64_STRICT, &len, &nomem);
		if (s != NULL || nomem)
			fprintf(stderr, "  accepted: \"%s\"\n", bad[i]);
		CHECK(s == NULL && nomem == 0);
		free(s);
	}
}

static void test_decode_loose(void)
{
	size_t len;
	int nomem;
	char *s;

	/* White space anywhere, padding optional, nothing read past the first '='. */
	s = base64_decode(" Zm9v\nYmE=  trailing", 20, BASE64_LOOSE, &len, &nomem);
	CHECK_STR(s, "fooba");
	free(s);
	s = base64_decode("Zm9vYmE", 7, BASE64_LOOSE, &len, &nomem);
	CHECK_STR(s, "fooba");
	CHECK_INT(len, 5);
	free(s);
	s = base64_decode("Zm9v!", 5, BASE64_LOOSE, &len, &nomem);
	CHECK(s == NULL && nomem == 0);
}

int main(void)
{
	RUN(test_encode);
	RUN(test_decode_strict);
	RUN(test_decode_loose);
	return check_done("test_base64");
}
