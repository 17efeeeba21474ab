/*
 * limit: the bounds two modules must agree on, each defined once.
 *
 * A limit one module enforces on input and another relies on when it acts
 * (the policy loader and the patch it leads to, the server and the offline
 * review, the policy engine and the cost report) lives here, so the two
 * cannot drift: a pool the loader accepted with 70 nodeSelector entries once
 * got a patch of 64, and the next review added the other 6. Where two
 * module constants of their own must keep an order, a _Static_assert next to
 * the one that relies on it says so. Limits of one module stay in it.
 */
#ifndef GPU_ADMISSION_LIMIT_H
#define GPU_ADMISSION_LIMIT_H

/*
 * kube-apiserver's largest request body (MaxRequestSizeBytes): what the
 * server reads (serve --max-body's default), what `review` reads from a file
 * or stdin, and the largest object the match conditions' cost is judged on.
 */
#define LIMIT_KUBE_REQUEST_MAX (3u * 1024 * 1024)

/*
 * kube-apiserver truncates an answer's warnings past this many characters in
 * total (k8s.io/apiserver/pkg/endpoints/filters/warning.go), and each one past
 * LIMIT_KUBE_WARNING_MAX.
 */
#define LIMIT_KUBE_WARNINGS_TOTAL 4096
#define LIMIT_KUBE_WARNING_MAX 256

/*
 * Characters of one string in a policy (a label key: 253 prefix + '/' + 63
 * name, rounded): the loader refuses longer ones; the patch writer's paths
 * carry a nodeSelector key, escaped (two characters for '~' and '/').
 */
#define LIMIT_POLICY_STRING_MAX 316

/*
 * Entries of one pool's nodeSelector: the policy loader refuses more, and the
 * pinned patch adds at most this many (on the stack). Far above any real pool
 * (one or two labels).
 */
#define LIMIT_POOL_SELECTOR_MAX 64

/*
 * Distinct GPU resource names in one pod: the policy refuses a pod with more,
 * and the cost report counts a pod's GPUs (and a node's) in arrays this long.
 */
#define LIMIT_GPU_KINDS_MAX 16

/*
 * A preferred node affinity term's weight is 1..100
 * (ValidatePreferredSchedulingTerms); placement fallback gives each eligible
 * pool value its own weight, so the pools in a policy (CONFIG_POOLS_MAX) must
 * not outnumber the weights: asserted where the weights are made.
 */
#define LIMIT_PREFERRED_WEIGHT_MAX 100

/*
 * Preferred terms the fallback patch adds to one pod at most. The pool order
 * outweighs the pod's own preferred terms by repeating a pool's term (a term
 * weighs 100 at most), so the count grows with their weight and the number
 * of pools; each term is ~110 bytes of JSON, so 128 keep the patch and the
 * pod far below LIMIT_KUBE_REQUEST_MAX. Beyond it the pool order keeps its
 * plain weights and the pod is warned.
 */
#define LIMIT_PREFERRED_TERMS_ADDED 128

/*
 * A YAML or JSON input read whole by `audit` and `report` (per file): the
 * report takes what audit takes.
 */
#define LIMIT_INPUT_FILE_MAX (256UL * 1024 * 1024)

/*
 * A JSON Pointer to a pod template inside an object: the template search
 * (template.c) makes them, the manifest fixer (manifest_fix.c) follows them.
 */
#define LIMIT_TEMPLATE_POINTER_MAX 4096

/*
 * One watch event line (an object and its envelope) the Kubernetes API
 * client reads (pkg/k8s/kubeclient.c), and so the largest object a watch
 * cache (pkg/k8s/watchcache.c) can keep: the caches' own object limit and
 * serve's --lookup-max-object-bytes are bounded by it, and a LIST page
 * holds KUBE_LIST_PAGE of them. A ResourceClaim with its allocation is a
 * few KiB; etcd's own limit (1.5 MiB) is far above what claims need.
 */
#define LIMIT_KUBE_WATCH_LINE_MAX (256u * 1024)

#endif
