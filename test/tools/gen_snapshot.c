/*
 * gen_snapshot: writes a deterministic `kubectl get nodes,pods -A -o json`
 * of a large AKS cluster, for the cost report's benchmark (issue: 5,000
 * nodes and 150,000 pods, a 1.5-2 GB List, read in at most 256 MB RSS at
 * 100 MB/s or more).
 *
 *   gen_snapshot NODES PODS > snapshot.json
 *
 * The layout is kubectl's (4-space indentation, keys sorted, no
 * managedFields); pods look like real controller-made pods (owner, labels,
 * two containers with env, probes, mounts, a projected token volume, status
 * with conditions and container states), about 12 KB each. A fifth of the
 * nodes are GPU nodes in four AKS pools (spot T4, T4, A100, H100, with their
 * labels, taints and device-plugin allocatable) for test/bench/report-policy.yaml;
 * the pods mix every case the report counts: DaemonSet pods everywhere, GPU
 * pods, CPU pods leaked onto GPU nodes, Pending GPU pods, terminated pods.
 * The same arguments always give the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long long rng = 88172645463325252ULL;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

struct pool {
	const char *name, *agentpool, *vm, *vmss, *gpus, *cpu, *mem;
	int spot;
};

static const struct pool pools[] = {
	{ "t4-spot", "gput4spot", "Standard_NC4as_T4_v3", "16180339", "1", "3860m", "22916272Ki", 1 },
	{ "t4", "gput4", "Standard_NC4as_T4_v3", "14142135", "1", "3860m", "22916272Ki", 0 },
	{ "a100", "gpua100", "Standard_ND96asr_v4", "17320508", "8", "95750m", "879452860Ki", 0 },
	{ "h100", "gpuh100", "Standard_ND96isr_H100_v5", "22360679", "8", "95750m", "1843309256Ki", 0 },
	{ "cpu", "cpu", "Standard_D16ds_v5", "27182818", NULL, "15740m", "58215600Ki", 0 },
};

/* Node i: a fifth are GPU nodes, spread over the four GPU pools; the rest CPU. */
static const struct pool *pool_of(int i)
{
	return i % 5 == 0 ? &pools[(i / 5) % 4] : &pools[4];
}

static void node_name(char *buf, size_t cap, int i)
{
	const struct pool *p = pool_of(i);

	snprintf(buf, cap, "aks-%s-%s-vmss%06x", p->agentpool, p->vmss, i);
}

