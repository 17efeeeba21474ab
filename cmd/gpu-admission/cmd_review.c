/* gpu-admission review: one AdmissionReview in (or a manifest, with --wrap), the answer out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "base/file.h"
#include "text/manifest.h"
#include "webhook/review.h"

enum { OPT_VALIDATE = CLI_LONG_ONLY, OPT_WRAP, OPT_APPLY };
enum output { OUT_REVIEW, OUT_PATCH, OUT_PATCHED, OUT_PRETTY };

static const struct cli_option review_options[] = {
	CLI_OPTION_CONFIG,
	{ "validate", OPT_VALIDATE, NULL, "answer as the validating webhook (/validate): never a patch", 0 },
	{ "wrap", OPT_WRAP, NULL,
	  "the input is a manifest, YAML or JSON: a Pod, or an object with a pod\n"
	  "template (Deployment, Job, ...); review the AdmissionReview the API\n"
	  "server would send to create that pod. ResourceClaimTemplates and\n"
	  "ResourceClaims in the same file resolve its DRA claims", 0 },
	{ "apply", OPT_APPLY, NULL,
	  "the input is a manifest of one object; review the AdmissionReview the\n"
	  "API server sends when it is applied (created): a workload (Deployment,\n"
	  "Job, a custom resource the policy lists) is judged by its pod\n"
	  "templates, as kubectl apply meets it (with --validate: the validating\n"
	  "webhook's answer)", 0 },
	{ "output", 'o', "review|patch|patched|pretty",
	  "print the answer AdmissionReview as the API server reads it (one\n"
	  "line, the patch in base64: the default on a pipe), its JSON Patch\n"
	  "decoded, the object with the patch applied, or the answer indented\n"
	  "with its patch decoded in place (the default on a terminal)", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

/*
 * The input wrapped in an AdmissionReview, as text; NULL with err. apply:
 * its one object as kubectl apply sends it (--apply); else its one pod
 * template as the Pod its controller creates (--wrap).
 */
static char *wrap_input(const char *name, const char *buf, size_t len, int apply, struct manifest *mp,
			struct policy_claim_objects *claims, size_t *out_len, struct error *err)
{
	struct manifest m;
	struct template_list l = { 0 };
	const json_t *obj = NULL;
	json_t *review = NULL;
	char *body = NULL;
	size_t i, n = 0;

	memset(&m, 0, sizeof m);
	if (manifest_load(buf, len, &m, err) != 0)
		goto out;
	for (i = 0; i < m.n_docs; i++) {
		if (m.docs[i].failed) {
			error_set(err, ERROR_INPUT, "%s:%lu: not valid YAML: %s", name, m.docs[i].error_line,
				  m.docs[i].error);
			goto out;
		}
		/* The input's ResourceClaimTemplates and ResourceClaims resolve the pod's claims. */
		if (m.docs[i].root != NULL) {
			int added = policy_claim_objects_add(claims, m.docs[i].root, err);

			if (added < 0)
				goto out;
			if (added > 0)
				continue;
		}
		if (apply && m.docs[i].root != NULL) {
			obj = m.docs[i].root;
			n++;
		}
		if (!apply && template_find(m.docs[i].root, &l, err) != 0)
			goto out;
	}
	if (apply && (n != 1 || !json_is_object(obj)))
		error_set(err, ERROR_INPUT, "%s: --apply takes one object (%s): gpu-admission audit %s judges "
			  "them all", name, n == 0 ? "there is none" : n > 1 ? "there are several" : "this is a list",
			  name);
	else if (!apply && l.n == 0)
		error_set(err, ERROR_INPUT, "%s: no pod template found (--wrap takes a Pod, or an object "
			  "with a pod template such as a Deployment or a Job)", name);
	else if (!apply && l.n > 1)
		error_set(err, ERROR_INPUT, "%s holds %zu pod templates and --wrap takes one: "
			  "gpu-admission audit %s reviews them all", name, l.n, name);
	else if ((review = apply ? review_wrap_object(obj, err) : review_wrap(&l.v[0], err)) != NULL &&
		 (body = json_dumps(review, JSON_COMPACT)) == NULL)
		error_set(err, ERROR_NOMEM, "out of memory wrapping the input");
	if (body != NULL)
		*out_len = strlen(body);
out:
	json_decref(review);
	template_list_free(&l);
	*mp = m;  /* the claim objects borrow from it: the caller frees it */
	return body;
}

