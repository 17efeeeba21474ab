/*
 * Failing allocations (issue 14): the review, config, audit and report paths run
 * once with every allocation counted, then again and again with the N-th
 * allocation failing, N = 1, 2, ... until a run makes fewer than N (so the
 * count is never written down: it follows whatever the code allocates).
 * Every run must end cleanly: the same answer as without the failure (a
 * fallback absorbed it), or ERROR_NOMEM; never a crash, never another error
 * (an out-of-memory reported as bad input would be a wrong answer), never a
 * leak (live allocations back to where they were; ASan and valgrind check
 * the same on their own when make test runs under them).
 *
 * The failures are injected by this executable's own malloc, calloc,
 * realloc, strdup and strndup, which the dynamic linker puts in front of
 * libc's for every library (libyaml, jansson, libc's stdio; glibc's own
 * strdup would allocate past the interposed malloc, hence ours); jansson is also
 * handed the counting allocator with json_set_alloc_funcs(), which keeps it
 * counted where a tool (valgrind) replaces the interposed malloc itself.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "audit/audit.h"
#include "check.h"
#include "policy/config.h"
#include "base/file.h"
#include "text/manifest.h"
#include "render/matchcond.h"
#include "repeat.h"
#include "report/report.h"
#include "report/report_model.h"
#include "webhook/review.h"
#include "policy/template.h"
#include "policy/workload.h"

/* ==== The counting, failing allocator ==== */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

static int armed;              /* count (and fail) only inside the call under test */
static unsigned long calls;    /* allocations counted since armed */
static unsigned long fail_at;  /* the allocation to fail (1-based); 0: none */
static unsigned long failed;   /* allocations failed in this run */
static long live;              /* blocks allocated minus freed, while counting */
static long long live_bytes;   /* their usable bytes (malloc_usable_size) */
static long long peak_bytes;   /* the most live_bytes reached since armed */
static int in_jansson_parser;  /* the failed allocation was made inside json_loadb() */
static int resolving;

/* dlsym() may allocate before the real functions are known: a small static pool serves it. */
static unsigned char boot[4096];
static size_t boot_used;

static void *boot_alloc(size_t n)
{
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (boot_used + n > sizeof boot)
		return NULL;
	p = boot + boot_used;
	boot_used += n;
	return p;
}

static int from_boot(const void *p)
{
	return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + sizeof boot;
}

static void resolve(void)
{
	if (real_malloc != NULL || resolving)
		return;
	resolving = 1;
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
}

/*
 * jansson's parser and encoder, seen from here: this executable's own
 * json_loadb() and json_dumps() come first for our code and mark the calls.
 * jansson 2.14 reports its own out-of-memory there as a syntax error, parses
 * on without the member it could not store, or writes a text with a key
 * missing; no caller can tell, so runs failing an allocation inside them are
 * held only to "no crash, no leak". (The server's arena flags every refused
 * allocation and answers 503 whatever jansson made of it; the answer writer
 * no longer falls back to json_dumps() when it runs out of memory itself.)
 *
 * Once an allocation fails inside them, every later one fails too until the
 * call returns, as memory that has run out stays out (and as the server's
 * arena refuses, once it has refused): jansson's lexer ignores a failure to
 * save a byte of the token it reads (lex_save() in src/load.c, 2.14 and
 * upstream), then decodes a string up to a closing quote it never saved,
 * writing past the buffer it allocated next; with that allocation failing
 * too it stops cleanly.
 */
static int inside_jansson_io;
static int jansson_out_of_memory;  /* an allocation inside the current jansson call failed */

static void jansson_leave(void)
{
	if (--inside_jansson_io == 0)
		jansson_out_of_memory = 0;
}

json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
	static json_t *(*real)(const char *, size_t, size_t, json_error_t *);
	json_t *v;

	if (real == NULL)
		real = (json_t *(*)(const char *, size_t, size_t, json_error_t *))dlsym(RTLD_NEXT, "json_loadb");
	inside_jansson_io++;
	v = real(buffer, buflen, flags, error);
	jansson_leave();
	return v;
}

char *json_dumps(const json_t *json, size_t flags)
{
	static char *(*real)(const json_t *, size_t);
	char *s;

	if (real == NULL)
		real = (char *(*)(const json_t *, size_t))dlsym(RTLD_NEXT, "json_dumps");
	inside_jansson_io++;
	s = real(json, flags);
	jansson_leave();
	return s;
}

/*
 * libyaml's loader (0.2.5, and src/loader.c upstream to this day) loses the
 * item stack of a mapping or sequence node it has just made when pushing the
 * node onto the document's node stack fails: its error path frees the tag
 * and the anchor only. No caller can free it, so the growths of that stack
 * (a realloc of document->nodes.start while yaml_parser_load() runs) are
 * neither counted nor failed here; every other allocation of the loader is.
 */
static yaml_document_t *loading;

int yaml_parser_load(yaml_parser_t *parser, yaml_document_t *document)
{
	static int (*real)(yaml_parser_t *, yaml_document_t *);
	int ok;

	if (real == NULL)
		real = (int (*)(yaml_parser_t *, yaml_document_t *))dlsym(RTLD_NEXT, "yaml_parser_load");
	loading = document;
	ok = real(parser, document);
	loading = NULL;
	return ok;
}

static int libyaml_leaks_on(const void *old)
{
	return loading != NULL && old != NULL && old == (const void *)loading->nodes.start;
}

/* OOM_TRACE=N: where the N-th allocation failed, for addr2line -e build/test/test_oom. */
static __attribute__((noinline)) void trace_failure(void)
{
	void *frames[32];

	armed = 0;  /* backtrace() may allocate */
	if (getenv("OOM_TRACE") != NULL && strtoul(getenv("OOM_TRACE"), NULL, 10) == fail_at)
		backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
	armed = 1;
}

/*
 * Whether this allocation is the one to fail; counts it. No array on its
 * stack: under ASan it runs (for the dynamic linker) before ASan's stack
 * instrumentation is ready, so the trace is a function of its own.
 */
static int fault(void)
{
	if (!armed)
		return 0;
	calls++;
	if (jansson_out_of_memory && inside_jansson_io > 0)
		return 1;
	if (calls == fail_at) {
		failed++;
		in_jansson_parser = inside_jansson_io > 0;
		jansson_out_of_memory = inside_jansson_io > 0;
		trace_failure();
		return 1;
	}
	return 0;
}

/* Counts the bytes of a block that came (sign 1) or went (-1) while armed. */
static void count_bytes(void *p, int sign)
{
	if (p == NULL || !armed)
		return;
	live_bytes += sign * (long long)malloc_usable_size(p);
	if (live_bytes > peak_bytes)
		peak_bytes = live_bytes;
}

static void *oom_malloc(size_t n)
{
	void *p;

	resolve();
	if (real_malloc == NULL)
		return boot_alloc(n);
	if (fault()) {
		errno = ENOMEM;
		return NULL;
	}
	p = real_malloc(n);
	if (p != NULL && armed)
		live++;
	count_bytes(p, 1);
	return p;
}

static void oom_free(void *p)
{
	if (p == NULL || from_boot(p))
		return;
	resolve();
	if (armed)
		live--;
	count_bytes(p, -1);
	real_free(p);
}

void *malloc(size_t n)
{
	return oom_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	void *p;

	resolve();
	if (real_calloc == NULL) {
		p = n && size > sizeof boot / n ? NULL : boot_alloc(n * size);
		if (p != NULL)
			memset(p, 0, n * size);
		return p;
	}
	if (fault()) {
		errno = ENOMEM;
		return NULL;
	}
	p = real_calloc(n, size);
	if (p != NULL && armed)
		live++;
	count_bytes(p, 1);
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p;

	resolve();
	if (from_boot(old)) {
		p = oom_malloc(n);
		if (p != NULL)
			memcpy(p, old, n < sizeof boot ? n : sizeof boot);
		return p;
	}
	if (old != NULL && n == 0) {
		oom_free(old);
		return NULL;
	}
	if (!libyaml_leaks_on(old) && fault()) {
		errno = ENOMEM;
		return NULL;
	}
	count_bytes(old, -1);
	p = real_realloc(old, n);
	if (p != NULL && old == NULL && armed)
		live++;
	count_bytes(p != NULL ? p : old, 1);
	return p;
}

void free(void *p)
{
	oom_free(p);
}

