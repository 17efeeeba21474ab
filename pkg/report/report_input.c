/*
 * report_input: the snapshot read, item by item, in bounded memory: JSON
 * Lists streamed and skip-scanned down to the members the report reads, YAML
 * a document at a time, watch events unwrapped. Apart from the model
 * (report.c) so that how bytes become items stays one concern, whatever the
 * items then do to the model.
 */
#include "report/report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "text/jsonstream.h"
#include "text/manifest.h"
#include "text/scan.h"

/*
 * What the report reads of an item, and nothing else: the scanner hands only
 * these members to jansson (cmd/gpu-admission/README.md "Cost report" lists them). Pods:
 * placement, requests, owner (what the policy reads, declared with its
 * reads: policy_pod_fields), scheduling gates, phase. Nodes: labels, taints,
 * allocatable.
 */
static const struct scan_shape spec_shape[] = {
	{ "schedulingGates", SCAN_WHOLE, NULL },
	{ "taints", SCAN_WHOLE, NULL },
	{ "driver", SCAN_WHOLE, NULL },   /* ResourceSlice */
	{ "devices", SCAN_WHOLE, NULL },  /* ResourceSlice, ResourceClaim */
	{ NULL, SCAN_ALSO, policy_pod_spec_fields },
};

static const struct scan_shape metadata_shape[] = {
	{ "name", SCAN_WHOLE, NULL },
	{ "generateName", SCAN_WHOLE, NULL },
	{ "resourceVersion", SCAN_WHOLE, NULL },  /* the live watch resumes from it */
	{ NULL, SCAN_ALSO, policy_pod_metadata_fields },
};

