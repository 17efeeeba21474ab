/*
 * workload_check.h: what the tests hold a workload's answer to, shared by
 * test/tools/workload_verdicts.c and the golden driver: the answer for a
 * workload object must follow from the audit findings of its templates.
 * Static functions only; included by one tool each.
 */
#ifndef GPU_ADMISSION_WORKLOAD_CHECK_H
#define GPU_ADMISSION_WORKLOAD_CHECK_H

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "base/error.h"
#include "policy/policy.h"
#include "policy/workload.h"

#define WC_TEXT_MAX 8192

static const char *wc_str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

static int wc_weight(const json_t *f)
{
	const char *v = wc_str(f, "verdict");

	if (strcmp(v, "reject") == 0)
		return 4;
	if (strcmp(v, "mutate") == 0)
		return 3;
	return json_array_size(json_object_get(f, "warnings")) > 0 ? 2 : 1;
}

/* text cut as the webhook cuts a warning: 256 bytes, on a character. */
static void wc_cut(char *text)
{
	text[POLICY_WARNING_MAX] = '\0';
	error_trim_utf8(text);
}

static int wc_has_warning(const json_t *warnings, const char *want)
{
	size_t i;

	for (i = 0; i < json_array_size(warnings); i++)
		if (strcmp(json_string_value(json_array_get(warnings, i)), want) == 0)
			return 1;
	return 0;
}

/*
 * Compares an answer (response object) with the findings of its templates
 * (rel: their paths from the object, by index). NULL when they agree, else
 * what differs (static storage). may_patch: the answer is /mutate's for a
 * DaemonSet in gpuInfraNamespaces, which may patch its template (decision
 * mutate, then); any other answer carrying a patch differs.
 */
static const char *wc_compare(const json_t *resp, const json_t *findings, const json_t *rel, int may_patch)
{
	static char why[WC_TEXT_MAX];
	const json_t *ann = json_object_get(resp, "auditAnnotations"), *f, *decider = NULL;
	const json_t *warnings = json_object_get(resp, "warnings");
	const char *message = wc_str(json_object_get(resp, "status"), "message");
	const char *mode = json_array_size(findings) ? wc_str(json_array_get(findings, 0), "mode") : "enforce";
	size_t i, w, rejected = 0, exempt = 0, n = json_array_size(findings);
	char text[WC_TEXT_MAX];

	json_array_foreach(findings, i, f) {
		rejected += strcmp(wc_str(f, "verdict"), "reject") == 0;
		exempt += strcmp(wc_str(f, "verdict"), "exempt") == 0;
		if (decider == NULL || wc_weight(f) > wc_weight(decider))
			decider = f;
	}
	int patched = json_object_get(resp, "patch") != NULL;

	if (patched && !may_patch)
		return "a workload was patched";
	if (json_is_true(json_object_get(resp, "allowed")) != !(rejected > 0 && strcmp(mode, "enforce") == 0))
		return rejected > 0 ? "allowed, with a template audit rejects (enforce)"
				    : "denied, with no template audit rejects";
	json_array_foreach(findings, i, f) {
		const char *path = json_string_value(json_array_get(rel, i));

		if (strcmp(wc_str(f, "verdict"), "reject") != 0)
			continue;
		snprintf(text, sizeof text, "pod template %s: %s", path, wc_str(f, "message"));
		if (strcmp(mode, "enforce") == 0) {
			/* Every template named while the message has room (it is cut at 4 KiB). */
			if (strstr(message, text) == NULL && strlen(message) + 64 < WORKLOAD_MESSAGE_MAX) {
				snprintf(why, sizeof why, "the message does not say \"%s\"", text);
				return why;
			}
		} else {
			snprintf(text, sizeof text, "would be rejected (%s mode): pod template %s: %s", mode, path,
				 wc_str(f, "message"));
			wc_cut(text);
			if (!wc_has_warning(warnings, text) && json_array_size(warnings) < WORKLOAD_WARNINGS_MAX) {
				snprintf(why, sizeof why, "no warning \"%s\"", text);
				return why;
			}
		}
	}
	/* Every warning comes from a finding's warnings, the mode's, or says how many more there are. */
	for (w = 0; w < json_array_size(warnings); w++) {
		const char *got = json_string_value(json_array_get(warnings, w));
		int from = strncmp(got, "would be rejected (", 19) == 0 || strstr(got, "more warning") != NULL;

		json_array_foreach(findings, i, f) {
			const json_t *fw = json_object_get(f, "warnings"), *one;
			size_t k;

			json_array_foreach(fw, k, one) {
				snprintf(text, sizeof text, "pod template %s: %s",
					 json_string_value(json_array_get(rel, i)), json_string_value(one));
				wc_cut(text);
				from |= strcmp(text, got) == 0;
			}
		}
		if (!from) {
			snprintf(why, sizeof why, "warning \"%s\" is none of the findings'", got);
			return why;
		}
	}
	if (n > 0) {
		size_t d = 0;

		while (json_array_get(findings, d) != decider)
			d++;
		if (strcmp(wc_str(ann, "reason"), wc_str(decider, "reason")) != 0 ||
		    strcmp(wc_str(ann, "template"), json_string_value(json_array_get(rel, d))) != 0 ||
		    strcmp(wc_str(ann, "mode"), mode) != 0) {
			snprintf(why, sizeof why, "annotated %s at %s (%s), the deciding finding is %s at %s (%s)",
				 wc_str(ann, "reason"), wc_str(ann, "template"), wc_str(ann, "mode"), wc_str(decider, "reason"),
				 json_string_value(json_array_get(rel, d)), mode);
			return why;
		}
		if (strcmp(wc_str(ann, "decision"), exempt == n ? "exempt" : rejected > 0 && strcmp(mode, "enforce") == 0
			   ? "reject" : patched ? "mutate" : "allow") != 0)
			return "the decision annotated is not the findings'";
	}
	return NULL;
}

#endif
