/*
 * names: the text rules the API server applies to names, label keys and
 * values (k8s.io/apimachinery/pkg/util/validation), so that what this tool
 * accepts Kubernetes accepts too, and a typo is an error here rather than a
 * rule that silently never matches.
 *
 * Each function says why its argument breaks the rule, as a phrase that
 * follows "it" ("must be at most 63 characters"), a static string; NULL when
 * it keeps the rule. Pure: no I/O, nothing allocated.
 */
#ifndef GPU_ADMISSION_NAMES_H
#define GPU_ADMISSION_NAMES_H

#include <stddef.h>

#define K8S_NAME_CONFIGMAP_KEY_MAX 253  /* a ConfigMap key: a DNS subdomain's length */

/*
 * s[0..len) as a label value or the name part of a label key
 * (IsValidLabelValue, IsQualifiedName): at most 63 of [A-Za-z0-9-_.],
 * alphanumeric at both ends; empty only when allow_empty.
 */
const char *k8s_name_label(const char *s, size_t len, int allow_empty);
/* A label key: [prefix/]name, the prefix a DNS subdomain. */
const char *k8s_name_label_key(const char *key);
/* A label value (empty is one). */
const char *k8s_name_label_value(const char *s);
/* A namespace glob (* and ?) that can match a namespace, a DNS label. */
const char *k8s_name_namespace_glob(const char *glob);
/* A DNS-1035 label (IsDNS1035Label); upper: upper-case letters count as lower. */
const char *k8s_name_dns1035(const char *s, int upper);
/* An API version (v1, v1beta1). */
const char *k8s_name_api_version(const char *s);
/* A custom resource's API group: a DNS subdomain with a dot. */
const char *k8s_name_crd_group(const char *s);
/*
 * A ConfigMap data key (IsConfigMapKey): 1 to K8S_NAME_CONFIGMAP_KEY_MAX
 * letters, digits, '-', '_' and '.', not "." or "..". NULL key: empty.
 */
const char *k8s_name_configmap_key(const char *key);

#endif
