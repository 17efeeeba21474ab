#!/usr/bin/env python3
# Writes review-deployment-20k.json: the AdmissionReview kube-apiserver sends the validating
# webhook when `kubectl apply` (client-side) creates a production-like Deployment: managedFields
# as kubectl-client-side-apply records them, the kubectl.kubernetes.io/last-applied-configuration
# annotation, a vLLM server with a GPU, a log sidecar and an init container. For make bench.
#   python3 test/bench/gen-deployment-review.py  (writes ./review-deployment-20k.json)
import json
env = [{"name": n, "value": v} for n, v in [
 ("NCCL_DEBUG","WARN"),("NCCL_IB_DISABLE","1"),("NCCL_SOCKET_IFNAME","eth0"),("OMP_NUM_THREADS","8"),
 ("MODEL_NAME","llama-3.1-8b-instruct"),("MODEL_REVISION","2024-09-25"),("HF_HOME","/cache/huggingface"),
 ("TRANSFORMERS_CACHE","/cache/huggingface/transformers"),("MAX_BATCH_SIZE","32"),("MAX_INPUT_LENGTH","4096"),
 ("MAX_TOTAL_TOKENS","8192"),("PORT","8080"),("LOG_LEVEL","info"),("OTEL_EXPORTER_OTLP_ENDPOINT","http://otel-collector.observability.svc:4317"),
 ("OTEL_SERVICE_NAME","llm-inference"),("AZURE_CLIENT_ID","7c1d3e9a-58b2-4f0e-9a61-2d4c8b7e1f30"),("AZURE_TENANT_ID","2f4a6c8e-1b3d-4e5f-8a9b-0c1d2e3f4a5b"),
 ("CUDA_VISIBLE_DEVICES","0"),("PYTORCH_CUDA_ALLOC_CONF","expandable_segments:True"),("VLLM_WORKER_MULTIPROC_METHOD","spawn")]]