/* glibc's own strdup allocates inside libc, past the interposed malloc: these are ours. */
char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = oom_malloc(n);

	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *p = oom_malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static void arm(unsigned long at)
{
	calls = 0;
	failed = 0;
	in_jansson_parser = 0;
	live = 0;
	live_bytes = peak_bytes = 0;
	fail_at = at;
	armed = 1;
}

static void disarm(void)
{
	armed = 0;
}

/* ==== The runs ==== */

/* One path under test: run it (armed) and say whether its result is clean. */
struct path {
	const char *name;
	/*
	 * Runs the path once with the current arming. Returns 0 when the
	 * result is the reference one, 1 when it failed with ERROR_NOMEM, -1
	 * when it is anything else (msg says what). Frees all it made before
	 * returning (disarmed for any comparison that allocates).
	 */
	int (*run)(const void *arg, char *msg, size_t cap);
	const void *arg;
};

static unsigned long runs_total, points_total, lenient_total;

/*
 * Under valgrind or ASan, which replace the allocator themselves, some frees
 * reach them past this file: the live count is then not exact, and their own
 * leak check (make VALGRIND=1 test, make SANITIZE=address,... test) is the one.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TOOL_ALLOCATOR 1
#else
#define TOOL_ALLOCATOR 0
#endif

static int count_live(void)
{
	const char *wrap = getenv("WRAP");

	return !TOOL_ALLOCATOR && (wrap == NULL || wrap[0] == '\0');
}

/*
 * Fails each allocation of p in turn. Reports the first unclean run, leak
 * or crash-free misbehaviour; counts the allocation points met.
 */
static void every_point(const struct path *p)
{
	unsigned long n, points;
	char msg[512];
	int bad = 0;

	/* OOM_ONLY=TEXT: only the paths whose name holds TEXT (with OOM_TRACE, to find one point). */
	if (getenv("OOM_ONLY") != NULL && strstr(p->name, getenv("OOM_ONLY")) == NULL)
		return;
	/* The reference run: nothing fails, and it must succeed. */
	arm(0);
	msg[0] = '\0';
	if (p->run(p->arg, msg, sizeof msg) != 0) {
		fprintf(stderr, "  %s: the run without failures did not succeed: %s\n", p->name, msg);
		CHECK(0);
		return;
	}
	disarm();
	points = calls;
	CHECK(live == 0 || !count_live());
	for (n = 1; n <= points + 1 && bad < 3; n++) {
		int rc;

		arm(n);
		msg[0] = '\0';
		rc = p->run(p->arg, msg, sizeof msg);
		disarm();
		runs_total++;
		if (failed == 0)
			break;  /* the N-th allocation never came: every point has been failed */
		if (rc < 0 && in_jansson_parser) {
			lenient_total++;
		} else if (rc < 0) {
			fprintf(stderr, "  %s: allocation %lu of %lu failing: %s\n", p->name, n, points, msg);
			bad++;
		}
		if (live != 0 && count_live()) {
			fprintf(stderr, "  %s: allocation %lu of %lu failing: %ld blocks leaked\n", p->name, n,
				points, live);
			bad++;
		}
	}
	CHECK(bad == 0);
	points_total += points;
}

/* ---- review ---- */

struct review_case {
	const struct review_policy_options *policy; /* a policy ConfigMap's review (/validate-policy), or NULL */
	const struct config *cfg;
	const char *body;
	size_t len;
	unsigned flags;
	struct review_response want;
	int want_rc;
	struct error want_err;
};

static int run_review(const void *arg, char *msg, size_t cap)
{
	const struct review_case *c = arg;
	struct review_response res;
	struct error err = { 0 };
	int rc = c->policy ? review_policy_handle(c->policy, c->body, c->len, c->flags, &res, &err)
		 : review_handle_ex(c->cfg, c->body, c->len, c->flags, &res, &err), out = 0;

	if (rc == 0 && c->want_rc == 0 &&
	    (res.len != c->want.len || memcmp(res.body, c->want.body, res.len) != 0)) {
		snprintf(msg, cap, "a different answer: %.*s", (int)(res.len < 300 ? res.len : 300), res.body);
		out = -1;
	} else if (rc == 0 && c->want_rc != 0) {
		snprintf(msg, cap, "answered where the reference failed (%s)", c->want_err.msg);
		out = -1;
	} else if (rc != 0 && err.kind == ERROR_NOMEM) {
		out = 1;
	} else if (rc != 0 && (c->want_rc == 0 || strcmp(err.msg, c->want_err.msg) != 0)) {
		snprintf(msg, cap, "failed with kind %d: %s", (int)err.kind, err.msg);
		out = -1;
	}
	review_response_free(&res);
	return out;
}

static void review_paths(const struct config *cfg, const char *name, const char *body, size_t len)
{
	static const unsigned flag_sets[] = { 0, REVIEW_FULL_PARSE, REVIEW_VALIDATE,
					      REVIEW_VALIDATE | REVIEW_FULL_PARSE };
	size_t i;

	for (i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
		struct review_case c = { NULL, cfg, body, len, flag_sets[i], { 0 }, 0, { 0 } };
		char label[256];
		struct path p = { label, run_review, &c };

		c.want_rc = review_handle_ex(cfg, body, len, c.flags, &c.want, &c.want_err);
		snprintf(label, sizeof label, "review %s (flags %u)", name, c.flags);
		every_point(&p);
		review_response_free(&c.want);
	}
}

/* ---- config ---- */

/* A text built without allocating (the comparisons run between armed calls). */
struct text {
	char buf[32768];
	size_t len;
	int cut;
};

static void say(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->cut)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof t->buf - t->len)
		t->cut = 1;
	else
		t->len += (size_t)n;
}

static void say_strings(struct text *t, const char *name, const struct config_strings *l)
{
	size_t i;

	say(t, " %s[", name);
	for (i = 0; i < l->n; i++)
		say(t, "%s%s", i ? "," : "", l->v[i]);
	say(t, "]");
}

static void say_labels(struct text *t, const char *name, const struct config_labels *l)
{
	size_t i;

	say(t, " %s{", name);
	for (i = 0; i < l->n; i++)
		say(t, "%s%s=%s", i ? "," : "", l->v[i].key, l->v[i].value);
	say(t, "}");
}

static void say_selector(struct text *t, const char *name, const struct config_label_selector *sel)
{
	size_t i;

	say(t, " %s(", name);
	say_labels(t, "matchLabels", &sel->match_labels);
	for (i = 0; i < sel->n_match_expressions; i++) {
		say(t, " %s %s", sel->match_expressions[i].key, sel->match_expressions[i].op);
		say_strings(t, "", &sel->match_expressions[i].values);
	}
	say(t, ")");
}

/*
 * Every field the loader fills, as text: a load that absorbed a failed
 * allocation must give the very same policy, not one with an entry missing.
 */
static void say_config(struct text *t, const struct config *cfg)
{
	size_t i, j;

	say(t, "mode %d", (int)cfg->mode);
	for (i = 0; i < cfg->n_namespace_modes; i++)
		say(t, " ns %s=%d", cfg->namespace_modes[i].ns, (int)cfg->namespace_modes[i].mode);
	say_strings(t, "gpuResources", &cfg->gpu_resources);
	say(t, " taint %s=%s:%s", cfg->taint_key, cfg->taint_value, cfg->taint_effect);
	say_strings(t, "gpuNodeLabels", &cfg->gpu_node_labels);
	say_strings(t, "gpuNodeNames", &cfg->gpu_node_names);
	for (i = 0; i < cfg->n_pools; i++) {
		const struct config_pool *p = &cfg->pools[i];

		say(t, "\npool %s max %lld priced %d %.4f per node %lld", p->name, p->max_gpus_per_pod, p->priced,
		    p->price_per_node_hour, p->gpus_per_node);
		say_labels(t, "nodeSelector", &p->node_selector);
		say_strings(t, "resources", &p->resources);
		say_strings(t, "namespaces", &p->namespaces);
		say_selector(t, "podSelector", &p->pod_selector);
		for (j = 0; j < p->tolerations.n; j++)
			say(t, " toleration %s %s %s %s", p->tolerations.v[j].key, p->tolerations.v[j].op,
			    p->tolerations.v[j].value, p->tolerations.v[j].effect);
	}
	say(t, "\nplacement %d", (int)cfg->placement);
	say_strings(t, "deferLabels", &cfg->defer_labels);
	say_strings(t, "exempt.namespaces", &cfg->exempt_namespaces);
	say(t, " daemonSets %d", cfg->exempt_daemonsets);
	say_strings(t, "daemonSetNamespaces", &cfg->exempt_daemonset_namespaces);
	say_strings(t, "daemonSetControllers", &cfg->exempt_daemonset_controllers);
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++) {
		say_strings(t, "podSelector.namespaces", &cfg->exempt_pod_selectors[i].namespaces);
		say_selector(t, "", &cfg->exempt_pod_selectors[i].selector);
	}
}

