#!/usr/bin/env node
// The matchConditions are a superset of what the webhook acts on, for every webhook entry.
//
//   node test/matchcond/superset.js BIN GOLDEN_DIR CORPUS_DIR [--corpus-policy FILE]... [--break FROM=>TO]
//
// Evaluates the conditions `BIN print-match-conditions --config POLICY --for ENTRY -o json`
// prints, with a real CEL implementation (@bufbuild/cel, which passes the CEL
// conformance suite), on
//  - every golden case (test/golden/<case>/request.json, answered per its
//    expect*.json, under its config.yaml): a pod under the pod conditions, a
//    built-in workload answered on /validate under the workload entry's, a
//    custom resource the case's policy lists under the custom entry's;
//  - every pod template audit finds in CORPUS_DIR, as the Pod its controller
//    would create (review --wrap's pod), answered online by `BIN review`, under
//    the embedded policy and each --corpus-policy;
//  - every workload document of CORPUS_DIR (a built-in kind, or a custom
//    resource the policy lists), answered by `BIN review --validate`, as a
//    CREATE and as UPDATEs: one whose stored object had plain CPU templates
//    in place of its own (each template changed, the webhook judges them
//    all), one that gives every template a toleration of every taint (a CPU
//    template newly aimed at GPU nodes is denied), one that changes only an
//    annotation (no template changed), and where the object has
//    spec.replicas, a scale,
// with the variables bound as kube-apiserver binds them
// (k8s.io/apiserver/pkg/admission/plugin/cel/filter.go, ForInput): `object`
// and `oldObject` the objects as JSON values (null when absent), `request` the
// AdmissionRequest without them. A request is sent when every condition is
// true (webhook/matchconditions/matcher.go). One line per request:
// "not ok" when the webhook would mutate, warn or reject it and a condition is
// false, or when a condition fails to evaluate (under failurePolicy Fail an
// evaluation error rejects the request). Requests outside every entry's rules
// (charts/gpu-admission/templates/_helpers.tpl: CREATE and UPDATE of pods on
// both webhooks; of the built-in workload kinds at v1, and of the policy's
// custom resources, on /validate only) never reach the conditions, and bodies
// the webhook refuses as malformed (400: a member of the wrong JSON type) are
// not objects the API server can send (it binds objects decoded into typed Go
// structs): both are counted, not judged.
//
// Then, per entry, the share of CPU-only pods, and of workloads whose every
// template is CPU-only, that the conditions filter out, for the corpus and the
// golden cases, and of workload UPDATEs that change no template. CPU-only is
// what the policy itself says: the reason the webhook (or audit, per template)
// gives with every exemption off (no-gpu, cpu-pod-*, dra-claims,
// update-no-new-gpu-route).
//
// --break FROM=>TO replaces FROM by TO in every expression that holds it (it
// must be in one): how test/matchcond/matchcond.sh shows this test can fail.
"use strict";
const fs = require("fs");
const path = require("path");
const os = require("os");
const cp = require("child_process");

const TOOLS = process.env.TOOLS || path.join(__dirname, "../../build/tools");
const req = (m) => require(path.join(TOOLS, "node_modules", m));
const YAML = req("yaml");
const CEL = req("@bufbuild/cel");

const args = process.argv.slice(2);
let broken = null;
const bi = args.indexOf("--break");
if (bi >= 0) {
	const [from, to] = args[bi + 1].split("=>");
	broken = { from, to };
	args.splice(bi, 2);
}
// --corpus-policy FILE (repeatable): judge the corpus under these policies too.
const corpusPolicies = [null];
for (let i; (i = args.indexOf("--corpus-policy")) >= 0;) corpusPolicies.push(args.splice(i, 2)[1]);
const [BIN, GOLDEN, CORPUS] = args;
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "matchcond-"));
process.on("exit", () => fs.rmSync(TMP, { recursive: true, force: true }));

let passed = 0, failed = 0;
function ok(name) { passed++; console.log(`ok - ${name}`); }
function notok(name, why) { failed++; console.log(`not ok - ${name}: ${why}`); }

/* ==== CEL ==== */