static void node(int i, int last)
{
	const struct pool *p = pool_of(i);
	char name[96];
	int zone = i % 3 + 1;

	node_name(name, sizeof name, i);
	printf("        {\n"
	       "            \"apiVersion\": \"v1\",\n"
	       "            \"kind\": \"Node\",\n"
	       "            \"metadata\": {\n"
	       "                \"annotations\": {\n"
	       "                    \"csi.volume.kubernetes.io/nodeid\": \"{\\\"disk.csi.azure.com\\\":\\\"%s\\\",\\\"file.csi.azure.com\\\":\\\"%s\\\"}\",\n"
	       "                    \"node.alpha.kubernetes.io/ttl\": \"0\",\n"
	       "                    \"volumes.kubernetes.io/controller-managed-attach-detach\": \"true\"\n"
	       "                },\n"
	       "                \"creationTimestamp\": \"2024-11-02T07:%02d:%02dZ\",\n"
	       "                \"labels\": {\n", name, name, i % 60, i * 7 % 60);
	if (p->gpus != NULL)
		printf("                    \"accelerator\": \"nvidia\",\n");
	printf("                    \"agentpool\": \"%s\",\n"
	       "                    \"beta.kubernetes.io/arch\": \"amd64\",\n"
	       "                    \"beta.kubernetes.io/instance-type\": \"%s\",\n"
	       "                    \"beta.kubernetes.io/os\": \"linux\",\n"
	       "                    \"failure-domain.beta.kubernetes.io/region\": \"eastus2\",\n"
	       "                    \"failure-domain.beta.kubernetes.io/zone\": \"eastus2-%d\",\n",
	       p->agentpool, p->vm, zone);
	if (p->gpus != NULL)
		printf("                    \"kubernetes.azure.com/accelerator\": \"nvidia\",\n");
	printf("                    \"kubernetes.azure.com/agentpool\": \"%s\",\n"
	       "                    \"kubernetes.azure.com/cluster\": \"MC_rg-ml-prod_aks-ml-prod_eastus2\",\n"
	       "                    \"kubernetes.azure.com/consolidated-additional-properties\": \"5f2c1a7e-0b4d-4c3e-9f8a-%012x\",\n"
	       "                    \"kubernetes.azure.com/kubelet-identity-client-id\": \"0d9c8b7a-6e5f-4a3b-2c1d-0e9f8a7b6c5d\",\n"
	       "                    \"kubernetes.azure.com/mode\": \"user\",\n"
	       "                    \"kubernetes.azure.com/node-image-version\": \"AKSUbuntu-2204gen2containerd-202410.15.0\",\n"
	       "                    \"kubernetes.azure.com/nodepool-type\": \"VirtualMachineScaleSets\",\n"
	       "                    \"kubernetes.azure.com/os-sku\": \"Ubuntu\",\n"
	       "                    \"kubernetes.azure.com/role\": \"agent\",\n", p->agentpool, i);
	if (p->spot)
		printf("                    \"kubernetes.azure.com/scalesetpriority\": \"spot\",\n");
	printf("                    \"kubernetes.azure.com/storageprofile\": \"managed\",\n"
	       "                    \"kubernetes.azure.com/storagetier\": \"Premium_LRS\",\n"
	       "                    \"kubernetes.io/arch\": \"amd64\",\n"
	       "                    \"kubernetes.io/hostname\": \"%s\",\n"
	       "                    \"kubernetes.io/os\": \"linux\",\n"
	       "                    \"kubernetes.io/role\": \"agent\",\n"
	       "                    \"node-role.kubernetes.io/agent\": \"\",\n"
	       "                    \"node.kubernetes.io/instance-type\": \"%s\",\n"
	       "                    \"storageprofile\": \"managed\",\n"
	       "                    \"storagetier\": \"Premium_LRS\",\n"
	       "                    \"topology.disk.csi.azure.com/zone\": \"eastus2-%d\",\n"
	       "                    \"topology.kubernetes.io/region\": \"eastus2\",\n"
	       "                    \"topology.kubernetes.io/zone\": \"eastus2-%d\"\n"
	       "                },\n"
	       "                \"name\": \"%s\",\n"
	       "                \"resourceVersion\": \"%d\",\n"
	       "                \"uid\": \"7b1e3c5d-%04x-4f6a-8b9c-%012x\"\n"
	       "            },\n"
	       "            \"spec\": {\n"
	       "                \"podCIDR\": \"10.%d.%d.0/24\",\n"
	       "                \"podCIDRs\": [\n"
	       "                    \"10.%d.%d.0/24\"\n"
	       "                ],\n"
	       "                \"providerID\": \"azure:///subscriptions/4f1e6a2b-8c3d-4e5f-9a0b-1c2d3e4f5a6b/resourceGroups/mc_rg-ml-prod_aks-ml-prod_eastus2/providers/Microsoft.Compute/virtualMachineScaleSets/aks-%s-%s-vmss/virtualMachines/%d\"",
	       name, p->vm, zone, zone, name, 48211000 + i * 37, i & 0xffff, i,
	       100 + i / 256, i % 256, 100 + i / 256, i % 256, p->agentpool, p->vmss, i);
	if (p->gpus != NULL) {
		printf(",\n                \"taints\": [\n");
		if (p->spot)
			printf("                    {\n"
			       "                        \"effect\": \"NoSchedule\",\n"
			       "                        \"key\": \"kubernetes.azure.com/scalesetpriority\",\n"
			       "                        \"value\": \"spot\"\n"
			       "                    },\n");
		printf("                    {\n"
		       "                        \"effect\": \"NoSchedule\",\n"
		       "                        \"key\": \"sku\",\n"
		       "                        \"value\": \"gpu\"\n"
		       "                    }\n"
		       "                ]");
	}
	printf("\n            },\n"
	       "            \"status\": {\n"
	       "                \"addresses\": [\n"
	       "                    {\n"
	       "                        \"address\": \"10.224.%d.%d\",\n"
	       "                        \"type\": \"InternalIP\"\n"
	       "                    },\n"
	       "                    {\n"
	       "                        \"address\": \"%s\",\n"
	       "                        \"type\": \"Hostname\"\n"
	       "                    }\n"
	       "                ],\n"
	       "                \"allocatable\": {\n"
	       "                    \"cpu\": \"%s\",\n"
	       "                    \"ephemeral-storage\": \"119703055367\",\n"
	       "                    \"hugepages-1Gi\": \"0\",\n"
	       "                    \"hugepages-2Mi\": \"0\",\n"
	       "                    \"memory\": \"%s\",\n", i / 256, i % 256, name, p->cpu, p->mem);
	if (p->gpus != NULL)
		printf("                    \"nvidia.com/gpu\": \"%s\",\n", p->gpus);
	printf("                    \"pods\": \"110\"\n"
	       "                },\n"
	       "                \"conditions\": [\n"
	       "                    {\n"
	       "                        \"lastHeartbeatTime\": \"2024-11-20T09:41:12Z\",\n"
	       "                        \"lastTransitionTime\": \"2024-11-02T07:21:02Z\",\n"
	       "                        \"message\": \"kubelet is posting ready status\",\n"
	       "                        \"reason\": \"KubeletReady\",\n"
	       "                        \"status\": \"True\",\n"
	       "                        \"type\": \"Ready\"\n"
	       "                    }\n"
	       "                ],\n"
	       "                \"nodeInfo\": {\n"
	       "                    \"architecture\": \"amd64\",\n"
	       "                    \"containerRuntimeVersion\": \"containerd://1.7.22-1\",\n"
	       "                    \"kernelVersion\": \"5.15.0-1073-azure\",\n"
	       "                    \"kubeProxyVersion\": \"v1.30.5\",\n"
	       "                    \"kubeletVersion\": \"v1.30.5\",\n"
	       "                    \"operatingSystem\": \"linux\",\n"
	       "                    \"osImage\": \"Ubuntu 22.04.5 LTS\"\n"
	       "                }\n"
	       "            }\n"
	       "        }%s\n", last ? "" : ",");
}