env.append({"name":"POD_NAME","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}})
env.append({"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}})
env.append({"name":"HF_TOKEN","valueFrom":{"secretKeyRef":{"name":"hf-token","key":"token"}}})
app = {
 "name":"server","image":"myregistry.azurecr.io/ml/vllm-openai:v0.6.3","imagePullPolicy":"IfNotPresent",
 "command":["python3","-m","vllm.entrypoints.openai.api_server"],
 "args":["--model","/models/llama-3.1-8b-instruct","--tensor-parallel-size","1","--max-model-len","8192","--gpu-memory-utilization","0.92","--port","8080"],
 "ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"metrics","containerPort":9090,"protocol":"TCP"}],
 "env":env,
 "resources":{"limits":{"cpu":"8","memory":"48Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"4","memory":"32Gi","nvidia.com/gpu":"1"}},
 "volumeMounts":[{"name":"models","mountPath":"/models","readOnly":True},{"name":"cache","mountPath":"/cache"},{"name":"dshm","mountPath":"/dev/shm"},{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","readOnly":True}],
 "livenessProbe":{"httpGet":{"path":"/health","port":"http","scheme":"HTTP"},"initialDelaySeconds":120,"timeoutSeconds":5,"periodSeconds":15,"successThreshold":1,"failureThreshold":6},
 "readinessProbe":{"httpGet":{"path":"/v1/models","port":"http","scheme":"HTTP"},"initialDelaySeconds":60,"timeoutSeconds":5,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},
 "startupProbe":{"httpGet":{"path":"/health","port":"http","scheme":"HTTP"},"timeoutSeconds":5,"periodSeconds":10,"successThreshold":1,"failureThreshold":60},
 "securityContext":{"allowPrivilegeEscalation":False,"capabilities":{"drop":["ALL"]},"runAsNonRoot":True,"runAsUser":1000},
 "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}
sidecar = {"name":"log-forwarder","image":"fluent/fluent-bit:3.0.7","imagePullPolicy":"IfNotPresent",
 "args":["--config=/fluent-bit/etc/fluent-bit.conf"],
 "resources":{"limits":{"cpu":"200m","memory":"128Mi"},"requests":{"cpu":"50m","memory":"64Mi"}},
 "volumeMounts":[{"name":"fluent-bit-config","mountPath":"/fluent-bit/etc"},{"name":"varlog","mountPath":"/var/log"}],
 "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}
init = {"name":"model-download","image":"myregistry.azurecr.io/ml/model-fetch:1.4.0","imagePullPolicy":"IfNotPresent",
 "command":["/bin/fetch","--source","azureblob://models/llama-3.1-8b-instruct","--dest","/models/llama-3.1-8b-instruct"],
 "env":[{"name":"AZURE_CLIENT_ID","value":"7c1d3e9a-58b2-4f0e-9a61-2d4c8b7e1f30"}],
 "resources":{"limits":{"cpu":"2","memory":"4Gi"},"requests":{"cpu":"1","memory":"2Gi"}},
 "volumeMounts":[{"name":"models","mountPath":"/models"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}
podspec = {"initContainers":[init],"containers":[app,sidecar],
 "volumes":[{"name":"models","persistentVolumeClaim":{"claimName":"llm-models"}},{"name":"cache","emptyDir":{"sizeLimit":"20Gi"}},
  {"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"8Gi"}},{"name":"fluent-bit-config","configMap":{"name":"fluent-bit-llm","defaultMode":420}},
  {"name":"varlog","emptyDir":{}}],
 "restartPolicy":"Always","terminationGracePeriodSeconds":60,"dnsPolicy":"ClusterFirst","serviceAccountName":"llm-inference","serviceAccount":"llm-inference",
 "securityContext":{"fsGroup":1000,"seccompProfile":{"type":"RuntimeDefault"}},"schedulerName":"default-scheduler",
 "priorityClassName":"inference-high",
 "tolerations":[{"key":"sku","operator":"Equal","value":"gpu","effect":"NoSchedule"}],
 "nodeSelector":{"kubernetes.azure.com/accelerator":"nvidia"},
 "affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"llm-inference"}},"topologyKey":"kubernetes.io/hostname"}}]}},
 "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway","labelSelector":{"matchLabels":{"app":"llm-inference"}}}]}
labels = {"app":"llm-inference","app.kubernetes.io/name":"llm-inference","app.kubernetes.io/instance":"llm-inference-prod","app.kubernetes.io/version":"0.6.3","app.kubernetes.io/component":"server","app.kubernetes.io/part-of":"chat","team":"ml-platform","cost-center":"cc-4711"}
template = {"metadata":{"creationTimestamp":None,"labels":labels,"annotations":{"prometheus.io/scrape":"true","prometheus.io/port":"9090","kubectl.kubernetes.io/default-container":"server"}},"spec":podspec}
applied = {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"labels":labels,"name":"llm-inference","namespace":"ml-serving"},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"llm-inference"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1,"maxUnavailable":0}},"template":template}}
def fields(v):
    # fieldsV1 as kubectl's client-side apply records it: every field a key "f:name", lists of keyed items "k:{...}".
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out["f:" + k] = fields(x) if isinstance(x, (dict, list)) else {}
        return out
    if isinstance(v, list):
        out = {}
        for x in v:
            if isinstance(x, dict) and "name" in x:
                out['k:{"name":"%s"}' % x["name"]] = dict({".": {}}, **fields(x))
            else:
                out['v:"%s"' % x if not isinstance(x, dict) else '.'] = {}
        return out
    return {}
mf = [{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"apps/v1","time":"2024-11-20T09:14:03Z","fieldsType":"FieldsV1",
       "fieldsV1":dict({"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":fields(labels)}},
                       **{"f:spec":fields(applied["spec"])})}]
obj = {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"llm-inference","namespace":"ml-serving",
 "uid":"5e8f2a1c-3b4d-4e6f-9a0b-1c2d3e4f5a6b","generation":1,"creationTimestamp":"2024-11-20T09:14:03Z","labels":labels,
 "annotations":{"kubectl.kubernetes.io/last-applied-configuration":json.dumps(applied,separators=(",",":"))+"\n"},
 "managedFields":mf},"spec":dict(applied["spec"], **{"revisionHistoryLimit":10,"progressDeadlineSeconds":600})}
review = {"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"8d3e1f2a-6b7c-4d8e-9f0a-1b2c3d4e5f60",
 "kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},
 "requestKind":{"group":"apps","version":"v1","kind":"Deployment"},"requestResource":{"group":"apps","version":"v1","resource":"deployments"},
 "name":"llm-inference","namespace":"ml-serving","operation":"CREATE",
 "userInfo":{"username":"alice@contoso.com","uid":"a8b9c0d1-e2f3-4a5b-6c7d-8e9f0a1b2c3d","groups":["ml-platform-admins","system:authenticated"],
   "extra":{"azure.com/oid":["a8b9c0d1-e2f3-4a5b-6c7d-8e9f0a1b2c3d"]}},
 "object":obj,"oldObject":None,"dryRun":False,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply","fieldValidation":"Strict"}}}
s = json.dumps(review,separators=(",",":"))
open("review-deployment-20k.json","w").write(s)
print(len(s))
