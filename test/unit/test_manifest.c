/* Manifest reading: YAML -> JSON typing, documents and lines, templates, hostile input, --fix rendering. */
#include <stdlib.h>

#include "check.h"
#include "text/manifest.h"
#include "text/manifest_int.h"
#include "policy/template.h"

/*
 * The templates of document d of m with their lines, as the auditor finds
 * them (template_find() on the values, manifest_line() for where). Valid
 * until the next call.
 */
static struct template_list found;

static const struct template_list *templates(const struct manifest *m, size_t d)
{
	struct error err;
	size_t i;

	template_list_free(&found);
	if (template_find(m->docs[d].root, &found, &err) != 0)
		return &found;
	for (i = 0; i < found.n; i++)
		found.v[i].line = manifest_line(&m->docs[d], found.v[i].node);
	return &found;
}

/* The scalar's JSON text ("1", "\"1\"", "true", "null", "1.5"), or "(null)". */
static char *scalar(const char *s, int plain)
{
	static char buf[128];
	json_t *v = manifest_scalar(s, strlen(s), plain, NULL);
	char *text = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;

	snprintf(buf, sizeof buf, "%s", text ? text : "(null)");
	free(text);
	json_decref(v);
	return buf;
}

static void test_scalar_typing(void)
{
	CHECK_STR(scalar("1", 1), "1");
	CHECK_STR(scalar("1", 0), "\"1\"");          /* quoted "1" stays a string */
	CHECK_STR(scalar("0", 1), "0");
	CHECK_STR(scalar("-3", 1), "-3");
	CHECK_STR(scalar("+7", 1), "7");
	CHECK_STR(scalar("0x1F", 1), "31");
	CHECK_STR(scalar("0777", 1), "511");        /* YAML 1.1 octal, as go-yaml v2 */
	CHECK_STR(scalar("0o17", 1), "15");
	CHECK_STR(scalar("0b101", 1), "5");
	CHECK_STR(scalar("1_000", 1), "1000");
	CHECK_STR(scalar("1.5", 1), "1.5");
	CHECK_STR(scalar("1e3", 1), "1000.0");
	CHECK_STR(scalar(".5", 1), "0.5");
	CHECK_STR(scalar("08", 1), "8.0");          /* not octal, still a number */
	CHECK_STR(scalar("99999999999999999999", 1), "1e20");
	CHECK_STR(scalar("true", 1), "true");
	CHECK_STR(scalar("yes", 1), "true");
	CHECK_STR(scalar("On", 1), "true");
	CHECK_STR(scalar("n", 1), "false");
	CHECK_STR(scalar("OFF", 1), "false");
	CHECK_STR(scalar("true", 0), "\"true\"");
	CHECK_STR(scalar("~", 1), "null");
	CHECK_STR(scalar("null", 1), "null");
	CHECK_STR(scalar("", 1), "null");
	CHECK_STR(scalar("", 0), "\"\"");
	/* Quantities with suffixes and things that only look numeric are strings. */
	CHECK_STR(scalar("500m", 1), "\"500m\"");
	CHECK_STR(scalar("1Gi", 1), "\"1Gi\"");
	CHECK_STR(scalar("1.2.3", 1), "\"1.2.3\"");
	CHECK_STR(scalar("0x", 1), "\"0x\"");
	CHECK_STR(scalar("-", 1), "\"-\"");
	CHECK_STR(scalar(".inf", 1), "\".inf\"");    /* JSON has no infinity */
	CHECK_STR(scalar("1e999", 1), "\"1e999\"");
	CHECK_STR(scalar("nvidia", 1), "\"nvidia\"");
	CHECK_STR(scalar("\xff", 0), "(null)");      /* not UTF-8 */
	{
		json_t *v = manifest_scalar("1", 1, 1, "tag:yaml.org,2002:str");

		CHECK(json_is_string(v));
		json_decref(v);
		v = manifest_scalar("5", 1, 0, "tag:yaml.org,2002:int");
		CHECK_INT(json_integer_value(v), 5);
		json_decref(v);
	}
}

static int load(const char *text, struct manifest *m)
{
	struct error err = { 0 };

	return manifest_load(text, strlen(text), m, &err);
}

