/*
 * gen_manifests: writes a manifest stream with N pod templates for the audit
 * benchmark (issue: 10,000 templates audited in under 2 s).
 *
 *   gen_manifests N [yaml|json] > out
 *
 * yaml: a multi-document stream cycling through GPU Deployments, CPU
 * StatefulSets, GPU CronJobs (second container), CPU pods aimed at GPU nodes
 * (rejections), DaemonSets and already-placed GPU Jobs, with comments and
 * realistic container specs. json: the same objects as one kind: List, the
 * shape of `kubectl get ... -o json`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const CONTAINER =
	"        image: registry.example.com/team/app:1.2.%d\n"
	"        ports:\n"
	"        - containerPort: 8080\n"
	"          name: http\n"
	"        env:\n"
	"        - name: LOG_LEVEL\n"
	"          value: info\n"
	"        readinessProbe:\n"
	"          httpGet: {path: /healthz, port: http}\n"
	"          periodSeconds: 10\n";

static void yaml_doc(int i)
{
	printf("---\n# generated object %d\n", i);
	switch (i % 6) {
	case 0:
		printf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: infer-%d\n  namespace: ml-%d\n"
		       "spec:\n  replicas: 2\n  selector:\n    matchLabels: {app: infer-%d}\n  template:\n"
		       "    metadata:\n      labels: {app: infer-%d}\n    spec:\n      containers:\n      - name: model\n",
		       i, i % 17, i, i);
		printf(CONTAINER, i % 10);
		printf("        resources:\n          limits:\n            nvidia.com/gpu: 1\n            memory: 16Gi\n");
		break;
	case 1:
		printf("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db-%d\nspec:\n  serviceName: db\n"
		       "  template:\n    spec:\n      nodeSelector:\n        kubernetes.io/os: linux\n"
		       "      containers:\n      - name: db\n", i);
		printf(CONTAINER, i % 10);
		printf("        resources:\n          requests: {cpu: 500m, memory: 1Gi}\n");
		break;
	case 2:
		printf("apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly-%d\nspec:\n"
		       "  schedule: \"0 3 * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
		       "          restartPolicy: OnFailure\n          containers:\n          - name: prep\n"
		       "            image: busybox\n          - name: train\n            image: cuda:12\n"
		       "            resources:\n              limits:\n                nvidia.com/gpu: \"2\"\n", i);
		break;
	case 3:
		printf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: cpu-on-gpu-%d\nspec:\n  tolerations:\n"
		       "  - key: sku\n    operator: Equal\n    value: gpu\n    effect: NoSchedule\n  containers:\n"
		       "  - name: web\n    image: nginx\n", i);
		break;
	case 4:
		printf("apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent-%d\n  namespace: monitoring\n"
		       "spec:\n  template:\n    spec:\n      tolerations:\n      - operator: Exists\n"
		       "      containers:\n      - name: agent\n        image: fluent-bit\n", i);
		break;
	default:
		printf("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: placed-%d\nspec:\n  template:\n"
		       "    spec:\n      nodeSelector:\n        kubernetes.azure.com/accelerator: nvidia\n"
		       "      tolerations:\n      - {key: sku, operator: Equal, value: gpu, effect: NoSchedule}\n"
		       "      containers:\n      - name: job\n        image: cuda:12\n"
		       "        resources: {limits: {nvidia.com/gpu: 1}}\n", i);
	}
}

static void json_item(int i, int last)
{
	const char *gpu = i % 3 == 0 ? ", \"resources\": {\"limits\": {\"nvidia.com/gpu\": \"1\"}}" : "";

	printf("    {\n        \"apiVersion\": \"apps/v1\",\n        \"kind\": \"Deployment\",\n"
	       "        \"metadata\": {\"name\": \"app-%d\", \"namespace\": \"ns-%d\"},\n"
	       "        \"spec\": {\"template\": {\"metadata\": {\"labels\": {\"app\": \"app-%d\"}},\n"
	       "            \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"img:%d\"%s}]}}}\n    }%s\n",
	       i, i % 13, i, i, gpu, last ? "" : ",");
}

int main(int argc, char **argv)
{
	char *end;
	long n = argc > 1 ? strtol(argv[1], &end, 10) : 0;
	int json = argc > 2 && strcmp(argv[2], "json") == 0;
	long i;

	if (argc < 2 || *end != '\0' || n < 0 || n > 10000000) {
		fprintf(stderr, "usage: gen_manifests N [yaml|json]\n");
		return 2;
	}
	if (json)
		printf("{\n\"apiVersion\": \"v1\",\n\"kind\": \"List\",\n\"items\": [\n");
	for (i = 0; i < n; i++) {
		if (json)
			json_item((int)i, i == n - 1);
		else
			yaml_doc((int)i);
	}
	if (json)
		printf("]\n}\n");
	return 0;
}
