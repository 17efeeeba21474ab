/*
 * config: the policy configuration, loaded from YAML with libyaml.
 *
 * A struct config is immutable once loaded, so one instance can be shared by
 * every server thread; a reload builds a new one and swaps the pointer.
 * The embedded default (config_default_yaml()) is loaded by the same parser as
 * a user file, and a user file is overlaid on it field by field: a file that
 * sets only `pools:` keeps the default for everything else.
 */
#ifndef GPU_ADMISSION_CONFIG_H
#define GPU_ADMISSION_CONFIG_H

#include <stddef.h>

#include "base/error.h"
#include "base/limit.h"

#define CONFIG_POOLS_MAX 64  /* pools in a policy */
#define CONFIG_FILE_MAX (1024 * 1024)  /* bytes of a policy file (a ConfigMap holds at most 1 MiB) */

enum config_mode {
	CONFIG_MODE_ENFORCE = 0, /* mutate GPU pods, reject CPU pods aimed at GPU pools */
	CONFIG_MODE_WARN,        /* mutate, but a would-be rejection is allowed with a warning */
	CONFIG_MODE_DRYRUN       /* never patch, never reject: warnings only */
};

struct config_kv {
	char *key;
	char *value;
};

struct config_strings {
	char **v;
	size_t n;
};

struct config_labels {
	struct config_kv *v;
	size_t n;
};

enum config_placement {
	CONFIG_PLACEMENT_PINNED = 0, /* one pool's nodeSelector: the first eligible pool */
	CONFIG_PLACEMENT_FALLBACK    /* a required affinity over every eligible pool, preferred
	                                terms cheapest first, every eligible pool's tolerations */
};

/* One matchExpressions entry of a label selector (metav1.LabelSelectorRequirement). */
struct config_requirement {
	char *key;
	char *op;                     /* In, NotIn, Exists or DoesNotExist */
	struct config_strings values; /* non-empty for In and NotIn, empty otherwise */
};

/*
 * A metav1.LabelSelector over pod labels: every matchLabels entry and every
 * expression must hold. Empty, it matches every pod (LabelSelectorAsSelector).
 */
struct config_label_selector {
	struct config_labels match_labels;
	struct config_requirement *match_expressions;
	size_t n_match_expressions;
};

/* A toleration gpu-admission adds (pools[].tolerations). */
struct config_toleration {
	char *key;                    /* never empty: a pool's toleration names its taint */
	char *op;                     /* Equal or Exists */
	char *value;                  /* "" with Exists */
	char *effect;                 /* NoSchedule, PreferNoSchedule, NoExecute, or "": every effect */
};

struct config_tolerations {
	struct config_toleration *v;
	size_t n;
};

struct config_pool {
	char *name;
	struct config_labels node_selector; /* never empty */
	struct config_strings resources;    /* globs served; empty = every GPU resource */
	struct config_strings device_classes; /* DRA DeviceClass globs served; empty = every
	                                         gpuDeviceClasses class */
	long long max_gpus_per_pod;         /* 0 = no limit */
	/* Cost (optional; only the cost report reads them): */
	int priced;                         /* pricePerNodeHour was given */
	double price_per_node_hour;         /* in the admin's currency, >= 0 */
	long long gpus_per_node;            /* 0 = not given: the report counts allocatable */
	/* Who may use it, and what a pod placed on it needs: */
	struct config_tolerations tolerations;     /* added besides the GPU taint's */
	struct config_strings namespaces;          /* globs; empty = every namespace */
	struct config_label_selector pod_selector; /* empty = every pod */
};

/* One exempt.podSelectors entry: a pod in one of namespaces whose labels match selector. */
struct config_pod_selector {
	struct config_strings namespaces;       /* globs; never empty: a workload sets its own labels */
	struct config_label_selector selector;  /* never empty */
};

/*
 * A custom resource the validating webhook judges by its pod templates
 * (workloads:), matched on an AdmissionReview's request.kind.
 */
