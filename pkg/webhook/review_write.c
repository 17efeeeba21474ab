#include "webhook/review_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/strbuf.h"
#include "base/utf8.h"

/*
 * The answer written straight into one buffer. json_dumps() costs more here
 * than decoding a 6 KB review (a strbuffer grown by a call per run of bytes,
 * and per container a loop-check hashtable entry keyed by a snprintf'd
 * pointer), and json_pack() parses its format on every call.
 *
 * The writer reproduces json_dumps(JSON_COMPACT) byte for byte for what an
 * answer holds: objects in insertion order, arrays, strings, integers,
 * true/false/null. For anything else (a real, a string that is not UTF-8,
 * a NULL string, nesting deep enough to be a loop) it gives up and the
 * answer is made by jansson, whose encoding stays the reference:
 * REVIEW_FULL_PARSE always uses it, so the golden driver and the
 * differential fuzz target compare the two on every input.
 */
struct writer {
	struct strbuf sb;  /* the text; its failure: memory ran out (jansson would not do better, see review_encode()) */
	int failed;        /* a value only jansson encodes */
};

#define WRITER_INIT { STRBUF_INIT, 0 }
#define WRITER_MAX_DEPTH 32  /* answers nest 4 deep; deeper is left to jansson */
#define WRITER_FIRST 1024    /* bytes: a whole answer, as a rule */

/* Room for n more bytes (and a terminator); 0, or -1 once failed. */
static int w_room(struct writer *w, size_t n)
{
	return w->failed ? -1 : strbuf_grow(&w->sb, n);
}

static void w_bytes(struct writer *w, const void *p, size_t n)
{
	if (!w->failed)
		strbuf_add(&w->sb, p, n);
}

#define W_LIT(w, lit) w_bytes((w), (lit), sizeof(lit) - 1)

/*
 * A string as json_dumps() writes it without flags: '"' and '\\' escaped,
 * control bytes as \b \f \n \r \t or \u00XX (upper-case hex), everything
 * else as is, '/' and UTF-8 included. jansson refuses to dump a string that
 * is not UTF-8; so does this.
 */
static void w_string(struct writer *w, const char *str, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)str, *end;
	char *out;

	if (str == NULL) {
		w->failed = 1;
		return;
	}
	end = p + len;
	/* Room for the string as is and its quotes; each escape asks for more. */
	if (w_room(w, len + 2) != 0)
		return;
	out = w->sb.buf + w->sb.len;
	*out++ = '"';
	while (p < end) {
		size_t n;

		if (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') {
			*out++ = (char)*p++;
			continue;
		}
		if (*p >= 0x80) {
			if ((n = utf8_sequence(p, end)) == 0) {
				w->failed = 1;
				return;
			}
			memcpy(out, p, n);
			out += n;
			p += n;
			continue;
		}
		strbuf_setlen(&w->sb, (size_t)(out - w->sb.buf));
		if (w_room(w, 6 + (size_t)(end - p) + 1) != 0)
			return;
		out = w->sb.buf + w->sb.len;
		*out++ = '\\';
		switch (*p) {
		case '"':  case '\\': *out++ = (char)*p; break;
		case '\b': *out++ = 'b'; break;
		case '\f': *out++ = 'f'; break;
		case '\n': *out++ = 'n'; break;
		case '\r': *out++ = 'r'; break;
		case '\t': *out++ = 't'; break;
		default:
			memcpy(out, "u00", 3);
			out[3] = hex[*p >> 4];
			out[4] = hex[*p & 15];
			out += 5;
			break;
		}
		p++;
	}
	*out++ = '"';
	strbuf_setlen(&w->sb, (size_t)(out - w->sb.buf));
}

static void w_cstring(struct writer *w, const char *s)
{
	w_string(w, s, s ? strlen(s) : 0);
}

static void w_integer(struct writer *w, json_int_t v)
{
	char digits[24], *p = digits + sizeof digits;
	unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;

	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	w_bytes(w, p, (size_t)(digits + sizeof digits - p));
}

