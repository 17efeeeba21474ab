// Every policy example the project shows, as a file each, for test/e2e/examples.sh:
//   node extract.js OUTDIR VALUES.yaml DEFAULT.yaml PAGE.md...
// - each PAGE.md (README.md and the pages it links: test/e2e/docs.lib): every ```yaml block. One holding only policy fields is a policy
//   file; one holding only `policy:` is Helm values (its policy: is the policy);
//   one whose documents all have a top-level `kind:` is a manifest
//   (OUTDIR/N.manifest, or OUTDIR/N.object when none of its kinds holds a pod
//   template, e.g. a Karpenter NodePool); anything else fails the test: an
//   example nobody checks may lie.
// - values.yaml: its policy: block, and every commented example inside it.
// - DEFAULT.yaml (print-default-config): itself, and every commented example.
// A commented example is a run of comment lines indented 3 or more spaces past
// the '#' ("#   pools:", "#   - {name: t4, ...}"); a run that is a list of pools
// ({name, nodeSelector, ...}) is read as `pools:`.
//
// Placement markers: an example that lists pools says where pods go, and the
// test checks it. In Markdown, an HTML comment alone on the line before the
// ```yaml fence, <!-- policy-example: EXPECT -->; in YAML, a comment line
// "# example: EXPECT" just before the commented example. EXPECT is
// ";"-separated: "N RESOURCE [key=value ...] [in NAMESPACE] -> RESULT", RESULT
// a pool, the pools in order ("t4-spot,t4") or "rejected". An example with
// pools and no marker fails (values.yaml's own policy: and print-default-config
// itself, the live defaults rather than examples, need none); so does a marker
// with no example after it.
//
// Writes OUTDIR/N.yaml (the policy), OUTDIR/N.src (where it came from),
// OUTDIR/N.t4 (the names of its T4 pools: named so, or selecting a node label
// value that says t4) and, for a marked example, OUTDIR/N.expect (one
// placement a line).
const Y = require(process.env.TOOLS + "/node_modules/yaml");
const fs = require("fs");
const [out, valuesPath, defaultPath, ...pages] = process.argv.slice(2);
const policyKeys = new Set(Object.keys(Y.parse(fs.readFileSync(defaultPath, "utf8"))));
// The kinds whose pod templates audit reads at their one place (pkg/policy/template.c), and lists of them.
const workloadKinds = new Set(["Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job",
	"ReplicationController", "CronJob", "PodTemplate"]);
const MARKDOWN_MARKER = /^\s*<!--\s*policy-example:\s*(.*?)\s*-->\s*$/;
const YAML_MARKER = /^\s*#\s*example:\s*(.*?)\s*$/;
let n = 0, failures = 0;

function fail(msg) { console.error("examples: " + msg); failures++; }

function emit(src, policy, expect) {
	n++;
	const t4 = (policy.pools || []).filter(p => /t4/i.test(String(p.name)) ||
		Object.values(p.nodeSelector || {}).some(v => /t4/i.test(String(v)))).map(p => p.name);
	fs.writeFileSync(`${out}/${n}.yaml`, Y.stringify(policy));
	fs.writeFileSync(`${out}/${n}.src`, src + "\n");
	fs.writeFileSync(`${out}/${n}.t4`, t4.join("\n") + (t4.length ? "\n" : ""));
	if (expect !== undefined) {
		const lines = expect.split(";").map(e => e.trim()).filter(e => e);
		if (lines.length === 0)
			fail(`${src}: its marker promises no placement`);
		fs.writeFileSync(`${out}/${n}.expect`, lines.join("\n") + "\n");
	}
}

// A policy, Helm values holding one, or a list of pools: emitted; else false.
// expect: its marker's placements (undefined: no marker); markRequired: an
// example with pools must have a marker.
function policyOf(src, v, expect, markRequired) {
	let policy;

	if (Array.isArray(v) && v.length > 0 && v.every(p => p && typeof p === "object" && "name" in p && "nodeSelector" in p)) {
		src += " (a list of pools)";
		policy = { pools: v };
	} else if (!v || typeof v !== "object" || Array.isArray(v)) {
		return false;
	} else if (Object.keys(v).length === 1 && Object.keys(v)[0] === "policy") {
		return policyOf(src + " (Helm values)", v.policy, expect, markRequired);
	} else if (Object.keys(v).length > 0 && Object.keys(v).every(k => policyKeys.has(k))) {
		policy = v;
	} else {
		return false;
	}
	if (markRequired && expect === undefined && Array.isArray(policy.pools))
		fail(`${src}: a pool example with no policy-example marker (say where its pods go)`);
	emit(src, policy, expect);
	return true;
}

