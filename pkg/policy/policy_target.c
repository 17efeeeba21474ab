/*
 * policy_target: the routes by which a pod aims at GPU nodes.
 *
 * What a route "aims at GPU nodes" means follows the scheduler's own matching
 * (pkg/k8s/nodematch.h, which cites the upstream sources): a requirement is
 * GPU-only when every node it admits is a GPU node, a term when one of its
 * requirements is (they are ANDed), and a required node affinity when every
 * term that can match anything is (terms are ORed; an empty term matches no
 * node). Requirements the API server refuses (unknown operators, wrong value
 * counts) are not looked at closely: such a pod never passes validation.
 */
#include "policy/policy_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "k8s/nodematch.h"
#include "base/patch.h"

#define CLAIMS_POD "pod with DRA resource claims but no GPU resource"  /* what such a pod is called */
#define GPU_OPERATOR_LABEL_PREFIX "nvidia.com/gpu."  /* GPU feature discovery's labels, which the operator's pods select */

/* ==== GPU nodes by name ==== */

/*
 * Is node one of AKS agent pool pool's? AKS names them
 * aks-<pool>-<8 digits>-vmss<6 characters>: the glob aks-<pool>-*, compared
 * literally (a label value has no glob characters to honour).
 */
static int aks_pool_node(const char *pool, const char *node)
{
	size_t n = strlen(pool);

	return strncmp(node, "aks-", 4) == 0 && strncmp(node + 4, pool, n) == 0 && node[4 + n] == '-';
}

/* Can GPU nodes be told by name: gpuNodeNames set, or every pool derives its globs? */
static int names_known(const struct config *cfg)
{
	size_t i;

	if (cfg->gpu_node_names.n > 0)
		return 1;
	for (i = 0; i < cfg->n_pools; i++)
		if (config_pool_aks_pool(&cfg->pools[i]) == NULL)
			return 0;
	return 1;
}

/* What the nodes a name, a requirement or a term admits are. */
enum node_kind {
	NODE_OTHER = 0,  /* not GPU nodes, or not only GPU nodes */
	NODE_GPU,        /* only GPU nodes */
	NODE_UNKNOWN,    /* nodes named, which GPU nodes cannot be told from by name */
	NODE_NONE        /* no node at all (an empty term) */
};

int policy_node_in_pool(const struct config *cfg, const struct config_pool *p, const char *node)
{
	const char *pool = config_pool_aks_pool(p);

	if (cfg->gpu_node_names.n > 0 && !policy_match_any(&cfg->gpu_node_names, node))
		return 0;
	return pool == NULL ? -1 : aks_pool_node(pool, node);
}

/* What node is by name: gpuNodeNames when set, else the globs derived from the pools. */
static enum node_kind node_named(const struct config *cfg, const char *node)
{
	size_t i;

	if (node == NULL)
		return NODE_OTHER;
	if (cfg->gpu_node_names.n > 0)
		return policy_match_any(&cfg->gpu_node_names, node) ? NODE_GPU : NODE_OTHER;
	for (i = 0; i < cfg->n_pools; i++)
		if (policy_node_in_pool(cfg, &cfg->pools[i], node) == 1)
			return NODE_GPU;
	return names_known(cfg) ? NODE_OTHER : NODE_UNKNOWN;
}

/* Several possibilities at once (values of In): GPU only when all are. */
static enum node_kind either(enum node_kind a, enum node_kind b)
{
	if (a == NODE_OTHER || b == NODE_OTHER)
		return NODE_OTHER;
	return a == NODE_UNKNOWN || b == NODE_UNKNOWN ? NODE_UNKNOWN : NODE_GPU;
}

/* The nodes an In over node names admits (values borrowed). */
static enum node_kind names_in(const struct config *cfg, const json_t *values)
{
	enum node_kind kind = NODE_GPU;
	const json_t *v;
	size_t i;

	if (!json_is_array(values) || json_array_size(values) == 0)
		return NODE_OTHER;
	json_array_foreach(iterable(values), i, v)
		kind = either(kind, node_named(cfg, json_string_value(v)));
	return kind;
}