static void test_typing_in_documents(void)
{
	struct manifest m;
	const json_t *limits;

	CHECK_INT(load("a:\n  limits:\n    nvidia.com/gpu: 1\n    q: \"1\"\n    b: yes\n    c: 'no'\n"
		       "    d: ~\n    e: 1.0\n    f: |\n      text\n", &m), 0);
	CHECK_INT(m.n_docs, 1);
	limits = json_object_get(json_object_get(m.docs[0].root, "a"), "limits");
	CHECK(json_is_integer(json_object_get(limits, "nvidia.com/gpu")));
	CHECK_STR(json_string_value(json_object_get(limits, "q")), "1");
	CHECK(json_is_true(json_object_get(limits, "b")));
	CHECK_STR(json_string_value(json_object_get(limits, "c")), "no");
	CHECK(json_is_null(json_object_get(limits, "d")));
	CHECK(json_is_real(json_object_get(limits, "e")));
	CHECK_STR(json_string_value(json_object_get(limits, "f")), "text\n");
	manifest_free(&m);
}

static const char *const STREAM =
	"# leading comment\n"                               /* 1 */
	"apiVersion: apps/v1\n"                             /* 2 */
	"kind: Deployment\n"                                /* 3 */
	"metadata: {name: web, namespace: prod}\n"          /* 4 */
	"spec:\n"                                           /* 5 */
	"  template:\n"                                     /* 6 */
	"    spec:\n"                                       /* 7 */
	"      containers: [{name: c}]\n"                   /* 8 */
	"---\n"                                             /* 9 */
	"---\n"                                             /* 10: empty */
	"# only a comment\n"                                /* 11 */
	"---\n"                                             /* 12 */
	"kind: CronJob\n"                                   /* 13 */
	"metadata: {name: nightly}\n"                       /* 14 */
	"spec:\n"                                           /* 15 */
	"  jobTemplate:\n"                                  /* 16 */
	"    spec:\n"                                       /* 17 */
	"      template:\n"                                 /* 18 */
	"        spec: {containers: []}\n"                  /* 19 */
	"...\n"                                             /* 20 */
	"--- \n"                                            /* 21 */
	"kind: Deployment\n"                                /* 22 */
	"metadata: {name: broken\n"                         /* 23: unclosed */
	"spec: {}\n"                                        /* 24 */
	"---\n"                                             /* 25 */
	"kind: DaemonSet\n"                                 /* 26 */
	"metadata: {name: agent}\n"                         /* 27 */
	"spec:\n"                                           /* 28 */
	"  template:\n"                                     /* 29 */
	"    spec:\n"                                       /* 30 */
	"      containers: []";                             /* 31: no final newline */

static void test_documents_and_lines(void)
{
	struct manifest m;
	size_t i, total = 0;

	CHECK_INT(load(STREAM, &m), 0);
	CHECK_INT(m.n_docs, 6);
	for (i = 0; i < m.n_docs; i++)
		total += m.docs[i].len;
	CHECK_INT(total, strlen(STREAM));  /* the documents tile the stream */
	CHECK_INT(templates(&m, 0)->n, 1);
	CHECK_STR(templates(&m, 0)->v[0].kind, "Deployment");
	CHECK_STR(templates(&m, 0)->v[0].name, "web");
	CHECK_STR(templates(&m, 0)->v[0].ns, "prod");
	CHECK_STR(templates(&m, 0)->v[0].pointer, "/spec/template");
	CHECK_STR(templates(&m, 0)->v[0].path, "spec.template");
	CHECK_INT(templates(&m, 0)->v[0].line, 6);
	CHECK_INT(m.docs[0].content_line, 2);
	CHECK(m.docs[1].root == NULL && !m.docs[1].failed);
	CHECK(m.docs[2].root == NULL && !m.docs[2].failed);
	CHECK_INT(templates(&m, 3)->n, 1);
	CHECK_STR(templates(&m, 3)->v[0].ns, "default");
	CHECK_STR(templates(&m, 3)->v[0].pointer, "/spec/jobTemplate/spec/template");
	CHECK_INT(templates(&m, 3)->v[0].line, 18);
	CHECK(m.docs[4].failed);
	CHECK_INT(m.docs[4].error_line, 24);
	CHECK_INT(templates(&m, 5)->n, 1);
	CHECK(templates(&m, 5)->v[0].daemonset);
	CHECK_INT(templates(&m, 5)->v[0].line, 29);
	manifest_free(&m);
}