struct config_workload {
	char *group;                   /* the CRD's API group: a DNS subdomain with a dot */
	char *kind;                    /* as the CRD names it (PyTorchJob) */
	struct config_strings versions;/* the versions judged; empty: every version */
	char *resource;                /* the CRD's plural (spec.names.plural), for the chart's
	                                  rule; NULL: the kind in lower case plus "s" */
};

/*
 * An annotation that means "this pod uses (a share of) a GPU" to the
 * scheduler that places it (gpuAnnotations): KAI-Scheduler's and Run:ai's
 * gpu-fraction and gpu-memory. Only for pods of one of scheduler_names: an
 * annotation is the pod's own text, and for any other scheduler it
 * reserves nothing.
 */
struct config_gpu_annotation {
	char *key;                         /* the annotation key, exact */
	struct config_strings scheduler_names; /* spec.schedulerName values; never empty */
	char *resource;                    /* the GPU resource it is a share of (pools serve it) */
};

/*
 * A resource a GPU-sharing scheduler or device plugin uses whose quantity
 * is not a GPU count (HAMi's nvidia.com/gpumem, Volcano's vgpu-*): a pod
 * requesting it asks for at least one GPU of resource (gpuShareResources).
 */
struct config_gpu_share {
	char *name;                        /* glob over resource names */
	char *resource;                    /* the GPU resource it stands for */
};

struct config_namespace_mode {
	char *ns;
	enum config_mode mode;
};

struct config {
	enum config_mode mode;
	struct config_namespace_mode *namespace_modes;
	size_t n_namespace_modes;

	struct config_strings gpu_resources;   /* globs, e.g. nvidia.com/mig-* */
	struct config_strings gpu_device_classes; /* DRA DeviceClass globs that are GPUs, e.g.
	                                          gpu.nvidia.com */
	struct config_gpu_annotation *gpu_annotations;
	size_t n_gpu_annotations;
	struct config_gpu_share *gpu_shares;
	size_t n_gpu_shares;

	char *taint_key, *taint_value, *taint_effect;
	struct config_strings gpu_node_labels; /* label keys that select GPU nodes */
	struct config_strings gpu_node_names;  /* globs over node names; empty: derived from
	                                          the pools (see policy_describe_node_names()) */

	struct config_pool *pools;             /* in order of preference, cheapest first */
	size_t n_pools;
	enum config_placement placement;
	struct config_strings defer_labels;    /* pod label keys that leave placement to a queue */
	struct config_strings gpu_infra_namespaces; /* namespace names whose DaemonSets aimed only at
	                                          GPU nodes get the GPU toleration in their template */

	struct config_strings exempt_namespaces;
	int exempt_daemonsets;
	struct config_strings exempt_daemonset_namespaces;  /* globs where the DaemonSet exemption applies */
	struct config_strings exempt_daemonset_controllers; /* request.userInfo.username values the
	                                                       DaemonSet controller creates pods as */
	struct config_pod_selector *exempt_pod_selectors;
	size_t n_exempt_pod_selectors;

	struct config_workload *workloads;     /* custom resources judged by their templates */
	size_t n_workloads;
};

/*
 * The embedded default policy as commented YAML (what print-default-config
 * prints): pkg/policy/default-config.yaml, compiled in. Borrowed, static
 * storage.
 */
const char *config_default_yaml(void);

/* Is ns (NULL: none) listed in cfg's gpuInfraNamespaces? */
int config_gpu_infra(const struct config *cfg, const char *ns);

/* New: the embedded default. NULL only on allocation failure. */
struct config *config_default(struct error *err);

/*
 * New: the default overlaid with the YAML document in buf. name is used in
 * error messages ("policy.yaml:12:5: pools[0].name: ..."). Unknown fields,
 * duplicate keys, wrong types (a quoted "true" where a boolean goes) and
 * invalid values are errors (ERROR_CONFIG). err holds the first error, and
 * says how many more there were; config_load_buffer_all() keeps them all.
 */
struct config *config_load_buffer(const char *buf, size_t len, const char *name,
				  struct error *err);

/* New: as config_load_buffer, reading path (at most 1 MiB). */
struct config *config_load_file(const char *path, struct error *err);

