/*
 * kubeclient: a Kubernetes API client over libcurl.
 *
 * What the webhook's claim lookups (and the live waste watch) need and no
 * more: where the API server is and who we are (a kubeconfig, as kubectl
 * reads the subset our kubeconfigs use, or the pod's service account), and
 * three reading verbs: GET one object, LIST a collection page by page (limit
 * and continue), WATCH it from a resourceVersion with bookmarks, reading the
 * newline-delimited JSON event stream a line at a time in bounded memory.
 * The report's publisher (pkg/report/report_publish.h) alone writes: a
 * server-side apply, a create, a delete, each with a bounded body.
 *
 * Every call is bounded: bodies (KUBE_BODY_MAX), one watch event
 * (the caller's line_max, at most LIMIT_KUBE_WATCH_LINE_MAX), connection and
 * request times, and credentials read from files (KUBE_CRED_MAX). A client
 * is used by one thread at a time (it reuses one connection); configs are
 * read-only once loaded and may be shared.
 */
#ifndef GPU_ADMISSION_KUBECLIENT_H
#define GPU_ADMISSION_KUBECLIENT_H

#include <stdatomic.h>
#include <stddef.h>

#include <jansson.h>

#include "base/error.h"
#include "base/limit.h"
#include "text/scan.h"

#define KUBE_SERVER_MAX 512              /* "https://host:port" */
#define KUBE_PATH_MAX 2048               /* an API path with its query (a continue token inside) */
#define KUBE_FILE_PATH_MAX 1024          /* a file a kubeconfig names */
#define KUBE_NAMESPACE_MAX 64            /* a namespace name: a DNS label (63) */
#define KUBE_RV_MAX 128                  /* a resourceVersion (etcd's is a decimal int64) */
#define KUBE_CRED_MAX (256u * 1024)      /* a CA bundle, a certificate, a key or a token */
#define KUBE_KUBECONFIG_MAX (4u * 1024 * 1024) /* kubectl's own files stay far below */
/*
 * A GET's or a LIST page's body, whole in memory while it is parsed.
 * KUBE_LIST_PAGE items of at most LIMIT_KUBE_WATCH_LINE_MAX fit in it.
 */
#define KUBE_LIST_PAGE 25
#define KUBE_BODY_MAX (KUBE_LIST_PAGE * LIMIT_KUBE_WATCH_LINE_MAX + 64u * 1024)
/* A write's body: a PolicyReport of REPORT_PUBLISH_RESULTS_MAX results stays far below; etcd takes 1.5 MiB. */
#define KUBE_WRITE_BODY_MAX (1024u * 1024)
#define KUBE_ERROR_BODY_MAX 1024         /* of a refusal's Status, quoted in the error */
#define KUBE_CONNECT_TIMEOUT_S 10
#define KUBE_REQUEST_TIMEOUT_S 60        /* a GET or a LIST page, whole */
/*
 * A watch's own time limit is the timeoutSeconds it asks for; the
 * connection is given this much more before it counts as dead.
 */
#define KUBE_WATCH_GRACE_S 30
/*
 * Nesting a shaped read (kube_list_shaped(), kube_watch_shaped()) scans
 * within an object; a deeper one is decoded whole by jansson instead.
 */
#define KUBE_OBJECT_DEPTH_MAX 128
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_config {
	char server[KUBE_SERVER_MAX];  /* "https://host:port", no trailing '/' */
	char *ca, *cert, *key;         /* owned PEM texts (the key wiped on free); NULL: none
	                                  (ca NULL: the system's trust store) */
	size_t ca_len, cert_len, key_len;
	char *token;                   /* owned: a bearer token; NULL: none */
	char token_file[KUBE_FILE_PATH_MAX]; /* re-read before each request (rotated tokens); "" none */
	int insecure;                  /* insecure-skip-tls-verify: the server is not verified */
	char ns[KUBE_NAMESPACE_MAX];   /* the context's namespace, or the pod's ("" when unknown) */
};

/*
 * Loads the current context of the kubeconfig text[0..len) (borrowed)
 * into c: its cluster's server, certificate-authority(-data) and
 * insecure-skip-tls-verify; its user's client-certificate(-data),
 * client-key(-data), token and tokenFile; its namespace. Relative file
 * names are relative to dir (the kubeconfig's folder, as kubectl resolves
 * them; NULL: the working directory). Credential plugins (exec,
 * auth-provider) and basic auth are refused (ERROR_CONFIG), as is a
 * context, cluster or user that is missing. name is the file's name for
 * messages. 0, or -1 with err; c must be released with kube_config_free()
 * either way.
 */
