/*
 * gen_events: a watch event stream of a cluster, for the report model's
 * benchmark (issue 25: 150,000 pods on 3,000 nodes). Reads a List
 * (gen_snapshot's output, or `kubectl get nodes,pods -A -o json`) twice from
 * a file and writes, one compact JSON object a line as the API server's
 * watch does:
 *
 *   1. every item ADDED, in the List's order (what a list + watch starts with);
 *   2. churn, per pod in the List's order, in turn: MODIFIED (the same pod,
 *      now Succeeded), DELETED then ADDED again, MODIFIED (unchanged), and
 *      every tenth node MODIFIED (unchanged);
 *
 *   gen_events snapshot.json > events.jsonl
 *
 * Deterministic: the same List always gives the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "text/jsonstream.h"

static unsigned long written;

static int event(const char *type, json_t *obj)
{
	json_t *e = json_pack("{s:s, s:O}", "type", type, "object", obj);
	char *text = e ? json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	int rc = text != NULL && printf("%s\n", text) >= 0 ? 0 : -1;

	written++;
	free(text);
	json_decref(e);
	return rc;
}

/* Pass 1 writes every item ADDED; pass 2 the churn. */
static int pass(const char *path, int churn)
{
	struct error err = { 0 };
	FILE *f = fopen(path, "r");
	struct jsonstream *s = f ? jsonstream_new(fileno(f), &err) : NULL;
	const char *item;
	size_t len;
	unsigned long long off;
	unsigned long pods = 0, nodes = 0;
	int rc;

	if (s == NULL) {
		fprintf(stderr, "gen_events: %s: cannot read\n", path);
		return -1;
	}
	while ((rc = jsonstream_next(s, &item, &len, &off, &err)) == 1) {
		json_error_t jerr;
		json_t *obj = json_loadb(item, len, 0, &jerr);
		const char *kind = json_string_value(json_object_get(obj, "kind"));
		int node = kind && strcmp(kind, "Node") == 0;

		if (obj == NULL)
			continue;
		if (!churn) {
			rc = event("ADDED", obj);
		} else if (node) {
			rc = nodes++ % 10 == 0 ? event("MODIFIED", obj) : 0;
		} else {
			switch (pods++ % 3) {
			case 0:
				json_object_set_new(json_object_get(obj, "status"), "phase", json_string("Succeeded"));
				rc = event("MODIFIED", obj);
				break;
			case 1:
				rc = event("DELETED", obj) != 0 || event("ADDED", obj) != 0 ? -1 : 0;
				break;
			default:
				rc = event("MODIFIED", obj);
			}
		}
		json_decref(obj);
		if (rc != 0)
			break;
	}
	jsonstream_free(s);
	fclose(f);
	return rc < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	static char buf[1 << 20];

	if (argc != 2) {
		fprintf(stderr, "usage: gen_events SNAPSHOT.json > events.jsonl   (the List is read twice)\n");
		return 2;
	}
	setvbuf(stdout, buf, _IOFBF, sizeof buf);
	if (pass(argv[1], 0) != 0 || pass(argv[1], 1) != 0)
		return 1;
	fprintf(stderr, "gen_events: %lu events\n", written);
	return fflush(stdout) == 0 ? 0 : 1;
}