function dedent(lines) {
	const ind = Math.min(...lines.filter(l => l.trim()).map(l => l.match(/^ */)[0].length));
	return lines.map(l => l.slice(ind)).join("\n") + "\n";
}

// Markdown: fenced yaml blocks, each maybe marked on the line before its fence.
for (const readmePath of pages) {
	const readme = fs.readFileSync(readmePath, "utf8").split("\n");
	for (let i = 0; i < readme.length; i++) {
		const marker = readme[i].match(MARKDOWN_MARKER);
		if (marker && !/^\s*```ya?ml\s*$/.test(readme[i + 1] || ""))
			fail(`${readmePath}:${i + 1}: a policy-example marker not on the line before a \`\`\`yaml block`);
		const open = readme[i].match(/^(\s*)```ya?ml\s*$/);
		if (!open)
			continue;
		const mark = i > 0 ? readme[i - 1].match(MARKDOWN_MARKER) : null;
		const expect = mark ? mark[1] : undefined;
		const body = [], start = i + 1;
		for (i++; i < readme.length && !/^\s*```\s*$/.test(readme[i]); i++)
			body.push(readme[i]);
		const src = `${readmePath}:${start}`, text = dedent(body);
		const docs = Y.parseAllDocuments(text);
		const broken = docs.find(d => d.errors.length > 0);
		if (broken) {
			fail(`${src}: not YAML: ${broken.errors[0].message}`);
			continue;
		}
		const values = docs.map(d => d.toJS());
		if (values.length > 0 && values.every(v => v && typeof v === "object" && "kind" in v && "apiVersion" in v)) {
			if (expect !== undefined)
				fail(`${src}: a policy-example marker on a manifest`);
			n++;
			const audited = values.some(v => workloadKinds.has(v.kind) || /List$/.test(v.kind));
			fs.writeFileSync(`${out}/${n}.${audited ? "manifest" : "object"}`, text);
			fs.writeFileSync(`${out}/${n}.src`, src + "\n");
		} else if (values.length !== 1 || !policyOf(src, values[0], expect, true)) {
			fail(`${src}: a YAML block that is neither a policy nor a manifest`);
		}
	}
}

// Comment lines indented 3+ spaces past '#', from the line index `from` on; a
// "# example: EXPECT" line just before a run marks it.
function commentedExamples(path, lines, from) {
	let run = [], start = 0, expect;
	const flush = () => {
		if (run.length === 0)
			return;
		const src = `${path}:${start} (commented example)`;
		let v;
		try { v = Y.parse(dedent(run)); } catch (e) { fail(`${src}: not YAML: ${e.message}`); }
		if (v !== undefined && !policyOf(src, v, expect, true))
			fail(`${src}: a commented example that is not a policy`);
		run = [];
	};
	for (let i = from; i < lines.length; i++) {
		const m = lines[i].match(/^\s*#( {3,}\S.*)$/);
		if (m) {
			if (run.length === 0) {
				start = i + 1;
				const mark = i > 0 ? lines[i - 1].match(YAML_MARKER) : null;
				expect = mark ? mark[1] : undefined;
			}
			run.push(m[1]);
		} else {
			flush();
			if (YAML_MARKER.test(lines[i]) && !/^\s*#( {3,}\S.*)$/.test(lines[i + 1] || ""))
				fail(`${path}:${i + 1}: an example: marker not just before a commented example`);
		}
	}
	flush();
}

const valuesText = fs.readFileSync(valuesPath, "utf8"), values = valuesText.split("\n");
const policyLine = values.findIndex(l => /^policy:/.test(l));
if (policyLine < 0)
	fail(`${valuesPath}: no policy: block`);
emit(`${valuesPath}: policy:`, Y.parse(valuesText).policy);
commentedExamples(valuesPath, values, policyLine);

const defaultText = fs.readFileSync(defaultPath, "utf8");
emit("print-default-config", Y.parse(defaultText));
commentedExamples("print-default-config", defaultText.split("\n"), 0);

console.log(`${n} examples`);
process.exit(failures ? 1 : 0);