static void w_value(struct writer *w, json_t *v, int depth)
{
	size_t i;
	void *it;

	if (depth > WRITER_MAX_DEPTH) {
		w->failed = 1;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		W_LIT(w, "{");
		for (i = 0, it = json_object_iter(v); it != NULL && !w->failed && !w->sb.failed;
		     i++, it = json_object_iter_next(v, it)) {
			if (i > 0)
				W_LIT(w, ",");
			w_string(w, json_object_iter_key(it), json_object_iter_key_len(it));
			W_LIT(w, ":");
			w_value(w, json_object_iter_value(it), depth + 1);
		}
		W_LIT(w, "}");
		break;
	case JSON_ARRAY:
		W_LIT(w, "[");
		for (i = 0; i < json_array_size(v) && !w->failed && !w->sb.failed; i++) {
			if (i > 0)
				W_LIT(w, ",");
			w_value(w, json_array_get(v, i), depth + 1);
		}
		W_LIT(w, "]");
		break;
	case JSON_STRING:  w_string(w, json_string_value(v), json_string_length(v)); break;
	case JSON_INTEGER: w_integer(w, json_integer_value(v)); break;
	case JSON_TRUE:    W_LIT(w, "true"); break;
	case JSON_FALSE:   W_LIT(w, "false"); break;
	case JSON_NULL:    W_LIT(w, "null"); break;
	default:           w->failed = 1; break;  /* a real: jansson's %.17g and its tidying */
	}
}

/* The patch as json_dumps() text, base64-encoded into w. */
static void w_patch(struct writer *w, json_t *patch)
{
	struct writer text = WRITER_INIT;

	if (!json_is_array(patch) && !json_is_object(patch)) {
		w->failed = 1;  /* json_dumps() refuses other roots without JSON_ENCODE_ANY */
		return;
	}
	w_value(&text, patch, 1);
	if (text.sb.failed)
		strbuf_fail(&w->sb, text.sb.failed);
	else if (text.failed)
		w->failed = 1;
	else if (w_room(w, base64_len(text.sb.len)) == 0) {
		base64_encode_to(text.sb.buf, text.sb.len, w->sb.buf + w->sb.len);
		strbuf_setlen(&w->sb, w->sb.len + base64_len(text.sb.len));
	}
	strbuf_release(&text.sb);
}

/*
 * The answer (see review_encode()) from the writer: 0 with res filled, -1 when the
 * writer gave up on a value (nothing in res is touched), -2 when memory ran out.
 */