/* A failed load's answer: the summary and every error listed. */
static void say_errors(struct text *t, const struct error *err, const struct config_errors *errs)
{
	size_t i;

	say(t, "kind %d: %s\n%zu errors:", (int)err->kind, err->msg, errs->total);
	for (i = 0; i < errs->n; i++)
		say(t, "\n%s", errs->v[i].text);
}

struct config_case {
	const char *name;
	const char *yaml;   /* NULL: config_default() */
	int want_ok;
	struct text want;   /* the reference load: the policy, or its errors */
};

/* Loads c once with the current arming (the list-keeping loader for a file) into what it answered. */
static struct config *load_case(const struct config_case *c, struct config_errors *errs, struct error *err)
{
	return c->yaml ? config_load_buffer_all(c->yaml, strlen(c->yaml), "policy.yaml", errs, err)
		       : config_default(err);
}

static int run_config(const void *arg, char *msg, size_t cap)
{
	const struct config_case *c = arg;
	static struct text got;
	struct config_errors errs = { 0 };
	struct error err = { 0 };
	struct config *cfg = load_case(c, &errs, &err);
	int out = 0, was = armed;

	armed = 0;  /* the comparison's own work is not the path's */
	got.len = 0;
	got.cut = 0;
	if (cfg == NULL && err.kind == ERROR_NOMEM) {
		/* Out of memory is not a policy error: no list, nothing half-said. */
		if (errs.n != 0 || errs.total != 0) {
			snprintf(msg, cap, "ERROR_NOMEM with %zu errors listed", errs.total);
			out = -1;
		} else {
			out = 1;
		}
	} else {
		if (cfg != NULL)
			say_config(&got, cfg);
		else
			say_errors(&got, &err, &errs);
		if ((cfg != NULL) != c->want_ok || got.len != c->want.len || memcmp(got.buf, c->want.buf, got.len) != 0) {
			size_t at = 0;

			while (at < got.len && at < c->want.len && got.buf[at] == c->want.buf[at])
				at++;
			at = at > 80 ? at - 80 : 0;
			snprintf(msg, cap, "a different answer: ...%.200s\n    want: ...%.200s", got.buf + at,
				 at < c->want.len ? c->want.buf + at : "");
			out = -1;
		}
	}
	armed = was;
	config_errors_free(&errs);
	config_free(cfg);
	return out;
}

static void config_path_case(struct config_case *c)
{
	struct config_errors errs = { 0 };
	struct error err = { 0 };
	struct config *cfg = load_case(c, &errs, &err);
	char label[256];
	struct path p = { label, run_config, c };

	c->want.len = 0;
	c->want.cut = 0;
	if (cfg != NULL)
		say_config(&c->want, cfg);
	else
		say_errors(&c->want, &err, &errs);
	CHECK(!c->want.cut);
	if ((cfg != NULL) != c->want_ok) {
		fprintf(stderr, "  config %s: the reference load %s: %s\n", c->name,
			cfg ? "succeeded" : "failed", err.msg);
		CHECK(0);
	} else {
		snprintf(label, sizeof label, "config %s", c->name);
		every_point(&p);
	}
	config_errors_free(&errs);
	config_free(cfg);
}

/* Pools v2 (issue 12) and the tenancy keys (issue 13): every list and map the loader builds. */
static const char pools_v2[] =
	"mode: warn\n"
	"namespaceModes: {team-a: dryrun, team-b: enforce}\n"
	"gpuTaint: {key: sku, value: gpu, effect: NoSchedule}\n"
	"gpuNodeNames: [aks-gpu*-vmss*]\n"
	"placement: fallback\n"
	"deferLabels: [kueue.x-k8s.io/queue-name, example.com/queue]\n"
	"pools:\n"
	"  - name: t4-spot\n    resources: [\"nvidia.com/gpu\"]\n    maxGPUsPerPod: 1\n"
	"    nodeSelector: {kubernetes.azure.com/agentpool: gput4spot}\n"
	"    pricePerNodeHour: 0.158\n    gpusPerNode: 1\n"
	"    tolerations:\n"
	"      - {key: kubernetes.azure.com/scalesetpriority, operator: Equal, value: spot, effect: NoSchedule}\n"
	"      - {key: example.com/preemptible, operator: Exists}\n"
	"    namespaces: [team-*, ml]\n"
	"    podSelector:\n      matchLabels: {interruptible: \"true\"}\n"
	"      matchExpressions:\n        - {key: tier, operator: In, values: [batch, dev]}\n"
	"        - {key: critical, operator: DoesNotExist}\n"
	"  - name: t4\n    resources: [\"nvidia.com/gpu\"]\n    maxGPUsPerPod: 1\n"
	"    nodeSelector: {kubernetes.azure.com/agentpool: gput4}\n    pricePerNodeHour: 0.526\n"
	"  - name: a100\n    resources: [\"nvidia.com/gpu\", \"nvidia.com/mig-*\"]\n    maxGPUsPerPod: 8\n"
	"    nodeSelector: {kubernetes.azure.com/agentpool: gpua100}\n    namespaces: [ml]\n"
	"exempt:\n  namespaces: [kube-system]\n  daemonSets: true\n"
	"  daemonSetNamespaces: [monitoring, gpu-*]\n"
	"  daemonSetControllers: [system:serviceaccount:kube-system:daemon-set-controller]\n"
	"  podSelectors:\n    - namespaces: [monitoring]\n      matchLabels: {app: dcgm}\n"
	"    - namespaces: [ops-*]\n      matchExpressions: [{key: role, operator: NotIn, values: [tenant]}]\n";

static void test_config_every_allocation(void)
{
	static const char three_pools[] =
		"mode: warn\n"
		"namespaceModes: {team-a: dryrun, team-b: enforce}\n"
		"gpuTaint: {key: sku, value: gpu, effect: NoSchedule}\n"
		"gpuNodeNames: [aks-gpu*-vmss*]\n"
		"pools:\n"
		"  - name: t4\n    resources: [\"nvidia.com/gpu\"]\n    maxGPUsPerPod: 1\n"
		"    nodeSelector: {kubernetes.azure.com/agentpool: gput4}\n"
		"  - name: a100\n    resources: [\"nvidia.com/gpu\", \"nvidia.com/mig-*\"]\n    maxGPUsPerPod: 8\n"
		"    nodeSelector: {kubernetes.azure.com/agentpool: gpua100}\n"
		"exempt:\n  namespaces: [kube-system]\n  daemonSets: true\n"
		"  podSelectors:\n    - namespaces: [monitoring]\n      matchLabels: {app: dcgm}\n";
	/* Errors in fields, in a rule over several fields, and a type: every one listed, in file order. */
	static const char invalid[] =
		"mode: enforce\npools: 12\nunknown: 1\nplacement: sideways\n"
		"exempt: {daemonSets: \"true\", podSelectors: [{matchLabels: {app: x}}]}\n";
	static const char two_docs[] = "mode: warn\n---\nmode: dryrun\n";
	static const char not_yaml[] = "mode: warn\npools: [unclosed\n";
	/* Anchors and an alias (the bounds keep their names), and a text over the bounds. */
	static const char aliased[] = "exempt:\n  namespaces: &ns [kube-system, ops]\n"
				      "  podSelectors: [{namespaces: *ns, matchLabels: &l {app: agent}},\n"
				      "                 {namespaces: [mon], matchLabels: *l}]\n";
	static const char too_deep[] = "mode: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n";
	static struct config_case cases[] = {
		{ "config_default()", NULL, 1, { "", 0, 0 } },
		{ "the embedded default", NULL, 1, { "", 0, 0 } },
		{ "three pools, modes, exemptions", NULL, 1, { "", 0, 0 } },
		{ "pools v2: fallback, spot tolerations, tenancy, prices", pools_v2, 1, { "", 0, 0 } },
		{ "an invalid policy, five errors", invalid, 0, { "", 0, 0 } },
		{ "two documents", two_docs, 0, { "", 0, 0 } },
		{ "not YAML", not_yaml, 0, { "", 0, 0 } },
		{ "anchors and aliases", aliased, 1, { "", 0, 0 } },
		{ "nested past the bounds", too_deep, 0, { "", 0, 0 } },
	};
	size_t i;

	cases[1].yaml = config_default_yaml();
	cases[2].yaml = three_pools;
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
		config_path_case(&cases[i]);
}