// JSON as kube-apiserver's unstructured objects hold it: maps, lists, int64 for whole numbers.
function toCel(v) {
	if (Array.isArray(v)) return v.map(toCel);
	if (v !== null && typeof v === "object") {
		const m = new Map();
		for (const [k, x] of Object.entries(v)) m.set(k, toCel(x));
		return m;
	}
	if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
	return v;
}

const env = CEL.celEnv();
const conditionsCache = new Map();

// The conditions of a webhook entry (pods, workloads, custom) for a policy file (null: the embedded policy), planned.
function conditions(policy, entry) {
	const key = `${policy || ""}\0${entry}`;
	if (conditionsCache.has(key)) return conditionsCache.get(key);
	const argv = ["print-match-conditions", "--for", entry, "-o", "json"].concat(policy ? ["--config", policy] : []);
	const out = JSON.parse(cp.execFileSync(BIN, argv, { encoding: "utf8" }));
	const list = out.matchConditions.map((c) => {
		let expr = c.expression;
		if (broken && expr.includes(broken.from)) {
			expr = expr.split(broken.from).join(broken.to);
			broken.used = true;
		}
		return { name: c.name, eval: CEL.plan(env, CEL.parse(expr)) };
	});
	conditionsCache.set(key, list);
	return list;
}

// Where this stand-in differs from kube-apiserver: a built-in object reaches CEL decoded
// into its Go type and encoded again, so a list member whose JSON tag has no omitempty is
// null when a manifest leaves it out (PodSpec.containers, NodeSelector.nodeSelectorTerms),
// and cel-go's has() is true for such a null member where @bufbuild/cel's is false. An
// empty pod's size(object.spec.containers) failed there ("no such overload: size") and
// this test could not see it: the conditions guard those members with `!= null`, and
// test/cluster (60-dryrun-golden.sh, ert-01-empty-pod) proves it on the real API server.
// { sent, falseAt, error }: what kube-apiserver would do with the request.
function evaluate(conds, request) {
	const bindings = {
		object: toCel(request.object === undefined ? null : request.object),
		oldObject: toCel(request.oldObject === undefined ? null : request.oldObject),
		request: toCel(Object.fromEntries(Object.entries(request).filter(([k]) => k !== "object" && k !== "oldObject"))),
	};
	let falseAt = null, error = null;
	for (const c of conds) {
		const r = c.eval(bindings);
		if (CEL.isCelError(r)) error = error || `${c.name}: ${r.message}`;
		else if (r !== true) falseAt = falseAt || c.name;
	}
	return { sent: falseAt === null && error === null, falseAt, error };
}

/* ==== The webhook's answers ==== */

function acted(response) {
	return response.allowed === false || Boolean(response.patch) || (response.warnings || []).length > 0;
}
function what(response) {
	return response.allowed === false ? "rejects" : response.patch ? "mutates" : "warns";
}

// The built-in workload kinds' resources, per API group, as the chart's workload entry registers them (at v1).
const BUILTIN = {
	apps: { deployments: "Deployment", statefulsets: "StatefulSet", daemonsets: "DaemonSet", replicasets: "ReplicaSet" },
	batch: { jobs: "Job", cronjobs: "CronJob" },
	"": { replicationcontrollers: "ReplicationController", podtemplates: "PodTemplate" },
};

// The policy's workloads: entries (a policy file, or null: the embedded policy, which lists none).
const workloadsCache = new Map();
function policyWorkloads(policy) {
	const key = policy || "";
	if (!workloadsCache.has(key))
		workloadsCache.set(key, policy ? ((YAML.parse(fs.readFileSync(policy, "utf8"), { version: "1.1" }) || {}).workloads || []) : []);
	return workloadsCache.get(key);
}
function customEntry(policy, group, resource, version) {
	return policyWorkloads(policy).find((e) => e.group === group && (e.resource || `${e.kind.toLowerCase()}s`) === resource &&
		(!e.versions || e.versions.includes(version)));
}

