# Extracts the policy examples of a document for test/e2e/pool_examples.sh.
#
# A policy example is marked with the placements it promises ("expect"):
#   Markdown:  <!-- policy-example: EXPECT -->  on the line before a ```yaml fence;
#              the block is a policy file, or chart values (a top-level policy: key).
#   YAML (values.yaml, print-default-config):  a comment "# example: EXPECT" followed
#              by comment lines indented at least two spaces past the '#': a list of
#              pools ("- {name: ...}"), or a policy file.
# EXPECT is ";"-separated: "N RESOURCE [key=value ...] [in NAMESPACE] -> RESULT", where
# RESULT is a pool, the pools in order ("t4-spot,t4") or "rejected".
# Every pool list that is not marked is reported as an unmarked example: an example
# nobody runs can drift (the chart's once sent MIG and AMD pods to a T4 pool).
#
# Writes OUT/NNN.yaml (the policy), OUT/NNN.expect (EXPECT, one per line) and
# OUT/NNN.where (FILE:LINE); prints "unmarked FILE:LINE" for each unmarked list.
# Usage: awk -v out=DIR -v kind=md|yaml -f extract.awk FILE
function flush(   f) {
	if (n_lines == 0 && expect == "")
		return
	count++
	f = sprintf("%s/%s-%03d", out, base, count)
	printf "%s", body > (f ".yaml")
	close(f ".yaml")
	gsub(/ *; */, "\n", expect)
	printf "%s\n", expect > (f ".expect")
	close(f ".expect")
	printf "%s:%d\n", FILENAME, start > (f ".where")
	close(f ".where")
	body = ""; expect = ""; n_lines = 0
}
function strip(s, n) { return substr(s, n + 1) }
BEGIN { base = "ex"; if (prefix != "") base = prefix }
# ---- Markdown ----
kind == "md" && /<!-- policy-example:/ {
	expect = $0
	sub(/.*<!-- policy-example: */, "", expect)
	sub(/ *-->.*/, "", expect)
	want_fence = 1
	next
}
kind == "md" && want_fence && /^ *```yaml/ {
	indent = match($0, /[^ ]/) - 1
	in_block = 1; marked = 1; start = NR; want_fence = 0; values = 0; n_lines = 0; body = ""
	next
}
kind == "md" && !in_block && /^ *```yaml/ {
	indent = match($0, /[^ ]/) - 1
	in_block = 1; marked = 0; start = NR; n_lines = 0; body = ""; has_pools = 0
	next
}
kind == "md" && in_block && /^ *```/ {
	in_block = 0
	if (marked)
		flush()
	else if (has_pools)
		print "unmarked " FILENAME ":" start
	body = ""; n_lines = 0
	next
}
kind == "md" && in_block {
	line = strip($0, indent)
	if (marked) {
		# chart values: the policy: block, one level up
		if (n_lines == 0 && line ~ /^policy: *$/) { values = 1; next }
		if (values) line = strip(line, 2)
		body = body line "\n"; n_lines++
	} else if (line ~ /^ *pools:/)
		has_pools = 1
	next
}
# ---- YAML comments ----
kind == "yaml" && /^ *# *example: / {
	if (collecting) flush()
	expect = $0
	sub(/^ *# *example: */, "", expect)
	collecting = 1; start = NR; hash = index($0, "#"); n_lines = 0; body = ""; wrap = 0
	next
}
kind == "yaml" && collecting && substr($0, 1, hash) ~ /^ *#$/ && substr($0, hash + 1, 2) == "  " {
	line = strip($0, hash)
	if (n_lines == 0) {
		lead = match(line, /[^ ]/) - 1
		if (substr(line, lead + 1, 2) == "- ") wrap = 1
		if (wrap) body = "pools:\n"
	}
	line = strip(line, lead)
	body = body (wrap ? "  " : "") line "\n"; n_lines++
	next
}
kind == "yaml" && collecting {
	collecting = 0
	flush()
}
kind == "yaml" && /^ *# +- *\{ *name:/ {
	print "unmarked " FILENAME ":" NR
}
END { if (collecting) flush() }
