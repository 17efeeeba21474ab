#!/usr/bin/env node
// The chart renders the matchConditions the binary prints, for the same policy.
//
//   node test/matchcond/chart.js HELM CHART BIN WORKDIR CASE=VALUES.yaml...
//
// For each case: `helm template` with the values, then every webhook entry
// (the mutating pod webhook; the validating ones for pods, for the built-in
// workloads and, with policy.workloads, for custom resources, known by their
// names) must carry first exactly the conditions `BIN print-match-conditions
// --config POLICY --for ENTRY -o json` prints for the policy the chart put in
// its ConfigMap (names and expression texts byte for byte), then the values'
// own webhook.matchConditions. With webhook.policyMatchConditions false, only
// the values' own. One "ok"/"not ok" line per check.
"use strict";
const fs = require("fs");
const path = require("path");
const cp = require("child_process");

const TOOLS = process.env.TOOLS || path.join(__dirname, "../../build/tools");
const YAML = require(path.join(TOOLS, "node_modules", "yaml"));

const [HELM, CHART, BIN, WORK, ...cases] = process.argv.slice(2);
let passed = 0, failed = 0;
function check(name, cond, detail) {
	if (cond) { passed++; console.log(`ok - ${name}`); }
	else { failed++; console.log(`not ok - ${name}${detail ? ": " + detail : ""}`); }
}

// The first difference between two texts, for a failure message.
function firstDiff(a, b) {
	let i = 0;
	while (i < a.length && i < b.length && a[i] === b[i]) i++;
	return `at byte ${i}: chart "${a.slice(Math.max(0, i - 40), i + 40)}" vs binary "${b.slice(Math.max(0, i - 40), i + 40)}"`;
}

for (const c of cases) {
	const [name, values] = c.split("=");
	const r = cp.spawnSync(HELM, ["template", "gpu-admission", CHART, "-n", "gpu-admission", "-f", values,
		"--set", "image.repository=example.azurecr.io/gpu-admission"], { encoding: "utf8" });
	if (r.status !== 0) { check(`${name}: helm template`, false, r.stderr.trim()); continue; }
	const objs = YAML.parseAllDocuments(r.stdout).map((d) => d.toJS()).filter((o) => o && o.kind);
	const cm = objs.find((o) => o.kind === "ConfigMap" && o.data && o.data["policy.yaml"]);
	const vals = YAML.parse(fs.readFileSync(values, "utf8")) || {};
	const own = ((vals.webhook || {}).matchConditions) || [];
	const generated = !vals.webhook || vals.webhook.policyMatchConditions !== false;
	const policy = path.join(WORK, `${name}.policy.yaml`);
	fs.writeFileSync(policy, cm.data["policy.yaml"]);
	const custom = ((YAML.parse(cm.data["policy.yaml"]) || {}).workloads || []).length > 0;
	const infra = ((YAML.parse(cm.data["policy.yaml"]) || {}).gpuInfraNamespaces || []).length > 0;
	const entries = [
		["MutatingWebhookConfiguration", "mutate.gpu-admission.azure.io", "pods"],
	].concat(infra ? [["MutatingWebhookConfiguration", "mutate-daemonsets.gpu-admission.azure.io", "daemonsets"]] : []).concat([
		["ValidatingWebhookConfiguration", "validate.gpu-admission.azure.io", "pods"],
		["ValidatingWebhookConfiguration", "validate-workloads.gpu-admission.azure.io", "workloads"],
	]).concat(custom ? [["ValidatingWebhookConfiguration", "validate-custom.gpu-admission.azure.io", "custom"]] : [])
		// The policy ConfigMap's entry (webhook.policyCheck): selected by label in the release namespace, it
		// carries no conditions, neither the policy's nor the values' (they are written for workloads).
		.concat(((vals.webhook || {}).policyCheck || {}).enabled === false ? []
			: [["ValidatingWebhookConfiguration", "policy.gpu-admission.azure.io", null]]);
	const hooks = objs.filter((o) => /WebhookConfiguration$/.test(o.kind)).flatMap((o) => o.webhooks.map((w) => [o.kind, w]));
	check(`${name}: the webhook entries are ${entries.map((e) => e[1]).join(", ")}`,
		hooks.length === entries.length && entries.every(([k, n]) => hooks.some(([hk, w]) => hk === k && w.name === n)),
		hooks.map(([, w]) => w.name).join(", "));
	for (const [kind, hookName, entry] of entries) {
		const found = hooks.find(([k, w]) => k === kind && w.name === hookName);
		if (!found) continue;
		const w = found[1];
		// gpuInfraNamespaces' entry: the admin's namespaces by name, only the values' own conditions.
		if (entry === "daemonsets") {
			check(`${name}: ${hookName} has only webhook.matchConditions`,
				JSON.stringify(w.matchConditions || []) === JSON.stringify(own), JSON.stringify(w.matchConditions));
			continue;
		}
		if (entry === null) {
			check(`${name}: ${hookName} has no matchConditions`, !w.matchConditions, JSON.stringify(w.matchConditions));
			continue;
		}
		let want = [];
		if (generated) {
			const b = cp.spawnSync(BIN, ["print-match-conditions", "--config", policy, "--for", entry, "-o", "json"],
				{ encoding: "utf8" });
			if (b.status !== 0) { check(`${name}: print-match-conditions --for ${entry}`, false, b.stderr.trim()); continue; }
			want = JSON.parse(b.stdout).matchConditions;
		}
		want = want.concat(own);
		const got = w.matchConditions || [];
		const same = got.length === want.length && got.every((g, i) => g.name === want[i].name &&
			g.expression === want[i].expression);
		let detail = `${got.length} conditions, want ${want.length}`;
		const i = got.findIndex((g, j) => !want[j] || g.expression !== want[j].expression);
		if (i >= 0 && want[i]) detail = `${got[i].name}: ${firstDiff(got[i].expression, want[i].expression)}`;
		check(`${name}: ${hookName} matchConditions ${generated ? `are the binary's --for ${entry}` : "are only the values'"}` +
			`${own.length ? ` + ${own.length} of the values'` : ""}`, same, detail);
	}
}
console.log(`matchcond chart: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