/* ---- what a policy load holds at most (config_load_memory()) ---- */


/*
 * The costliest texts within the loader's bounds, each at several sizes up
 * to 1 MiB: the bytes live at the peak of a load stay within
 * config_load_memory() of the text's length, which the server charges to
 * its memory budget while it judges a policy ConfigMap.
 */
static void test_config_load_memory(void)
{
	/* Copies of unit: from a few to just under YML_NODES_MAX (20,000) nodes, or 1 MiB. */
	static const struct {
		const char *name, *head, *unit, *tail;
		size_t counts[3];
	} texts[] = {
		/* Nodes as dense as YAML makes them: a flow list of one-letter scalars (1 node a copy). */
		{ "dense list", "gpuNodeNames: [", "a,", "a]\n", { 500, 5000, 19990 } },
		/* As many nodes, each as long as 1 MiB allows. */
		{ "wide list", "gpuNodeNames: [", "aks-gpu-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-#,", "a]\n", { 500, 5000, 19990 } },
		/* Maps: a pair of scalars and an error each (2 nodes a copy). */
		{ "dense map", "namespaceModes: {", "n#: x,", "z: y}\n", { 500, 1023, 9990 } },
		/* Long scalars, kept as text by libyaml and refused by length (one error each). */
		{ "long scalars", "gpuNodeNames:\n", "- aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa#\n", "",
		  { 100, 1023, 3000 } },
		/* Errors that quote long text: a bad label key and value in every selector (7 nodes a copy). */
		{ "long errors", "exempt:\n  podSelectors:\n", "  - {namespaces: [\"n!#\"], matchLabels: {\"kkkkkkkkkkkkkkkkkk"
		  "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
		  "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk!#\": "
		  "\"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv!\"}, matchExpressions: [{key: \"q!\", operator: Gt}]}\n",
		  "", { 100, 1023, 1320 } },
		/* Aliases: every selector a copy of 20 namespaces, stored as the loader walks them (25 nodes a copy). */
		{ "aliases", "exempt:\n  namespaces: &ns [team-a, team-b, team-c, team-d, team-e, team-f, team-g, team-h, "
		  "team-i, team-j, team-k, team-l, team-m, team-n, team-o, team-p, team-q, team-r, team-s, team-t]\n"
		  "  podSelectors:\n", "  - {namespaces: *ns, matchLabels: {app: a#}}\n", "", { 100, 600, 730 } },
		/* Pools: the most the loader stores for one list entry (~30 nodes a copy). */
		{ "pools", "pools:\n", "  - {name: p#, nodeSelector: {kubernetes.azure.com/agentpool: p#}, resources: [nvidia.com/gpu, "
		  "nvidia.com/mig-*], maxGPUsPerPod: 8, pricePerNodeHour: 1.5, gpusPerNode: 8, namespaces: [team-*, ml], "
		  "tolerations: [{key: k, operator: Exists}], podSelector: {matchLabels: {a: b}}}\n", "", { 10, 64, 585 } },
	};
	double worst = 0;
	size_t i, j;

	for (i = 0; i < sizeof texts / sizeof texts[0]; i++)
		for (j = 0; j < 3; j++) {
			struct config_errors errs = { 0 };
			struct error err = { 0 };
			struct config *cfg;
			size_t len = 0, bound;
			char *text = repeat_text(texts[i].head, texts[i].unit, texts[i].counts[j], texts[i].tail,
						 1u << 20, &len);

			CHECK(text != NULL);
			if (text == NULL)
				continue;
			arm(0);
			cfg = config_load_buffer_all(text, len, "policy.yaml", &errs, &err);
			disarm();
			bound = config_load_memory(len);
			if ((double)peak_bytes / (double)bound > worst)
				worst = (double)peak_bytes / (double)bound;
			if (count_live() && (size_t)peak_bytes > bound) {
				fprintf(stderr, "  %s, %zu bytes: %lld bytes at the peak, over config_load_memory() %zu\n",
					texts[i].name, len, peak_bytes, bound);
				CHECK(0);
			}
			if (getenv("OOM_PEAKS") != NULL)
				fprintf(stderr, "  %-13s %8zu bytes: peak %9lld (bound %9zu) %.120s\n", texts[i].name, len,
					peak_bytes, bound, cfg ? "valid" : err.msg);
			config_errors_free(&errs);
			config_free(cfg);
			free(text);
		}
	fprintf(stderr, "  policy loads: at most %.0f%% of config_load_memory() at the peak\n", 100 * worst);
}

/* ---- audit ---- */

struct audit_case {
	const struct config *cfg;
	const char *input;
	size_t len;
	char *want_report;   /* findings and errors as JSON */
	char *want_fixed;
	size_t want_fixed_len;
};

/*
 * What write(f, arg) writes, as one malloc'd text, for comparing runs; NULL
 * when it fails. Called disarmed: the writers are not the paths under test.
 */