/* v indented on stdout: 0, or -1 with err. */
static int print_json(const json_t *v, struct error *err)
{
	if (json_dumpf(v, stdout, JSON_INDENT(2)) != 0 || fputc('\n', stdout) == EOF) {
		error_set(err, ERROR_SYSTEM, "writing the output failed");
		return -1;
	}
	return 0;
}

/* Prints the patch, or the patched object, of an answer that allowed the pod. */
static int print_decoded(enum output out, const char *body, size_t len, const struct review_response *res,
			 struct error *err)
{
	char message[1024];
	json_t *patch = NULL, *shown = NULL;
	int rc = -1;

	if (review_answer_read(res->body, res->len, &patch, message, sizeof message, err) != 0)
		goto out;
	if (res->status != 200 || res->decision == POLICY_REJECT) {
		/* Nothing to print: the message is the answer. */
		error_set(err, res->status == 400 ? ERROR_INPUT : ERROR_POLICY, "%s%s",
			  res->status == 400 ? "" : "rejected: ", message);
		goto out;
	}
	shown = out == OUT_PATCH ? json_incref(patch) : review_patched_object(body, len, patch, err);
	if (shown != NULL)
		rc = print_json(shown, err);
out:
	json_decref(patch);
	json_decref(shown);
	return rc;
}