// The webhook entry whose rules match request r (charts/gpu-admission/templates/_helpers.tpl), or null:
// CREATE and UPDATE of pods on both webhooks, of the built-in workloads at v1 and of the policy's custom
// resources on the validating webhook only (validate: the case is answered on /validate).
function entryOf(r, policy, validate) {
	if (!r || !r.resource || r.subResource || (r.operation !== "CREATE" && r.operation !== "UPDATE")) return null;
	const group = r.resource.group || "", resource = r.resource.resource;
	if (group === "" && resource === "pods") return "pods";
	if (!validate) return null;
	if (BUILTIN[group] && BUILTIN[group][resource]) return r.resource.version === "v1" ? "workloads" : null;
	return customEntry(policy, group, resource, r.resource.version) ? "custom" : null;
}

const CPU_REASON = /^(no-gpu|cpu-pod-|dra-claims$|update-no-new-gpu-route$)/;

// The policy file with every exemption off (for telling CPU-only pods), cached per policy. Without
// them gpuInfraNamespaces is refused (its DaemonSets' pods must be admitted), and it only patches
// DaemonSet templates on /mutate, which no matchCondition here guards: it goes too.
const plainCache = new Map();
function withoutExemptions(policy) {
	const key = policy || "";
	if (plainCache.has(key)) return plainCache.get(key);
	const doc = policy ? YAML.parse(fs.readFileSync(policy, "utf8")) || {} : {};
	doc.exempt = Object.assign({}, doc.exempt, { namespaces: [], daemonSets: false, podSelectors: [] });
	delete doc.gpuInfraNamespaces;
	const file = path.join(TMP, `plain-${plainCache.size}.yaml`);
	// Every string quoted: the policy reads YAML as Kubernetes does, where a bare yes is a boolean.
	fs.writeFileSync(file, YAML.stringify(doc, { defaultStringType: "QUOTE_DOUBLE", defaultKeyType: "QUOTE_DOUBLE" }));
	plainCache.set(key, file);
	return file;
}

// spawnSync, tried again when the machine could not start the process (EAGAIN, ENOMEM:
// fork failing on a loaded machine is not an answer of the binary under test; a loaded
// make test once failed here with neither output nor a reason, which the message now
// carries). Any other error, or an exit of the
// binary however bad, is returned as it came.
function spawn(file, argv, opts) {
	for (let i = 0; ; i++) {
		const r = cp.spawnSync(file, argv, opts);
		if (!r.error || !["EAGAIN", "ENOMEM"].includes(r.error.code) || i === 20) return r;
		Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100 * (i + 1));
	}
}

// The answer `BIN review` gives (the webhook's), parsed, with the policy given.
function review(body, policy, validate) {
	const argv = ["review"].concat(policy ? ["--config", policy] : [], validate ? ["--validate"] : []);
	const r = spawn(BIN, argv, { input: JSON.stringify(body), encoding: "utf8" });
	if (!r.stdout) throw new Error(`${BIN} ${argv.join(" ")}: ${r.error || r.stderr}`);
	return JSON.parse(r.stdout).response;
}

function cpuOnly(body, policy) {
	const res = review(body, withoutExemptions(policy), false);
	const reason = res.auditAnnotations && res.auditAnnotations.reason;
	return CPU_REASON.test(reason || "");
}

// Whether every pod template of a workload object is CPU-only, as audit judges them with every exemption off.
function workloadCpuOnly(object, policy) {
	const file = path.join(TMP, "workload.json");
	fs.writeFileSync(file, JSON.stringify(object));
	const plain = withoutExemptions(policy);
	const r = spawn(BIN, ["audit", "-o", "json", "--config", plain, file], { encoding: "utf8" });
	const findings = r.stdout ? JSON.parse(r.stdout).findings : [];
	return findings.length > 0 && findings.every((f) => CPU_REASON.test(f.reason || ""));
}

/* ==== Tallies ==== */

function tally() {
	return { judged: 0, acted: 0, cpu: 0, cpuFiltered: 0, idle: 0, idleFiltered: 0, noop: 0, noopFiltered: 0,
		outside: 0, malformed: 0 };
}

