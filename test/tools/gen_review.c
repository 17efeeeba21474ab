/*
 * gen_review: writes hostile AdmissionReviews (a GPU pod, uid "gen") for the
 * resilience tests and the benchmark (issue 14).
 *
 *   gen_review collide N     N annotation keys that all collide under the hash
 *                            pkg/text/scan.c used before it was keyed (collide.h)
 *   gen_review ordinary N    N annotation keys of the same length that do not
 *   gen_review empty-terms N a required node affinity of N empty terms: [{}, {}, ...]
 *   gen_review values N      an annotation-free pod whose nodeSelector holds a
 *                            list of N zeros (N + ~20 JSON values in all)
 *   gen_review templates N   a kubeflow.org PyTorchJob (a workload the policy may
 *                            list) holding N pod templates {containers: []}, three
 *                            levels of 1000-character keys deep (JSON Pointers of
 *                            3 KB each)
 *   gen_review templates-update N  the same as an UPDATE, oldObject the same object
 *
 * The review goes to stdout; every form is valid JSON with no duplicate key.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collide.h"

static void head(void)
{
	printf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"gen\","
	       "\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
	       "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
	       "\"namespace\":\"ml\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	       "\"metadata\":{\"name\":\"gen-0\",\"namespace\":\"ml\"");
}

static void containers(void)
{
	printf("\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]");
}

static void annotations(long n, int collide)
{
	uint64_t state = 0;
	unsigned char key[COLLIDE_KEY_LEN];
	long i;

	printf(",\"annotations\":{");
	for (i = 0; i < n; i++) {
		if (collide)
			collide_next(&state, key);
		else
			snprintf((char *)key, sizeof key, "%015ld", i), key[15] = 'k';
		printf("%s\"%.*s\":\"\"", i ? "," : "", COLLIDE_KEY_LEN, (const char *)key);
	}
	printf("}},\"spec\":{");
	containers();
	printf("}}}}\n");
}

/* A PyTorchJob of n templates, as request.object or request.oldObject. */
static void pytorchjob(const char *member, long n)
{
	long i;
	int level;

	printf(",\"%s\":{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
	       "\"metadata\":{\"name\":\"gen\",\"namespace\":\"ml\"},\"spec\":", member);
	for (level = 0; level < 3; level++) {
		printf("{\"");
		for (i = 0; i < 1000; i++)
			putchar('k');
		printf("%d\":", level);
	}
	printf("{");
	for (i = 0; i < n; i++)
		printf("%s\"t%ld\":{\"template\":{\"containers\":[]}}", i ? "," : "", i);
	printf("}}}}}");
}

static void workload(long n, int update)
{
	printf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"gen\","
	       "\"kind\":{\"group\":\"kubeflow.org\",\"version\":\"v1\",\"kind\":\"PyTorchJob\"},"
	       "\"resource\":{\"group\":\"kubeflow.org\",\"version\":\"v1\",\"resource\":\"pytorchjobs\"},"
	       "\"namespace\":\"ml\",\"operation\":\"%s\",\"userInfo\":{\"username\":\"gen\"}",
	       update ? "UPDATE" : "CREATE");
	pytorchjob("object", n);
	if (update)
		pytorchjob("oldObject", n);
	printf("}}\n");
}

int main(int argc, char **argv)
{
	long n, i;

	if (argc != 3 || (n = strtol(argv[2], NULL, 10)) < 0) {
		fprintf(stderr, "usage: gen_review collide|ordinary|empty-terms|values|templates|templates-update N\n");
		return 2;
	}
	if (strncmp(argv[1], "templates", 9) == 0) {
		workload(n, strcmp(argv[1], "templates-update") == 0);
		return 0;
	}
	head();
	if (strcmp(argv[1], "collide") == 0 || strcmp(argv[1], "ordinary") == 0) {
		annotations(n, strcmp(argv[1], "collide") == 0);
	} else if (strcmp(argv[1], "empty-terms") == 0) {
		printf("},\"spec\":{");
		containers();
		printf(",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
		       "{\"nodeSelectorTerms\":[");
		for (i = 0; i < n; i++)
			fputs(i ? ",{}" : "{}", stdout);
		printf("]}}}}}}}\n");
	} else if (strcmp(argv[1], "values") == 0) {
		printf("},\"spec\":{");
		containers();
		printf(",\"nodeSelector\":{\"many\":[");
		for (i = 0; i < n; i++)
			fputs(i ? ",0" : "0", stdout);
		printf("]}}}}}\n");
	} else {
		fprintf(stderr, "gen_review: unknown form %s\n", argv[1]);
		return 2;
	}
	return 0;
}