static void test_crlf_lines(void)
{
	struct manifest m;

	CHECK_INT(load("kind: Pod\r\nmetadata:\r\n  name: p\r\nspec:\r\n  containers: []\r\n---\r\n"
		       "kind: Pod\r\nspec: {containers: []}", &m), 0);
	CHECK(m.crlf);
	CHECK_INT(m.n_docs, 2);
	CHECK_STR(templates(&m, 0)->v[0].name, "p");
	CHECK_STR(templates(&m, 0)->v[0].path, ".");
	CHECK_INT(templates(&m, 1)->v[0].line, 7);
	CHECK_STR(templates(&m, 1)->v[0].name, "(unnamed)");
	manifest_free(&m);
}

static void test_directives(void)
{
	struct manifest m;

	/* %YAML / %TAG lines go with the document after them, not the one before. */
	CHECK_INT(load("%YAML 1.1\n---\nkind: Pod\nspec: {containers: []}\n...\n%YAML 1.1\n"
		       "# comment\n%TAG ! tag:example.com,2000:\n---\nkind: Pod\nspec: {containers: []}\n", &m), 0);
	CHECK_INT(m.n_docs, 2);
	CHECK(!m.docs[0].failed && !m.docs[1].failed);
	CHECK_INT(m.docs[1].line, 6);
	CHECK_INT(templates(&m, 1)->v[0].line, 10);
	manifest_free(&m);
}

/*
 * manifest_next() hands out the documents manifest_load() keeps, one at a time
 * in one caller-owned struct (what lets audit and report read streams of any
 * length in one document's memory), and tells a written null from an empty
 * document.
 */
static void test_streaming(void)
{
	static const char *const streams[] = {
		STREAM, "", "---\n", "a: 1\n...\n...\n", "%YAML 1.1\n---\na: 1\n...\n%YAML 1.1\n# c\n---\nb: 2\n",
		"---\n---\n# only a comment\n---\nnull\n--- ~\n--- ''\n",
	};
	struct manifest m, all;
	struct manifest_doc d;
	struct error err = { 0 };
	size_t s, n;
	int more;

	for (s = 0; s < sizeof streams / sizeof streams[0]; s++) {
		CHECK_INT(load(streams[s], &all), 0);
		memset(&d, 0, sizeof d);
		manifest_open(streams[s], strlen(streams[s]), &m);
		for (n = 0; (more = manifest_next(&m, &d, &err)) == 1; n++) {
			CHECK(n < all.n_docs);
			if (n >= all.n_docs)
				break;
			CHECK_INT(d.off, all.docs[n].off);
			CHECK_INT(d.len, all.docs[n].len);
			CHECK_INT(d.line, all.docs[n].line);
			CHECK_INT(d.failed, all.docs[n].failed);
			CHECK(json_equal(d.root, all.docs[n].root) || (d.root == NULL && all.docs[n].root == NULL));
		}
		CHECK_INT(more, n < all.n_docs ? 1 : 0);
		CHECK_INT(n, all.n_docs);
		CHECK(d.root == NULL && d.pos == NULL);  /* the end leaves nothing held */
		CHECK_INT(manifest_next(&m, &d, &err), 0);  /* and stays at the end */
		manifest_doc_free(&d);
		manifest_free(&all);
	}
	CHECK_INT(load(streams[5], &all), 0);
	CHECK_INT(all.n_docs, 5);
	CHECK(!all.docs[0].null_root && !all.docs[1].null_root);  /* empty; only a comment */
	CHECK(all.docs[2].null_root && all.docs[3].null_root);    /* null; ~ */
	CHECK(!all.docs[4].null_root && json_is_string(all.docs[4].root));
	manifest_free(&all);
}