static char *written(int (*write)(const void *arg, FILE *f), const void *arg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (f == NULL)
		return NULL;
	rc = write(arg, f);
	if (fclose(f) != 0 || rc != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static int write_audit(const void *arg, FILE *f)
{
	return audit_write_doc(arg, f, 'j');
}

/* The whole JSON report of a (findings, errors, notes, grouping, summary). */
static char *audit_report(const struct audit *a)
{
	return written(write_audit, a);
}

static int run_audit(const void *arg, char *msg, size_t cap)
{
	const struct audit_case *c = arg;
	struct audit a;
	struct error err = { 0 };
	char *fixed = NULL, *report;
	size_t fixed_len = 0;
	int changed = 0, rc, out = 0;

	memset(&a, 0, sizeof a);
	rc = audit_init(&a, c->cfg, &err);
	if (rc == 0)
		rc = audit_input(&a, "input.yaml", c->input, c->len, &fixed, &fixed_len, &changed, &err);
	if (rc == 0)
		rc = audit_finish(&a, &err);
	if (rc != 0) {
		if (err.kind == ERROR_NOMEM) {
			out = 1;
		} else {
			snprintf(msg, cap, "failed with kind %d: %s", (int)err.kind, err.msg);
			out = -1;
		}
	} else {
		int was = armed;

		armed = 0;  /* the comparison's own allocations are not the path's */
		report = audit_report(&a);
		if (report == NULL || c->want_report == NULL || strcmp(report, c->want_report) != 0) {
			size_t at = 0;

			while (report && c->want_report && report[at] && report[at] == c->want_report[at])
				at++;
			at = at > 60 ? at - 60 : 0;
			snprintf(msg, cap, "a different report: ...%.160s\n    want: ...%.160s",
				 report ? report + at : "(none)", c->want_report ? c->want_report + at : "(none)");
			out = -1;
		} else if (fixed_len != c->want_fixed_len || (fixed_len && memcmp(fixed, c->want_fixed, fixed_len) != 0)) {
			size_t at = 0;

			while (at < fixed_len && at < c->want_fixed_len && fixed[at] == c->want_fixed[at])
				at++;
			at = at > 40 ? at - 40 : 0;
			snprintf(msg, cap, "a different --fix output (%zu bytes, want %zu): ...%.*s\n    want: ...%.*s",
				 fixed_len, c->want_fixed_len, (int)(fixed_len - at < 120 ? fixed_len - at : 120),
				 fixed ? fixed + at : "", (int)(c->want_fixed_len - at < 120 ? c->want_fixed_len - at : 120),
				 c->want_fixed + at);
			out = -1;
		}
		free(report);
		armed = was;
	}
	free(fixed);
	audit_free(&a);
	return out;
}

static void audit_path_case(const struct config *cfg, const char *name, const char *input, size_t len)
{
	struct audit_case c = { cfg, input, len, NULL, NULL, 0 };
	struct audit a;
	struct error err;
	int changed = 0;
	char label[256];
	struct path p = { label, run_audit, &c };

	memset(&a, 0, sizeof a);
	if (audit_init(&a, cfg, &err) != 0 ||
	    audit_input(&a, "input.yaml", input, len, &c.want_fixed, &c.want_fixed_len, &changed, &err) != 0 ||
	    audit_finish(&a, &err) != 0) {
		fprintf(stderr, "  audit %s: the reference run failed: %s\n", name, err.msg);
		CHECK(0);
		audit_free(&a);
		return;
	}
	c.want_report = audit_report(&a);
	CHECK(c.want_report != NULL);
	audit_free(&a);
	snprintf(label, sizeof label, "audit %s", name);
	every_point(&p);
	free(c.want_report);
	free(c.want_fixed);
}

/* ==== The tests ==== */

static void test_interposed(void)
{
	char *s;

	/* The harness itself: libc's strdup reaches the interposed malloc, and a failure shows. */
	arm(1);
	s = strdup("x");
	disarm();
	CHECK(s == NULL);
	CHECK(calls == 1);
	free(s);
}

/*
 * Golden requests that reach every part of the answer (patches, rejections,
 * warnings, exemptions, malformed requests answered with their uid, the
 * fast path's fallbacks; UPDATE with its old object and user, the DaemonSet
 * exemption by creator, pools with fallback placement, spot tolerations,
 * team namespaces and pod selectors, deferred placement, a node named by
 * nodeName or matchFields), each with its own config.yaml where it has one.
 * The ones marked also run under valgrind, where each run is slow.
 */
static const struct {
	const char *name;
	int under_valgrind;
} review_cases[] = {
	{ "gpu-limit-minimal", 1 }, { "cpu-all-routes", 1 }, { "toleration-nvidia-key-warning", 0 },
	{ "corpus-azure-samples-aks-store-demo-aks-store-q-deployment-store-front-0", 0 },
	{ "mode-warn-reject", 0 }, { "v1beta1", 0 }, { "missing-uid", 0 }, { "exempt-daemonset-gpu", 0 },
	{ "dra-only", 0 }, { "pool-label-unknown", 0 }, { "nodeselector-conflict", 0 },
	{ "hostile-escaped-key-spec", 0 }, { "hostile-big-valid-numbers-skipped", 0 },
	{ "resources-wrong-type", 0 },
	/* issue 13: UPDATE, the creator of a DaemonSet pod, names and fields that pick a GPU node */
	{ "tenant-update-adds-toleration", 1 }, { "op-update", 0 }, { "update-old-object-not-object", 0 },
	{ "update-labels-tolerating-cpu-pod", 0 }, { "tenant-ds-forged-device-plugin", 0 },
	{ "tenant-nodename-derived", 0 }, { "tenant-matchfields-derived", 0 },
	{ "exempt-pod-selector", 0 },
	/* issue 12: eligibility, fallback placement, spot, team pools, deferred placement */
	{ "fallback-two-terms", 1 }, { "fallback-preferred-there", 0 }, { "pools-spot-opt-in", 0 },
	{ "pools-spot-toleration-narrower", 0 }, { "pools-namespace-denied-label-fallback", 0 },
	{ "pools-affinity-pricier", 0 }, { "pool-none-fits", 0 }, { "kueue-deferred", 0 },
	/*
	 * issue 11: workloads on /validate (and /mutate, the flags with no
	 * REVIEW_VALIDATE): a denied Deployment, a GPU one, an UPDATE that only
	 * scales, custom resources the policy lists (a PyTorchJob, its UPDATE, a
	 * PodSpec held directly), a DaemonSet's exempt template, a subresource.
	 */
	{ "workload-deployment-cpu-gpu-toleration", 1 }, { "workload-deployment-gpu", 0 },
	{ "workload-deployment-update-scale", 0 }, { "workload-deployment-update-adds-toleration", 0 },
	{ "workload-cronjob-gpu", 0 }, { "workload-pytorchjob-gpu", 1 },
	{ "workload-pytorchjob-update-worker-cpu", 0 }, { "workload-llminferenceservice-cpu-gpu-toleration", 0 },
	{ "workload-raycluster-tpu", 0 }, { "workload-daemonset-exempt", 0 },
	{ "workload-deployment-status-subresource", 0 }, { "workload-job-mig-warning", 0 },
};

/* Policy ConfigMaps (/validate-policy): valid, invalid, warnings, another release's, a missing key, hostile,
 * workloads listed (and one listed wrong). */
static const struct {
	const char *name;
	int under_valgrind;
} policy_cases[] = {
	{ "policy-cm-invalid", 1 }, { "policy-cm-valid", 0 }, { "policy-cm-warnings", 0 },
	{ "policy-cm-other-release", 0 }, { "policy-cm-missing-key", 0 }, { "policy-cm-many-errors", 0 },
	{ "policy-cm-hostile-anchors", 0 }, { "policy-cm-data-not-string", 0 }, { "policy-cm-not-a-configmap", 0 },
	{ "policy-cm-workloads", 0 }, { "policy-cm-workloads-invalid", 0 },
};

static void test_review_every_allocation(void)
{
	struct error err;
	struct config *dflt = config_default(&err);
	const char *wrap = getenv("WRAP");
	int slow = wrap != NULL && wrap[0] != '\0';
	size_t i;

	CHECK(dflt != NULL);
	if (dflt == NULL)
		return;
	for (i = 0; i < sizeof review_cases / sizeof review_cases[0]; i++) {
		char path[512], *body;
		size_t len = 0;
		struct config *own = NULL;

		if (slow && !review_cases[i].under_valgrind)
			continue;
		snprintf(path, sizeof path, "test/golden/%s/config.yaml", review_cases[i].name);
		if (access(path, F_OK) == 0 && (own = config_load_file(path, &err)) == NULL) {
			fprintf(stderr, "  review %s: %s\n", review_cases[i].name, err.msg);
			CHECK(0);
			continue;
		}
		snprintf(path, sizeof path, "test/golden/%s/request.json", review_cases[i].name);
		body = file_read(path, 1u << 20, &len, &err);
		CHECK(body != NULL);  /* a case renamed: rename it here too */
		if (body != NULL)
			review_paths(own ? own : dflt, review_cases[i].name, body, len);
		free(body);
		config_free(own);
	}
	/* The policy ConfigMap's reviews (/validate-policy): the policy loaded from the review, denials, warnings. */
	for (i = 0; i < sizeof policy_cases / sizeof policy_cases[0]; i++) {
		struct review_policy_options po = { REVIEW_POLICY_KEY, "0.2.0" };
		char path[512], label[256], *body;
		size_t len = 0, f;

		if (slow && !policy_cases[i].under_valgrind)
			continue;
		snprintf(path, sizeof path, "test/golden/%s/request.json", policy_cases[i].name);
		body = file_read(path, 1u << 20, &len, &err);
		CHECK(body != NULL);
		for (f = 0; body != NULL && f < 2; f++) {
			struct review_case c = { &po, NULL, body, len, f ? REVIEW_FULL_PARSE : 0, { 0 }, 0, { 0 } };
			struct path p = { label, run_review, &c };

			c.want_rc = review_policy_handle(&po, body, len, c.flags, &c.want, &c.want_err);
			snprintf(label, sizeof label, "policy review %s (flags %u)", policy_cases[i].name, c.flags);
			every_point(&p);
			review_response_free(&c.want);
		}
		free(body);
	}
	/* Not JSON, and no uid: plain errors that must stay what they are. */
	review_paths(dflt, "not-json", "{\"apiVersion\":", 14);
	review_paths(dflt, "no-uid", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		     "\"request\":{}}", 70);
	config_free(dflt);
}

/*
 * Workloads whose templates --fix edits: a CPU Deployment aimed at GPU
 * nodes (its routes removed as text), a CronJob's GPU template (mutated),
 * a PyTorchJob (custom resource) with a GPU master and a CPU worker aimed
 * at GPU nodes in flow style (re-emitted), and an LLMInferenceService
 * whose spec.template is a PodSpec (its route removed).
 */
static const char workloads[] =
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: logshipper, namespace: obs}\n"
	"spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: x\n"
	"      tolerations:\n        - key: sku\n          operator: Equal\n          value: gpu\n"
	"          effect: NoSchedule\n      nodeSelector:\n        kubernetes.azure.com/accelerator: nvidia\n"
	"---\n"
	"apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: ml}\n"
	"spec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
	"          containers:\n          - name: c\n            image: x\n            resources:\n"
	"              limits: {nvidia.com/gpu: 1}\n"
	"---\n"
	"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: mnist, namespace: ml}\n"
	"spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n        spec:\n"
	"          containers: [{name: pytorch, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
	"    Worker:\n      replicas: 2\n      template:\n        spec:\n"
	"          containers: [{name: pytorch, image: x}]\n"
	"          tolerations: [{key: sku, operator: Exists}]\n"
	"---\n"
	"apiVersion: serving.kserve.io/v1alpha1\nkind: LLMInferenceService\n"
	"metadata: {name: llm, namespace: ml, labels: {app: llm}}\n"
	"spec:\n  template:\n    containers:\n    - name: main\n      image: x\n"
	"    nodeSelector:\n      kubernetes.azure.com/accelerator: nvidia\n";

static void test_audit_every_allocation(void)
{
	static const char manifests[] =
		"# a GPU Deployment, a CPU pod aimed at GPU nodes, a DaemonSet, and a broken document\n"
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: infer, namespace: ml}\n"
		"spec:\n  template:\n    metadata:\n      labels: {app: infer}\n    spec:\n      containers:\n"
		"      - name: model\n        image: x\n        resources:\n          limits:\n"
		"            nvidia.com/gpu: 1\n"
		"---\n"
		"apiVersion: v1\nkind: Pod\nmetadata: {name: sneaky}\nspec:\n  tolerations:\n"
		"  - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}\n"
		"  containers: [{name: c, image: x}]\n"
		"---\n"
		"base: &b {name: c, image: x, resources: {limits: {nvidia.com/gpu: 2}}}\n"
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: aliased}\n"
		"spec:\n  template:\n    spec:\n      containers: [*b]\n      tolerations: []\n"
		"---\n"
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: plugin, namespace: kube-system}\n"
		"spec:\n  template:\n    spec:\n      containers: [{name: p, image: x}]\n"
		"---\n"
		"kind: [unclosed\n";
	static const char list_json[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
		"\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}]}\n";
	/* kubectl get deploy,pods -o json: the pod is grouped under its Deployment (issue 16). */
	static const char grouped_json[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
		"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"infer\","
		"\"namespace\":\"team-a\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"app\":\"infer\","
		"\"interruptible\":\"true\",\"tier\":\"batch\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}}},"
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"infer-5d9c7-abcde\","
		"\"namespace\":\"team-a\",\"labels\":{\"app\":\"infer\",\"pod-template-hash\":\"5d9c7\"},"
		"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"infer-5d9c7\","
		"\"uid\":\"u\",\"controller\":true}]},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\","
		"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}},"
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"big\",\"namespace\":\"team-b\"},"
		"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":"
		"{\"nvidia.com/gpu\":\"4\"}}}]}}]}\n";
	struct error err;
	struct config *cfg = config_default(&err);
	struct config *v2 = config_load_buffer(pools_v2, sizeof pools_v2 - 1, "pools-v2.yaml", &err);

	CHECK(cfg != NULL);
	CHECK(v2 != NULL);
	if (cfg == NULL || v2 == NULL) {
		config_free(cfg);
		config_free(v2);
		return;
	}
	audit_path_case(cfg, "a multi-document stream (mutate, reject, alias, exempt, broken)", manifests,
			sizeof manifests - 1);
	audit_path_case(cfg, "a kind: List in JSON", list_json, sizeof list_json - 1);
	audit_path_case(v2, "pools v2 (fallback, spot, team pools): a multi-document stream", manifests,
			sizeof manifests - 1);
	audit_path_case(v2, "pools v2: a Deployment and its pod, grouped", grouped_json, sizeof grouped_json - 1);
	audit_path_case(cfg, "workloads (issue 11): --fix removes routes, custom resources, a PodSpec held directly",
			workloads, sizeof workloads - 1);
	config_free(cfg);
	config_free(v2);
}

/* ---- review --wrap (review_offline.c) ---- */

/*
 * What `gpu-admission review --wrap -o patched` does with a template: the
 * AdmissionReview the API server would send, the answer, the patch read back
 * from it and applied to the pod. Not on the server's path, but the same
 * review_handle() with its own allocations around it.
 */
struct wrap_case {
	int (*once)(const struct wrap_case *c, char **out, struct error *err); /* the pipeline */
	const struct config *cfg;
	const struct template_item *t;      /* --wrap: borrowed from a manifest loaded once */
	const json_t *obj;                  /* --apply: the same */
	char *want;                         /* the reference run: its outcome, or the error */
};

/* The pipeline once; a malloc'd text of its outcome in *out (the patched pod, or the message). */
static int wrap_once(const struct wrap_case *c, char **out, struct error *err)
{
	struct review_response res = { 0 };
	json_t *review = review_wrap(c->t, err), *patch = NULL, *pod = NULL;
	char *body = NULL, message[512];
	int rc = -1;

	*out = NULL;
	if (review == NULL)
		goto out;
	if ((body = json_dumps(review, JSON_COMPACT)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory wrapping the pod");
		goto out;
	}
	if (review_handle(c->cfg, body, strlen(body), 0, &res, err) != 0 ||
	    review_answer_read(res.body, res.len, &patch, message, sizeof message, err) != 0)
		goto out;
	if (res.decision == POLICY_REJECT) {
		*out = strdup(message);
	} else {
		if ((pod = review_patched_object(body, strlen(body), patch, err)) == NULL)
			goto out;
		*out = json_dumps(pod, JSON_COMPACT | JSON_SORT_KEYS);
	}
	if (*out == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	review_response_free(&res);
	json_decref(review);
	json_decref(patch);
	json_decref(pod);
	free(body);
	return rc;
}

/* Runs c's pipeline once and compares its outcome with the reference run's. */
static int run_wrap(const void *arg, char *msg, size_t cap)
{
	const struct wrap_case *c = arg;
	struct error err = { 0 };
	char *got = NULL;
	int out = 0;

	if (c->once(c, &got, &err) != 0) {
		if (err.kind == ERROR_NOMEM) {
			out = 1;
		} else {
			snprintf(msg, cap, "failed with kind %d: %s", (int)err.kind, err.msg);
			out = -1;
		}
	} else if (strcmp(got, c->want) != 0) {
		snprintf(msg, cap, "a different outcome: %.200s\n    want: %.200s", got, c->want);
		out = -1;
	}
	free(got);
	return out;
}

static void test_wrap_every_allocation(void)
{
	/* A Deployment's GPU pod (mutated under fallback), a spot-opted CronJob pod, and a CPU pod aimed at GPUs. */
	static const char manifests[] =
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: infer, namespace: team-a}\n"
		"spec:\n  template:\n    metadata: {labels: {app: infer}}\n    spec:\n"
		"      containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
		"---\n"
		"apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: ml}\n"
		"spec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n"
		"        metadata: {labels: {interruptible: 'true', tier: batch}}\n        spec:\n"
		"          affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution:\n"
		"            [{weight: 1, preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}}]}}\n"
		"          containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
		"---\n"
		"apiVersion: v1\nkind: Pod\nmetadata: {name: sneaky, namespace: web}\n"
		"spec:\n  nodeSelector: {kubernetes.azure.com/agentpool: gpua100}\n  containers: [{name: c, image: x}]\n";
	struct manifest m;
	struct error err;
	struct config *cfg = config_load_buffer(pools_v2, sizeof pools_v2 - 1, "pools-v2.yaml", &err);
	size_t i;

	memset(&m, 0, sizeof m);
	CHECK(cfg != NULL);
	CHECK(cfg != NULL && manifest_load(manifests, sizeof manifests - 1, &m, &err) == 0);
	for (i = 0; cfg != NULL && i < m.n_docs; i++) {
		struct wrap_case c = { wrap_once, cfg, NULL, NULL, NULL };
		struct template_list l = { 0 };
		char label[256];
		struct path p = { label, run_wrap, &c };

		CHECK(template_find(m.docs[i].root, &l, &err) == 0 && l.n == 1);
		if (l.n != 1) {
			template_list_free(&l);
			continue;
		}
		c.t = &l.v[0];
		if (wrap_once(&c, &c.want, &err) != 0) {
			fprintf(stderr, "  review --wrap %s: the reference run failed: %s\n", c.t->kind, err.msg);
			CHECK(0);
			template_list_free(&l);
			continue;
		}
		snprintf(label, sizeof label, "review --wrap (a %s, pools v2)", c.t->kind);
		every_point(&p);
		free(c.want);
		template_list_free(&l);
	}
	CHECK(m.n_docs == 3);
	manifest_free(&m);
	config_free(cfg);
}

/* ---- review --apply (review_wrap_object): a workload as kubectl apply sends it ---- */

/* The pipeline of review --apply --validate once: "decision message patch" in *out. */
static int apply_once(const struct wrap_case *c, char **out, struct error *err)
{
	struct review_response res = { 0 };
	json_t *review = review_wrap_object(c->obj, err), *patch = NULL;
	char *body = NULL, message[WORKLOAD_MESSAGE_MAX], *text = NULL;
	int rc = -1;

	*out = NULL;
	if (review == NULL)
		goto out;
	if ((body = json_dumps(review, JSON_COMPACT)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory wrapping the object");
		goto out;
	}
	if (review_handle(c->cfg, body, strlen(body), 1, &res, err) != 0 ||
	    review_answer_read(res.body, res.len, &patch, message, sizeof message, err) != 0)
		goto out;
	if ((text = json_dumps(patch, JSON_COMPACT)) == NULL || asprintf(out, "%d %s %s", res.decision, message, text) < 0) {
		*out = NULL;
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	review_response_free(&res);
	json_decref(review);
	json_decref(patch);
	free(body);
	free(text);
	return rc;
}

static void test_apply_every_allocation(void)
{
	static const char listed[] = "workloads: [{group: kubeflow.org, kind: PyTorchJob}, "
				     "{group: serving.kserve.io, kind: LLMInferenceService}]\n";
	struct manifest m;
	struct error err;
	struct config *cfg = config_load_buffer(listed, sizeof listed - 1, "workloads.yaml", &err);
	size_t i;

	memset(&m, 0, sizeof m);
	CHECK(cfg != NULL);
	CHECK(cfg != NULL && manifest_load(workloads, sizeof workloads - 1, &m, &err) == 0);
	for (i = 0; cfg != NULL && i < m.n_docs; i++) {
		struct wrap_case c = { apply_once, cfg, NULL, m.docs[i].root, NULL };
		char label[256];
		struct path p = { label, run_wrap, &c };

		if (apply_once(&c, &c.want, &err) != 0) {
			fprintf(stderr, "  review --apply of document %zu: the reference run failed: %s\n", i, err.msg);
			CHECK(0);
			continue;
		}
		snprintf(label, sizeof label, "review --apply --validate (a %s)",
			 json_string_value(json_object_get(m.docs[i].root, "kind")));
		every_point(&p);
		free(c.want);
	}
	CHECK(m.n_docs == 4);
	manifest_free(&m);
	config_free(cfg);
}

/* ---- report ---- */

/*
 * A small `kubectl get nodes,pods,deploy -A -o json`: a tainted and an
 * untainted T4 node, an A100 node, a CPU node; a GPU pod running, one
 * Pending that fits no node, a CPU pod and a DaemonSet pod on GPU nodes, a
 * finished GPU pod, and a Deployment (audited).
 */
static const char snapshot[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"aks-gput4-1-vmss000000\","
	"\"labels\":{\"kubernetes.azure.com/agentpool\":\"gput4\",\"kubernetes.azure.com/accelerator\":\"nvidia\"}},"
	"\"spec\":{\"taints\":[{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]},"
	"\"status\":{\"allocatable\":{\"cpu\":\"4\",\"nvidia.com/gpu\":\"1\"}}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"aks-gput4-1-vmss000001\","
	"\"labels\":{\"kubernetes.azure.com/agentpool\":\"gput4\",\"kubernetes.azure.com/accelerator\":\"nvidia\"}},"
	"\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"4\",\"nvidia.com/gpu\":\"1\"}}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"aks-gpua100-2-vmss000000\","
	"\"labels\":{\"kubernetes.azure.com/agentpool\":\"gpua100\"}},"
	"\"spec\":{\"taints\":[{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]},"
	"\"status\":{\"allocatable\":{\"cpu\":\"96\",\"nvidia.com/gpu\":\"8\"}}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"aks-system-3-vmss000000\","
	"\"labels\":{\"kubernetes.azure.com/agentpool\":\"system\"}},\"spec\":{},"
	"\"status\":{\"allocatable\":{\"cpu\":\"4\"}}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train-0\",\"namespace\":\"ml\"},"
	"\"spec\":{\"nodeName\":\"aks-gput4-1-vmss000000\",\"nodeSelector\":{\"kubernetes.azure.com/agentpool\":\"gput4\"},\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Equal\","
	"\"value\":\"gpu\",\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"c\",\"image\":\"x\","
	"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"big-0\",\"namespace\":\"ml\"},"
	"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":"
	"{\"nvidia.com/gpu\":\"16\"}}}]},\"status\":{\"phase\":\"Pending\"}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-0\",\"namespace\":\"web\"},"
	"\"spec\":{\"nodeName\":\"aks-gput4-1-vmss000001\",\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},"
	"\"status\":{\"phase\":\"Running\"}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"dcgm-x1\",\"namespace\":\"monitoring\","
	"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":\"dcgm\",\"uid\":\"u\","
	"\"controller\":true}]},\"spec\":{\"nodeName\":\"aks-gpua100-2-vmss000000\",\"tolerations\":"
	"[{\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]},"
	"\"status\":{\"phase\":\"Running\"}},\n"
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"done-0\",\"namespace\":\"ml\"},"
	"\"spec\":{\"nodeName\":\"aks-gpua100-2-vmss000000\",\"containers\":[{\"name\":\"c\",\"image\":\"x\","
	"\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]},\"status\":{\"phase\":\"Succeeded\"}},\n"
	"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"infer\",\"namespace\":\"ml\"},"
	"\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":"
	"{\"limits\":{\"nvidia.com/gpu\":1}}}]}}}}\n"
	"]}\n";

static const char report_policy[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, pricePerNodeHour: 0.526, gpusPerNode: 1,\n"
	"     nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], maxGPUsPerPod: 8, pricePerNodeHour: 27.197,\n"
	"     nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n";

/* --what-if: train-0's namespace may no longer use t4; big-0 now admitted to a100 (and still does not fit). */
static const char report_whatif_policy[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, pricePerNodeHour: 0.526, gpusPerNode: 1,\n"
	"     namespaces: [web], nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], maxGPUsPerPod: 16, pricePerNodeHour: 27.197,\n"
	"     nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n";

struct report_case {
	const struct config *cfg;
	const struct config *whatif;  /* or NULL */
	const char *path;  /* the snapshot, read anew by each run */
	char *want;        /* the reference run's JSON report */
};

static int write_report(const void *arg, FILE *f)
{
	return report_json_write(arg, f, 0, 'j');
}

static int run_report(const void *arg, char *msg, size_t cap)
{
	const struct report_case *c = arg;
	struct report r;
	struct error err = { 0 };
	int fd = open(c->path, O_RDONLY | O_CLOEXEC), rc, out = 0;

	memset(&r, 0, sizeof r);
	rc = fd < 0 ? -1 : report_init(&r, c->cfg, &err);
	if (rc == 0 && c->whatif != NULL)
		report_whatif_set(&r, c->whatif, "whatif.yaml");
	if (rc == 0)
		rc = report_input(&r, "snapshot.json", fd, &err);
	if (rc == 0)
		rc = report_finish(&r, &err);
	if (rc != 0) {
		if (fd >= 0 && err.kind == ERROR_NOMEM) {
			out = 1;
		} else {
			snprintf(msg, cap, "failed with kind %d: %s", (int)err.kind, fd < 0 ? "open" : err.msg);
			out = -1;
		}
	} else {
		int was = armed;
		char *text;

		armed = 0;  /* the writer is not the path under test */
		text = written(write_report, &r);
		if (text == NULL || c->want == NULL || strcmp(text, c->want) != 0) {
			size_t at = 0;

			while (text && c->want && text[at] && text[at] == c->want[at])
				at++;
			at = at > 60 ? at - 60 : 0;
			snprintf(msg, cap, "a different report: ...%.160s\n    want: ...%.160s",
				 text ? text + at : "(none)", c->want ? c->want + at : "(none)");
			out = -1;
		}
		free(text);
		armed = was;
	}
	if (fd >= 0)
		close(fd);
	report_free(&r);
	return out;
}

static void report_every_allocation(const char *whatif_yaml)
{
	char path[] = "/tmp/test_oom_snapshot_XXXXXX";
	int fd = mkstemp(path);
	struct error err;
	struct config *cfg = config_load_buffer(report_policy, sizeof report_policy - 1, "policy.yaml", &err);
	struct config *wcfg = whatif_yaml ? config_load_buffer(whatif_yaml, strlen(whatif_yaml), "whatif.yaml", &err)
					  : NULL;
	struct report_case c = { cfg, wcfg, path, NULL };
	struct path p = { whatif_yaml ? "report --what-if of a small snapshot (a pod refused, one admitted)"
				      : "report of a small snapshot (pools, pending, CPU pods on GPU nodes, a workload)",
			  run_report, &c };

	CHECK(fd >= 0);
	CHECK(cfg != NULL);
	if (fd < 0 || cfg == NULL || write(fd, snapshot, sizeof snapshot - 1) != (ssize_t)(sizeof snapshot - 1)) {
		CHECK(0);
		goto out;
	}
	/* The reference run: every finding the snapshot was made for is there. */
	{
		struct report r;
		int in = open(path, O_RDONLY | O_CLOEXEC);

		memset(&r, 0, sizeof r);
		if (in >= 0 && report_init(&r, cfg, &err) == 0) {
			if (wcfg != NULL)
				report_whatif_set(&r, wcfg, "whatif.yaml");
			if (report_input(&r, "snapshot.json", in, &err) == 0 && report_finish(&r, &err) == 0)
				c.want = written(write_report, &r);
		}
		CHECK(c.want != NULL);
		CHECK(r.n_nodes == 4 && r.pending.n == 1 && r.cpu_pods.n == 1 && r.daemonsets.n == 1);
		CHECK(r.misconfigs.n >= 1 && r.audit.templates == 1 && r.n_errors == 0);
		if (wcfg != NULL)
			CHECK(r.whatif.refused.n == 1 && r.whatif.rejected_pending == 0 && r.whatif.placed.n == 0);
		if (in >= 0)
			close(in);
		report_free(&r);
	}
	if (c.want != NULL)
		every_point(&p);
out:
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	free(c.want);
	config_free(wcfg);
	config_free(cfg);
}

/* The model: the snapshot's items as watch events (ADDED, a pod DELETED and ADDED again), then its report. */
struct model_case {
	const struct config *cfg;
	const json_t *items;  /* the snapshot's, parsed disarmed */
	char *want;           /* the reference run's JSON report */
};

static int run_model(const void *arg, char *msg, size_t cap)
{
	const struct model_case *c = arg;
	struct error err = { 0 };
	struct report_model *m = report_model_new(c->cfg, &err);
	struct report r;
	size_t i;
	int rc = m == NULL ? -1 : 0, out = 0;

	memset(&r, 0, sizeof r);
	for (i = 0; rc == 0 && i < json_array_size(c->items); i++)
		rc = report_model_apply(m, REPORT_EVENT_ADDED, json_array_get(c->items, i), &err);
	if (rc == 0)
		rc = report_model_apply(m, REPORT_EVENT_DELETED, json_array_get(c->items, 5), &err);
	if (rc == 0)
		rc = report_model_apply(m, REPORT_EVENT_ADDED, json_array_get(c->items, 5), &err);
	if (rc == 0)
		rc = report_model_report(m, &r, &err);
	if (rc != 0) {
		if (err.kind == ERROR_NOMEM) {
			out = 1;
		} else {
			snprintf(msg, cap, "failed with kind %d: %s", (int)err.kind, err.msg);
			out = -1;
		}
	} else {
		int was = armed;
		char *text;

		armed = 0;
		text = written(write_report, &r);
		if (text == NULL || c->want == NULL || strcmp(text, c->want) != 0) {
			snprintf(msg, cap, "a different report");
			out = -1;
		}
		free(text);
		armed = was;
	}
	report_free(&r);
	report_model_free(m);
	return out;
}

static void test_report_model_every_allocation(void)
{
	struct error err;
	struct config *cfg = config_load_buffer(report_policy, sizeof report_policy - 1, "policy.yaml", &err);
	json_error_t jerr;
	json_t *list = json_loads(snapshot, 0, &jerr);
	struct model_case c = { cfg, json_object_get(list, "items"), NULL };
	struct path p = { "report model: a small snapshot's watch events, then its report", run_model, &c };
	char msg[256];

	CHECK(cfg != NULL && json_array_size(c.items) == 10);
	if (cfg != NULL && json_array_size(c.items) == 10) {
		/* The reference: the model's report, which test_report_model proves equal to report's. */
		struct report_model *m = report_model_new(cfg, &err);
		struct report r;
		size_t i;

		memset(&r, 0, sizeof r);
		for (i = 0; m != NULL && i < json_array_size(c.items); i++)
			CHECK(report_model_apply(m, REPORT_EVENT_ADDED, json_array_get(c.items, i), &err) == 0);
		if (m != NULL && report_model_report(m, &r, &err) == 0)
			c.want = written(write_report, &r);
		CHECK(c.want != NULL && r.pending.n == 1 && r.cpu_pods.n == 1 && r.daemonsets.n == 1);
		report_free(&r);
		report_model_free(m);
		CHECK(run_model(&c, msg, sizeof msg) == 0);
		if (c.want != NULL)
			every_point(&p);
	}
	free(c.want);
	json_decref(list);
	config_free(cfg);
}

static void test_report_every_allocation(void)
{
	report_every_allocation(NULL);
	report_every_allocation(report_whatif_policy);
}

/* ---- matchConditions: built, then written as YAML and JSON ---- */

struct matchcond_case {
	const struct config *cfg;
	enum matchcond_entry entry;
	char *want;  /* the YAML and the JSON of the run without failures */
};

/* New: entry's conditions under cfg as YAML then JSON text, or NULL with err (ERROR_NOMEM, or the build's). */
static char *matchcond_text(const struct config *cfg, enum matchcond_entry entry, struct error *err)
{
	struct matchcond_set set;
	char *yaml = NULL, *json = NULL, *text = NULL;
	json_t *doc = NULL;

	if (matchcond_build(cfg, entry, &set, err) == 0 && (yaml = matchcond_yaml(&set, err)) != NULL &&
	    (doc = matchcond_json(&set, err)) != NULL) {
		if ((json = json_dumps(doc, JSON_COMPACT)) == NULL ||
		    (text = malloc(strlen(yaml) + strlen(json) + 1)) == NULL)
			error_set(err, ERROR_NOMEM, "out of memory");
		else
			strcat(strcpy(text, yaml), json);
	}
	free(json);
	json_decref(doc);
	free(yaml);
	matchcond_set_free(&set);
	return text;
}

static int run_matchcond(const void *arg, char *msg, size_t cap)
{
	const struct matchcond_case *c = arg;
	struct error err = { 0 };
	char *text = matchcond_text(c->cfg, c->entry, &err);
	int out = 0;

	if (text == NULL && err.kind == ERROR_NOMEM) {
		out = 1;
	} else if (text == NULL) {
		snprintf(msg, cap, "failed with kind %d: %s", (int)err.kind, err.msg);
		out = -1;
	} else if (strcmp(text, c->want) != 0) {
		snprintf(msg, cap, "different conditions");
		out = -1;
	}
	free(text);
	return out;
}

static void test_matchcond_every_allocation(void)
{
	/* Pools by agent pool (node names, pool key values), globs of both kinds. */
	static const char policy[] =
		"gpuResources: [nvidia.com/gpu, \"*.habana.ai/gaudi\", \"example.com/*-gpu\"]\n"
		"pools:\n"
		"  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
		"  - {name: a100, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n";
	static const char *const what[MATCHCOND_ENTRIES] = {
		"the pod matchConditions of a policy with pools by agent pool",
		"the workload matchConditions of a policy with pools by agent pool",
		"the custom resources' matchConditions",
	};
	struct error err;
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct matchcond_case c = { cfg, MATCHCOND_PODS, NULL };
	struct path p = { NULL, run_matchcond, &c };
	int e;

	CHECK(cfg != NULL);
	for (e = 0; cfg != NULL && e < MATCHCOND_ENTRIES; e++) {
		c.entry = (enum matchcond_entry)e;
		p.name = what[e];
		c.want = matchcond_text(cfg, c.entry, &err);
		CHECK(c.want != NULL);
		if (c.want != NULL)
			every_point(&p);
		free(c.want);
	}
	config_free(cfg);
}

int main(void)
{
	/* jansson allocates through the counting allocator even where malloc itself is not ours. */
	json_set_alloc_funcs(oom_malloc, oom_free);
	RUN(test_interposed);
	RUN(test_review_every_allocation);
	RUN(test_config_every_allocation);
	RUN(test_config_load_memory);
	RUN(test_audit_every_allocation);
	RUN(test_wrap_every_allocation);
	RUN(test_apply_every_allocation);
	RUN(test_report_every_allocation);
	RUN(test_report_model_every_allocation);
	RUN(test_matchcond_every_allocation);
	fprintf(stderr, "  %lu allocation points met, %lu runs with one failing; %lu of them failed inside "
		"jansson's parser or encoder (no crash, no leak: their result may be any)\n", points_total, runs_total, lenient_total);
	return check_done("oom");
}