// One request of an entry: kind says what it is for the shares ("cpu": CPU-only, "noop": an UPDATE that changes no template).
function judge(t, name, conds, request, answers, kind) {
	const e = evaluate(conds, request);
	const act = answers.find(acted);
	t.judged++;
	if (act) t.acted++;
	else { t.idle++; if (!e.sent) t.idleFiltered++; }
	if (kind === "cpu") { t.cpu++; if (!e.sent) t.cpuFiltered++; }
	if (kind === "noop") { t.noop++; if (!e.sent) t.noopFiltered++; }
	if (e.error) notok(name, `a condition fails to evaluate (failurePolicy Fail would reject it): ${e.error}`);
	else if (act && !e.sent) notok(name, `the webhook ${what(act)} but ${e.falseAt} is false: the API server would not send it`);
	else ok(`${name}: ${act ? "acted on, sent" : e.sent ? "not acted on, sent" : "not acted on, filtered out"}`);
}

function pct(a, b) { return b === 0 ? "n/a" : `${(100 * a / b).toFixed(0)}%`; }

const NOUN = { pods: "pod", workloads: "built-in workload", custom: "custom resource" };

function report(label, entry, t) {
	const n = NOUN[entry];
	console.log(`# ${label}: ${t.judged} ${n} requests judged (${t.acted} acted on, all sent)` +
		(entry === "pods" ? `, ${t.outside} outside the webhooks' rules, ${t.malformed} malformed` : ""));
	if (t.judged === 0) return;
	console.log(`# ${label}: ${entry === "pods" ? "" : "CREATEs of "}CPU-only ${n}s filtered out: ${t.cpuFiltered} of ${t.cpu} (${pct(t.cpuFiltered, t.cpu)}); ` +
		`${n}s not acted on filtered out: ${t.idleFiltered} of ${t.idle} (${pct(t.idleFiltered, t.idle)})` +
		(t.noop ? `; UPDATEs that change no template filtered out: ${t.noopFiltered} of ${t.noop} (${pct(t.noopFiltered, t.noop)})` : ""));
}

function tallies() { return { pods: tally(), workloads: tally(), custom: tally() }; }

/* ==== Golden cases ==== */

const golden = tallies();
for (const c of fs.readdirSync(GOLDEN).sort()) {
	const dir = path.join(GOLDEN, c);
	if (!fs.statSync(dir).isDirectory()) continue;
	let body;
	try {
		body = JSON.parse(fs.readFileSync(path.join(dir, "request.json"), "utf8"));
	} catch (e) {
		golden.pods.malformed++;  // not JSON at all (empty, truncated, garbage)
		continue;
	}
	const r = body && body.request;
	const policy = fs.existsSync(path.join(dir, "config.yaml")) ? path.join(dir, "config.yaml") : null;
	const validate = fs.existsSync(path.join(dir, "validate"));
	let entry;
	try {
		entry = entryOf(r, policy, validate);
	} catch (e) {
		entry = null;  // a policy the test cannot read is the golden driver's to judge
	}
	if (!entry) { golden.pods.outside++; continue; }
	const answers = ["expect.json", "expect.warn.json", "expect.dryrun.json"]
		.filter((f) => fs.existsSync(path.join(dir, f)))
		.map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")).response);
	if (answers.some((a) => !a || (a.status && a.status.code === 400))) { golden.pods.malformed++; continue; }
	let kind = null;
	if (entry === "pods") kind = cpuOnly(body, policy) ? "cpu" : null;
	else if (r.operation === "CREATE" && r.object) kind = workloadCpuOnly(r.object, policy) ? "cpu" : null;
	else if (answers.every((a) => (a.auditAnnotations || {}).reason === "pod-templates-unchanged")) kind = "noop";
	judge(golden[entry], `golden ${c}`, conditions(policy, entry), r, answers, kind);
}

/* ==== Corpus pod templates ==== */

const DAEMONSET_USER = "system:serviceaccount:kube-system:daemon-set-controller";  // review_offline.c
const audit = spawn(BIN, ["audit", "-o", "json", CORPUS], { encoding: "utf8" });
const findings = JSON.parse(audit.stdout).findings;
const docsCache = new Map();

