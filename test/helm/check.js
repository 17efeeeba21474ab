#!/usr/bin/env node
// Checks one rendering of the chart (a multi-document YAML file).
//
//   node test/helm/check.js CASE RENDERED.yaml [OUTDIR]
//
// Prints one line per check, "ok - ..." or "not ok - ...", for test/helm/helm.sh
// to count. Every object is validated against the Kubernetes OpenAPI schemas
// (kubernetes-models, plus the cert-manager and prometheus-operator models for
// their kinds) and in strict mode: a field the schema does not know is an error,
// as `kubectl apply --validate=strict` would report. Then the chart's contract is
// asserted: exclusions, certificates, hardening, PDB, probes, and that webhook
// paths and ports meet what `gpu-admission serve` listens on.
// With OUTDIR, the policy file and certificates found are written there for the
// shell to check with the real binary and openssl.
"use strict";
const fs = require("fs");
const path = require("path");

const TOOLS = process.env.TOOLS || path.join(__dirname, "../../build/tools");
const req = (m) => require(path.join(TOOLS, "node_modules", m));
const YAML = req("yaml");

let passed = 0;
let failed = 0;
function check(name, cond, detail) {
	if (cond) {
		passed++;
		console.log(`ok - ${name}`);
	} else {
		failed++;
		console.log(`not ok - ${name}${detail ? ": " + detail : ""}`);
	}
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/* ==== OpenAPI validation ==== */

function modelFor(apiVersion, kind) {
	if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
	const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
	let mod;
	if (group === "cert-manager.io") mod = `@kubernetes-models/cert-manager/cert-manager.io/${version}/${kind}`;
	else if (group === "monitoring.coreos.com")
		mod = `@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}/${kind}`;
	else if (group === "") mod = `kubernetes-models/v1/${kind}`;
	else mod = `kubernetes-models/${group}/${version}/${kind}`;
	try {
		return req(mod)[kind];
	} catch (e) {
		return null;
	}
}

function schemaErrors(Model, obj) {
	try {
		new Model(obj).validate();
		return [];
	} catch (e) {
		if (!e.errors) throw e;
		return e.errors;
	}
}

// Strict mode: the Kubernetes schemas allow unknown properties, so each key is
// probed in turn with a value no schema accepts (a Symbol). A key the schema
// knows yields an error at its own path; an unknown key yields none.
const PROBE = Symbol("probe");
function unknownFields(Model, root) {
	const unknown = [];
	function walk(node, ptr) {
		if (Array.isArray(node)) {
			node.forEach((v, i) => walk(v, `${ptr}/${i}`));
			return;
		}
		if (!node || typeof node !== "object") return;
		for (const key of Object.keys(node)) {
			const saved = node[key];
			const at = `${ptr}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
			node[key] = PROBE;
			const errs = schemaErrors(Model, root);
			node[key] = saved;
			if (!errs.some((e) => e.instancePath === at || e.instancePath.startsWith(at + "/"))) {
				unknown.push(at);
				continue; // nothing below an unknown key can be known
			}
			walk(saved, at);
		}
	}
	walk(root, "");
	return unknown;
}

// kubernetes-models has no MutatingAdmissionPolicy (v1beta1 or v1): the shape the
// chart passes through is checked here; the API server validates it in
// test/cluster/scenarios/65-admission-policies.sh.
function mutatingPolicyErrors(obj) {
	const ok = /^admissionregistration\.k8s\.io\/(v1|v1beta1)$/.test(obj.apiVersion) && obj.metadata && obj.metadata.name &&
		obj.spec && (obj.kind === "MutatingAdmissionPolicy" ?
		Array.isArray(obj.spec.mutations) && obj.spec.mutations.length > 0 &&
			obj.spec.mutations.every((m) => m.patchType === "JSONPatch" && m.jsonPatch && m.jsonPatch.expression) :
		typeof obj.spec.policyName === "string");
	return ok ? [] : ["not a MutatingAdmissionPolicy or binding as print-admission-policies prints them"];
}

function validate(obj) {
	if (/^MutatingAdmissionPolicy(Binding)?$/.test(obj.kind)) return mutatingPolicyErrors(obj);
	const Model = modelFor(obj.apiVersion, obj.kind);
	if (!Model) return [`no OpenAPI schema for ${obj.apiVersion} ${obj.kind}`];
	const clone = JSON.parse(JSON.stringify(obj));
	const errs = schemaErrors(Model, clone).map((e) => `${e.instancePath || "/"} ${e.message}`);
	if (errs.length) return errs;
	return unknownFields(Model, clone).map((p) => `${p}: unknown field`);
}

/* ==== the rendering ==== */

function load(file) {
	const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
	const objs = [];
	for (const d of docs) {
		if (d.errors.length) throw new Error(`${file}: ${d.errors[0].message}`);
		const o = d.toJS();
		if (o) objs.push(o);
	}
	return objs;
}

function main() {
	const [caseName, file, outDir] = process.argv.slice(2);
	if (caseName === "--validate") {
		// Validate any file of objects, e.g. the plain manifests with caBundle filled in.
		const objs = load(file);
		check(`${file}: has objects`, objs.length > 0);
		for (const o of objs) {
			const errs = validate(o);
			check(`${file}: ${o.kind}/${o.metadata && o.metadata.name} valid (OpenAPI, strict)`, !errs.length, errs.join("; "));
		}
		return;
	}
	const rendered = load(file);
	// The live watch's objects (watch.enabled) are checked on their own, below.
	const isWatch = (o) => o.metadata && o.metadata.labels &&
		o.metadata.labels["app.kubernetes.io/component"] === "cost-watch";
	const objs = rendered.filter((o) => !isWatch(o));
	const watchObjs = rendered.filter(isWatch);
	const all = (kind) => objs.filter((o) => o.kind === kind);
	const one = (kind) => {
		const l = all(kind);
		return l.length === 1 ? l[0] : null;
	};
	const NS = "gpu-admission";
	const FULL = "gpu-admission";

	// Every object: schema-valid, namespaced ones in the release namespace.
	const names = new Set();
	for (const o of rendered) {
		const id = `${o.kind}/${o.metadata && o.metadata.name}`;
		const errs = validate(o);
		check(`${caseName}: ${id} valid (OpenAPI, strict)`, !errs.length, errs.join("; "));
		check(`${caseName}: ${id} unique`, !names.has(id));
		names.add(id);
	}
	const policyKinds = ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
		"MutatingAdmissionPolicyBinding"];
	const clusterScoped = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Namespace", "ClusterRole",
		"ClusterRoleBinding"].concat(policyKinds);
	const misplaced = rendered.filter((o) => !clusterScoped.includes(o.kind) && o.metadata.namespace !== NS);
	check(`${caseName}: namespaced objects in the release namespace`, !misplaced.length,
		misplaced.map((o) => o.kind).join(","));

	/* ---- the in-process admission policies (inProcessPolicies) ---- */
	const policies = objs.filter((o) => policyKinds.includes(o.kind));
	if (policies.length) {
		// Every policy bound, every binding to a policy of the render.
		const named = new Set(policies.filter((o) => !o.kind.endsWith("Binding")).map((o) => `${o.kind}/${o.metadata.name}`));
		const bound = policies.filter((o) => o.kind.endsWith("Binding")).map((o) => `${o.kind.replace(/Binding$/, "")}/${o.spec.policyName}`);
		check(`${caseName}: every admission policy bound, every binding to one of them`,
			named.size > 0 && [...named].every((n) => bound.includes(n)) && bound.every((n) => named.has(n)),
			`policies ${[...named]}; bindings to ${bound}`);
	}
	if (objs.every((o) => policyKinds.includes(o.kind) || o.kind === "Namespace")) {
		// webhook.enabled=false: the policies-only install, nothing that runs or that a webhook needs.
		check(`${caseName}: policies only: a ValidatingAdmissionPolicy and no Deployment, Service, webhook ` +
			"configuration, certificate, ServiceAccount, RBAC or ConfigMap",
			policies.some((o) => o.kind === "ValidatingAdmissionPolicy"), objs.map((o) => o.kind).join(","));
		if (outDir) fs.writeFileSync(path.join(outDir, "kinds"), objs.map((o) => o.kind).sort().join("\n") + "\n");
		return;
	}

	const dep = one("Deployment");
	const svc = one("Service");
	// The policy's ConfigMap (a Grafana dashboard ConfigMap may come along).
	const policyMaps = all("ConfigMap").filter((o) => o.data && "policy.yaml" in o.data);
	const cm = policyMaps.length === 1 ? policyMaps[0] : null;
	const sa = one("ServiceAccount");
	const mwc = one("MutatingWebhookConfiguration");
	const vwc = one("ValidatingWebhookConfiguration");
	check(`${caseName}: one each of Deployment, Service, ServiceAccount, ConfigMap, webhook configurations`,
		dep && svc && cm && sa && mwc && vwc);
	if (!(dep && svc && cm && sa && mwc && vwc)) return;

	/* ---- Deployment: HA and hardening ---- */
	const pod = dep.spec.template.spec;
	const c = pod.containers[0];
	const sel = dep.spec.selector.matchLabels;
	check(`${caseName}: 2 replicas`, dep.spec.replicas === 2);
	check(`${caseName}: rolling update never lowers capacity`, dep.spec.strategy.rollingUpdate.maxUnavailable === 0);
	check(`${caseName}: selector matches pod labels`,
		Object.entries(sel).every(([k, v]) => dep.spec.template.metadata.labels[k] === v));
	check(`${caseName}: priorityClassName system-cluster-critical`, pod.priorityClassName === "system-cluster-critical");
	check(`${caseName}: runs on linux nodes`, pod.nodeSelector && pod.nodeSelector["kubernetes.io/os"] === "linux");
	check(`${caseName}: does not tolerate the GPU taint`,
		!(pod.tolerations || []).some((t) => t.key === "sku" || (!t.key && t.operator === "Exists")));
	check(`${caseName}: no GPU requested`, !JSON.stringify(c.resources).match(/gpu/i));
	const tsc = pod.topologySpreadConstraints || [];
	for (const key of ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]) {
		const t = tsc.find((x) => x.topologyKey === key);
		check(`${caseName}: topology spread over ${key}`, t && t.maxSkew === 1 && t.labelSelector &&
			eq(t.labelSelector.matchLabels, sel), JSON.stringify(t));
	}
	check(`${caseName}: resources 10m/16Mi requests, 64Mi limit`,
		c.resources.requests.cpu === "10m" && c.resources.requests.memory === "16Mi" &&
		c.resources.limits.memory === "64Mi");
	const psc = pod.securityContext;
	check(`${caseName}: pod runs as 65532, non-root, seccomp RuntimeDefault`,
		psc.runAsNonRoot === true && psc.runAsUser === 65532 && psc.runAsGroup === 65532 &&
		psc.seccompProfile.type === "RuntimeDefault");
	const csc = c.securityContext;
	check(`${caseName}: container hardened (read-only root, no escalation, caps dropped, seccomp)`,
		csc.readOnlyRootFilesystem === true && csc.allowPrivilegeEscalation === false &&
		eq(csc.capabilities.drop, ["ALL"]) && !csc.capabilities.add && csc.runAsNonRoot === true &&
		csc.runAsUser === 65532 && csc.privileged !== true && csc.seccompProfile.type === "RuntimeDefault");
	const lookups = (c.args || []).includes("--claim-lookups");
	/* The watch's publishing writes (templates/watch-publish-rbac.yaml) are its own, checked apart. */
	const webhookRbac = objs.filter((o) => /Role/.test(o.kind) && !/-(watch-publish|refusal-events)$/.test(o.metadata.name));
	/* Refusal Events' writes (templates/rbac.yaml) are theirs too, checked apart. */
	const eventsRbac = objs.filter((o) => /Role/.test(o.kind) && /-refusal-events$/.test(o.metadata.name));
	const refusal = (c.args || []).includes("--refusal-events");
	/* refusalEvents.enabled auto: on exactly when the cluster serves Kueue's Workloads (helm.args). */
	const wantRefusal = { "refusal-events-auto": true, defaults: false, "claim-lookups-auto": false }[caseName];
	if (wantRefusal !== undefined)
		check(`${caseName}: serve --refusal-events ${wantRefusal ? "on" : "off"} (refusalEvents.enabled)`,
			refusal === wantRefusal, (c.args || []).join(" "));
	if (refusal) {
		const role = eventsRbac.find((o) => o.kind === "ClusterRole");
		const binding = eventsRbac.find((o) => o.kind === "ClusterRoleBinding");
		const rules = role ? role.rules : [];
		const rule = (group) => rules.find((r) => eq(r.apiGroups, [group])) || {};
		check(`${caseName}: refusal Events: one ClusterRole (create events, list Kueue's workloads), one binding`,
			eventsRbac.length === 2 && rules.length === 2 && eq(rule("").resources, ["events"]) &&
			eq(rule("").verbs, ["create"]) && eq(rule("kueue.x-k8s.io").resources, ["workloads"]) &&
			eq(rule("kueue.x-k8s.io").verbs, ["list"]) && !rules.some((r) => r.resourceNames), JSON.stringify(rules));
		check(`${caseName}: refusal Events bound to the webhook's ServiceAccount, its token mounted`, binding && role &&
			binding.roleRef.name === role.metadata.name && eq(binding.subjects, [{ kind: "ServiceAccount",
				name: sa.metadata.name, namespace: sa.metadata.namespace }]) &&
			pod.automountServiceAccountToken === true && sa.automountServiceAccountToken === false);
	} else {
		check(`${caseName}: no refusal Events RBAC (refusalEvents off)`, !eventsRbac.length);
	}
	const publishRbac = objs.filter((o) => /Role/.test(o.kind) && /-watch-publish$/.test(o.metadata.name));
	if (caseName === "watch-publish") {
		const role = publishRbac.find((o) => o.kind === "ClusterRole");
		const binding = publishRbac.find((o) => o.kind === "ClusterRoleBinding");
		const rules = role ? role.rules : [];
		const rule = (group) => rules.find((r) => eq(r.apiGroups, [group])) || {};
		check(`${caseName}: one ClusterRole of the publishing writes, one binding`, publishRbac.length === 2 && role && binding);
		check(`${caseName}: policyreports: create, update, patch, delete, list; events: create, get, patch; nothing else`,
			rules.length === 2 && eq(rule("wgpolicyk8s.io").resources, ["policyreports"]) &&
			eq([...(rule("wgpolicyk8s.io").verbs || [])].sort(), ["create", "delete", "list", "patch", "update"]) &&
			eq(rule("").resources, ["events"]) && eq([...(rule("").verbs || [])].sort(), ["create", "get", "patch"]) &&
			!rules.some((r) => r.resourceNames), JSON.stringify(rules));
		check(`${caseName}: bound to the watch's ServiceAccount, not the webhook's`, binding &&
			binding.roleRef.name === role.metadata.name && eq(binding.subjects, [{ kind: "ServiceAccount",
				name: `${FULL}-watch`, namespace: NS }]) && binding.subjects[0].name !== sa.metadata.name);
	}
	if (caseName !== "watch-publish")
		check(`${caseName}: no publishing RBAC (watch.policyReports and watch.events off)`, !publishRbac.length);
	/* The watch publishes what it is granted to write: the flags follow the same two values as the RBAC. */
	const watchDep = watchObjs.find((o) => o.kind === "Deployment");
	if (watchDep) {
		const wargs = watchDep.spec.template.spec.containers[0].args || [];
		const both = caseName === "watch-publish";
		check(`${caseName}: watch --policy-reports and --events exactly when granted`,
			wargs.includes("--policy-reports") === both && wargs.includes("--events") === both, wargs.join(" "));
	}
	/*
	 * claimLookups.enabled auto (the default): on exactly when the cluster serves
	 * resource.k8s.io/v1 (helm.args stands for what helm install learns), off when the
	 * admin says false; an offline render without the kind is a cluster that does not.
	 */
	const wantLookups = { "claim-lookups": true, "claim-lookups-auto": true, "claim-lookups-off": false,
		defaults: false }[caseName];
	if (wantLookups !== undefined)
		check(`${caseName}: serve --claim-lookups ${wantLookups ? "on" : "off"} (claimLookups.enabled)`,
			lookups === wantLookups, (c.args || []).join(" "));
	if (!lookups) {
		if (!refusal)
			check(`${caseName}: no service account token (pod and ServiceAccount)`,
				pod.automountServiceAccountToken === false && sa.automountServiceAccountToken === false &&
				pod.serviceAccountName === sa.metadata.name);
		check(`${caseName}: no claim lookups RBAC objects`, !webhookRbac.length);
	} else {
		/* Claim lookups: the pod's token, and read access to exactly the DRA objects, bound to its ServiceAccount. */
		const roles = webhookRbac.filter((o) => /Role$/.test(o.kind));
		const bindings = webhookRbac.filter((o) => /RoleBinding$/.test(o.kind));
		const role = roles[0];
		const rules = role ? role.rules : [];
		check(`${caseName}: claim lookups mount the token (pod only; ServiceAccount keeps it off)`,
			pod.automountServiceAccountToken === true && sa.automountServiceAccountToken === false &&
			pod.serviceAccountName === sa.metadata.name);
		check(`${caseName}: one ClusterRole, get/list/watch on exactly the DRA claim objects`,
			roles.length === 1 && role.kind === "ClusterRole" && rules.length === 1 &&
			eq(rules[0].apiGroups, ["resource.k8s.io"]) &&
			eq([...rules[0].resources].sort(), ["deviceclasses", "resourceclaims", "resourceclaimtemplates"]) &&
			eq([...rules[0].verbs].sort(), ["get", "list", "watch"]) && !rules[0].resourceNames,
			JSON.stringify(rules));
		check(`${caseName}: one ClusterRoleBinding of that role to the webhook's ServiceAccount`,
			bindings.length === 1 && bindings[0].kind === "ClusterRoleBinding" && role &&
			bindings[0].roleRef.name === role.metadata.name && bindings[0].roleRef.kind === "ClusterRole" &&
			eq(bindings[0].subjects, [{ kind: "ServiceAccount", name: sa.metadata.name,
				namespace: sa.metadata.namespace }]));
	}
	check(`${caseName}: no hostNetwork/hostPath`, !pod.hostNetwork &&
		!(pod.volumes || []).some((v) => v.hostPath));

	/* ---- serve's flags, ports and probes ---- */
	const args = c.args || [];
	const flag = (name) => {
		const a = args.find((x) => x.startsWith(`--${name}=`));
		return a ? a.slice(name.length + 3) : undefined;
	};
	const known = ["addr", "tls-cert", "tls-key", "self-signed", "config", "metrics-addr", "max-body", "threads",
		"max-connections", "max-connections-per-ip", "timeout", "shutdown-grace", "service-name", "log-level",
		"header-timeout", "memory-budget", "policy-key", "claim-lookups", "claim-cache-max-objects",
		"claim-cache-max-object-bytes", "refusal-events"];
	const bad = args.filter((a) => a.startsWith("--") && !known.includes(a.slice(2).split("=")[0]));
	check(`${caseName}: every flag is one serve knows`, !bad.length, bad.join(" "));
	check(`${caseName}: no --self-signed in a cluster`, !args.includes("--self-signed"));
	const addr = flag("addr") || "";
	const listenPort = Number(addr.split(":").pop());
	const https = c.ports.find((p) => p.name === "https");
	check(`${caseName}: --addr port is the https containerPort`, https && https.containerPort === listenPort,
		`${addr} vs ${JSON.stringify(c.ports)}`);
	check(`${caseName}: listens on all pod addresses`, addr.startsWith("0.0.0.0:"));
	const sp = svc.spec.ports.find((p) => p.name === "https");
	check(`${caseName}: Service targets the https port`, sp && sp.targetPort === "https" && sp.port === 443);
	check(`${caseName}: Service selects the pods`, eq(svc.spec.selector, sel));
	check(`${caseName}: --service-name is the Service`, flag("service-name") === svc.metadata.name);
	const grace = Number(flag("shutdown-grace"));
	const preStop = (c.lifecycle && c.lifecycle.preStop && c.lifecycle.preStop.sleep) ? c.lifecycle.preStop.sleep.seconds : 0;
	check(`${caseName}: preStop sleep + --shutdown-grace fit in terminationGracePeriodSeconds`,
		grace > 0 && preStop + grace < pod.terminationGracePeriodSeconds);
	for (const [probe, p] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
		const h = c[probe] && c[probe].httpGet;
		check(`${caseName}: ${probe} GET ${p} over HTTPS on the webhook port`,
			h && h.path === p && h.scheme === "HTTPS" && (h.port === "https" || h.port === listenPort));
	}
	// Mounted files are where the flags point, from the right keys.
	const mountOf = (file) => (c.volumeMounts || []).find((m) => file.startsWith(m.mountPath + "/"));
	const volOf = (m) => m && pod.volumes.find((v) => v.name === m.name);
	for (const f of ["tls-cert", "tls-key", "config"]) {
		const p = flag(f);
		const m = mountOf(p || "");
		const v = volOf(m);
		const key = p && path.basename(p);
		let ok = false;
		if (v && v.secret) ok = !v.secret.items || v.secret.items.some((i) => i.path === key);
		if (v && v.configMap) ok = v.configMap.name === cm.metadata.name && key in cm.data;
		check(`${caseName}: --${f}=${p} is mounted from its Secret/ConfigMap`, ok && m.readOnly === true);
	}
	const tlsVol = pod.volumes.find((v) => v.secret);
	const tlsSecretName = tlsVol && tlsVol.secret.secretName;

	/* ---- webhooks ---- */
	const exempt = ((YAML.parse(cm.data["policy.yaml"]) || {}).exempt || {}).namespaces || [];
	const expectedFailure = {
		defaults: "Fail", "cert-manager": "Fail", "cert-manager-issuer": "Fail", secret: "Fail", "three-pools": "Fail",
		"spot-fallback": "Fail", full: "Fail", dryrun: "Ignore", "failure-ignore": "Ignore", "policy-check-off": "Fail",
		"claim-lookups": "Fail", "policies-beside-webhook": "Fail", "gpu-infra": "Fail", watch: "Fail",
		"watch-publish": "Fail", "watch-off": "Fail", "claim-lookups-auto": "Fail", "claim-lookups-off": "Fail",
		"refusal-events-auto": "Fail",
	}[caseName];
	// One entry per class of object (pkg/render/matchcond.h), with stable names: the mutating webhook for pods; the
	// validating ones for pods, for the built-in workload kinds at v1, and (with policy.workloads) for a rule per
	// custom resource of the policy (the resource: the entry's, else the kind in lower case plus "s").
	const custom = ((YAML.parse(cm.data["policy.yaml"]) || {}).workloads || []).map((e) => ({
		operations: ["CREATE", "UPDATE"], apiGroups: [e.group], apiVersions: e.versions || ["*"],
		resources: [e.resource || e.kind.toLowerCase() + "s"], scope: "*",
	}));
	const podRules = [{ operations: ["CREATE", "UPDATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["pods"], scope: "Namespaced" }];
	const workloadRules = [
		{ operations: ["CREATE", "UPDATE"], apiGroups: ["apps"], apiVersions: ["v1"],
		  resources: ["deployments", "statefulsets", "daemonsets", "replicasets"], scope: "Namespaced" },
		{ operations: ["CREATE", "UPDATE"], apiGroups: ["batch"], apiVersions: ["v1"],
		  resources: ["jobs", "cronjobs"], scope: "Namespaced" },
		{ operations: ["CREATE", "UPDATE"], apiGroups: [""], apiVersions: ["v1"],
		  resources: ["replicationcontrollers", "podtemplates"], scope: "Namespaced" },
	];
	const entries = [
		[mwc, 0, "mutate.gpu-admission.azure.io", "/mutate", podRules, "pods, CREATE and UPDATE (an update can aim a pod at GPU nodes), v1"],
		[vwc, 0, "validate.gpu-admission.azure.io", "/validate", podRules, "pods, CREATE and UPDATE, v1"],
		[vwc, 1, "validate-workloads.gpu-admission.azure.io", "/validate", workloadRules, "the built-in workload kinds at v1"],
	].concat(custom.length ? [[vwc, 2, "validate-custom.gpu-admission.azure.io", "/validate", custom,
		`${custom.length} custom resources`]] : []);
	// The policy ConfigMap's entry comes last, unless webhook.policyCheck is off.
	const policyCheck = caseName !== "policy-check-off";
	const nValidating = (custom.length ? 3 : 2) + (policyCheck ? 1 : 0);
	// policy.gpuInfraNamespaces: a second mutating entry, for the GPU stack's DaemonSets in those namespaces only.
	const infra = (YAML.parse(cm.data["policy.yaml"]) || {}).gpuInfraNamespaces || [];
	const nMutating = infra.length ? 2 : 1;
	check(`${caseName}: Mutating has ${nMutating} webhooks, Validating ${nValidating}`, mwc.webhooks.length === nMutating &&
		vwc.webhooks.length === nValidating, vwc.webhooks.map((w) => w.name).join(", "));
	if (infra.length) {
		const d = mwc.webhooks[1], pod = mwc.webhooks[0];
		check(`${caseName}: mutate-daemonsets: apps/v1 daemonsets, CREATE and UPDATE, to /mutate like the pod entry`,
			d.name === "mutate-daemonsets.gpu-admission.azure.io" &&
			eq(d.rules, [{ operations: ["CREATE", "UPDATE"], apiGroups: ["apps"], apiVersions: ["v1"],
				resources: ["daemonsets"], scope: "Namespaced" }]) &&
			eq(d.clientConfig, pod.clientConfig), JSON.stringify(d.rules));
		check(`${caseName}: mutate-daemonsets: the gpuInfraNamespaces by name, and nothing else`,
			eq(d.namespaceSelector, { matchExpressions: [{ key: "kubernetes.io/metadata.name", operator: "In", values: infra }] }) &&
			!d.objectSelector, JSON.stringify(d.namespaceSelector));
		check(`${caseName}: mutate-daemonsets: failurePolicy Ignore (an outage leaves the warning), no policy matchConditions`,
			d.failurePolicy === "Ignore" && d.matchPolicy === "Equivalent" && d.sideEffects === "None" &&
			eq(d.admissionReviewVersions, ["v1"]) && !d.matchConditions, d.failurePolicy);
	}
	const caBundles = [];
	for (const [cfg, index, name, p, rules, what] of entries) {
		const k = cfg.kind.replace("WebhookConfiguration", "");
		const w = cfg.webhooks[index];
		check(`${caseName}: ${k} webhook ${index} is ${name}`, w && w.name === name, w && w.name);
		if (!w) continue;
		check(`${caseName}: ${name} is a DNS subdomain with a dot`,
			/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(w.name) && w.name.length <= 253);
		check(`${caseName}: ${name} calls ${p} on the Service port`,
			w.clientConfig.service.path === p && w.clientConfig.service.name === svc.metadata.name &&
			w.clientConfig.service.namespace === NS && w.clientConfig.service.port === sp.port &&
			!w.clientConfig.url);
		check(`${caseName}: ${name} rules: ${what}`, eq(w.rules, rules), JSON.stringify(w.rules));
		// What the API server's ValidateRule refuses, beyond the schema's types.
		check(`${caseName}: ${name} rules the API server accepts`, w.rules.every((r) =>
			r.operations.every((o) => ["CREATE", "UPDATE", "DELETE", "CONNECT", "*"].includes(o)) &&
			["Cluster", "Namespaced", "*"].includes(r.scope) && r.apiGroups.length > 0 && r.apiVersions.length > 0 &&
			r.resources.every((x) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\/[a-z]+)?$/.test(x))));
		check(`${caseName}: ${name} admissionReviewVersions [v1], sideEffects None`,
			eq(w.admissionReviewVersions, ["v1"]) && w.sideEffects === "None");
		check(`${caseName}: ${name} timeoutSeconds`, w.timeoutSeconds === (caseName === "full" ? 3 : 5));
		check(`${caseName}: ${name} failurePolicy ${expectedFailure}`, w.failurePolicy === expectedFailure, w.failurePolicy);
		check(`${caseName}: ${name} matchPolicy Equivalent, reinvocationPolicy`, w.matchPolicy === "Equivalent" &&
			(k === "Mutating" ? w.reinvocationPolicy === "IfNeeded" : w.reinvocationPolicy === undefined));
		const me = (w.namespaceSelector && w.namespaceSelector.matchExpressions) || [];
		const notIn = me.find((e) => e.key === "kubernetes.io/metadata.name" && e.operator === "NotIn");
		const excluded = (notIn && notIn.values) || [];
		check(`${caseName}: ${name} excludes kube-system, the release namespace and the exempt ones`,
			["kube-system", NS, ...exempt].every((n) => excluded.includes(n)), JSON.stringify(excluded));
		for (const label of ["control-plane", "kubernetes.azure.com/managedby"]) {
			check(`${caseName}: ${name} excludes namespaces labelled ${label}`,
				me.some((e) => e.key === label && e.operator === "DoesNotExist"));
		}
		const inject = cfg.metadata.annotations && cfg.metadata.annotations["cert-manager.io/inject-ca-from"];
		if (caseName.startsWith("cert-manager")) {
			const cert = all("Certificate").find((x) => `${NS}/${x.metadata.name}` === inject);
			check(`${caseName}: ${name} caBundle injected from the serving Certificate`, cert && !w.clientConfig.caBundle &&
				cert.spec.secretName === tlsSecretName);
		} else {
			check(`${caseName}: ${name} caBundle set`, typeof w.clientConfig.caBundle === "string" &&
				w.clientConfig.caBundle.length > 0 && !inject);
			caBundles.push(w.clientConfig.caBundle);
		}
		// The policy's matchConditions first, each entry its own (test/matchcond/matchcond.sh compares their text
		// with the binary's --for); custom resources get only the UPDATE one (CEL cannot search for templates).
		const conds = (w.matchConditions || []).map((c) => c.name);
		const policyConds = (name === "validate-custom.gpu-admission.azure.io" ? [] : ["gpu-relevant"])
			.concat(["update-changes-what-policy-reads"]);
		if (caseName === "full") {
			check(`${caseName}: ${name} extra exclusion, selectors and matchConditions`, excluded.includes("flux-system") &&
				me.some((e) => e.key === "gpu-admission" && e.operator === "NotIn") &&
				w.objectSelector && w.objectSelector.matchExpressions[0].key === "gpu-admission/skip" &&
				eq(conds, [...policyConds, "not-node-users"]), JSON.stringify(conds));
		} else {
			check(`${caseName}: ${name} no objectSelector unless asked, the policy's matchConditions`, !w.objectSelector &&
				eq(conds, policyConds), JSON.stringify(conds));
		}
	}
	for (const cfg of [mwc, vwc]) {
		const k = cfg.kind.replace("WebhookConfiguration", "");
		check(`${caseName}: ${k} admissions.enforcer/disabled "true"`,
			cfg.metadata.annotations && cfg.metadata.annotations["admissions.enforcer/disabled"] === "true");
	}
	check(`${caseName}: webhook names differ`, new Set(entries.map((e) => e[2])).size === entries.length);
	if (caBundles.length > 0) check(`${caseName}: every webhook trusts the same CA`, caBundles.every((c) => c === caBundles[0]));

	/* ---- the policy ConfigMap's entry: its edits judged at kubectl time ---- */
	const pw = vwc.webhooks.find((x) => x.name === "policy.gpu-admission.azure.io");
	check(`${caseName}: policy entry ${policyCheck ? "present" : "absent (webhook.policyCheck.enabled false)"}`,
		!!pw === policyCheck);
	const policyKey = flag("policy-key");
	check(`${caseName}: --policy-key is the ConfigMap key --config reads`,
		policyKey && policyKey in cm.data && path.basename(flag("config") || "") === policyKey, policyKey);
	if (pw) {
		const pod = vwc.webhooks[0];
		check(`${caseName}: policy entry calls /validate-policy on the Service, trusting the same CA`,
			pw.clientConfig.service.path === "/validate-policy" &&
			eq({ ...pw.clientConfig.service, path: "" }, { ...pod.clientConfig.service, path: "" }) &&
			pw.clientConfig.caBundle === pod.clientConfig.caBundle);
		check(`${caseName}: policy entry: ConfigMaps, CREATE and UPDATE, v1`,
			eq(pw.rules, [{ operations: ["CREATE", "UPDATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"], scope: "Namespaced" }]),
			JSON.stringify(pw.rules));
		// The pod entries leave the release namespace out (the webhook never blocks its own pods):
		// this one must reach it, and nothing else.
		check(`${caseName}: policy entry: the release namespace only, though the pod entries exclude it`,
			eq(pw.namespaceSelector, { matchLabels: { "kubernetes.io/metadata.name": NS } }) &&
			pod.namespaceSelector.matchExpressions.some((e) => e.operator === "NotIn" && e.values.includes(NS)),
			JSON.stringify(pw.namespaceSelector));
		const ol = (pw.objectSelector && pw.objectSelector.matchLabels) || {};
		check(`${caseName}: policy entry selects the policy ConfigMap by label, and only it`,
			eq(ol, { "gpu-admission.azure.io/policy": "true", "app.kubernetes.io/instance": "gpu-admission" }) &&
			!pw.objectSelector.matchExpressions &&
			all("ConfigMap").filter((o) => Object.entries(ol).every(([k, v]) => (o.metadata.labels || {})[k] === v))
				.every((o) => o === cm) && Object.entries(ol).every(([k, v]) => cm.metadata.labels[k] === v),
			JSON.stringify(pw.objectSelector));
		check(`${caseName}: policy entry failurePolicy Ignore (Fail would refuse the fix while no replica is ready)`,
			pw.failurePolicy === "Ignore", pw.failurePolicy);
		check(`${caseName}: policy entry v1 reviews, no side effects, the pods' timeout, Equivalent, no conditions`,
			eq(pw.admissionReviewVersions, ["v1"]) && pw.sideEffects === "None" &&
			pw.timeoutSeconds === pod.timeoutSeconds && pw.matchPolicy === "Equivalent" && !pw.matchConditions &&
			pw.reinvocationPolicy === undefined);
	}

	/* ---- PDB ---- */
	const pdb = one("PodDisruptionBudget");
	check(`${caseName}: PDB minAvailable 1 over the pods`, pdb && pdb.spec.minAvailable === 1 &&
		eq(pdb.spec.selector.matchLabels, sel));

	/* ---- certificates ---- */
	const secrets = all("Secret");
	if (caseName === "defaults" || caseName === "three-pools" || caseName === "spot-fallback" || caseName === "dryrun" ||
		caseName === "failure-ignore" || caseName === "full" || caseName === "policy-check-off" ||
		caseName === "claim-lookups" || caseName === "policies-beside-webhook" || caseName === "gpu-infra" ||
		caseName === "watch" || caseName === "watch-publish" || caseName === "watch-off" ||
		caseName === "claim-lookups-auto" || caseName === "claim-lookups-off" || caseName === "refusal-events-auto") {
		const s = secrets.find((x) => x.metadata.name === tlsSecretName);
		check(`${caseName}: helm mode renders the TLS Secret the pods mount`, s && s.type === "kubernetes.io/tls" &&
			s.data["tls.crt"] && s.data["tls.key"] && s.data["ca.crt"]);
		if (s) {
			check(`${caseName}: caBundle is the Secret's ca.crt`, caBundles[0] === s.data["ca.crt"]);
			const pem = Buffer.from(caBundles[0] || "", "base64").toString();
			check(`${caseName}: caBundle is a PEM certificate`, /^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n?$/.test(pem));
			check(`${caseName}: pods roll when the certificate changes`,
				/^[0-9a-f]{64}$/.test(dep.spec.template.metadata.annotations["checksum/tls"] || ""));
			if (outDir) {
				fs.writeFileSync(path.join(outDir, "ca.crt"), pem);
				for (const f of ["tls.crt", "tls.key"]) fs.writeFileSync(path.join(outDir, f), Buffer.from(s.data[f], "base64"));
			}
		}
	} else {
		check(`${caseName}: no Secret rendered (it comes from elsewhere)`, secrets.length === 0);
	}
	if (caseName === "secret") {
		check(`${caseName}: mounts the named Secret`, tlsSecretName === "my-webhook-tls");
		check(`${caseName}: caBundle is the given one`, caBundles[0] && caBundles[0].startsWith("LS0tLS1CRUdJTiBDRVJU"));
	}
	if (caseName.startsWith("cert-manager")) {
		const certs = all("Certificate");
		const serving = certs.find((x) => x.metadata.name === FULL);
		const dns = serving ? serving.spec.dnsNames : [];
		check(`${caseName}: serving Certificate covers the Service DNS names`,
			[FULL, `${FULL}.${NS}`, `${FULL}.${NS}.svc`, `${FULL}.${NS}.svc.cluster.local`].every((n) => dns.includes(n)));
		check(`${caseName}: serving Certificate writes the mounted Secret`, serving && serving.spec.secretName === tlsSecretName);
		if (caseName === "cert-manager") {
			const issuers = all("Issuer");
			const ca = certs.find((x) => x.spec.isCA);
			check(`${caseName}: self-signed CA chain (Issuer -> CA Certificate -> CA Issuer -> serving)`,
				issuers.some((i) => i.spec.selfSigned) && ca &&
				issuers.some((i) => i.spec.ca && i.spec.ca.secretName === ca.spec.secretName &&
					serving.spec.issuerRef.name === i.metadata.name));
		} else {
			check(`${caseName}: uses the given issuer and makes none`,
				serving && serving.spec.issuerRef.kind === "ClusterIssuer" && serving.spec.issuerRef.name === "corp-ca" &&
				all("Issuer").length === 0 && certs.length === 1);
		}
	}

	/* ---- policy ---- */
	const policy = YAML.parse(cm.data["policy.yaml"]);
	const wantMode = { dryrun: "dryrun" }[caseName] || "enforce";
	check(`${caseName}: policy mode ${wantMode}`, policy.mode === wantMode);
	check(`${caseName}: policy reloaded, not restarted, unless asked`,
		caseName === "full" ? /^[0-9a-f]{64}$/.test(dep.spec.template.metadata.annotations["checksum/policy"] || "")
			: !(dep.spec.template.metadata.annotations || {})["checksum/policy"]);
	if (caseName === "three-pools") {
		check(`${caseName}: three pools t4, a100, h100 by agent pool`,
			eq(policy.pools.map((p) => [p.name, p.nodeSelector["kubernetes.azure.com/agentpool"], p.maxGPUsPerPod]),
				[["t4", "gput4", 1], ["a100", "gpua100", 8], ["h100", "gpuh100", 8]]));
	}
	if (caseName === "spot-fallback")
		check(`${caseName}: placement fallback, spot pool with its toleration and podSelector, in order`,
			policy.placement === "fallback" && eq(policy.pools.map((p) => p.name), ["t4-spot", "t4", "a100"]) &&
			policy.pools[0].tolerations[0].key === "kubernetes.azure.com/scalesetpriority" &&
			policy.pools[0].podSelector.matchLabels["gpu-admission/interruptible"] === "true");

	/* ---- optional objects ---- */
	const np = one("NetworkPolicy");
	const sm = one("ServiceMonitor");
	if (caseName === "claim-lookups") {
		check(`${caseName}: serve's cache flags follow the values`,
			flag("claim-cache-max-objects") === "20000" && flag("claim-cache-max-object-bytes") === "65536");
		check(`${caseName}: NetworkPolicy egress: the API server's ports only, to reach it for the lookups`,
			np && np.spec.policyTypes.includes("Egress") && np.spec.egress.length === 1 &&
			!np.spec.egress[0].to && eq(np.spec.egress[0].ports.map((p) => p.port).sort(), [443, 6443]));
	}
	if (caseName === "full") {
		const mp = c.ports.find((p) => p.name === "metrics");
		check(`${caseName}: --metrics-addr port is the metrics containerPort`,
			mp && flag("metrics-addr") === `0.0.0.0:${mp.containerPort}`);
		check(`${caseName}: Service exposes metrics`, svc.spec.ports.some((p) => p.name === "metrics" && p.targetPort === "metrics"));
		check(`${caseName}: NetworkPolicy: webhook port from anywhere, metrics from monitoring only, no egress`,
			np && eq(np.spec.podSelector.matchLabels, sel) && np.spec.ingress.length === 2 &&
			!np.spec.ingress[0].from && eq(np.spec.ingress[0].ports.map((p) => p.port), ["https"]) &&
			np.spec.ingress[1].from.length === 1 && eq(np.spec.ingress[1].ports.map((p) => p.port), ["metrics"]) &&
			np.spec.policyTypes.includes("Egress") && eq(np.spec.egress, []));
		check(`${caseName}: ServiceMonitor scrapes the metrics port of the Service`,
			sm && sm.spec.endpoints[0].port === "metrics" && eq(sm.spec.selector.matchLabels, sel) &&
			sm.metadata.labels.release === "kube-prometheus-stack");
		check(`${caseName}: image by digest`, c.image === "myregistry.azurecr.io/gpu-admission@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
		check(`${caseName}: extra args passed`, args.join(" ").endsWith("--threads 4"));
		const ns = one("Namespace");
		check(`${caseName}: Namespace object for the release namespace`, ns && ns.metadata.name === NS);
		const dash = all("ConfigMap").find((o) => o.metadata.labels && o.metadata.labels.grafana_dashboard === "1");
		let board = null;
		try {
			board = dash && JSON.parse(dash.data["gpu-admission.json"]);
		} catch (e) {
			board = null;
		}
		check(`${caseName}: Grafana dashboard ConfigMap (grafana_dashboard label, folder, valid JSON)`,
			board && board.uid === "gpu-admission" && board.panels.length > 0 &&
			dash.metadata.annotations.grafana_folder === "Platform");
		const panels = board ? board.panels.map((p) => p.title) : [];
		check(`${caseName}: dashboard shows verdicts by mode and kind, latency, certificate, reloads, in-flight`,
			["Policy verdicts by mode", "Policy verdicts by kind", "Admission latency", "Certificate expires in",
				"Reloads", "In-flight requests"].every((t) => panels.includes(t)), panels.join(", "));
		check(`${caseName}: dashboard shows the report's idle cost, CPU pods by route, Pending by reason, misconfiguration`,
			["Idle GPU cost by pool", "CPU pods on GPU nodes by route and namespace", "Pending GPU pods by reason",
				"Misconfigured GPU nodes by pool"].every((t) => panels.includes(t)), panels.join(", "));
		check(`${caseName}: dashboard shows the watch's health: synced and watching, relists, ages, publishing`,
			["Watch synced and watching by resource", "Watch relists and errors by resource",
				"Watch: seconds since the last event and the last report",
				"Watch publishing: PolicyReports, Events, failed writes"].every((t) => panels.includes(t)), panels.join(", "));
		const rule = one("PrometheusRule");
		const alerts = rule ? rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert)) : [];
		check(`${caseName}: PrometheusRule with the thirteen alerts (the watch's four with watch.enabled), labelled for the Prometheus ruleSelector`,
			rule && rule.metadata.labels.release === "kube-prometheus-stack" &&
			eq(alerts.sort(), ["GpuAdmissionAnsweringErrors", "GpuAdmissionCertificateExpiringSoon",
				"GpuAdmissionCpuPodsOnGpuNodes", "GpuAdmissionGpuPodsUnplaceable", "GpuAdmissionGpuPoolMisconfigured",
				"GpuAdmissionIdleGpuCost", "GpuAdmissionNoReadyReplica", "GpuAdmissionRejectionSpike",
				"GpuAdmissionReloadFailing", "GpuAdmissionWatchNotSynced", "GpuAdmissionWatchNotWatching",
				"GpuAdmissionWatchPublishFailing", "GpuAdmissionWatchRelistsFrequent"]),
			alerts.join(","));
		if (outDir) {
			if (rule) fs.writeFileSync(path.join(outDir, "rules.yaml"), YAML.stringify({ groups: rule.spec.groups }));
			// Every PromQL expression the dashboard and the rules evaluate, one per line.
			const exprs = (board ? board.panels.flatMap((p) => (p.targets || []).map((t) => t.expr)) : [])
				.concat(board ? board.templating.list.map((v) => (v.query && v.query.query) || "").filter(Boolean) : [])
				.concat(rule ? rule.spec.groups.flatMap((g) => g.rules.map((r) => r.expr)) : []);
			fs.writeFileSync(path.join(outDir, "promql.txt"), exprs.map((e) => e.replace(/\s+/g, " ")).join("\n") + "\n");
		}
	} else if (caseName !== "claim-lookups") {
		check(`${caseName}: optional objects off by default`, !np && !sm && !one("Namespace") &&
			!one("PrometheusRule") && all("ConfigMap").length === 1 &&
			!c.ports.some((p) => p.name === "metrics"));
		check(`${caseName}: image from repository and appVersion`,
			/^myacr\.azurecr\.io\/gpu-admission:\d+\.\d+\.\d+/.test(c.image));
	}

	checkWatch(caseName, watchObjs, dep, svc, cm);

	if (outDir) {
		fs.writeFileSync(path.join(outDir, "policy.yaml"), cm.data["policy.yaml"]);
		fs.writeFileSync(path.join(outDir, "args"), args.join("\n") + "\n");
	}
}

/*
 * watch.enabled: one replica of `gpu-admission watch` with the webhook's hardening, its own
 * ServiceAccount, a ClusterRole of exactly get/list/watch on nodes and pods and on
 * resource.k8s.io's resourceslices and resourceclaims (read-only) bound
 * to it, a Service of its metrics port that the webhook's selectors never reach.
 */
function checkWatch(caseName, wobjs, dep, svc, cm) {
	const on = ["watch", "full", "watch-publish"].includes(caseName);
	if (!on) {
		check(`${caseName}: no watch objects unless watch.enabled`, wobjs.length === 0, wobjs.map((o) => o.kind).join(","));
		return;
	}
	const kinds = (k) => wobjs.filter((o) => o.kind === k);
	const [wd, wsa, wrole, wbind, wsvc] = ["Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
		"Service"].map((k) => (kinds(k).length === 1 ? kinds(k)[0] : null));
	check(`${caseName}: watch: one each of Deployment, ServiceAccount, ClusterRole, ClusterRoleBinding, Service`,
		wd && wsa && wrole && wbind && wsvc);
	if (!(wd && wsa && wrole && wbind && wsvc)) return;
	const rules = wrole.rules || [];
	const readOnly = (r, group, resources) => eq(r.apiGroups, [group]) && eq([...r.resources].sort(), resources) &&
		eq([...r.verbs].sort(), ["get", "list", "watch"]) && !r.resourceNames && !r.nonResourceURLs;
	check(`${caseName}: watch: ClusterRole of exactly get/list/watch on nodes, pods, resourceslices, resourceclaims`,
		rules.length === 2 && readOnly(rules[0], "", ["nodes", "pods"]) &&
		readOnly(rules[1], "resource.k8s.io", ["resourceclaims", "resourceslices"]), JSON.stringify(rules));
	check(`${caseName}: watch: no Role or binding but its own`,
		wobjs.filter((o) => /Role/.test(o.kind)).length === 2 && !wobjs.some((o) => o.kind === "Role" || o.kind === "RoleBinding"));
	check(`${caseName}: watch: the ClusterRoleBinding binds that role to the watch's ServiceAccount only`,
		wbind.roleRef.kind === "ClusterRole" && wbind.roleRef.name === wrole.metadata.name &&
		eq(wbind.subjects, [{ kind: "ServiceAccount", name: wsa.metadata.name, namespace: wsa.metadata.namespace }]) &&
		wsa.metadata.name !== dep.spec.template.spec.serviceAccountName);
	const pod = wd.spec.template.spec;
	const c = pod.containers[0];
	check(`${caseName}: watch: one replica, replaced not surged`, wd.spec.replicas === 1 && wd.spec.strategy.type === "Recreate");
	check(`${caseName}: watch: runs gpu-admission watch as its ServiceAccount, token mounted by the pod only`,
		eq(c.command, ["gpu-admission", "watch"]) && pod.serviceAccountName === wsa.metadata.name &&
		pod.automountServiceAccountToken === true && wsa.automountServiceAccountToken === false);
	const wpod = dep.spec.template.spec;
	check(`${caseName}: watch: the webhook's pod and container securityContext`,
		eq(pod.securityContext, wpod.securityContext) && eq(c.securityContext, wpod.containers[0].securityContext) &&
		c.securityContext.readOnlyRootFilesystem === true && c.securityContext.allowPrivilegeEscalation === false);
	check(`${caseName}: watch: no hostNetwork/hostPath, no GPU`, !pod.hostNetwork &&
		!(pod.volumes || []).some((v) => v.hostPath) && !JSON.stringify(c.resources).match(/gpu/i));
	check(`${caseName}: watch: resources sized to the measured memory (64Mi requested, 256Mi limit)`,
		c.resources.requests.memory === "64Mi" && c.resources.limits.memory === "256Mi");
	const known = ["addr", "config", "interval", "max-pods", "log-level", "kubeconfig", "policy-reports", "events",
		"max-results"];
	const args = c.args || [];
	const flag = (n) => (args.find((x) => x.startsWith(`--${n}=`)) || "").slice(n.length + 3);
	check(`${caseName}: watch: every flag is one watch knows`,
		args.every((a) => known.includes(a.slice(2).split("=")[0])), args.join(" "));
	/* helm renders a number from values as a float: 1000000 would be "1e+06", which the watch refuses. */
	check(`${caseName}: watch: numbers are decimal integers`, ["interval", "max-pods"].every((n) => /^[0-9]+$/.test(flag(n))),
		args.join(" "));
	const mp = c.ports.find((p) => p.name === "metrics");
	check(`${caseName}: watch: --addr is the metrics containerPort, probes on it`,
		mp && flag("addr") === `0.0.0.0:${mp.containerPort}` && c.readinessProbe.httpGet.path === "/readyz" &&
		c.readinessProbe.httpGet.port === "metrics" && c.livenessProbe.httpGet.path === "/healthz");
	check(`${caseName}: watch: reads the policy ConfigMap`,
		pod.volumes.some((v) => v.configMap && v.configMap.name === cm.metadata.name) &&
		flag("config").startsWith("/etc/gpu-admission/policy/"));
	if (caseName === "watch")
		check(`${caseName}: watch: --interval follows the values`, flag("interval") === "60");
	const wlabels = wd.spec.template.metadata.labels;
	const selects = (sel) => Object.entries(sel).every(([k, v]) => wlabels[k] === v);
	check(`${caseName}: watch: its Service selects its pods; the webhook's Service and Deployment never do`,
		selects(wsvc.spec.selector) && wsvc.spec.ports[0].targetPort === "metrics" &&
		!selects(svc.spec.selector) && !selects(dep.spec.selector.matchLabels));
	const wsm = kinds("ServiceMonitor");
	const wnp = kinds("NetworkPolicy");
	if (caseName === "full") {
		check(`${caseName}: watch: a ServiceMonitor of its metrics port`, wsm.length === 1 &&
			wsm[0].spec.endpoints[0].port === "metrics" && eq(wsm[0].spec.selector.matchLabels, wd.spec.selector.matchLabels));
		check(`${caseName}: watch: NetworkPolicy: metrics from the listed peers, egress to the API server's ports only`,
			wnp.length === 1 && eq(wnp[0].spec.podSelector.matchLabels, wd.spec.selector.matchLabels) &&
			wnp[0].spec.ingress.length === 1 && wnp[0].spec.ingress[0].from.length === 1 &&
			eq(wnp[0].spec.egress.map((e) => e.ports.map((p) => p.port).sort()), [[443, 6443]]));
	} else {
		check(`${caseName}: watch: no ServiceMonitor or NetworkPolicy unless asked`, !wsm.length && !wnp.length);
	}
}

try {
	main();
} catch (e) {
	failed++;
	console.log(`not ok - check.js: ${e.stack}`);
}
console.log(`check.js: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