static const struct scan_shape status_shape[] = {
	{ "phase", SCAN_WHOLE, NULL },
	{ "allocatable", SCAN_WHOLE, NULL },
	{ "resourceClaimStatuses", SCAN_WHOLE, NULL },  /* Pod: the claims made from its templates */
	{ "allocation", SCAN_WHOLE, NULL },             /* ResourceClaim */
	{ "reservedFor", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape item_shape[] = {
	{ "kind", SCAN_WHOLE, NULL },
	{ "metadata", SCAN_OBJECT, metadata_shape },
	{ "spec", SCAN_OBJECT, spec_shape },
	{ "status", SCAN_OBJECT, status_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

/* A watch event: {"type": "ADDED", "object": {...}}, the object read as an item. */
static const struct scan_shape event_shape[] = {
	{ "type", SCAN_WHOLE, NULL },
	{ "object", SCAN_OBJECT, item_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

json_t *report_event_parse(const char *bytes, size_t len, enum report_event_type *type, json_error_t *jerr)
{
	json_t *root = scan_extract(bytes, len, event_shape, REPORT_ITEM_DEPTH_MAX + 1), *obj;
	const char *t;

	if (root == NULL && (root = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, jerr)) == NULL)
		return NULL;
	t = json_string_value(json_object_get(root, "type"));
	obj = json_object_get(root, "object");
	*type = t == NULL ? REPORT_EVENT_OTHER : strcmp(t, "ADDED") == 0 ? REPORT_EVENT_ADDED :
		strcmp(t, "MODIFIED") == 0 ? REPORT_EVENT_MODIFIED : strcmp(t, "DELETED") == 0 ?
		REPORT_EVENT_DELETED : REPORT_EVENT_OTHER;
	if (!json_is_object(obj)) {
		json_decref(root);
		snprintf(jerr->text, sizeof jerr->text, "a watch event without an object");
		return NULL;
	}
	json_incref(obj);
	json_decref(root);
	return obj;
}

const struct scan_shape *report_item_shape(void)
{
	return item_shape;
}

json_t *report_item_parse(const char *bytes, size_t len, json_error_t *jerr)
{
	json_t *root = scan_extract(bytes, len, item_shape, REPORT_ITEM_DEPTH_MAX);

	return root != NULL ? root : json_loadb(bytes, len, JSON_REJECT_DUPLICATES, jerr);
}

/* ==== Items ==== */

static int workload_item(struct report *r, const char *input, const json_t *root, const char *bytes,
			 size_t len, struct error *err)
{
	char *text = NULL;
	int rc;

	if (bytes == NULL) {  /* YAML input: the item as JSON, which the manifest reader takes too */
		if ((text = json_dumps(root, JSON_COMPACT)) == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		bytes = text;
		len = strlen(text);
	}
	rc = audit_input(&r->audit, input, bytes, len, NULL, NULL, NULL, err);
	free(text);
	return rc;
}

static int take_item(struct report *r, const char *input, const json_t *root, const char *bytes, size_t len,
		     unsigned long long off, struct error *err)
{
	const char *kind = json_string_value(json_object_get(root, "kind"));
	char msg[REPORT_ITEM_MSG_MAX];

	r->items++;
	if (!json_is_object(root) || kind == NULL) {
		snprintf(msg, sizeof msg, "byte %llu: an item that is not an object with a kind", off);
		return report_add_error(r, input, msg, err);
	}
	if (strcmp(kind, "Node") == 0)
		return report_node_item(r, input, root, off, err);
	if (strcmp(kind, "Pod") == 0)
		return report_pod_item(r, input, root, off, err);
	if (strcmp(kind, "ResourceSlice") == 0 || strcmp(kind, "ResourceClaim") == 0)
		return report_dra_item(r, root, err);
	return workload_item(r, input, root, bytes, len, err);
}

static int json_input(struct report *r, const char *input, struct jsonstream *s, struct error *err)
{
	const char *item;
	size_t len;
	unsigned long long off;
	struct error serr = { 0 };
	char msg[REPORT_ITEM_MSG_MAX];
	int rc;

	while ((rc = jsonstream_next(s, &item, &len, &off, &serr)) == 1) {
		json_t *root = scan_extract(item, len, item_shape, REPORT_ITEM_DEPTH_MAX);

		if (root == NULL) {  /* the scanner is unsure: jansson decides, and words the error */
			json_error_t jerr;

			root = json_loadb(item, len, JSON_REJECT_DUPLICATES, &jerr);
			if (root == NULL) {
				snprintf(msg, sizeof msg, "byte %llu: an item that is not valid JSON: %s (at its byte %d)",
					 off, jerr.text, jerr.position);
				if (report_add_error(r, input, msg, err) != 0)
					return -1;
				continue;
			}
		}
		rc = take_item(r, input, root, item, len, off, err);
		json_decref(root);
		if (rc != 0)
			return -1;
	}
	if (rc < 0) {
		if (serr.kind == ERROR_NOMEM) {
			*err = serr;
			return -1;
		}
		return report_add_error(r, input, serr.msg, err);
	}
	return 0;
}

static int yaml_input(struct report *r, const char *input, struct jsonstream *s, struct error *err)
{
	struct manifest m;
	struct manifest_doc doc;
	const struct manifest_doc *d = &doc;
	struct error serr = { 0 };
	char msg[REPORT_ITEM_MSG_MAX];
	size_t len, j;
	char *buf = jsonstream_slurp(s, LIMIT_INPUT_FILE_MAX, &len, &serr);
	int rc = -1, more;

	memset(&doc, 0, sizeof doc);
	if (buf == NULL) {
		if (serr.kind == ERROR_NOMEM) {
			*err = serr;
			return -1;
		}
		return report_add_error(r, input, serr.msg, err);
	}
	/* One document's values at a time, however many the stream holds. */
	manifest_open(buf, len, &m);
	for (;;) {
		const json_t *items;

		if ((more = manifest_next(&m, &doc, err)) < 0)
			goto out;
		if (more == 0)
			break;
		if (d->failed) {
			snprintf(msg, sizeof msg, "line %lu: not valid YAML: %s", d->error_line, d->error);
			if (report_add_error(r, input, msg, err) != 0)
				goto out;
			continue;
		}
		if (d->root == NULL && d->null_root) {
			snprintf(msg, sizeof msg, "line %lu: a document that is null, not an object with a kind",
				 d->content_line);
			if (report_add_error(r, input, msg, err) != 0)
				goto out;
			continue;
		}
		if (d->root == NULL)
			continue;
		items = json_object_get(d->root, "items");
		if (!json_is_array(items)) {
			if (take_item(r, input, d->root, NULL, 0, 0, err) != 0)
				goto out;
			continue;
		}
		for (j = 0; j < json_array_size(items); j++)
			if (take_item(r, input, json_array_get(items, j), NULL, 0, 0, err) != 0)
				goto out;
	}
	rc = 0;
out:
	manifest_doc_free(&doc);
	free(buf);
	return rc;
}

int report_input(struct report *r, const char *name, int fd, struct error *err)
{
	struct error perr = { 0 };
	struct jsonstream *s = jsonstream_new(fd, err);
	int c, rc;

	if (s == NULL)
		return -1;
	c = jsonstream_peek(s, &perr);
	if (c == '{')
		rc = json_input(r, name, s, err);
	else if (c < 0 && perr.kind != ERROR_NONE)
		rc = perr.kind == ERROR_NOMEM ? (*err = perr, -1) : report_add_error(r, name, perr.msg, err);
	else if (c < 0)
		rc = report_add_error(r, name, "empty input: expected kubectl get -o json (or -o yaml) output", err);
	else
		rc = yaml_input(r, name, s, err);
	jsonstream_free(s);
	return rc;
}

int report_input_path(struct report *r, const char *path, struct error *err)
{
	char msg[REPORT_ITEM_MSG_MAX];
	struct stat st;
	int fd, rc;

	if (strcmp(path, "-") == 0)
		return report_input(r, FILE_STDIN_NAME, STDIN_FILENO, err);
	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		snprintf(msg, sizeof msg, "cannot open: %s", strerror(errno));
		return report_add_error(r, path, msg, err);
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		return report_add_error(r, path, "a directory: give the files kubectl wrote "
				 "(kubectl get nodes,pods -A -o json > FILE)", err);
	}
	rc = report_input(r, path, fd, err);
	close(fd);
	return rc;
}

int report_take_item(struct report *r, const char *input, const json_t *root, struct error *err)
{
	return take_item(r, input, root, NULL, 0, 0, err);
}