// The documents of a file, numbered as audit numbers them (pkg/text/manifest.c manifest_split):
// a "---" line at column 0 starts one, a "..." line ends one, whatever precedes the first
// marker (comments alone, say) is one; each is read as Kubernetes reads YAML (1.1: yes is true).
function documents(file) {
	const chunks = [[]];
	for (const line of fs.readFileSync(file, "utf8").split("\n")) {
		const last = chunks[chunks.length - 1];
		if (/^---([ \t\r]|$)/.test(line) && last.length > 0) chunks.push([line]);
		else last.push(line);
		if (/^\.\.\.([ \t\r]|$)/.test(line)) chunks.push([]);
	}
	return chunks.map((c) => YAML.parse(c.join("\n"), { version: "1.1" }));
}

function pointerGet(v, ptr) {
	for (const part of ptr.split("/").slice(1))
		v = v[part.replace(/~1/g, "/").replace(/~0/g, "~")];
	return v;
}

// The Pod a template stands for, as review --wrap builds it (review_offline.c pod_of).
function podOf(f, t) {
	const ds = f.kind === "DaemonSet";
	let pod;
	if (f.kind === "Pod") {
		pod = JSON.parse(JSON.stringify(t));
		pod.metadata = pod.metadata && typeof pod.metadata === "object" ? pod.metadata : {};
	} else {
		pod = { apiVersion: "v1", kind: "Pod", metadata: JSON.parse(JSON.stringify(t.metadata || {})), spec: t.spec };
		if (!pod.metadata.name && !pod.metadata.generateName) pod.metadata.generateName = `${f.name}-`;
		if (ds) pod.metadata.ownerReferences = [{ apiVersion: "apps/v1", kind: "DaemonSet", name: f.name, controller: true }];
	}
	pod.metadata.namespace = f.namespace;
	return {
		apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
		request: {
			uid: "matchcond", kind: { group: "", version: "v1", kind: "Pod" },
			resource: { group: "", version: "v1", resource: "pods" }, namespace: f.namespace,
			name: pod.metadata.name, operation: "CREATE",
			userInfo: { username: ds ? DAEMONSET_USER : "someone" }, object: pod, dryRun: true,
		},
	};
}

// A workload document as the AdmissionReview the API server would send the validating webhook, or null
// when no entry's rules match it under policy (a custom resource the policy does not list).
function workloadReview(doc, ns, policy, operation, oldObject) {
	const [group, version] = String(doc.apiVersion || "").includes("/") ? doc.apiVersion.split("/") : ["", doc.apiVersion];
	let resource = null;
	for (const [r, k] of Object.entries(BUILTIN[group] || {})) if (k === doc.kind) resource = r;
	if (!resource) {
		const e = policyWorkloads(policy).find((x) => x.group === group && x.kind === doc.kind &&
			(!x.versions || x.versions.includes(version)));
		if (e) resource = e.resource || `${e.kind.toLowerCase()}s`;
	}
	const object = JSON.parse(JSON.stringify(doc));
	object.metadata = Object.assign({}, object.metadata, { namespace: ns });
	const request = {
		uid: "matchcond", kind: { group, version, kind: doc.kind }, resource: { group, version, resource },
		namespace: ns, name: object.metadata.name, operation, userInfo: { username: "someone" }, object, dryRun: true,
	};
	if (oldObject) request.oldObject = oldObject;
	if (!resource || !entryOf(request, policy, true)) return null;
	return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request };
}

const PLAIN_SPEC = { containers: [{ name: "app", image: "busybox" }] };

// The object with every template (at pointers) tolerating every taint, the GPU taint among them.
function withTolerationAdded(object, pointers) {
	const now = JSON.parse(JSON.stringify(object));
	for (const ptr of pointers) {
		const t = pointerGet(now, ptr);
		const spec = Array.isArray(t.containers) ? t : t.spec;
		spec.tolerations = (spec.tolerations || []).concat([{ operator: "Exists" }]);
	}
	return now;
}

