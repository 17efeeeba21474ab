/* JSON Pointer escaping, patch building and applying. */
#include "check.h"
#include "base/patch.h"

static void test_escape(void)
{
	char buf[64];

	CHECK_INT(patch_escape("plain", buf, sizeof buf), 5);
	CHECK_STR(buf, "plain");
	CHECK_INT(patch_escape("kubernetes.azure.com/accelerator", buf, sizeof buf), 33);
	CHECK_STR(buf, "kubernetes.azure.com~1accelerator");
	patch_escape("a~b/c", buf, sizeof buf);
	CHECK_STR(buf, "a~0b~1c");
	patch_escape("~1", buf, sizeof buf); /* must not be read back as "/" */
	CHECK_STR(buf, "~01");
	patch_escape("", buf, sizeof buf);
	CHECK_STR(buf, "");
}

static void test_escape_bounds(void)
{
	char buf[4];

	CHECK_INT(patch_escape("abc", buf, sizeof buf), 3);
	CHECK_INT(patch_escape("abcd", buf, sizeof buf), -1);
	CHECK_STR(buf, "");
	CHECK_INT(patch_escape("a/", buf, sizeof buf), 3);
	CHECK_INT(patch_escape("ab/", buf, sizeof buf), -1);
	CHECK_INT(patch_escape("x", buf, 0), -1);
}

static void test_add_and_apply(void)
{
	struct error err = { 0 };
	json_t *patch = json_array();
	json_t *doc = json_loads("{\"spec\":{\"tolerations\":[{\"key\":\"a\"}],\"nodeSelector\":{\"x\":\"1\"}}}", 0, NULL);
	json_t *want = json_loads("{\"spec\":{\"tolerations\":[{\"key\":\"a\"},{\"key\":\"sku\"}],"
				  "\"nodeSelector\":{\"x\":\"1\",\"a/b~c\":\"v\"}}}", 0, NULL);

	CHECK_INT(patch_add(patch, "/spec/tolerations/-", NULL, json_pack("{s:s}", "key", "sku"), &err), 0);
	CHECK_INT(patch_add(patch, "/spec/nodeSelector", "a/b~c", json_string("v"), &err), 0);
	CHECK_STR(json_string_value(json_object_get(json_array_get(patch, 1), "path")),
		  "/spec/nodeSelector/a~1b~0c");
	CHECK_INT(patch_apply(doc, patch, &err), 0);
	CHECK(json_equal(doc, want));
	json_decref(patch);
	json_decref(doc);
	json_decref(want);
}

static void test_add_steals_on_failure(void)
{
	struct error err = { 0 };
	json_t *patch = json_array();
	char base[1100];

	memset(base, 'a', sizeof base - 1);
	base[sizeof base - 1] = '\0';
	/* value is stolen even when the path is too long: nothing leaks (checked under ASan). */
	CHECK_INT(patch_add(patch, base, NULL, json_string("v"), &err), -1);
	CHECK_INT(err.kind, ERROR_INTERNAL);
	CHECK_INT(patch_add(patch, "/x", NULL, NULL, &err), -1);
	CHECK_INT(json_array_size(patch), 0);
	json_decref(patch);
}