/* What a pod is: how the report will see it. */
enum kind { DS_PROXY, DS_PLUGIN, GPU_POD, LEAKED, PENDING_GPU, TERMINATED, CPU_POD };

static void container(const char *name, const char *image, const char *gpu, int env, int last)
{
	int k;

	printf("                    {\n"
	       "                        \"env\": [\n");
	for (k = 0; k < env; k++)
		printf("                            {\n"
		       "                                \"name\": \"APP_SETTING_%02d\",\n"
		       "                                \"value\": \"https://config.contoso.internal/apps/%s/settings/%02d?region=eastus2\"\n"
		       "                            },\n", k, name, k);
	printf("                            {\n"
	       "                                \"name\": \"POD_NAME\",\n"
	       "                                \"valueFrom\": {\n"
	       "                                    \"fieldRef\": {\n"
	       "                                        \"apiVersion\": \"v1\",\n"
	       "                                        \"fieldPath\": \"metadata.name\"\n"
	       "                                    }\n"
	       "                                }\n"
	       "                            }\n"
	       "                        ],\n"
	       "                        \"image\": \"%s\",\n"
	       "                        \"imagePullPolicy\": \"IfNotPresent\",\n"
	       "                        \"livenessProbe\": {\n"
	       "                            \"failureThreshold\": 3,\n"
	       "                            \"httpGet\": {\n"
	       "                                \"path\": \"/healthz\",\n"
	       "                                \"port\": 8080,\n"
	       "                                \"scheme\": \"HTTP\"\n"
	       "                            },\n"
	       "                            \"periodSeconds\": 10,\n"
	       "                            \"successThreshold\": 1,\n"
	       "                            \"timeoutSeconds\": 1\n"
	       "                        },\n"
	       "                        \"name\": \"%s\",\n"
	       "                        \"ports\": [\n"
	       "                            {\n"
	       "                                \"containerPort\": 8080,\n"
	       "                                \"name\": \"http\",\n"
	       "                                \"protocol\": \"TCP\"\n"
	       "                            }\n"
	       "                        ],\n"
	       "                        \"resources\": {\n", image, name);
	if (gpu != NULL)
		printf("                            \"limits\": {\n"
		       "                                \"memory\": \"16Gi\",\n"
		       "                                \"nvidia.com/gpu\": \"%s\"\n"
		       "                            },\n", gpu);
	printf("                            \"requests\": {\n"
	       "                                \"cpu\": \"250m\",\n"
	       "                                \"memory\": \"%s\"%s\n", gpu ? "16Gi" : "256Mi", gpu ? "," : "");
	if (gpu != NULL)
		printf("                                \"nvidia.com/gpu\": \"%s\"\n", gpu);
	printf("                            }\n"
	       "                        },\n"
	       "                        \"terminationMessagePath\": \"/dev/termination-log\",\n"
	       "                        \"terminationMessagePolicy\": \"File\",\n"
	       "                        \"volumeMounts\": [\n"
	       "                            {\n"
	       "                                \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount\",\n"
	       "                                \"name\": \"kube-api-access-x7k2p\",\n"
	       "                                \"readOnly\": true\n"
	       "                            }\n"
	       "                        ]\n"
	       "                    }%s\n", last ? "" : ",");
}

