/* gpu-admission review: one AdmissionReview in, the response out. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "file.h"
#include "review.h"

#define REVIEW_INPUT_MAX (3 * 1024 * 1024)

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-admission review [--config FILE] [--validate] [REVIEW.json]\n\n"
		"Reads one AdmissionReview (admission.k8s.io/v1 or v1beta1) from REVIEW.json or stdin\n"
		"and prints the response AdmissionReview, as the webhook would answer it.\n\n"
		"  -c, --config FILE   policy file (default: the embedded policy)\n"
		"      --validate      answer as the validating webhook (/validate): never a patch\n"
		"  -h, --help          this help\n\n"
		"Exit: 0 allowed (possibly with a patch), 1 rejected by the policy,\n"
		"      2 usage error or malformed review.\n");
}

int cmd_review(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "validate", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *input = NULL;
	struct review_response res = { 0 };
	struct config *cfg = NULL;
	struct error err = { 0 };
	FILE *in = stdin;
	char *body = NULL;
	size_t len = 0;
	int validate = 0, c, rc = EXIT_USAGE;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'v': validate = 1; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (optind < argc && strcmp(argv[optind], "-") != 0)
		input = argv[optind];

	cfg = cli_load_config(config_path, &err);
	if (cfg == NULL)
		goto fail;
	if (input != NULL && (in = fopen(input, "rb")) == NULL) {
		error_set(&err, ERROR_NOT_FOUND, "%s: cannot open", input);
		goto fail;
	}
	body = file_read_stream(in, REVIEW_INPUT_MAX, &len, &err);
	if (body == NULL)
		goto fail;
	if (review_handle(cfg, body, len, validate, &res, &err) != 0)
		goto fail;
	fwrite(res.body, 1, res.len, stdout);
	fputc('\n', stdout);
	rc = res.status == 200 ? (res.decision == POLICY_REJECT ? EXIT_FINDING : EXIT_OK)
	   : res.status == 403 ? EXIT_FINDING : EXIT_USAGE;
	goto out;
fail:
	cli_fail(err.msg);
out:
	if (in != NULL && in != stdin)
		fclose(in);
	free(body);
	review_response_free(&res);
	config_free(cfg);
	return rc;
}
