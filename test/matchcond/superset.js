#!/usr/bin/env node
// The matchConditions are a superset of what the webhook acts on.
//
//   node test/matchcond/superset.js BIN GOLDEN_DIR CORPUS_DIR [--corpus-policy FILE]... [--break FROM=>TO]
//
// Evaluates the conditions `BIN print-match-conditions --config POLICY -o json`
// prints, with a real CEL implementation (@bufbuild/cel, which passes the CEL
// conformance suite), on
//  - every golden case (test/golden/<case>/request.json, answered per its
//    expect*.json, under its config.yaml), and
//  - every pod template audit finds in CORPUS_DIR, as the Pod its controller
//    would create (review --wrap's pod), answered online by `BIN review`, under
//    the embedded policy and each --corpus-policy,
// with the variables bound as kube-apiserver binds them
// (k8s.io/apiserver/pkg/admission/plugin/cel/filter.go, ForInput): `object`
// and `oldObject` the objects as JSON values (null when absent), `request` the
// AdmissionRequest without them. A request is sent when every condition is
// true (webhook/matchconditions/matcher.go). One line per request:
// "not ok" when the webhook would mutate, warn or reject it and a condition is
// false, or when a condition fails to evaluate (under failurePolicy Fail an
// evaluation error rejects the request). Requests outside the webhooks' rules
// (not CREATE or UPDATE of pods) never reach the conditions, and bodies the
// webhook refuses as malformed (400: a member of the wrong JSON type) are not
// objects the API server can send (it binds objects decoded into typed Go
// structs): both are counted, not judged.
//
// Then the share of CPU-only pods the conditions filter out, for the corpus and
// the golden cases. CPU-only is what the policy itself says: the reason the
// webhook gives with every exemption off (no-gpu, cpu-pod-*, dra-claims,
// update-no-new-gpu-route).
//
// --break FROM=>TO replaces FROM by TO in the gpu-relevant expression: how
// test/e2e/matchcond.sh shows this test can fail.
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

// The conditions for a policy file (null: the embedded policy), planned.
function conditions(policy) {
	const key = policy || "";
	if (conditionsCache.has(key)) return conditionsCache.get(key);
	const argv = ["print-match-conditions", "-o", "json"].concat(policy ? ["--config", policy] : []);
	const out = JSON.parse(cp.execFileSync(BIN, argv, { encoding: "utf8" }));
	const list = out.matchConditions.map((c) => {
		let expr = c.expression;
		if (broken && c.name === "gpu-relevant") {
			if (!expr.includes(broken.from)) throw new Error(`--break: "${broken.from}" is not in ${c.name}`);
			expr = expr.split(broken.from).join(broken.to);
		}
		return { name: c.name, eval: CEL.plan(env, CEL.parse(expr)) };
	});
	conditionsCache.set(key, list);
	return list;
}

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

// The webhooks' rules (charts/gpu-admission/templates/_helpers.tpl): CREATE and UPDATE of pods.
function withinRules(r) {
	return r && r.resource && r.resource.resource === "pods" && (r.resource.group || "") === "" &&
		!r.subResource && (r.operation === "CREATE" || r.operation === "UPDATE");
}

const CPU_REASON = /^(no-gpu|cpu-pod-|dra-claims$|update-no-new-gpu-route$)/;

// The policy file with every exemption off (for telling CPU-only pods), cached per policy.
const plainCache = new Map();
function withoutExemptions(policy) {
	const key = policy || "";
	if (plainCache.has(key)) return plainCache.get(key);
	const doc = policy ? YAML.parse(fs.readFileSync(policy, "utf8")) || {} : {};
	doc.exempt = Object.assign({}, doc.exempt, { namespaces: [], daemonSets: false, podSelectors: [] });
	const file = path.join(TMP, `plain-${plainCache.size}.yaml`);
	// Every string quoted: the policy reads YAML as Kubernetes does, where a bare yes is a boolean.
	fs.writeFileSync(file, YAML.stringify(doc, { defaultStringType: "QUOTE_DOUBLE", defaultKeyType: "QUOTE_DOUBLE" }));
	plainCache.set(key, file);
	return file;
}

// The answer `BIN review` gives (the webhook's), parsed, with the policy given.
function review(body, policy, validate) {
	const argv = ["review"].concat(policy ? ["--config", policy] : [], validate ? ["--validate"] : []);
	const r = cp.spawnSync(BIN, argv, { input: JSON.stringify(body), encoding: "utf8" });
	if (!r.stdout) throw new Error(`${BIN} ${argv.join(" ")}: ${r.stderr}`);
	return JSON.parse(r.stdout).response;
}