static void pod(int i, enum kind kind, int node, int last)
{
	static const char *const ns[] = { "shop", "payments", "search", "ml", "research", "data", "web", "batch" };
	const char *n = ns[i % 8], *owner_kind = kind == DS_PROXY || kind == DS_PLUGIN ? "DaemonSet" : "ReplicaSet";
	/* GPU pods ask what their node's pool offers: one T4, or one or eight A100/H100. */
	int big = pool_of(node)->gpus != NULL && pool_of(node)->gpus[0] == '8' && i % 3 == 0;
	const char *gpu = kind == GPU_POD || kind == PENDING_GPU || (kind == TERMINATED && i % 2) ? (big ? "8" : "1")
			  : NULL;
	const char *app = kind == DS_PROXY ? "kube-proxy" : kind == DS_PLUGIN ? "nvidia-device-plugin-daemonset"
			  : gpu ? "inference" : kind == LEAKED ? "log-shipper" : "api";
	const char *phase = kind == PENDING_GPU ? "Pending" : kind == TERMINATED ? "Succeeded" : "Running";
	char nodename[96];

	if (kind == DS_PROXY || kind == DS_PLUGIN)
		n = "kube-system";
	node_name(nodename, sizeof nodename, node);
	printf("        {\n"
	       "            \"apiVersion\": \"v1\",\n"
	       "            \"kind\": \"Pod\",\n"
	       "            \"metadata\": {\n"
	       "                \"annotations\": {\n"
	       "                    \"checksum/config\": \"%08x%08x%08x%08x%08x%08x%08x%08x\",\n"
	       "                    \"prometheus.io/port\": \"8080\",\n"
	       "                    \"prometheus.io/scrape\": \"true\"\n"
	       "                },\n"
	       "                \"creationTimestamp\": \"2024-11-19T%02d:%02d:%02dZ\",\n"
	       "                \"generateName\": \"%s-%x-\",\n"
	       "                \"labels\": {\n"
	       "                    \"app\": \"%s\",\n"
	       "                    \"app.kubernetes.io/part-of\": \"%s\",\n"
	       "                    \"pod-template-hash\": \"%x\"\n"
	       "                },\n"
	       "                \"name\": \"%s-%x-%05x\",\n"
	       "                \"namespace\": \"%s\",\n"
	       "                \"ownerReferences\": [\n"
	       "                    {\n"
	       "                        \"apiVersion\": \"apps/v1\",\n"
	       "                        \"blockOwnerDeletion\": true,\n"
	       "                        \"controller\": true,\n"
	       "                        \"kind\": \"%s\",\n"
	       "                        \"name\": \"%s%s\",\n"
	       "                        \"uid\": \"a1b2c3d4-%04x-4e5f-8a9b-%012x\"\n"
	       "                    }\n"
	       "                ],\n"
	       "                \"resourceVersion\": \"%d\",\n"
	       "                \"uid\": \"c0ffee00-%04x-4b5c-9d8e-%012x\"\n"
	       "            },\n"
	       "            \"spec\": {\n"
	       "                \"containers\": [\n",
	       rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u),
	       i / 3600 % 24, i / 60 % 60, i % 60, app, i % 4096, app, n, i % 4096, app, i % 4096, i, n,
	       owner_kind, app, owner_kind[0] == 'D' ? "" : "-rs", i & 0xffff, i,
	       48300000 + i, i & 0xffff, i);
	container(app, gpu ? "acrmlprod.azurecr.io/inference:3.2.1" : "acrmlprod.azurecr.io/api:2024.11.18", gpu, 10, 0);
	container("istio-proxy", "mcr.microsoft.com/oss/istio/proxyv2:1.22.5-distroless", NULL, 6, 1);
	printf("                ],\n"
	       "                \"dnsPolicy\": \"ClusterFirst\",\n"
	       "                \"enableServiceLinks\": true,\n");
	if (kind != PENDING_GPU)
		printf("                \"nodeName\": \"%s\",\n", nodename);
	if (gpu != NULL && kind != PENDING_GPU)
		printf("                \"nodeSelector\": {\n"
		       "                    \"kubernetes.azure.com/agentpool\": \"%s\"\n"
		       "                },\n", pool_of(node)->agentpool);
	printf("                \"preemptionPolicy\": \"PreemptLowerPriority\",\n"
	       "                \"priority\": 0,\n"
	       "                \"restartPolicy\": \"Always\",\n"
	       "                \"schedulerName\": \"default-scheduler\",\n"
	       "                \"securityContext\": {},\n"
	       "                \"serviceAccount\": \"default\",\n"
	       "                \"serviceAccountName\": \"default\",\n"
	       "                \"terminationGracePeriodSeconds\": 30,\n"
	       "                \"tolerations\": [\n");
	if (kind == DS_PROXY)
		printf("                    {\n"
		       "                        \"operator\": \"Exists\"\n"
		       "                    },\n");
	else if (gpu != NULL || kind == DS_PLUGIN || kind == LEAKED)
		printf("                    {\n"
		       "                        \"effect\": \"NoSchedule\",\n"
		       "                        \"key\": \"sku\",\n"
		       "                        \"operator\": \"%s\"%s\n"
		       "                    },\n", kind == LEAKED ? "Exists" : "Equal",
		       kind == LEAKED ? "" : ",\n                        \"value\": \"gpu\"");
	if ((kind == DS_PLUGIN || gpu != NULL) && pool_of(node)->spot)
		printf("                    {\n"
		       "                        \"effect\": \"NoSchedule\",\n"
		       "                        \"key\": \"kubernetes.azure.com/scalesetpriority\",\n"
		       "                        \"operator\": \"Exists\"\n"
		       "                    },\n");
	printf("                    {\n"
	       "                        \"effect\": \"NoExecute\",\n"
	       "                        \"key\": \"node.kubernetes.io/not-ready\",\n"
	       "                        \"operator\": \"Exists\",\n"
	       "                        \"tolerationSeconds\": 300\n"
	       "                    }\n"
	       "                ],\n"
	       "                \"volumes\": [\n"
	       "                    {\n"
	       "                        \"name\": \"kube-api-access-x7k2p\",\n"
	       "                        \"projected\": {\n"
	       "                            \"defaultMode\": 420,\n"
	       "                            \"sources\": [\n"
	       "                                {\n"
	       "                                    \"serviceAccountToken\": {\n"
	       "                                        \"expirationSeconds\": 3607,\n"
	       "                                        \"path\": \"token\"\n"
	       "                                    }\n"
	       "                                },\n"
	       "                                {\n"
	       "                                    \"configMap\": {\n"
	       "                                        \"items\": [\n"
	       "                                            {\n"
	       "                                                \"key\": \"ca.crt\",\n"
	       "                                                \"path\": \"ca.crt\"\n"
	       "                                            }\n"
	       "                                        ],\n"
	       "                                        \"name\": \"kube-root-ca.crt\"\n"
	       "                                    }\n"
	       "                                }\n"
	       "                            ]\n"
	       "                        }\n"
	       "                    }\n"
	       "                ]\n"
	       "            },\n"
	       "            \"status\": {\n"
	       "                \"conditions\": [\n"
	       "                    {\n"
	       "                        \"lastProbeTime\": null,\n"
	       "                        \"lastTransitionTime\": \"2024-11-19T22:10:01Z\",\n"
	       "                        \"status\": \"%s\",\n"
	       "                        \"type\": \"PodScheduled\"\n"
	       "                    }\n"
	       "                ],\n", kind == PENDING_GPU ? "False" : "True");
	if (kind != PENDING_GPU)
		printf("                \"containerStatuses\": [\n"
		       "                    {\n"
		       "                        \"containerID\": \"containerd://%08x%08x%08x%08x%08x%08x%08x%08x\",\n"
		       "                        \"image\": \"acrmlprod.azurecr.io/%s\",\n"
		       "                        \"lastState\": {},\n"
		       "                        \"name\": \"%s\",\n"
		       "                        \"ready\": true,\n"
		       "                        \"restartCount\": 0,\n"
		       "                        \"started\": true,\n"
		       "                        \"state\": {\n"
		       "                            \"running\": {\n"
		       "                                \"startedAt\": \"2024-11-19T22:10:04Z\"\n"
		       "                            }\n"
		       "                        }\n"
		       "                    }\n"
		       "                ],\n"
		       "                \"hostIP\": \"10.224.%d.%d\",\n"
		       "                \"podIP\": \"10.%d.%d.%d\",\n"
		       "                \"startTime\": \"2024-11-19T22:10:01Z\",\n",
		       rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), rnd(~0u), app, app,
		       node / 256, node % 256, 100 + node / 256, node % 256, i % 250 + 2);
	printf("                \"phase\": \"%s\",\n"
	       "                \"qosClass\": \"Burstable\"\n"
	       "            }\n"
	       "        }%s\n", phase, last ? "" : ",");
}

