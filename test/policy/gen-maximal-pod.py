#!/usr/bin/env python3
# Writes maximal-pod.json: a v1 Pod with every field of the Kubernetes OpenAPI
# schema present (PodSpec, ObjectMeta, Container and all they reach), one item
# per list and one entry per map, for test/unit/test_policy_fields.c.
#   python3 test/policy/gen-maximal-pod.py ../shared/k8s-schemas/schemas.json.xz 1.33 > test/policy/maximal-pod.json
import json, lzma, sys

schemas = json.loads(lzma.decompress(open(sys.argv[1], "rb").read()))
defs = schemas["k8s"][sys.argv[2]]["definitions"]
LEAF = {  # types with a string form, as the API server stores them
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "1",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": 1,
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "2024-01-01T00:00:00Z",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "2024-01-01T00:00:00.000000Z",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {"f:metadata": {}},
}

def value(schema, path):
    ref = schema.get("$ref")
    if ref:
        name = ref.split("/")[-1]
        if name in LEAF:
            return LEAF[name]
        if path.count(name) > 1:  # a recursive definition: once is enough
            return {}
        return value(defs[name], path + [name])
    t = schema.get("type")
    if t == "object" or "properties" in schema:
        if "properties" in schema:
            return {k: value(v, path + [k]) for k, v in sorted(schema["properties"].items())}
        if "additionalProperties" in schema:
            return {"x": value(schema["additionalProperties"], path + ["x"])}
        return {}
    if t == "array":
        return [value(schema["items"], path + ["[]"])]
    if t == "integer":
        return 1
    if t == "number":
        return 1
    if t == "boolean":
        return True
    return "x"

pod = value({"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}, [])
pod["apiVersion"], pod["kind"] = "v1", "Pod"
pod.pop("status", None)
json.dump(pod, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