void policy_describe_node_names(const struct config *cfg, char *buf, size_t cap)
{
	size_t i, n = 0, unnamed = 0;
	int derived = 0;

	buf[0] = '\0';
	if (cfg->gpu_node_names.n > 0) {
		policy_appendf(buf, cap, "gpuNodeNames:");
		for (i = 0; i < cfg->gpu_node_names.n; i++)
			policy_appendf(buf, cap, "%s %s", i ? "," : "", cfg->gpu_node_names.v[i]);
		return;
	}
	policy_appendf(buf, cap, "gpuNodeNames: not set;");
	for (i = 0; i < cfg->n_pools; i++) {
		const char *pool = config_pool_aks_pool(&cfg->pools[i]);

		if (pool == NULL)
			continue;
		policy_appendf(buf, cap, "%s aks-%s-*", derived++ ? "," : " derived from the pools:", pool);
	}
	if (names_known(cfg))
		return;
	/* Every pool that does not, named: the NAP example's two, not the first alone. */
	for (i = 0; i < cfg->n_pools; i++)
		n += config_pool_aks_pool(&cfg->pools[i]) == NULL;
	for (i = 0; i < cfg->n_pools; i++) {
		if (config_pool_aks_pool(&cfg->pools[i]) != NULL)
			continue;
		policy_appendf(buf, cap, "%s\"%s\"", unnamed++ ? (unnamed == n ? " and " : ", ")
			       : derived ? (n == 1 ? "; pool " : "; pools ") : (n == 1 ? " pool " : " pools "),
			       cfg->pools[i].name);
	}
	policy_appendf(buf, cap, " %s not select by " CONFIG_AKS_POOL_LABEL ", so %s nodes "
		       "cannot be told by name: a CPU pod pinned to a node by name is admitted with a "
		       "warning (set gpuNodeNames to judge it)", n == 1 ? "does" : "do", n == 1 ? "its" : "their");
}

/* ==== GPU nodes by label ==== */

/*
 * The nodes one requirement admits. A GPU node label: In, Exists, Gt and Lt
 * all need the node to carry it (labels.Requirement.Matches), so only GPU
 * nodes qualify; NotIn and DoesNotExist admit nodes without it. A pool's
 * label: In with only GPU pools' values. kubernetes.io/hostname and
 * matchFields metadata.name: In over node names, judged like spec.nodeName.
 */
static enum node_kind requirement(const struct config *cfg, const json_t *req, int field)
{
	const char *key = policy_str(req, "key", ""), *op = policy_str(req, "operator", "");
	const json_t *values = json_object_get(req, "values"), *v;
	int in = strcmp(op, "In") == 0;
	size_t i;

	if (field)
		return in && strcmp(key, POLICY_NAME_FIELD) == 0 ? names_in(cfg, values) : NODE_OTHER;
	if (policy_gpu_label(cfg, key, NULL))
		return (in && json_array_size(values) > 0) || strcmp(op, "Exists") == 0 ||
		       strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0 ? NODE_GPU : NODE_OTHER;
	if (!in || !json_is_array(values) || json_array_size(values) == 0)
		return NODE_OTHER;
	if (strcmp(key, POLICY_HOSTNAME_LABEL) == 0)
		return names_in(cfg, values);
	json_array_foreach(iterable(values), i, v)
		if (!json_is_string(v) || !policy_gpu_label(cfg, key, json_string_value(v)))
			return NODE_OTHER;
	return NODE_GPU;
}

/* The nodes a NodeSelectorTerm (borrowed) admits. */
static enum node_kind term(const struct config *cfg, const json_t *t)
{
	const json_t *exprs = json_object_get(t, "matchExpressions");
	const json_t *fields = json_object_get(t, "matchFields"), *r;
	enum node_kind kind = NODE_OTHER, k;
	size_t i;

	/* nodeaffinity: a term with neither matchExpressions nor matchFields matches no node. */
	if (json_is_object(t) && json_array_size(exprs) == 0 && json_array_size(fields) == 0)
		return NODE_NONE;
	/* Requirements are ANDed: one that only GPU nodes meet makes the term GPU-only. */
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(iterable(pass == 0 ? exprs : fields), i, r) {
			k = json_is_object(r) ? requirement(cfg, r, pass) : NODE_OTHER;
			if (k == NODE_GPU)
				return NODE_GPU;
			if (k == NODE_UNKNOWN)
				kind = NODE_UNKNOWN;
		}
	return kind;
}

/*
 * The required node affinity: GPU-only when every term that matches
 * anything is, and one does (terms are ORed; [{}] alone targets no node at
 * all, which is not aiming at GPU nodes). Pinned to unknown nodes when every
 * such term is GPU-only or pinned by name to nodes that cannot be told.
 */
