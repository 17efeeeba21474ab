#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void error_trim_utf8(char *buf)
{
	size_t len = strlen(buf), lead = len;

	while (lead > 0 && ((unsigned char)buf[lead - 1] & 0xC0) == 0x80)
		lead--;
	if (lead > 0) {
		unsigned char c = (unsigned char)buf[lead - 1];
		size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;

		if (len - (lead - 1) < need)
			buf[lead - 1] = '\0';
	}
}

void error_set(struct error *e, enum error_kind kind, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (e == NULL)
		return;
	e->kind = kind;
	va_start(ap, fmt);
	n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof e->msg)
		error_trim_utf8(e->msg);
}

void error_prefix(struct error *e, const char *fmt, ...)
{
	char prefix[ERROR_MSG_MAX], old[ERROR_MSG_MAX];
	va_list ap;

	if (e == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	old[sizeof old - 1] = '\0';
	if (snprintf(e->msg, sizeof e->msg, "%s%s", prefix, old) >= (int)sizeof e->msg)
		error_trim_utf8(e->msg);
}

void error_clear(struct error *e)
{
	if (e == NULL)
		return;
	e->kind = ERROR_NONE;
	e->msg[0] = '\0';
}

int error_http_status(enum error_kind kind)
{
	switch (kind) {
	case ERROR_NONE:        return 200;
	case ERROR_INPUT:       return 400;
	case ERROR_CONFIG:      return 400;
	case ERROR_POLICY:      return 403;
	case ERROR_NOT_FOUND:   return 404;
	case ERROR_METHOD:      return 405;
	case ERROR_TOO_LARGE:   return 413;
	case ERROR_MEDIA_TYPE:  return 415;
	case ERROR_UNAVAILABLE: return 503;
	case ERROR_UNSUPPORTED: return 501;
	case ERROR_SYSTEM:
	case ERROR_NOMEM:
	case ERROR_INTERNAL:    return 500;
	}
	return 500;
}

const char *error_status_reason(enum error_kind kind)
{
	switch (kind) {
	case ERROR_INPUT:
	case ERROR_CONFIG:      return "BadRequest";
	case ERROR_POLICY:      return "Forbidden";
	case ERROR_NOT_FOUND:   return "NotFound";
	case ERROR_METHOD:      return "MethodNotAllowed";
	case ERROR_TOO_LARGE:   return "RequestEntityTooLarge";
	case ERROR_MEDIA_TYPE:  return "UnsupportedMediaType";
	case ERROR_UNAVAILABLE: return "ServiceUnavailable";
	case ERROR_UNSUPPORTED: return "BadRequest";  /* metav1 has no NotImplemented reason */
	case ERROR_NONE:
	case ERROR_SYSTEM:
	case ERROR_NOMEM:
	case ERROR_INTERNAL:    return "InternalError";
	}
	return "InternalError";
}

const char *error_kind_name(enum error_kind kind)
{
	switch (kind) {
	case ERROR_NONE:        return "none";
	case ERROR_INPUT:       return "input";
	case ERROR_POLICY:      return "policy";
	case ERROR_CONFIG:      return "config";
	case ERROR_TOO_LARGE:   return "too_large";
	case ERROR_NOT_FOUND:   return "not_found";
	case ERROR_METHOD:      return "method";
	case ERROR_MEDIA_TYPE:  return "media_type";
	case ERROR_UNAVAILABLE: return "unavailable";
	case ERROR_SYSTEM:      return "system";
	case ERROR_NOMEM:       return "nomem";
	case ERROR_INTERNAL:    return "internal";
	case ERROR_UNSUPPORTED: return "unsupported";
	}
	return "internal";
}

const char *error_size_text(char *buf, size_t cap, size_t bytes)
{
	if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
		snprintf(buf, cap, "%zu MiB", bytes / (1024 * 1024));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, cap, "%zu KiB", bytes / 1024);
	else
		snprintf(buf, cap, "%zu bytes", bytes);
	return buf;
}

void error_yaml_problem(char *msg, size_t cap, const char *problem, const char *context,
			const char *input, size_t len, size_t index)
{
	if (input != NULL && index < len && input[index] == '\t')
		snprintf(msg, cap, "a tab character: YAML indents with spaces only");
	else
		snprintf(msg, cap, "%s%s%s", problem ? problem : "syntax error", context ? " " : "",
			 context ? context : "");
	error_trim_utf8(msg);
}
