/*
 * review_int: what the files of the review module share. Private to
 * pkg/webhook/review*.c.
 *
 *   review.c         an AdmissionReview in: decoded, judged (pods, workloads)
 *   review_write.c   the answer out: the JSON writer, jansson as the reference
 *   review_policy.c  POST /validate-policy: an edit of the policy ConfigMap
 */
#ifndef GPU_ADMISSION_REVIEW_INT_H
#define GPU_ADMISSION_REVIEW_INT_H

#include <stddef.h>

#include <jansson.h>

#include "base/error.h"
#include "policy/policy.h"
#include "text/scan.h"
#include "webhook/review.h"

/* What kind of object a review carries, and how it is judged. */
enum review_object {
	REVIEW_OTHER = 0,  /* admitted untouched */
	REVIEW_POD,        /* kind Pod, resource pods, no subresource: the policy */
	REVIEW_WORKLOAD,   /* a built-in workload kind (apps/v1 Deployment, ...): its templates */
	REVIEW_CUSTOM      /* a custom resource the policy lists under workloads: its templates */
};

struct review_request {
	const char *api_version;  /* borrowed from the parsed body */
	const char *uid;
	const json_t *object;
	const json_t *old_object; /* UPDATE: the object as stored; NULL when absent */
	const char *ns;
	const char *username;     /* request.userInfo.username; "" when absent */
	const char *group, *kind; /* request.kind */
	const char *version;      /* request.kind.version; NULL when absent */
	enum policy_operation operation;
	enum review_object what;
};


/*
 * The members decode() reads (review.c), which /validate-policy's shape
 * copies with the ConfigMap where the pod was: sized, so it can say it has
 * room for them.
 */
#define REVIEW_REQUEST_SHAPE_N 10
#define REVIEW_ENVELOPE_SHAPE_N 4
extern const struct scan_shape review_request_shape[REVIEW_REQUEST_SHAPE_N];
extern const struct scan_shape review_envelope_shape[REVIEW_ENVELOPE_SHAPE_N];

/* What review_open() reads: everything borrowed, for the call only. */
struct review_open_options {
	const struct config *cfg;       /* its workloads say which custom resources are judged;
	                                   NULL: none */
	const char *body;               /* the request body, len bytes */
	size_t len;
	const struct scan_shape *shape; /* what the fast path keeps */
	unsigned flags;                 /* REVIEW_* */
};

/*
 * What every review starts with: o->body parsed, the uid read, the
 * envelope decoded into rq (borrowing from *root: new, which the caller
 * releases, whatever the result). 1 when rq is ready; 0 when the answer is
 * made instead, into res (*rc: whether encoding it worked); -1 when no
 * answer can carry a uid (err).
 */
int review_open(const struct review_open_options *o, json_t **root, struct review_request *rq,
		struct review_response *res, int *rc, struct error *err);

/*
 * Builds the response AdmissionReview into res (body: new, see
 * review_response_free()). kind ERROR_NONE answers with pr (NULL: a plain
 * allow); any other kind refuses with message. Everything passed is borrowed.
 */
int review_encode(const char *api_version, const char *uid, enum error_kind kind, const char *message,
		  const struct policy_result *pr, unsigned flags, struct review_response *res,
		  struct error *err);

/* Copies src (NULL: "") into dst[cap], cut to fit. */
void review_copy_id(char *dst, size_t cap, const char *src);

#endif
