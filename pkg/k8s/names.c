#include "k8s/names.h"

#include <string.h>

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*
 * Why s (len bytes) is not a label value or the name part of a label key
 * (validation.IsValidLabelValue, IsQualifiedName: at most 63 characters of
 * [A-Za-z0-9-_.], beginning and ending alphanumeric), or NULL.
 */
const char *k8s_name_label(const char *s, size_t len, int allow_empty)
{
	size_t i;

	if (len == 0)
		return allow_empty ? NULL : "must not be empty";
	if (len > 63)
		return "must be at most 63 characters";
	for (i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return "may hold only letters, digits, '-', '_' and '.'";
	if (!is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return "must begin and end with a letter or digit";
	return NULL;
}

/* Why key is not a label key ([prefix/]name, prefix a DNS subdomain), or NULL. */
const char *k8s_name_label_key(const char *key)
{
	const char *slash = strchr(key, '/');
	size_t i;

	if (slash == NULL)
		return k8s_name_label(key, strlen(key), 0);
	if (slash == key || slash - key > 253)
		return "must have a prefix of 1 to 253 characters before '/'";
	for (i = 0; key + i < slash; i++)
		if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9') || key[i] == '-' ||
		      key[i] == '.'))
			return "must have a prefix of lower-case letters, digits, '-' and '.'";
	if (!is_alnum(key[0]) || !is_alnum(slash[-1]))
		return "must have a prefix that begins and ends with a letter or digit";
	return k8s_name_label(slash + 1, strlen(slash + 1), 0);
}

/* Why s is not a label value (empty is one), or NULL. */
const char *k8s_name_label_value(const char *s)
{
	return k8s_name_label(s, strlen(s), 1);
}

/*
 * Why a namespace glob can never match: a namespace name is a DNS label
 * (lower-case letters, digits and '-', at most 63), so a glob with any other
 * character, or longer, is a typo the policy would silently ignore.
 */
const char *k8s_name_namespace_glob(const char *glob)
{
	size_t j;

	for (j = 0; glob[j] != '\0'; j++)
		if (!((glob[j] >= 'a' && glob[j] <= 'z') || (glob[j] >= '0' && glob[j] <= '9') || glob[j] == '-' ||
		      glob[j] == '*' || glob[j] == '?'))
			break;
	if (glob[j] != '\0' || j > 63)
		return "can never match a namespace (lower-case letters, digits and '-', with * and ?)";
	return NULL;
}

/*
 * Why s is not a DNS-1035 label (validation.IsDNS1035Label: at most 63
 * lower-case letters, digits and '-', starting with a letter, ending with a
 * letter or digit), or NULL. upper: upper-case letters count as lower (a
 * CRD's kind must be one once lowered).
 */
const char *k8s_name_dns1035(const char *s, int upper)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 63)
		return "must be 1 to 63 characters";
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (upper && s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return upper ? "may hold only letters, digits and '-'" : "may hold only lower-case letters, digits and '-'";
	if (!((s[0] >= 'a' && s[0] <= 'z') || (upper && s[0] >= 'A' && s[0] <= 'Z')))
		return "must start with a letter";
	if (s[n - 1] == '-')
		return "must end with a letter or digit";
	return NULL;
}

/* Why s is not an API version (v1, v1beta1), or NULL. */
const char *k8s_name_api_version(const char *s)
{
	return k8s_name_dns1035(s, 0);
}

/*
 * Why s is not a custom resource's API group, or NULL: a DNS subdomain with
 * a dot, as the API server requires of a CRD's spec.group
 * (apiextensions validation: "should be a domain with at least one dot").
 * The built-in groups (apps, batch, the core group) have none.
 */
const char *k8s_name_crd_group(const char *s)
{
	size_t i, n = strlen(s);

	if (n > 253)
		return "must be at most 253 characters";
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.'))
			return "may hold only lower-case letters, digits, '-' and '.'";
	if (strchr(s, '.') == NULL)
		return "has no dot: list custom resources only (the built-in workload kinds of apps, batch and "
		       "the core group are always judged)";
	for (i = 0; i < n; i++)
		if ((s[i] == '.' || s[i] == '-') && (i == 0 || i + 1 == n || s[i - 1] == '.' || s[i + 1] == '.'))
			return "must be dot-separated labels, each beginning and ending with a letter or digit";
	return NULL;
}

_Static_assert(K8S_NAME_CONFIGMAP_KEY_MAX == 253, "the message below names it");

const char *k8s_name_configmap_key(const char *key)
{
	size_t i, n = key != NULL ? strlen(key) : 0;

	if (n == 0 || n > K8S_NAME_CONFIGMAP_KEY_MAX)
		return "must have 1 to 253 characters";
	if (strcmp(key, ".") == 0 || strcmp(key, "..") == 0)
		return "must not be \".\" or \"..\"";
	for (i = 0; i < n; i++)
		if (!is_alnum(key[i]) && key[i] != '-' && key[i] != '_' && key[i] != '.')
			return "may hold only letters, digits, '-', '_' and '.'";
	return NULL;
}