static int write_answer(const char *api_version, const char *uid, int allowed, enum error_kind kind,
			const char *message, const struct policy_result *pr, struct review_response *res)
{
	struct writer w = WRITER_INIT;
	int patched = allowed && pr != NULL && pr->decision == POLICY_MUTATE && pr->patch != NULL;

	strbuf_grow(&w.sb, WRITER_FIRST);
	W_LIT(&w, "{\"apiVersion\":");
	w_cstring(&w, api_version);
	W_LIT(&w, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
	w_cstring(&w, uid);
	if (allowed)
		W_LIT(&w, ",\"allowed\":true");
	else
		W_LIT(&w, ",\"allowed\":false");
	if (patched) {
		W_LIT(&w, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
		w_patch(&w, pr->patch);
		W_LIT(&w, "\"");
	}
	if (!allowed) {
		W_LIT(&w, ",\"status\":{\"code\":");
		w_integer(&w, error_http_status(kind));
		W_LIT(&w, ",\"status\":\"Failure\",\"reason\":");
		w_cstring(&w, error_status_reason(kind));
		W_LIT(&w, ",\"message\":");
		w_cstring(&w, message);
		W_LIT(&w, "}");
	}
	if (pr != NULL && json_array_size(pr->warnings) > 0) {
		W_LIT(&w, ",\"warnings\":");
		w_value(&w, pr->warnings, 2);
	}
	if (pr != NULL && json_object_size(pr->annotations) > 0) {
		W_LIT(&w, ",\"auditAnnotations\":");
		w_value(&w, pr->annotations, 2);
	}
	W_LIT(&w, "}}");
	if (w.sb.failed || w.failed) {
		int rc = w.sb.failed ? -2 : -1;

		strbuf_release(&w.sb);
		return rc;
	}
	res->body = strbuf_detach(&w.sb, &res->len);  /* never NULL: the text is there */
	res->status = error_http_status(allowed ? ERROR_NONE : kind);
	if (patched)
		res->patched = 1;
	return 0;
}

/*
 * json_dumps() of v into memory of our own (malloc), which review_response_free()
 * and free() may release: jansson allocates with whatever json_set_alloc_funcs()
 * installed (the server points it at a per-request arena), so its buffer is
 * copied out and handed back to jansson's own free. NULL when out of memory.
 */
static char *dump_compact(const json_t *v)
{
	json_malloc_t jmalloc;
	json_free_t jfree;
	char *text = json_dumps(v, JSON_COMPACT), *copy;

	if (text == NULL)
		return NULL;
	json_get_alloc_funcs(&jmalloc, &jfree);
	copy = strdup(text);
	jfree(text);
	return copy;
}

/* The answer (see review_encode()) from jansson: json_pack() and json_dumps(). */
static int pack_answer(const char *api_version, const char *uid, int allowed, enum error_kind kind,
		       const char *message, const struct policy_result *pr, struct review_response *res,
		       struct error *err)
{
	json_t *root = NULL, *resp;
	char *patch_text = NULL, *patch_b64 = NULL;
	int rc = -1;

	resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", allowed);
	root = json_pack("{s:s, s:s, s:o}", "apiVersion", api_version, "kind", "AdmissionReview",
			 "response", resp);
	if (root == NULL)
		goto nomem;
	if (allowed && pr != NULL && pr->decision == POLICY_MUTATE && pr->patch != NULL) {
		patch_text = dump_compact(pr->patch);
		patch_b64 = patch_text ? base64_encode(patch_text, strlen(patch_text)) : NULL;
		if (patch_b64 == NULL ||
		    json_object_set_new(resp, "patchType", json_string("JSONPatch")) != 0 ||
		    json_object_set_new(resp, "patch", json_string(patch_b64)) != 0)
			goto nomem;
		res->patched = 1;
	}
	if (!allowed &&
	    json_object_set_new(resp, "status",
				json_pack("{s:i, s:s, s:s, s:s}", "code", error_http_status(kind),
					  "status", "Failure", "reason", error_status_reason(kind),
					  "message", message)) != 0)
		goto nomem;
	if (pr != NULL && json_array_size(pr->warnings) > 0 &&
	    json_object_set(resp, "warnings", pr->warnings) != 0)
		goto nomem;
	if (pr != NULL && json_object_size(pr->annotations) > 0 &&
	    json_object_set(resp, "auditAnnotations", pr->annotations) != 0)
		goto nomem;
	res->body = dump_compact(root);
	if (res->body == NULL)
		goto nomem;
	res->len = strlen(res->body);
	res->status = error_http_status(allowed ? ERROR_NONE : kind);
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory encoding the response");
out:
	free(patch_text);
	free(patch_b64);
	json_decref(root);
	return rc;
}

/*
 * Builds the response AdmissionReview. kind ERROR_NONE answers with the
 * policy result (pr may be NULL for a plain allow); any other kind is a
 * refusal with message, its code and reason from pkg/base/error.c. Everything
 * passed in is borrowed. The writer makes it unless flags hold
 * REVIEW_FULL_PARSE (the reference path) or it gives up; jansson then does.
 */
int review_encode(const char *api_version, const char *uid, enum error_kind kind, const char *message,
		  const struct policy_result *pr, unsigned flags, struct review_response *res,
		  struct error *err)
{
	int allowed = kind == ERROR_NONE && (pr == NULL || pr->decision != POLICY_REJECT);

	if (!allowed && kind == ERROR_NONE)
		kind = ERROR_POLICY;
	if (!(flags & REVIEW_FULL_PARSE)) {
		int rc = write_answer(api_version, uid, allowed, kind, message, pr, res);

		if (rc == 0)
			return 0;
		/* Out of memory: jansson would be short of it too, and its encoder does not report it reliably. */
		if (rc == -2) {
			error_set(err, ERROR_NOMEM, "out of memory encoding the response");
			return -1;
		}
	}
	return pack_answer(api_version, uid, allowed, kind, message, pr, res, err);
}