/* -o pretty: the answer indented, its patch decoded in place (as test/golden's expect.json show it). */
static int print_pretty(const struct review_response *res, struct error *err)
{
	char message[1024];
	json_t *patch = NULL, *doc = NULL, *response;
	json_error_t jerr;
	int rc = -1;

	if (review_answer_read(res->body, res->len, &patch, message, sizeof message, err) != 0)
		goto out;
	if ((doc = json_loadb(res->body, res->len, 0, &jerr)) == NULL) {
		error_set(err, ERROR_INTERNAL, "the answer does not parse: %s", jerr.text);
		goto out;
	}
	response = json_object_get(doc, "response");
	if (json_object_get(response, "patch") != NULL && json_object_set(response, "patch", patch) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	rc = print_json(doc, err);
out:
	json_decref(patch);
	json_decref(doc);
	return rc;
}

/*
 * err (ERROR_INPUT, in the webhook's words: "request body is not valid
 * JSON") said of the file review was given: named, and what review reads.
 */
static void input_error(const char *name, const char *buf, size_t len, struct error *err)
{
	static const char reads[] = "review reads one AdmissionReview, as JSON (for a manifest: "
				    "--wrap, --apply, or audit)";
	char was[ERROR_MSG_MAX];
	json_error_t jerr;
	json_t *doc;
	size_t i;

	for (i = 0; i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'); i++)
		;
	if (i == len) {
		error_set(err, ERROR_INPUT, "%s: empty: %s", name, reads);
		return;
	}
	if ((doc = json_loadb(buf, len, JSON_DECODE_ANY, &jerr)) == NULL) {
		error_set(err, ERROR_INPUT, "%s: not valid JSON: %s (line %d, column %d): %s", name, jerr.text,
			  jerr.line, jerr.column, reads);
		return;
	}
	if (!json_is_object(doc)) {
		error_set(err, ERROR_INPUT, "%s: a JSON %s, not an AdmissionReview: %s", name,
			  json_is_array(doc) ? "array" : "value", reads);
		json_decref(doc);
		return;
	}
	json_decref(doc);
	snprintf(was, sizeof was, "%s", err->msg);
	error_set(err, ERROR_INPUT, "%s: %s", name, was);
}

static int run_review(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	struct review_response res = { 0 };
	struct config *cfg = NULL;
	struct error err = { 0 };
	struct manifest m;
	struct policy_claim_objects claims = { 0 };
	struct policy_claim_lookup lk = { policy_claim_objects_lookup, &claims, NULL };
	/* No claim object in the input: nothing to look up, and the answer says so. */
	static const struct policy_claim_lookup none = { NULL, NULL, POLICY_CLAIMS_NONE_IN_INPUT };
	const char *config_path = NULL, *input = NULL, *name = FILE_STDIN_NAME;
	char *buf = NULL, *wrapped = NULL, kind[64];
	const char *body;
	size_t len = 0, body_len = 0;
	int validate = 0, wrap = 0, apply = 0, c, rc = EXIT_USAGE;
	/* A person reads a terminal: the answer indented, its patch decoded; a pipe gets it as sent. */
	enum output out = isatty(STDOUT_FILENO) ? OUT_PRETTY : OUT_REVIEW;

	memset(&m, 0, sizeof m);
	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case 'c': config_path = p.value; break;
		case OPT_VALIDATE: validate = 1; break;
		case OPT_WRAP: wrap = 1; break;
		case OPT_APPLY: apply = 1; break;
		case 'o':
			if ((c = cli_choice(&p)) < 0)
				return cli_stop(&p);
			out = (enum output)c;
			break;
		case CLI_OPERAND:
			if (input != NULL)
				return cli_usage(cmd, "one input at a time");
			input = p.value;
			break;
		default: return cli_stop(&p);
		}
	}
	if (wrap && apply)
		return cli_usage(cmd, "--wrap and --apply: one or the other");
	if (input != NULL && strcmp(input, "-") != 0)
		name = input;
	else
		input = NULL;

	if ((cfg = cli_load_config(config_path, &err)) == NULL)
		goto fail;
	buf = input ? file_read(input, LIMIT_KUBE_REQUEST_MAX, &len, &err)
	      : file_read_stream(stdin, LIMIT_KUBE_REQUEST_MAX, &len, &err);
	if (buf == NULL) {
		if (input == NULL)
			error_prefix(&err, "%s: ", name);
		goto fail;
	}
	body = buf;
	body_len = len;
	if (wrap || apply) {
		if ((wrapped = wrap_input(name, buf, len, apply, &m, &claims, &body_len, &err)) == NULL)
			goto fail;
		body = wrapped;
	}
	if (review_handle_claims(cfg, body, body_len, validate ? REVIEW_VALIDATE : 0, claims.n > 0 ? &lk : &none,
				 &res, &err) != 0) {
		if (!wrap && !apply && err.kind == ERROR_INPUT && review_sniff(buf, len, kind, sizeof kind))
			error_set(&err, ERROR_INPUT, "%s: this is a %s, not an AdmissionReview: use "
				  "\"gpu-admission audit %s\", or \"gpu-admission review --wrap %s\" to wrap it",
				  name, kind, input ? input : "-", input ? input : "-");
		else if (!wrap && !apply && err.kind == ERROR_INPUT)
			input_error(name, buf, len, &err);
		goto fail;
	}
	if (out == OUT_REVIEW) {
		fwrite(res.body, 1, res.len, stdout);
		fputc('\n', stdout);
	} else if (out == OUT_PRETTY) {
		if (print_pretty(&res, &err) != 0)
			goto fail;
	} else if (print_decoded(out, body, body_len, &res, &err) != 0) {
		goto fail;
	}
	if (cli_flush_stdout(&err) != 0)
		goto fail;
	/* The answer is the finding: a rejection exits 1, a malformed request (400) 2. */
	err.kind = res.status == 200 && res.decision != POLICY_REJECT ? ERROR_NONE
		 : res.status == 400 ? ERROR_INPUT : ERROR_POLICY;
	rc = cli_exit_code(&err);
	goto out;
fail:
	rc = cli_fail(cmd, &err);
out:
	free(buf);
	free(wrapped);
	review_response_free(&res);
	policy_claim_objects_free(&claims);
	manifest_free(&m);
	config_free(cfg);
	return rc;
}

const struct cli_command cmd_review = {
	.name = "review",
	.summary = "answer one AdmissionReview as the webhook would",
	.usage = "[OPTIONS] [REVIEW.json | -]",
	.description =
		"Reads one AdmissionReview (admission.k8s.io/v1 or v1beta1) from REVIEW.json or\n"
		"stdin and prints the answer the webhook would send. Given a manifest instead\n"
		"(a Pod, a Deployment), it says so: use --wrap to review the pod it creates,\n"
		"--apply to review the object as kubectl apply sends it, or audit to review\n"
		"every pod template of a file.",
	.options = review_options,
	.operands = "FILE",
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "allowed (possibly with a patch)" },
		{ EXIT_FINDING, "rejected by the policy" },
		{ EXIT_USAGE, "usage error, unreadable input, a malformed review, an invalid --config" },
		{ 0, NULL },
	},
	.examples =
		"gpu-admission review test/golden/gpu-limit-minimal/request.json\n"
		"gpu-admission review --wrap -o patched pod.yaml\n"
		"gpu-admission review --wrap -o patch deployment.yaml\n"
		"gpu-admission review --apply --validate deployment.yaml",
	.run = run_review,
};