static void test_discovery_generic(void)
{
	struct manifest m;

	CHECK_INT(load("apiVersion: v1\nkind: List\nitems:\n"
		       "- kind: Pod\n  metadata: {name: a, namespace: ns1, ownerReferences: [{kind: DaemonSet}]}\n"
		       "  spec: {containers: []}\n"
		       "- kind: Service\n  metadata: {name: s}\n  spec: {ports: []}\n"
		       "- kind: PodTemplate\n  metadata: {name: pt}\n  template: {spec: {containers: []}}\n"
		       "- kind: JobSet\n  metadata: {name: js}\n  spec:\n    replicatedJobs:\n"
		       "    - name: w\n      template:\n        spec:\n          template:\n"
		       "            spec: {containers: [{name: x}]}\n"
		       "- kind: LeaderWorkerSet\n  metadata: {name: lws}\n  spec:\n    leaderWorkerTemplate:\n"
		       "      leaderTemplate: {spec: {containers: []}}\n"
		       "      workerTemplate: {spec: {containers: []}}\n"
		       "- kind: ConfigMap\n  data: {template: 'x'}\n", &m), 0);
	CHECK_INT(templates(&m, 0)->n, 5);
	if (templates(&m, 0)->n == 5) {
		CHECK_STR(templates(&m, 0)->v[0].pointer, "/items/0");
		CHECK_STR(templates(&m, 0)->v[0].path, "items[0]");
		CHECK_STR(templates(&m, 0)->v[0].ns, "ns1");
		CHECK_INT(templates(&m, 0)->v[0].line, 4);
		CHECK_STR(templates(&m, 0)->v[1].pointer, "/items/2/template");
		CHECK_STR(templates(&m, 0)->v[2].pointer, "/items/3/spec/replicatedJobs/0/template/spec/template");
		CHECK_STR(templates(&m, 0)->v[2].path, "items[3].spec.replicatedJobs[0].template.spec.template");
		CHECK_STR(templates(&m, 0)->v[2].kind, "JobSet");
		CHECK_STR(templates(&m, 0)->v[3].pointer, "/items/4/spec/leaderWorkerTemplate/leaderTemplate");
		CHECK_STR(templates(&m, 0)->v[4].name, "lws");
	}
	manifest_free(&m);

	/* JSON input keeps line numbers too. */
	CHECK_INT(load("{\n  \"kind\": \"List\",\n  \"items\": [\n    {\n      \"kind\": \"Pod\",\n"
		       "      \"spec\": {\"containers\": []}\n    }\n  ]\n}\n", &m), 0);
	CHECK(m.docs[0].json);
	CHECK_INT(templates(&m, 0)->n, 1);
	CHECK_INT(templates(&m, 0)->v[0].line, 4);
	manifest_free(&m);

	/* A document that is an array (kubectl get -o json | jq .items) is a list too. */
	CHECK_INT(load("[\n  {\"kind\": \"Service\", \"spec\": {}},\n"
		       "  {\"kind\": \"Deployment\", \"metadata\": {\"name\": \"d\"},\n"
		       "   \"spec\": {\"template\": {\"spec\": {\"containers\": []}}}},\n"
		       "  \"not an object\",\n  {\"kind\": \"Pod\", \"spec\": {\"containers\": []}}\n]\n", &m), 0);
	CHECK_INT(templates(&m, 0)->n, 2);
	if (templates(&m, 0)->n == 2) {
		CHECK_STR(templates(&m, 0)->v[0].pointer, "/1/spec/template");
		CHECK_STR(templates(&m, 0)->v[0].path, "[1].spec.template");
		CHECK_STR(templates(&m, 0)->v[0].kind, "Deployment");
		CHECK_INT(templates(&m, 0)->v[0].line, 4);
		CHECK_STR(templates(&m, 0)->v[1].pointer, "/3");
	}
	manifest_free(&m);
}

/* The YAML writer the auditor's -o yaml uses: reads back as the same value. */
static void test_to_yaml(void)
{
	struct error err = { 0 };
	json_t *v = json_pack("{s:[{s:s, s:i, s:b, s:n, s:s, s:s, s:{}, s:[]}], s:s}", "findings", "verdict",
			      "ok", "line", 12, "ok", 1, "pool", "changes", "", "name", "1", "patch", "empty",
			      "path", "."), *back;
	size_t len = 0;
	char *text = manifest_to_yaml(v, &len, &err);

	CHECK(text != NULL);
	if (text != NULL) {
		CHECK_INT(strlen(text), len);
		CHECK(strstr(text, "findings:\n- ") != NULL);
		back = manifest_parse_value(text, len, &err);
		CHECK(back != NULL && json_equal(back, v));
		json_decref(back);
	}
	free(text);
	json_decref(v);
}

static void test_anchors_and_merge(void)
{
	struct manifest m;
	const json_t *spec;

	CHECK_INT(load("base: &b {x: 1, y: 2}\nkind: Pod\nmetadata: {name: &n web, labels: {app: *n}}\n"
		       "spec:\n  <<: *b\n  y: 3\n  containers: []\n", &m), 0);
	spec = json_object_get(m.docs[0].root, "spec");
	CHECK_INT(json_integer_value(json_object_get(spec, "x")), 1);
	CHECK_INT(json_integer_value(json_object_get(spec, "y")), 3);   /* explicit key wins */
	CHECK(json_object_get(spec, "<<") == NULL);
	CHECK(m.docs[0].aliases);
	CHECK_STR(templates(&m, 0)->v[0].name, "web");
	manifest_free(&m);

	CHECK_INT(load("a: *nope\n", &m), 0);
	CHECK(m.docs[0].failed);
	manifest_free(&m);
}