function cpuOnly(body, policy) {
	const res = review(body, withoutExemptions(policy), false);
	const reason = res.auditAnnotations && res.auditAnnotations.reason;
	return CPU_REASON.test(reason || "");
}

/* ==== Tallies ==== */

function tally() { return { judged: 0, acted: 0, cpu: 0, cpuFiltered: 0, idle: 0, idleFiltered: 0, outside: 0, malformed: 0 }; }

function judge(t, name, conds, request, answers, cpu) {
	const e = evaluate(conds, request);
	const act = answers.find(acted);
	t.judged++;
	if (act) t.acted++;
	else { t.idle++; if (!e.sent) t.idleFiltered++; }
	if (cpu) { t.cpu++; if (!e.sent) t.cpuFiltered++; }
	if (e.error) notok(name, `a condition fails to evaluate (failurePolicy Fail would reject it): ${e.error}`);
	else if (act && !e.sent) notok(name, `the webhook ${what(act)} but ${e.falseAt} is false: the API server would not send it`);
	else ok(`${name}: ${act ? "acted on, sent" : e.sent ? "not acted on, sent" : "not acted on, filtered out"}`);
}

function pct(a, b) { return b === 0 ? "n/a" : `${(100 * a / b).toFixed(0)}%`; }

function report(label, t) {
	console.log(`# ${label}: ${t.judged} pod requests judged (${t.acted} acted on, all sent), ` +
		`${t.outside} outside the webhooks' rules, ${t.malformed} malformed`);
	console.log(`# ${label}: CPU-only pods filtered out: ${t.cpuFiltered} of ${t.cpu} (${pct(t.cpuFiltered, t.cpu)}); ` +
		`pods not acted on filtered out: ${t.idleFiltered} of ${t.idle} (${pct(t.idleFiltered, t.idle)})`);
}

/* ==== Golden cases ==== */

const golden = tally();
for (const c of fs.readdirSync(GOLDEN).sort()) {
	const dir = path.join(GOLDEN, c);
	if (!fs.statSync(dir).isDirectory()) continue;
	let body;
	try {
		body = JSON.parse(fs.readFileSync(path.join(dir, "request.json"), "utf8"));
	} catch (e) {
		golden.malformed++;  // not JSON at all (empty, truncated, garbage)
		continue;
	}
	const r = body && body.request;
	if (!withinRules(r)) { golden.outside++; continue; }
	const answers = ["expect.json", "expect.warn.json", "expect.dryrun.json"]
		.filter((f) => fs.existsSync(path.join(dir, f)))
		.map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")).response);
	if (answers.some((a) => !a || (a.status && a.status.code === 400))) { golden.malformed++; continue; }
	const policy = fs.existsSync(path.join(dir, "config.yaml")) ? path.join(dir, "config.yaml") : null;
	judge(golden, `golden ${c}`, conditions(policy), r, answers, cpuOnly(body, policy));
}

/* ==== Corpus pod templates ==== */

const DAEMONSET_USER = "system:serviceaccount:kube-system:daemon-set-controller";  // review_offline.c
const audit = cp.spawnSync(BIN, ["audit", "-o", "json", CORPUS], { encoding: "utf8" });
const findings = JSON.parse(audit.stdout).findings;
const docsCache = new Map();

// The documents of a file, numbered as audit numbers them (pkg/manifest.c manifest_split):
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

const corpora = [];
for (const policy of corpusPolicies) {
	const t = tally();
	const label = policy ? path.basename(policy) : "default policy";
	for (const f of findings) {
		if (!docsCache.has(f.file)) docsCache.set(f.file, documents(f.file));
		const body = podOf(f, pointerGet(docsCache.get(f.file)[f.document], f.pointer));
		const name = `corpus (${label}) ${path.basename(f.file)} ${f.kind}/${f.name}${f.pointer}`;
		const answers = [review(body, policy, false), review(body, policy, true)];
		judge(t, name, conditions(policy), body.request, answers, cpuOnly(body, policy));
	}
	corpora.push([label, t]);
}
if (findings.length === 0) notok("corpus", "audit found no pod template");

for (const [label, t] of corpora) report(`corpus (${label})`, t);
report("golden", golden);
console.log(`matchcond superset: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