int kube_config_parse(struct kube_config *c, const char *name, const char *text, size_t len, const char *dir,
		      struct error *err);

/* As kube_config_parse(), from the file at path (borrowed). */
int kube_config_load(struct kube_config *c, const char *path, struct error *err);

/*
 * The in-cluster configuration client-go's rest.InClusterConfig() builds:
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (an IPv6 host
 * bracketed), sa_dir/ca.crt, the token file sa_dir/token (re-read before
 * each request: the kubelet rotates it) and sa_dir/namespace. sa_dir NULL:
 * KUBE_SA_DIR. ERROR_CONFIG when not in a cluster.
 */
int kube_config_in_cluster(struct kube_config *c, const char *sa_dir, struct error *err);

/*
 * The configuration a command given no other finds, in controller-runtime's
 * order (pkg/client/config GetConfig: "--kubeconfig flag, KUBECONFIG
 * environment variable, in-cluster config if running in cluster,
 * $HOME/.kube/config"), which is client-go's (tools/clientcmd loader.go
 * NewDefaultClientConfigLoadingRules: $KUBECONFIG's files, else
 * ~/.kube/config; client_config.go BuildConfigFromFlags: in-cluster first
 * when no file is named) with $KUBECONFIG before the service account:
 *   1. path, when not NULL (--kubeconfig): that file, which must exist;
 *   2. $KUBECONFIG when set and not empty: the first file of its
 *      colon-separated list that exists (client-go merges them all; this
 *      reads the first one only, and from says so when another exists); none
 *      existing is an error, as the list is then all client-go reads;
 *   3. in a cluster (KUBERNETES_SERVICE_HOST and _PORT set): the service
 *      account of sa_dir (NULL: KUBE_SA_DIR), as kube_config_in_cluster();
 *   4. $HOME/.kube/config when it exists.
 * Else ERROR_CONFIG naming all four. from (cap bytes, may be NULL) = which
 * one was used, for a log line ("$KUBECONFIG /home/u/k.yaml"). 0, or -1
 * with err; c must be released with kube_config_free() either way.
 */
int kube_config_find(struct kube_config *c, const char *path, const char *sa_dir, char *from, size_t cap,
		     struct error *err);

/* Releases what c owns (wiping the key and token) and zeroes it. Accepts NULL. */
void kube_config_free(struct kube_config *c);

/* ==== Lines: the watch stream's framing (pure) ==== */

/*
 * Splits a byte stream into '\n'-terminated lines of at most max bytes,
 * holding at most max bytes. A longer line is skipped to its end and
 * reported once, with line NULL and len its length so far (>= max).
 */
struct kube_lines {
	char *buf;      /* owned */
	size_t len, cap, max;
	size_t skipping; /* inside an over-long line: its bytes so far (0: not) */
};

/* A line (without its '\n'; borrowed for the call). 0 goes on, anything else stops the feed and is returned. */
typedef int (*kube_line_fn)(void *ctx, const char *line, size_t len);

void kube_lines_init(struct kube_lines *l, size_t max);
/* Feeds data[0..n): fn for each complete line. 0, fn's non-zero answer, or -1 with ERROR_NOMEM. */
int kube_lines_feed(struct kube_lines *l, const char *data, size_t n, kube_line_fn fn, void *ctx,
		    struct error *err);
/* Bytes of an unfinished line held (the stream ended inside one when non-zero at its end). */
size_t kube_lines_pending(const struct kube_lines *l);
void kube_lines_free(struct kube_lines *l);

/* ==== Requests ==== */

struct kube_client;

/*
 * New: a client of c (borrowed: must outlive it). stop (borrowed; may be
 * NULL): once non-zero, a request in progress ends within about a second
 * with ERROR_UNAVAILABLE. Call curl_global_init() (kube_global_init()) once
 * before any thread starts.
 */
struct kube_client *kube_client_new(const struct kube_config *c, const atomic_int *stop, struct error *err);
void kube_client_free(struct kube_client *k);

/* libcurl's process-wide set-up: once, before threads. 0 or -1 with err. */
int kube_global_init(struct error *err);

/*
 * GET path (borrowed, starting with '/'): *obj gets the decoded object (new
 * reference). *status gets the HTTP status (0: no answer). A status other
 * than 200 is an error (ERROR_NOT_FOUND for 404, ERROR_UNAVAILABLE for
 * 5xx and transport failures, ERROR_INPUT otherwise) quoting the Status
 * message.
 */
int kube_get(struct kube_client *k, const char *path, json_t **obj, long *status, struct error *err);

