// Every policy example the project shows, as a file each, for test/e2e/examples.sh:
//   node extract.js OUTDIR README.md VALUES.yaml DEFAULT.yaml
// - README.md: every ```yaml block. One holding only policy fields is a policy
//   file; one holding only `policy:` is Helm values (its policy: is the policy);
//   one with a top-level `kind:` is a manifest (OUTDIR/N.manifest); anything else
//   fails the test: an example nobody checks may lie.
// - values.yaml: its policy: block, and every commented example inside it.
// - DEFAULT.yaml (print-default-config): itself, and every commented example.
// A commented example is a run of comment lines indented 3 or more spaces past
// the '#' ("#   pools:", "#   - {name: t4, ...}"); a run that is a list of pools
// ({name, nodeSelector, ...}) is read as `pools:`. Writes OUTDIR/N.yaml (the
// policy), OUTDIR/N.src (where it came from) and OUTDIR/N.t4 (the names of its
// T4 pools: named so, or selecting a node label value that says t4).
const Y = require(process.env.TOOLS + "/node_modules/yaml");
const fs = require("fs");
const [out, readmePath, valuesPath, defaultPath] = process.argv.slice(2);
const policyKeys = new Set(Object.keys(Y.parse(fs.readFileSync(defaultPath, "utf8"))));
let n = 0, failures = 0;

function fail(msg) { console.error("examples: " + msg); failures++; }

function emit(src, policy) {
	n++;
	const t4 = (policy.pools || []).filter(p => /t4/i.test(String(p.name)) ||
		Object.values(p.nodeSelector || {}).some(v => /t4/i.test(String(v)))).map(p => p.name);
	fs.writeFileSync(`${out}/${n}.yaml`, Y.stringify(policy));
	fs.writeFileSync(`${out}/${n}.src`, src + "\n");
	fs.writeFileSync(`${out}/${n}.t4`, t4.join("\n") + (t4.length ? "\n" : ""));
}

// A policy, Helm values holding one, or a list of pools: emitted; else false.
function policyOf(src, v) {
	if (Array.isArray(v) && v.length > 0 && v.every(p => p && typeof p === "object" && "name" in p && "nodeSelector" in p)) {
		emit(src + " (a list of pools)", { pools: v });
		return true;
	}
	if (!v || typeof v !== "object" || Array.isArray(v))
		return false;
	const keys = Object.keys(v);
	if (keys.length === 1 && keys[0] === "policy")
		return policyOf(src + " (Helm values)", v.policy);
	if (keys.length > 0 && keys.every(k => policyKeys.has(k))) {
		emit(src, v);
		return true;
	}
	return false;
}

function dedent(lines) {
	const ind = Math.min(...lines.filter(l => l.trim()).map(l => l.match(/^ */)[0].length));
	return lines.map(l => l.slice(ind)).join("\n") + "\n";
}

// README: fenced yaml blocks.
const readme = fs.readFileSync(readmePath, "utf8").split("\n");
for (let i = 0; i < readme.length; i++) {
	const open = readme[i].match(/^(\s*)```ya?ml\s*$/);
	if (!open)
		continue;
	const body = [], start = i + 1;
	for (i++; i < readme.length && !/^\s*```\s*$/.test(readme[i]); i++)
		body.push(readme[i]);
	const src = `${readmePath}:${start}`, text = dedent(body);
	let v;
	try { v = Y.parse(text); } catch (e) { fail(`${src}: not YAML: ${e.message}`); continue; }
	if (v && typeof v === "object" && "kind" in v) {
		n++;
		fs.writeFileSync(`${out}/${n}.manifest`, text);
		fs.writeFileSync(`${out}/${n}.src`, src + "\n");
	} else if (!policyOf(src, v)) {
		fail(`${src}: a YAML block that is neither a policy nor a manifest`);
	}
}

// Comment lines indented 3+ spaces past '#', from the line index `from` on.
function commentedExamples(path, lines, from) {
	let run = [], start = 0;
	const flush = () => {
		if (run.length === 0)
			return;
		const src = `${path}:${start} (commented example)`;
		let v;
		try { v = Y.parse(dedent(run)); } catch (e) { fail(`${src}: not YAML: ${e.message}`); }
		if (v !== undefined && !policyOf(src, v))
			fail(`${src}: a commented example that is not a policy`);
		run = [];
	};
	for (let i = from; i < lines.length; i++) {
		const m = lines[i].match(/^\s*#( {3,}\S.*)$/);
		if (m) {
			if (run.length === 0)
				start = i + 1;
			run.push(m[1]);
		} else {
			flush();
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
