/*
 * events: a Warning Event on each object whose UPDATE the webhook refuses
 * (serve --refusal-events). A person running kubectl reads a refusal in
 * kubectl's answer; a controller's refused write is read by nobody: Kueue
 * admitting a queued Job PATCHes the Job's template with its flavor's
 * placement, and when gpu-admission refuses that PATCH, Kueue logs the error
 * and retries with backoff, recording nothing on the Job or its Workload
 * (sigs.k8s.io/kueue pkg/controller/jobframework/reconciler.go, startJob).
 * The Event puts gpu-admission's message where a user looks:
 * `kubectl describe job` and, for an object labelled with a Kueue queue,
 * `kubectl describe workload` of the Workload Kueue made for it (found by
 * Kueue's kueue.x-k8s.io/job-uid label).
 *
 * Failure semantics: the review path never waits for the API server. A
 * refusal is queued (EVENTS_QUEUE_MAX; over it dropped and counted) and one
 * thread publishes it. The same message on the same object within
 * EVENTS_REPEAT_S is one Event (a controller's retries), counted as a
 * repeat. A publish that fails is logged and counted, never retried: the
 * refusal itself was already answered.
 */
#ifndef GPU_ADMISSION_EVENTS_H
#define GPU_ADMISSION_EVENTS_H

#include <stddef.h>

#include "base/error.h"

#define EVENTS_REASON "RefusedByGPUAdmission" /* the Events' reason (kubectl get events --field-selector) */
#define EVENTS_COMPONENT "gpu-admission"       /* source.component and reportingComponent */
#define EVENTS_QUEUE_MAX 64       /* refusals waiting to be published; more are dropped */
#define EVENTS_RECENT_MAX 256     /* (object, message) pairs remembered to fold repeats */
#define EVENTS_REPEAT_S 600       /* a repeat within this is not published again */
#define EVENTS_WORKLOADS_MAX 4    /* Workloads of one object an Event goes to */
#define EVENTS_MESSAGE_MAX 1024   /* bytes of an Event's message (events.k8s.io's note limit) */
/* Kueue's labels: the queue a Job is submitted to, and its Workload's pointer to the Job. */
#define EVENTS_KUEUE_QUEUE_LABEL "kueue.x-k8s.io/queue-name"
#define EVENTS_KUEUE_JOB_UID_LABEL "kueue.x-k8s.io/job-uid"

/* The refused object, as an Event's involvedObject names it. */
struct events_object {
	char api_version[128];    /* "batch/v1", "v1" */
	char kind[64];
	char ns[64];
	char name[254];
	char uid[64];
	int queued;               /* it carries EVENTS_KUEUE_QUEUE_LABEL: its Workload gets the Event too */
};

struct events_options {
	const char *kubeconfig;   /* a kubeconfig file; NULL: the in-cluster service account */
	const char *sa_dir;       /* in-cluster: the service account's directory (NULL: KUBE_SA_DIR) */
};

struct events;

/*
 * New: the API configuration loaded (ERROR_CONFIG when it cannot be) and the
 * publishing thread started. An unreachable API server is no error here:
 * each publish fails, logged and counted.
 */
struct events *events_start(const struct events_options *o, struct error *err);

/* Stops the thread (what is still queued is dropped) and frees e. Accepts NULL. */
void events_free(struct events *e);

/*
 * Queues a Warning Event on obj (copied) saying message (borrowed; cut to
 * EVENTS_MESSAGE_MAX). Never blocks on the API server. 1 when queued, 0 when
 * not: a repeat within EVENTS_REPEAT_S, the queue full, or obj unnamed.
 */
int events_refused(struct events *e, const struct events_object *obj, const char *message);

/*
 * Appends the publisher's metrics (Prometheus text) to *text (malloc'd, *len
 * bytes, NUL-terminated; reallocated). 0, or -1 with ERROR_NOMEM (*text left
 * as it was).
 */
int events_metrics(const struct events *e, char **text, size_t *len, struct error *err);

#endif
