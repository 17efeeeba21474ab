#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void error_set(struct error *e, enum error_kind kind, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return;
	e->kind = kind;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
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
	snprintf(e->msg, sizeof e->msg, "%s%s", prefix, old);
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
	case ERROR_SYSTEM:
	case ERROR_NOMEM:
	case ERROR_INTERNAL:    return 500;
	}
	return 500;
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
	}
	return "internal";
}