static void test_hostile(void)
{
	struct manifest m;
	char *deep = malloc(200003);
	size_t i;

	CHECK_INT(load("a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
		       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
		       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
		       "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n---\nkind: Pod\nspec: {containers: []}\n", &m), 0);
	CHECK(m.docs[0].failed);
	CHECK(strstr(m.docs[0].error, "alias") != NULL);
	CHECK_INT(templates(&m, 1)->n, 1);   /* the next document is still read */
	manifest_free(&m);

	if (deep == NULL)
		return;
	for (i = 0; i < 100000; i++) {
		deep[i] = '[';
		deep[100000 + i] = ']';
	}
	deep[200000] = '\0';
	CHECK_INT(load(deep, &m), 0);
	CHECK(m.docs[0].failed);
	CHECK(strstr(m.docs[0].error, "nesting") != NULL);
	manifest_free(&m);
	free(deep);

	/* Aliases nesting a deep anchor deeper still: an input error, not "out of memory". */
	{
		char *text = malloc(4096);
		size_t n = 0;

		if (text != NULL) {
			n += (size_t)sprintf(text + n, "a: &a ");
			for (i = 0; i < 200; i++)
				text[n++] = '[';
			for (i = 0; i < 200; i++)
				text[n++] = ']';
			n += (size_t)sprintf(text + n, "\nb: ");
			for (i = 0; i < 100; i++)
				text[n++] = '[';
			text[n++] = '*';
			text[n++] = 'a';
			for (i = 0; i < 100; i++)
				text[n++] = ']';
			text[n++] = '\n';
			text[n] = '\0';
			CHECK_INT(load(text, &m), 0);
			CHECK(m.docs[0].failed);
			CHECK(strstr(m.docs[0].error, "nesting") != NULL);
			manifest_free(&m);
			free(text);
		}
	}
	CHECK_INT(load("{{ .Values.x }}: 1\n", &m), 0);
	CHECK(m.docs[0].failed);
	manifest_free(&m);
	CHECK_INT(load("", &m), 0);
	CHECK_INT(m.n_docs, 1);
	CHECK(m.docs[0].root == NULL && !m.docs[0].failed);
	manifest_free(&m);
}

static char *render(const char *text, const char *patch_json, const char **how)
{
	struct manifest m;
	struct error err = { 0 };
	json_t *patch = json_loads(patch_json, 0, NULL);
	char *out = NULL;
	size_t len;

	*how = NULL;
	if (load(text, &m) == 0 && m.docs[0].root != NULL &&
	    manifest_render_patched(&m, &m.docs[0], patch, &out, &len, how, &err) != 0)
		fprintf(stderr, "  render: %s\n", err.msg);
	manifest_free(&m);
	json_decref(patch);
	return out;
}

