/* policy_target: the routes by which a CPU-only pod aims at GPU nodes. */
#include "policy_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ==== CPU pods aimed at GPU nodes ==== */

/* A label key=value (or a key alone, value NULL) that only GPU nodes carry. */
static int gpu_label(const struct config *cfg, const char *key, const char *value)
{
	size_t i, j;

	if (policy_list_has(&cfg->gpu_node_labels, key))
		return 1;
	for (i = 0; value != NULL && i < cfg->n_pools; i++)
		for (j = 0; j < cfg->pools[i].node_selector.n; j++)
			if (strcmp(cfg->pools[i].node_selector.v[j].key, key) == 0 &&
			    strcmp(cfg->pools[i].node_selector.v[j].value, value) == 0)
				return 1;
	return 0;
}

/*
 * Can a node selector requirement only be met by GPU nodes? In with values
 * that are all GPU label values, or Exists on a GPU label key.
 */
static int gpu_requirement(const struct config *cfg, const json_t *expr)
{
	const char *key = policy_str(expr, "key", ""), *op = policy_str(expr, "operator", "");
	const json_t *values = json_object_get(expr, "values"), *v;
	size_t i;

	if (strcmp(op, "Exists") == 0)
		return policy_list_has(&cfg->gpu_node_labels, key);
	if (strcmp(op, "In") != 0 || !json_is_array(values) || json_array_size(values) == 0)
		return 0;
	json_array_foreach(policy_iterable(values), i, v)
		if (!json_is_string(v) || !gpu_label(cfg, key, json_string_value(v)))
			return 0;
	return 1;
}

static int gpu_term(const struct config *cfg, const json_t *term)
{
	const json_t *exprs = json_object_get(term, "matchExpressions"), *e;
	size_t i;

	json_array_foreach(policy_iterable(exprs), i, e)
		if (json_is_object(e) && gpu_requirement(cfg, e))
			return 1;  /* requirements are ANDed: one GPU-only requirement suffices */
	return 0;
}

/* Required: every term is GPU-only (terms are ORed). Preferred: any term leans to GPUs. */
static void gpu_affinity(const struct config *cfg, const json_t *spec, int *required, int *preferred)
{
	const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
	const json_t *terms = json_object_get(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"),
					      "nodeSelectorTerms");
	const json_t *prefs = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
	const json_t *t;
	size_t i;

	*required = json_is_array(terms) && json_array_size(terms) > 0;
	json_array_foreach(policy_iterable(terms), i, t)
		if (!json_is_object(t) || !gpu_term(cfg, t))
			*required = 0;
	*preferred = 0;
	json_array_foreach(policy_iterable(prefs), i, t)
		if (json_is_object(t) && gpu_term(cfg, json_object_get(t, "preference")))
			*preferred = 1;
}

/* Records one route a CPU pod takes to GPU nodes: what it does, and what to remove. */
static void route(struct policy_result *res, const char *reason, char *fixes, size_t fcap,
		  const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void route(struct policy_result *res, const char *reason, char *fixes, size_t fcap,
		  const char *fix, const char *fmt, ...)
{
	char what[POLICY_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (res->reason == NULL)
		res->reason = reason;
	policy_appendf(res->message, sizeof res->message, "%s%s", res->message[0] ? "; " : "", what);
	policy_appendf(fixes, fcap, "%s%s", fixes[0] ? ", " : "", fix);
}

/*
 * The four routes by which a CPU-only pod reaches GPU nodes. A rejection's
 * message lists every route taken, then one sentence on how to fix it; the
 * reason code names the first. The soft routes (wildcard toleration,
 * preferred affinity) only warn.
 */
int policy_target_check(const struct config *cfg, const struct pod_view *pv,
			 struct policy_result *res, struct error *err)
{
	char taint[128], fixes[256] = "", what[POLICY_MESSAGE_MAX];
	const json_t *t, *v;
	const char *key, *node_name;
	size_t i;
	int required, preferred, wildcard = 0, tolerated = 0;

	policy_describe_taint(cfg, taint, sizeof taint);
	res->message[0] = '\0';
	json_array_foreach(policy_iterable(pv->tolerations), i, t) {
		if (!policy_tolerates(t, cfg->taint_key, cfg->taint_value, cfg->taint_effect))
			continue;
		if (policy_str(t, "key", "")[0] == '\0') {
			wildcard = 1;
		} else if (!tolerated) {
			tolerated = 1;
			route(res, R_CPU_TOL, fixes, sizeof fixes, "the toleration",
			      "it tolerates the GPU taint %s (spec.tolerations[%zu])", taint, i);
		}
	}
	json_object_foreach(policy_iterable(pv->node_selector), key, v) {
		if (gpu_label(cfg, key, json_string_value(v))) {
			route(res, R_CPU_SEL, fixes, sizeof fixes, "the nodeSelector entry",
			      "it selects GPU nodes with nodeSelector %s=%s", key, json_string_value(v));
			break;
		}
	}
	gpu_affinity(cfg, pv->spec, &required, &preferred);
	if (required)
		route(res, R_CPU_AFF, fixes, sizeof fixes, "the required node affinity",
		      "its required node affinity matches only GPU nodes");
	node_name = policy_str(pv->spec, "nodeName", "");
	if (node_name[0] != '\0' && policy_match_any(&cfg->gpu_node_names, node_name))
		route(res, R_CPU_NAME, fixes, sizeof fixes, "spec.nodeName",
		      "spec.nodeName binds it to GPU node %s", node_name);

	if (res->reason != NULL) {
		memcpy(what, res->message, sizeof what);
		/*
		 * An exempt DaemonSet pod is admitted (policy.c), with this as its warning: no advice
		 * to remove the toleration, which is how a device plugin or exporter reaches GPU nodes.
		 */
		if (pv->daemonset && cfg->exempt_daemonsets)
			snprintf(res->message, sizeof res->message, "CPU-only pod aimed at GPU nodes: %s", what);
		else
			snprintf(res->message, sizeof res->message,
				 "CPU-only pod aimed at GPU nodes: %s. GPU nodes are for GPU pods: remove %s, or "
				 "request a GPU (e.g. limits nvidia.com/gpu: 1)",
				 what, fixes);
		res->verdict = POLICY_REJECT;
		return 0;
	}
	res->reason = R_NO_GPU;
	if (wildcard && policy_warn(res, err, "pod requests no GPU but tolerates every taint (toleration with "
			     "operator Exists and no key), so it may be scheduled onto GPU nodes (%s)", taint) != 0)
		return -1;
	if (preferred && policy_warn(res, err, "pod requests no GPU but prefers GPU nodes through preferred "
			      "node affinity; it may take GPU capacity") != 0)
		return -1;
	return 0;
}
