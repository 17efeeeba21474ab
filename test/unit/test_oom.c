/*
 * Failing allocations (issue 14): the review, config and audit paths run
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "check.h"
#include "config.h"
#include "file.h"
#include "review.h"

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
 */
static int inside_jansson_io;

json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
	static json_t *(*real)(const char *, size_t, size_t, json_error_t *);
	json_t *v;

	if (real == NULL)
		real = (json_t *(*)(const char *, size_t, size_t, json_error_t *))dlsym(RTLD_NEXT, "json_loadb");
	inside_jansson_io++;
	v = real(buffer, buflen, flags, error);
	inside_jansson_io--;
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
	inside_jansson_io--;
	return s;
}

/* Whether this allocation is the one to fail; counts it. */
static int fault(void)
{
	if (!armed)
		return 0;
	calls++;
	if (calls == fail_at) {
		failed++;
		in_jansson_parser = inside_jansson_io > 0;
		armed = 0;  /* backtrace() may allocate */
		if (getenv("OOM_TRACE") != NULL && strtoul(getenv("OOM_TRACE"), NULL, 10) == fail_at) {
			/* OOM_TRACE=N: where the N-th failed, for addr2line -e build/test/test_oom */
			void *frames[32];

			backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
		}
		armed = 1;
		return 1;
	}
	return 0;
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
	return p;
}

static void oom_free(void *p)
{
	if (p == NULL || from_boot(p))
		return;
	resolve();
	if (armed)
		live--;
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
	if (fault()) {
		errno = ENOMEM;
		return NULL;
	}
	p = real_realloc(old, n);
	if (p != NULL && old == NULL && armed)
		live++;
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
	int rc = review_handle_ex(c->cfg, c->body, c->len, c->flags, &res, &err), out = 0;

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
		struct review_case c = { cfg, body, len, flag_sets[i], { 0 }, 0, { 0 } };
		char label[256];
		struct path p = { label, run_review, &c };

		c.want_rc = review_handle_ex(cfg, body, len, c.flags, &c.want, &c.want_err);
		snprintf(label, sizeof label, "review %s (flags %u)", name, c.flags);
		every_point(&p);
		review_response_free(&c.want);
	}
}

/* ---- config ---- */

struct config_case {
	const char *yaml;
	int want_ok;
};

static int run_config(const void *arg, char *msg, size_t cap)
{
	const struct config_case *c = arg;
	struct error err = { 0 };
	struct config *cfg = c->yaml ? config_load_buffer(c->yaml, strlen(c->yaml), "policy.yaml", &err)
			   : config_default(&err);
	int out = 0;

	if (cfg != NULL && !c->want_ok) {
		snprintf(msg, cap, "accepted a policy the reference refuses");
		out = -1;
	} else if (cfg == NULL && err.kind == ERROR_NOMEM) {
		out = 1;
	} else if (cfg == NULL && c->want_ok) {
		snprintf(msg, cap, "failed with kind %d: %s", (int)err.kind, err.msg);
		out = -1;
	}
	config_free(cfg);
	return out;
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

/* Findings and errors of a, as one JSON text (malloc'd), for comparing runs. */
static char *audit_report(const struct audit *a)
{
	json_t *both = json_pack("[OO]", a->findings, a->errors);
	char *text = both ? json_dumps(both, JSON_COMPACT) : NULL;

	json_decref(both);
	return text;
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
	    audit_input(&a, "input.yaml", input, len, &c.want_fixed, &c.want_fixed_len, &changed, &err) != 0) {
		fprintf(stderr, "  audit %s: the reference run failed: %s\n", name, err.msg);
		CHECK(0);
		audit_free(&a);
		return;
	}
	c.want_report = audit_report(&a);
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
 * fast path's fallbacks); the first three also run under valgrind.
 */
static const char *const review_cases[] = {
	"gpu-limit-minimal", "cpu-all-routes", "toleration-nvidia-key-warning",
	"corpus-azure-samples-aks-store-demo-aks-store-q-deployment-store-front-0", "mode-warn-reject",
	"v1beta1", "missing-uid", "exempt-daemonset-gpu", "dra-only", "pool-label-unknown",
	"nodeselector-conflict", "hostile-escaped-key-spec", "hostile-big-valid-numbers-skipped",
	"resources-wrong-type", NULL,
};

static void test_review_every_allocation(void)
{
	struct error err;
	struct config *cfg = config_default(&err);
	const char *slow = getenv("WRAP");
	int i, used = 0;

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	for (i = 0; review_cases[i] != NULL; i++) {
		char path[512], *body;
		size_t len = 0;

		if (slow != NULL && slow[0] != '\0' && i >= 3)
			break;  /* under valgrind each run is slow: three cases are plenty */
		snprintf(path, sizeof path, "test/golden/%s/request.json", review_cases[i]);
		if ((body = file_read(path, 1u << 20, &len, &err)) == NULL)
			continue;  /* renamed since: the others still cover the paths */
		review_paths(cfg, review_cases[i], body, len);
		free(body);
		used++;
	}
	CHECK(used >= 3);
	/* Not JSON, and no uid: plain errors that must stay what they are. */
	review_paths(cfg, "not-json", "{\"apiVersion\":", 14);
	review_paths(cfg, "no-uid", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
		     "\"request\":{}}", 70);
	config_free(cfg);
}

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
		"  podSelectors:\n    - matchLabels: {app: dcgm}\n";
	struct config_case dflt = { NULL, 1 }, embedded = { config_default_yaml(), 1 }, pools = { three_pools, 1 },
			   bad = { "mode: enforce\npools: 12\nunknown: 1\n", 0 };
	struct path p1 = { "config_default()", run_config, &dflt };
	struct path p2 = { "config_load_buffer(the embedded default)", run_config, &embedded };
	struct path p3 = { "config_load_buffer(three pools, modes, exemptions)", run_config, &pools };
	struct path p4 = { "config_load_buffer(an invalid policy)", run_config, &bad };

	every_point(&p1);
	every_point(&p2);
	every_point(&p3);
	every_point(&p4);
}

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
	struct error err;
	struct config *cfg = config_default(&err);

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	audit_path_case(cfg, "a multi-document stream (mutate, reject, alias, exempt, broken)", manifests,
			sizeof manifests - 1);
	audit_path_case(cfg, "a kind: List in JSON", list_json, sizeof list_json - 1);
	config_free(cfg);
}

int main(void)
{
	/* jansson allocates through the counting allocator even where malloc itself is not ours. */
	json_set_alloc_funcs(oom_malloc, oom_free);
	RUN(test_interposed);
	RUN(test_review_every_allocation);
	RUN(test_config_every_allocation);
	RUN(test_audit_every_allocation);
	fprintf(stderr, "  %lu allocation points met, %lu runs with one failing; %lu of them failed inside "
		"jansson's parser or encoder (no crash, no leak: their result may be any)\n", points_total, runs_total, lenient_total);
	return check_done("oom");
}