static void test_apply_errors(void)
{
	struct error err = { 0 };
	json_t *doc = json_loads("{\"a\":[1,2]}", 0, NULL);
	json_t *p;

	p = json_loads("[{\"op\":\"replace\",\"path\":\"/a\",\"value\":1}]", 0, NULL);
	CHECK_INT(patch_apply(doc, p, &err), -1);
	json_decref(p);
	p = json_loads("[{\"op\":\"remove\",\"path\":\"/b\"}]", 0, NULL);  /* RFC 6902: it must exist */
	CHECK_INT(patch_apply(doc, p, &err), -1);
	json_decref(p);
	p = json_loads("[{\"op\":\"remove\",\"path\":\"/a/-\"}]", 0, NULL);
	CHECK_INT(patch_apply(doc, p, &err), -1);
	json_decref(p);
	p = json_loads("[{\"op\":\"add\",\"path\":\"/missing/x\",\"value\":1}]", 0, NULL);
	CHECK_INT(patch_apply(doc, p, &err), -1);
	json_decref(p);
	p = json_loads("[{\"op\":\"add\",\"path\":\"/a/9\",\"value\":1}]", 0, NULL);
	CHECK_INT(patch_apply(doc, p, &err), -1);
	json_decref(p);
	p = json_loads("[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":1}]", 0, NULL);
	CHECK_INT(patch_apply(doc, p, &err), -1);
	json_decref(p);
	p = json_loads("[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", 0, NULL);
	CHECK_INT(patch_apply(doc, p, &err), -1);
	json_decref(p);
	p = json_loads("[{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0}]", 0, NULL);
	CHECK_INT(patch_apply(doc, p, &err), 0);
	CHECK_INT(json_integer_value(json_array_get(json_object_get(doc, "a"), 0)), 0);
	CHECK_INT(json_array_size(json_object_get(doc, "a")), 3);
	json_decref(p);
	json_decref(doc);
}

/* "remove", as audit --fix applies a rejected template's fix: elements, members, whole lists. */
static void test_remove(void)
{
	struct error err = { 0 };
	json_t *doc = json_loads("{\"spec\":{\"t\":[1,2,3],\"n\":{\"a/b\":1,\"c\":2},\"x\":1}}", 0, NULL);
	json_t *p = json_array(), *want = json_loads("{\"spec\":{\"t\":[1],\"n\":{\"c\":2}}}", 0, NULL);

	CHECK_INT(patch_remove(p, "/spec/t", "2", &err), 0);
	CHECK_INT(patch_remove(p, "/spec/t", "1", &err), 0);
	CHECK_INT(patch_remove(p, "/spec/n", "a/b", &err), 0);  /* escaped: /spec/n/a~1b */
	CHECK_INT(patch_remove(p, "/spec/x", NULL, &err), 0);
	CHECK_STR(json_string_value(json_object_get(json_array_get(p, 2), "path")), "/spec/n/a~1b");
	CHECK_INT(patch_apply(doc, p, &err), 0);
	CHECK(json_equal(doc, want));
	json_decref(p);
	json_decref(doc);
	json_decref(want);
}

static void test_pointer_get(void)
{
	json_t *doc = json_loads("{\"a/b\": {\"m~n\": [10, {\"x\": true}]}, \"\": 7}", 0, NULL);

	CHECK(patch_pointer_get(doc, "") == doc);
	CHECK_INT(json_integer_value(patch_pointer_get(doc, "/a~1b/m~0n/0")), 10);
	CHECK(json_is_true(patch_pointer_get(doc, "/a~1b/m~0n/1/x")));
	CHECK_INT(json_integer_value(patch_pointer_get(doc, "/")), 7); /* the empty key */
	CHECK(patch_pointer_get(doc, "/a/b") == NULL);        /* "/" must be escaped */
	CHECK(patch_pointer_get(doc, "/a~1b/m~0n/2") == NULL); /* past the end */
	CHECK(patch_pointer_get(doc, "/a~1b/m~0n/-") == NULL); /* "-" names nothing yet */
	CHECK(patch_pointer_get(doc, "/a~1b/m~0n/01") == NULL); /* leading zero */
	CHECK(patch_pointer_get(doc, "/a~2b") == NULL);        /* bad escape */
	CHECK(patch_pointer_get(doc, "a~1b") == NULL);         /* no leading "/" */
	CHECK(patch_pointer_get(NULL, "/x") == NULL);
	json_decref(doc);
}

int main(void)
{
	RUN(test_escape);
	RUN(test_escape_bounds);
	RUN(test_add_and_apply);
	RUN(test_add_steals_on_failure);
	RUN(test_apply_errors);
	RUN(test_remove);
	RUN(test_pointer_get);
	return check_done("patch");
}