static void test_render(void)
{
	const char *how;
	char *out;

	out = render("# keep me\nkind: Pod\nspec:\n  # and me\n  containers: [] # here\n",
		     "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[{\"key\":\"sku\",\"value\":\"gpu\"}]},"
		     "{\"op\":\"add\",\"path\":\"/spec/nodeSelector\",\"value\":{\"a/b\":\"true\"}}]", &how);
	CHECK_STR(out, "# keep me\nkind: Pod\nspec:\n  tolerations:\n    - key: sku\n      value: gpu\n"
		  "  nodeSelector:\n    a/b: \"true\"\n  # and me\n  containers: [] # here\n");
	CHECK_STR(how, "inserted");
	free(out);

	/* Appending to a block sequence that ends the document without a final newline. */
	out = render("spec:\n  tolerations:\n  - key: a\n    effect: NoSchedule",
		     "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":{\"key\":\"sku\"}}]", &how);
	CHECK_STR(out, "spec:\n  tolerations:\n  - key: a\n    effect: NoSchedule\n  - key: sku\n");
	CHECK_STR(how, "inserted");
	free(out);

	/* Flow style cannot take an insertion: the document is re-emitted, marker kept. */
	out = render("---\nspec: {tolerations: [], x: '1'}\n",
		     "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":{\"key\":\"sku\"}}]", &how);
	CHECK_STR(out, "---\nspec:\n  tolerations:\n  - key: sku\n  x: '1'\n");
	CHECK_STR(how, "re-emitted");
	free(out);

	/* CRLF documents get CRLF insertions. */
	out = render("spec:\r\n  containers: []\r\n",
		     "[{\"op\":\"add\",\"path\":\"/spec/nodeSelector\",\"value\":{\"k\":\"v\"}}]", &how);
	CHECK_STR(out, "spec:\r\n  nodeSelector:\r\n    k: v\r\n  containers: []\r\n");
	free(out);

	/* Additions go above a comment about the first key, and before trailing comments of a list. */
	out = render("spec:\n  nodeSelector:\n    # pinned\n    zone: a\n  tolerations:\n  - key: a\n"
		     "  # trailing\n\n  containers: []\n# end",
		     "[{\"op\":\"add\",\"path\":\"/spec/nodeSelector/k\",\"value\":\"v\"},"
		     "{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":{\"key\":\"sku\"}}]", &how);
	CHECK_STR(out, "spec:\n  nodeSelector:\n    k: v\n    # pinned\n    zone: a\n  tolerations:\n  - key: a\n"
		  "  - key: sku\n  # trailing\n\n  containers: []\n# end");
	CHECK_STR(how, "inserted");
	free(out);

	/* A patch that does not apply is an error, not a guess. */
	out = render("spec: 1\n", "[{\"op\":\"add\",\"path\":\"/spec/x/y\",\"value\":1}]", &how);
	CHECK(out == NULL);
}

/* audit --fix of a rejected template: whole lines removed, comments and layout kept. */
static void test_render_removals(void)
{
	const char *how;
	char *out;

	/* Sequence items, middle and last, and an entry of a map; the comments about the rest stay. */
	out = render("spec:\n  # why\n  tolerations:\n  - key: a\n  - key: sku   # this one\n    operator: Exists\n"
		     "  - key: b\n  - key: sku\n  nodeSelector:\n    zone: x\n    accelerator: nvidia # gpu\n"
		     "  nodeName: gpu-1\n  # containers\n  containers: []\n",
		     "[{\"op\":\"remove\",\"path\":\"/spec/tolerations/3\"},{\"op\":\"remove\",\"path\":\"/spec/tolerations/1\"},"
		     "{\"op\":\"remove\",\"path\":\"/spec/nodeSelector/accelerator\"},"
		     "{\"op\":\"remove\",\"path\":\"/spec/nodeName\"}]", &how);
	CHECK_STR(out, "spec:\n  # why\n  tolerations:\n  - key: a\n  - key: b\n  nodeSelector:\n    zone: x\n"
		  "  # containers\n  containers: []\n");
	CHECK_STR(how, "inserted");
	free(out);

	/* A whole key with a block value, nested maps, a comment above the next key kept. */
	out = render("spec:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
		     "        nodeSelectorTerms:\n        - matchExpressions: [{key: accelerator, operator: Exists}]\n"
		     "  # the app\n  containers:\n  - name: c\n",
		     "[{\"op\":\"remove\",\"path\":\"/spec/affinity\"}]", &how);
	CHECK_STR(out, "spec:\n  # the app\n  containers:\n  - name: c\n");
	CHECK_STR(how, "inserted");
	free(out);

	/* An indentless sequence as the whole value, at the end of the document. */
	out = render("spec:\n  containers: []\n  tolerations:\n  - {key: sku, operator: Exists}\n",
		     "[{\"op\":\"remove\",\"path\":\"/spec/tolerations\"}]", &how);
	CHECK_STR(out, "spec:\n  containers: []\n");
	CHECK_STR(how, "inserted");
	free(out);

	/* Inside flow style: re-emitted from the value instead. */
	out = render("spec: {tolerations: [{key: sku}, {key: a}], containers: []}\n",
		     "[{\"op\":\"remove\",\"path\":\"/spec/tolerations/0\"}]", &how);
	CHECK_STR(out, "spec:\n  tolerations:\n  - key: a\n  containers: []\n");
	CHECK_STR(how, "re-emitted");
	free(out);

	/* Nothing there to remove: an error. */
	out = render("spec: {}\n", "[{\"op\":\"remove\",\"path\":\"/spec/nodeName\"}]", &how);
	CHECK(out == NULL);
}

int main(void)
{
	RUN(test_scalar_typing);
	RUN(test_typing_in_documents);
	RUN(test_documents_and_lines);
	RUN(test_crlf_lines);
	RUN(test_directives);
	RUN(test_streaming);
	RUN(test_discovery_generic);
	RUN(test_anchors_and_merge);
	RUN(test_hostile);
	RUN(test_render);
	RUN(test_render_removals);
	RUN(test_to_yaml);
	template_list_free(&found);
	return check_done("manifest");
}