// The object as stored before its templates (at pointers) were given what they hold now: plain CPU pods.
function withPlainTemplates(object, pointers) {
	const old = JSON.parse(JSON.stringify(object));
	for (const ptr of pointers) {
		const parts = ptr.split("/").slice(1).map((x) => x.replace(/~1/g, "/").replace(/~0/g, "~"));
		let v = old;
		for (const part of parts.slice(0, -1)) v = v[part];
		const last = parts[parts.length - 1], t = v[last];
		// A template {metadata, spec}, or a PodSpec held directly (KServe LLMInferenceService).
		if (t && Array.isArray(t.containers)) v[last] = JSON.parse(JSON.stringify(PLAIN_SPEC));
		else t.spec = JSON.parse(JSON.stringify(PLAIN_SPEC));
	}
	return old;
}

const corpora = [];
for (const policy of corpusPolicies) {
	const t = tallies();
	const label = policy ? path.basename(policy) : "default policy";
	const docs = new Map();  // file and document -> { doc, namespace, pointers, cpu }
	for (const f of findings) {
		if (!docsCache.has(f.file)) docsCache.set(f.file, documents(f.file));
		const doc = docsCache.get(f.file)[f.document];
		const body = podOf(f, pointerGet(doc, f.pointer));
		const name = `corpus (${label}) ${path.basename(f.file)} ${f.kind}/${f.name}${f.pointer}`;
		const answers = [review(body, policy, false), review(body, policy, true)];
		const cpu = cpuOnly(body, policy);
		judge(t.pods, name, conditions(policy, "pods"), body.request, answers, cpu ? "cpu" : null);
		// The workload documents, each once: a kind of their own (not a Pod, not a List's item).
		if (f.kind === "Pod" || f.pointer.startsWith("/items/") || !doc || typeof doc !== "object") continue;
		const key = `${f.file}\0${f.document}`;
		if (!docs.has(key)) docs.set(key, { file: f.file, doc, ns: f.namespace, pointers: [], cpu: true });
		const d = docs.get(key);
		d.pointers.push(f.pointer);
		d.cpu = d.cpu && cpu;
	}
	for (const d of docs.values()) {
		const name = `corpus (${label}) ${path.basename(d.file)} ${d.doc.kind}/${(d.doc.metadata || {}).name}`;
		const create = workloadReview(d.doc, d.ns, policy, "CREATE", null);
		if (!create) { t.workloads.outside++; continue; }
		const object = create.request.object;
		const entry = entryOf(create.request, policy, true);
		const conds = conditions(policy, entry);
		judge(t[entry], `${name} CREATE`, conds, create.request, [review(create, policy, true)], d.cpu ? "cpu" : null);
		const updates = [["UPDATE of CPU templates to these", withPlainTemplates(object, d.pointers), null]];
		const touched = JSON.parse(JSON.stringify(object));
		touched.metadata.annotations = Object.assign({}, touched.metadata.annotations, { "example.com/touched": "yes" });
		touched.metadata.resourceVersion = "1";
		updates.push(["UPDATE of an annotation", touched, "noop"]);
		if (object.spec && Number.isInteger(object.spec.replicas)) {
			const scaled = JSON.parse(JSON.stringify(object));
			scaled.spec.replicas += 1;
			updates.push(["UPDATE of spec.replicas", scaled, "noop"]);
		}
		// And one that gives every template a toleration of every taint: a CPU template newly aimed at GPU nodes.
		const tolerating = Object.assign({}, d.doc, withTolerationAdded(object, d.pointers));
		updates.push(["UPDATE adding a toleration of every taint", object, null, tolerating]);
		for (const [what, old, kind, now] of updates) {
			const u = workloadReview(now || d.doc, d.ns, policy, "UPDATE", old);
			judge(t[entry], `${name} ${what}`, conds, u.request, [review(u, policy, true)], kind);
		}
	}
	corpora.push([label, t]);
}
if (findings.length === 0) notok("corpus", "audit found no pod template");

for (const [label, t] of corpora)
	for (const entry of ["pods", "workloads", "custom"]) report(`corpus (${label})`, entry, t[entry]);
for (const entry of ["pods", "workloads", "custom"]) report("golden", entry, golden[entry]);
if (broken && !broken.used) notok("--break", `"${broken.from}" is in no expression`);
console.log(`matchcond superset: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