/*
 * Advice on a valid cfg (borrowed) that is not an error: pools with a
 * pricePerNodeHour and gpusPerNode that are not listed cheapest per GPU first.
 * Writes one line per warning into buf (cap bytes, NUL-terminated, cut
 * quietly) and returns how many there were.
 */
size_t config_warnings(const struct config *cfg, char *buf, size_t cap);

#define CONFIG_ERRORS_MAX 10000  /* errors kept per load; more are only counted */

/* One problem in a policy file, where it is. */
struct config_error {
	unsigned long line, column;  /* 1-based, in the file loaded */
	char *text;                  /* owned: "file:line:column: field: problem" */
};

/*
 * Every problem found loading one policy file, in file order (what
 * check-config prints, and serve logs one line each). Caller-owned storage,
 * zeroed before the first use; release with config_errors_free().
 */
struct config_errors {
	struct config_error *v;  /* owned, n of them (room for cap) */
	size_t n, cap;
	size_t total;            /* problems found: more than n past CONFIG_ERRORS_MAX
	                            or when memory ran out */
};

/*
 * As config_load_buffer / config_load_file, keeping every error in errs
 * (borrowed; emptied first). On failure err says "NAME: N errors" (or holds
 * the one error, or why the file could not be read: then errs is empty and
 * err's kind is not ERROR_CONFIG, e.g. ERROR_NOT_FOUND; or ERROR_NOMEM when
 * memory ran out anywhere in the load, errors found so far or not).
 */
struct config *config_load_buffer_all(const char *buf, size_t len, const char *name,
				      struct config_errors *errs, struct error *err);
struct config *config_load_file_all(const char *path, struct config_errors *errs,
				    struct error *err);

/* Releases what errs owns and zeroes it. Accepts NULL. */
void config_errors_free(struct config_errors *errs);

/*
 * The most a load of len bytes allocates (config_load_buffer_all(), libyaml
 * included, errors and all), whatever the bytes: test_oom measures it on
 * hostile texts at the limits. The server charges it to its memory budget
 * while it judges a policy ConfigMap.
 */
size_t config_load_memory(size_t len);

/* Frees cfg and everything it owns. Accepts NULL. */
void config_free(struct config *cfg);

/* The mode in force for namespace ns (an override, or the global mode). */
enum config_mode config_mode_for(const struct config *cfg, const char *ns);

/*
 * The workloads entry for a custom resource of group, version and kind (an
 * AdmissionReview's request.kind; borrowed), or NULL when the policy does
 * not list it. Borrowed from cfg.
 */
const struct config_workload *config_workload_find(const struct config *cfg, const char *group,
						   const char *version, const char *kind);

/* "pinned" or "fallback". Borrowed, static storage. */
const char *config_placement_name(enum config_placement placement);

/*
 * The one label key every pool selects by, as placement fallback requires
 * (check-config refuses fallback otherwise); NULL when the pools select by
 * several keys or several labels. Borrowed from cfg.
 */
const char *config_pool_key(const struct config *cfg);

#define CONFIG_AKS_POOL_LABEL "kubernetes.azure.com/agentpool"  /* AKS labels each node with its node pool */
#define CONFIG_AKS_POOL_ALIAS "agentpool"                       /* ... and again, under this older key */

/*
 * The label key a node always carries with the same value as key, or NULL:
 * AKS sets CONFIG_AKS_POOL_LABEL and CONFIG_AKS_POOL_ALIAS alike on every
 * node, so selecting by one selects by the other. The one declaration of
 * that knowledge in the C (review, audit, report and the match conditions
 * read it from here; the chart's _helpers.tpl mirrors it for the
 * conditions it renders). Static storage.
 */
const char *config_label_alias(const char *key);

/* Are a and b the same label for what nodes carry: equal, or aliases? */
int config_label_same(const char *a, const char *b);

/*
 * The AKS node pool pool p selects by (its CONFIG_AKS_POOL_LABEL value, or
 * its alias's), or NULL when it selects otherwise. Borrowed from p.
 */
const char *config_pool_aks_pool(const struct config_pool *p);

/* "enforce", "warn" or "dryrun". Borrowed, static storage. */
const char *config_mode_name(enum config_mode mode);

#endif