/* An item of a LIST (borrowed for the call); 0 goes on, non-zero stops the list (returned). */
typedef int (*kube_item_fn)(void *ctx, json_t *item);

/*
 * LISTs the collection at path (a query such as ?labelSelector=... is kept), KUBE_LIST_PAGE items a page,
 * following metadata.continue; fn for each item. rv[cap] gets the list's
 * resourceVersion (the first page's: the snapshot the pages share). 410 Gone
 * (a continue token expired) comes back as -1 with *status 410; the caller
 * lists again.
 */
int kube_list(struct kube_client *k, const char *path, kube_item_fn fn, void *ctx, char *rv, size_t cap,
	      long *status, struct error *err);

/*
 * As kube_list(), each item decoded with only the members shape (borrowed)
 * keeps (pkg/text/scan.h): one validating pass over a page that builds
 * jansson values for those members alone, where kube_list() builds every
 * value of every item (managedFields included) to be read once and freed.
 * A page the scanner is unsure of (scan_extract() NULL: a number jansson
 * must judge, nesting over KUBE_OBJECT_DEPTH_MAX) is decoded whole by
 * jansson, so fn may see whole items too, never wrong ones. shape NULL:
 * kube_list().
 */
int kube_list_shaped(struct kube_client *k, const char *path, const struct scan_shape *shape, kube_item_fn fn,
		     void *ctx, char *rv, size_t cap, long *status, struct error *err);

/*
 * An event of a WATCH: type ("ADDED", "MODIFIED", "DELETED", "BOOKMARK",
 * "ERROR") and object (borrowed for the call), bytes the event line's
 * length. A line over the limit comes as type NULL, object NULL. 0 goes on,
 * non-zero stops the watch (returned).
 */
typedef int (*kube_event_fn)(void *ctx, const char *type, json_t *object, size_t bytes);

/*
 * WATCHes the collection at path (no query) from resourceVersion rv
 * (borrowed), with allowWatchBookmarks and timeoutSeconds timeout_s: fn for
 * each event, one line of at most line_max bytes at a time. Returns 0 when
 * the server ended the watch (its timeout, a restart: watch again from the
 * last resourceVersion), fn's non-zero answer, or -1 with err.
 */
int kube_watch(struct kube_client *k, const char *path, const char *rv, unsigned timeout_s, size_t line_max,
	       kube_event_fn fn, void *ctx, long *status, struct error *err);

/* As kube_watch(), each event's object decoded as kube_list_shaped() decodes an item (shape NULL: whole). */
int kube_watch_shaped(struct kube_client *k, const char *path, const char *rv, unsigned timeout_s,
		      size_t line_max, const struct scan_shape *shape, kube_event_fn fn, void *ctx, long *status,
		      struct error *err);

/* ==== Writes ==== */

/*
 * out[cap] = path with query (borrowed, already escaped) appended after '?'
 * or '&', as path has a query or not. 0, or -1 when it does not fit.
 */
int kube_write_path(char *out, size_t cap, const char *path, const char *query);

/*
 * Server-side apply: PATCH path (the object's own, ending in its name) with
 * obj (borrowed) as application/apply-patch+yaml, fieldManager manager
 * (borrowed; a plain name) and force (the fields are ours: another manager's
 * edit of them is overwritten, not a conflict). Creates the object when it
 * does not exist. Bodies over KUBE_WRITE_BODY_MAX are refused before
 * sending (ERROR_TOO_LARGE). Errors and *status as kube_get(): a status
 * outside 2xx is an error quoting the Status message.
 */
int kube_apply(struct kube_client *k, const char *path, const char *manager, const json_t *obj, long *status,
	       struct error *err);

/* POST obj (borrowed) to the collection at path; *out (NULL: not wanted) the object created (new reference). */
int kube_create(struct kube_client *k, const char *path, const json_t *obj, json_t **out, long *status,
		struct error *err);

/*
 * JSON merge patch (RFC 7386, application/merge-patch+json): PATCH the
 * object at path with patch (borrowed): the members it names replace the
 * object's, the rest are kept. *out (NULL: not wanted) the object patched
 * (new reference). A missing object is ERROR_NOT_FOUND with *status 404.
 */
int kube_patch(struct kube_client *k, const char *path, const json_t *patch, json_t **out, long *status,
	       struct error *err);

/* DELETE the object at path. 404 is ERROR_NOT_FOUND (callers deleting what may be gone check *status). */
int kube_delete(struct kube_client *k, const char *path, long *status, struct error *err);

#endif