int main(int argc, char **argv)
{
	int nodes, pods, i, p = 0, gpu_nodes;
	static char buf[1 << 20];

	if (argc != 3 || (nodes = atoi(argv[1])) < 5 || (pods = atoi(argv[2])) < nodes * 2) {
		fprintf(stderr, "usage: gen_snapshot NODES PODS   (NODES >= 5, PODS >= 2 * NODES)\n");
		return 2;
	}
	setvbuf(stdout, buf, _IOFBF, sizeof buf);
	gpu_nodes = (nodes + 4) / 5;
	printf("{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n");
	for (i = 0; i < nodes; i++)
		node(i, 0);
	/* A kube-proxy on every node, a device plugin on every GPU node, then a mix. */
	for (i = 0; i < nodes; i++, p++)
		pod(p, DS_PROXY, i, p + 1 == pods);
	for (i = 0; i < nodes; i += 5, p++)
		pod(p, DS_PLUGIN, i, p + 1 == pods);
	for (; p < pods; p++) {
		unsigned r = rnd(1000);
		int gpu_node = (int)rnd((unsigned)gpu_nodes) * 5, cpu_node = (int)rnd((unsigned)nodes);

		if (cpu_node % 5 == 0)
			cpu_node = (cpu_node + 1) % nodes;
		if (r < 20)
			pod(p, GPU_POD, gpu_node, p + 1 == pods);
		else if (r < 22)
			pod(p, LEAKED, gpu_node, p + 1 == pods);
		else if (r < 25)
			pod(p, PENDING_GPU, 0, p + 1 == pods);
		else if (r < 60)
			pod(p, TERMINATED, r % 2 ? gpu_node : cpu_node, p + 1 == pods);
		else
			pod(p, CPU_POD, cpu_node, p + 1 == pods);
	}
	printf("    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n");
	return fflush(stdout) == 0 ? 0 : 1;
}