static enum node_kind required_affinity(const struct config *cfg, const json_t *spec)
{
	const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
	const json_t *terms = json_object_get(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"),
					      "nodeSelectorTerms");
	const json_t *t;
	size_t i, gpu = 0, unknown = 0;

	json_array_foreach(iterable(terms), i, t) {
		switch (term(cfg, t)) {
		case NODE_NONE:    break;
		case NODE_GPU:     gpu++; break;
		case NODE_UNKNOWN: unknown++; break;
		default:           return NODE_OTHER;
		}
	}
	return unknown > 0 ? NODE_UNKNOWN : gpu > 0 ? NODE_GPU : NODE_OTHER;
}

/* Preferred node affinity: does any preference lean to GPU nodes? */
static int preferred_affinity(const struct config *cfg, const json_t *spec)
{
	const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
	const json_t *prefs = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution"), *t;
	size_t i;

	json_array_foreach(iterable(prefs), i, t)
		if (json_is_object(t) && term(cfg, json_object_get(t, "preference")) == NODE_GPU)
			return 1;
	return 0;
}

/* ==== The routes ==== */

/* Records hard route bit (one of ROUTES_HARD) with what the pod does. */
static void take(struct pod_routes *r, unsigned bit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void take(struct pod_routes *r, unsigned bit, const char *fmt, ...)
{
	size_t i = 0;
	va_list ap;

	while ((1u << i) != bit)
		i++;
	r->taken |= bit;
	va_start(ap, fmt);
	vsnprintf(r->what[i], sizeof r->what[i], fmt, ap);
	va_end(ap);
	error_trim_utf8(r->what[i]);  /* it quotes pod text, and more text follows it */
}

static void pinned(struct pod_routes *r, const char *by)
{
	if (!(r->taken & ROUTE_PINNED))
		r->pinned_by = by;
	r->taken |= ROUTE_PINNED;
}

/* What toleration t does with the GPU taint: 0 nothing, 1 tolerates it by key, 2 tolerates every taint. */
static int tolerates_gpu(const struct config *cfg, const json_t *t)
{
	if (!nodematch_tolerates(t, cfg->taint_key, cfg->taint_value, cfg->taint_effect))
		return 0;
	return policy_str(t, "key", "")[0] == '\0' ? 2 : 1;
}

/* A nodeSelector entry that selects GPU nodes: a GPU label, a pool's key=value (not a hostname). */
static int selects_gpu(const struct config *cfg, const char *key, const char *value)
{
	return policy_gpu_label(cfg, key, value) ||
	       (strcmp(key, POLICY_HOSTNAME_LABEL) == 0 && node_named(cfg, value) == NODE_GPU);
}

void policy_routes_find(const struct config *cfg, const struct pod_view *pv, struct pod_routes *r)
{
	char taint[128];
	const json_t *t, *v;
	const char *key, *node_name;
	size_t i;

	memset(r, 0, sizeof *r);
	policy_describe_taint(cfg, taint, sizeof taint);
	json_array_foreach(iterable(pv->tolerations), i, t) {
		switch (tolerates_gpu(cfg, t)) {
		case 2:
			r->taken |= ROUTE_WILDCARD;
			break;
		case 1:
			if (!(r->taken & ROUTE_TOLERATION))
				take(r, ROUTE_TOLERATION, "it tolerates the GPU taint %s (spec.tolerations[%zu])",
				     taint, i);
			break;
		default:
			break;
		}
	}
	json_object_foreach(iterable(pv->node_selector), key, v) {
		const char *value = json_string_value(v);

		if (policy_gpu_label(cfg, key, value)) {
			take(r, ROUTE_SELECTOR, "it selects GPU nodes with nodeSelector %s=%s", key, value);
			r->operator_label = strncmp(key, GPU_OPERATOR_LABEL_PREFIX, strlen(GPU_OPERATOR_LABEL_PREFIX)) == 0;
			break;
		}
		if (strcmp(key, POLICY_HOSTNAME_LABEL) != 0)
			continue;
		switch (node_named(cfg, value)) {
		case NODE_GPU:
			take(r, ROUTE_SELECTOR, "it selects GPU node %s with nodeSelector " POLICY_HOSTNAME_LABEL, value);
			break;
		case NODE_UNKNOWN:
			pinned(r, "nodeSelector " POLICY_HOSTNAME_LABEL);
			break;
		default:
			break;
		}
		if (r->taken & ROUTE_SELECTOR)
			break;
	}
	switch (required_affinity(cfg, pv->spec)) {
	case NODE_GPU:
		take(r, ROUTE_AFFINITY, "its required node affinity matches only GPU nodes");
		break;
	case NODE_UNKNOWN:
		pinned(r, "required node affinity");
		break;
	default:
		break;
	}
	node_name = policy_str(pv->spec, "nodeName", "");
	if (node_name[0] != '\0') {
		switch (node_named(cfg, node_name)) {
		case NODE_GPU:
			take(r, ROUTE_NODE_NAME, "spec.nodeName binds it to GPU node %s", node_name);
			break;
		case NODE_UNKNOWN:
			pinned(r, "spec.nodeName");
			break;
		default:
			break;
		}
	}
	if (preferred_affinity(cfg, pv->spec))
		r->taken |= ROUTE_PREFERRED;
}

/*
 * A rejection's message lists every route taken, then one sentence on how to
 * fix it; the reason code names the first. The soft routes only warn.
 */
int policy_routes_judge(const struct config *cfg, const struct pod_routes *r, unsigned which,
			int advise, int claims, const char *unread_why, struct policy_result *res,
			struct error *err)
{
	static const struct { const char *reason, *fix; } hard[ROUTE_HARD_N] = {
		{ R_CPU_TOL, "the toleration" },
		{ R_CPU_SEL, "the nodeSelector entry" },
		{ R_CPU_AFF, "the required node affinity" },
		{ R_CPU_NAME, "spec.nodeName" },
	};
	char taint[128], fixes[256] = "", what[POLICY_MESSAGE_MAX] = "";
	unsigned taken = r->taken & which;
	size_t i;

	policy_describe_taint(cfg, taint, sizeof taint);
	res->message[0] = '\0';
	if (taken & ROUTES_HARD) {
		res->reason = NULL;
		for (i = 0; i < ROUTE_HARD_N; i++) {
			if (!(taken & (1u << i)))
				continue;
			if (res->reason == NULL)
				res->reason = hard[i].reason;
			policy_appendf(what, sizeof what, "%s%s", what[0] ? "; " : "", r->what[i]);
			policy_appendf(fixes, sizeof fixes, "%s%s", fixes[0] ? ", " : "", hard[i].fix);
		}
		error_trim_utf8(what);  /* a cut in quoted pod text, and the fix follows */
		/*
		 * An exempt DaemonSet pod is admitted (policy.c), with this as its warning: no advice
		 * to remove the toleration, which is how a device plugin or exporter reaches GPU nodes.
		 */
		if (!advise)
			snprintf(res->message, sizeof res->message, "%s aimed at GPU nodes: %s",
				 claims ? CLAIMS_POD : "CPU-only pod", what);
		else if (claims == ROUTE_CLAIMS_READ)
			snprintf(res->message, sizeof res->message,
				 CLAIMS_POD " aimed at GPU nodes: %s. None of its claims is shown to ask for a GPU "
				 "DeviceClass (gpuDeviceClasses) for a container, and a claim opens no route to GPU "
				 "nodes: ask for a GPU DeviceClass in a claim a container uses, request the GPU as "
				 "a resource (e.g. limits nvidia.com/gpu: 1), or remove %s",
				 what, fixes);
		else if (claims)
			/*
			 * Its author most likely meant a GPU: say why the claims do not
			 * count (the caller's words: lookups off names the setting that
			 * turns them on), and the ways to a GPU node that work first.
			 */
			snprintf(res->message, sizeof res->message,
				 CLAIMS_POD " aimed at GPU nodes: %s. Its DRA claims were not looked up%s%s%s, so "
				 "none counts as a GPU request, and a claim opens no route to GPU nodes: request "
				 "the GPU as a resource (e.g. limits nvidia.com/gpu: 1), ask the cluster admin "
				 "to exempt the namespace (exempt.namespaces), or remove %s",
				 what, unread_why ? " (" : "", unread_why ? unread_why : "", unread_why ? ")" : "",
				 fixes);
		else
			snprintf(res->message, sizeof res->message,
				 "CPU-only pod aimed at GPU nodes: %s. GPU nodes are for GPU pods: remove %s, or "
				 "request a GPU (e.g. limits nvidia.com/gpu: 1)",
				 what, fixes);
		res->verdict = POLICY_REJECT;
		return 0;
	}
	res->reason = R_NO_GPU;
	if ((taken & ROUTE_WILDCARD) &&
	    policy_warn(res, err, "pod requests no GPU but tolerates every taint (toleration with "
			"operator Exists and no key), so it may be scheduled onto GPU nodes (%s)", taint) != 0)
		return -1;
	if ((taken & ROUTE_PREFERRED) &&
	    policy_warn(res, err, "pod requests no GPU but prefers GPU nodes through preferred "
			"node affinity; it may take GPU capacity") != 0)
		return -1;
	if ((taken & ROUTE_PINNED) &&
	    policy_warn(res, err, "pod requests no GPU and is pinned to a node by name (%s), which "
			"gpu-admission cannot tell from a GPU node: set gpuNodeNames in the policy, e.g. "
			"[\"aks-gpu*-vmss*\"], or select pools by " CONFIG_AKS_POOL_LABEL, r->pinned_by) != 0)
		return -1;
	return 0;
}

/* ==== The fix: what audit --fix removes ==== */

/* The GPU tolerations of the spec, last first (indices stay valid), or the whole list. */
static int fix_tolerations(const struct config *cfg, const struct pod_view *pv, json_t *fix, struct error *err)
{
	size_t i = json_array_size(pv->tolerations), n = 0;
	char idx[32];

	while (i-- > 0)
		n += tolerates_gpu(cfg, json_array_get(pv->tolerations, i)) == 1;
	if (n == json_array_size(pv->tolerations))
		return patch_remove(fix, "/spec/tolerations", NULL, err);
	for (i = json_array_size(pv->tolerations); i-- > 0;) {
		if (tolerates_gpu(cfg, json_array_get(pv->tolerations, i)) != 1)
			continue;
		snprintf(idx, sizeof idx, "%zu", i);
		if (patch_remove(fix, "/spec/tolerations", idx, err) != 0)
			return -1;
	}
	return 0;
}

/* The GPU entries of the nodeSelector, or the whole map. */
static int fix_selector(const struct config *cfg, const struct pod_view *pv, json_t *fix, struct error *err)
{
	const char *key;
	const json_t *v;
	size_t n = 0;

	json_object_foreach(iterable(pv->node_selector), key, v)
		n += selects_gpu(cfg, key, json_string_value(v));
	if (n == json_object_size(pv->node_selector))
		return patch_remove(fix, "/spec/nodeSelector", NULL, err);
	json_object_foreach(iterable(pv->node_selector), key, v)
		if (selects_gpu(cfg, key, json_string_value(v)) && patch_remove(fix, "/spec/nodeSelector", key, err) != 0)
			return -1;
	return 0;
}

/* The required node affinity; the nodeAffinity or affinity it leaves empty with it. */
static int fix_affinity(const struct pod_view *pv, json_t *fix, struct error *err)
{
	const json_t *affinity = json_object_get(pv->spec, "affinity");
	const json_t *na = json_object_get(affinity, "nodeAffinity");

	if (json_object_size(na) > 1)
		return patch_remove(fix, "/spec/affinity/nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
				 err);
	if (json_object_size(affinity) > 1)
		return patch_remove(fix, "/spec/affinity", "nodeAffinity", err);
	return patch_remove(fix, "/spec/affinity", NULL, err);
}

int policy_routes_fix(const struct config *cfg, const struct pod_view *pv, unsigned taken,
		      struct policy_result *res, struct error *err)
{
	json_t *fix = json_array();

	if (fix == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	if (((taken & ROUTE_TOLERATION) && fix_tolerations(cfg, pv, fix, err) != 0) ||
	    ((taken & ROUTE_SELECTOR) && fix_selector(cfg, pv, fix, err) != 0) ||
	    ((taken & ROUTE_AFFINITY) && fix_affinity(pv, fix, err) != 0) ||
	    ((taken & ROUTE_NODE_NAME) && patch_remove(fix, "/spec/nodeName", NULL, err) != 0)) {
		json_decref(fix);
		return -1;
	}
	json_decref(res->fix);
	res->fix = json_array_size(fix) > 0 ? fix : NULL;
	if (res->fix == NULL)
		json_decref(fix);
	return 0;
}
