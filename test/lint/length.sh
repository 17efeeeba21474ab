#!/bin/sh
# No function in pkg/ or cmd/ is longer than MAX lines (issue 22; cmd/ since
# issue 28, whose commands only parse flags and wire pkg/ together): a
# function that long does several things, and each should be cut out and
# named at its own paragraph. A function is counted from the first line of
# its signature to its closing brace, as every file in pkg/ and cmd/ lays
# them out: the signature at the start of a line, the braces alone on theirs.
#
# Usage: sh test/lint/length.sh [ROOT]     (ROOT defaults to .)
# Prints "N passed, N failed". It checks itself first: a file with a
# function of MAX + 1 lines must be refused, one of MAX lines accepted.
set -u
ROOT=${1:-.}
MAX=100

# Named exceptions, one "file:function" a line, each with its reason
# (none today: keep it that way).
EXCEPTIONS=''

# long FILE...: prints "file:function: N lines" for each function over MAX,
# counted from the first line of its signature to its closing brace.
long() {
	awk -v max="$MAX" '
		FNR == 1 { name = ""; sig = 0; open = 0 }
		/^[A-Za-z_].*\(/ && !open && !sig {
			sig = FNR
			head = $0
			sub(/\(.*/, "", head)
			n = split(head, w, /[ \t*]+/)
			name = w[n]
		}
		sig && !open && /;[ \t]*$/ { sig = 0 }   # a prototype, not a definition
		/^\{/ && sig && !open { open = 1; next }
		/^\}/ && open {
			if (FNR - sig + 1 > max)
				printf "%s:%s: %d lines\n", FILENAME, name, FNR - sig + 1
			sig = 0; open = 0
		}
	' "$@"
}

check() {
	(cd "$1" && long pkg/*/*.c $(ls cmd/*/*.c 2>/dev/null)) | while IFS= read -r line; do
		fn=${line%%: *}
		case "
$EXCEPTIONS
" in
		*"
$fn
"*) ;;
		*) echo "$line (at most $MAX: cut it at its paragraphs)" ;;
		esac
	done
}

pass=0 fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# The check refuses MAX + 1 lines and accepts MAX.
mkdir -p "$tmp/pkg/base"
# body N: N lines of statements.
body() { i=0; while [ $i -lt "$1" ]; do echo '	;'; i=$((i + 1)); done; }
{
	echo 'int too_long(int a, int b);'      # a prototype does not start a count
	echo 'static int fits(void)'; echo '{'; body $((MAX - 3)); echo '}'
	echo 'int too_long(int a,'; echo '	     int b)'; echo '{'; body $((MAX - 3)); echo '}'
} >"$tmp/pkg/base/a.c"
out=$(check "$tmp")
if [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] && printf '%s\n' "$out" | grep -q "a.c:too_long: $((MAX + 1)) lines"; then
	pass=$((pass + 1))
else
	fail=$((fail + 1)); echo "length: the check does not refuse a $((MAX + 1))-line function alone: $out"
fi
# ... and in cmd/ as in pkg/.
mkdir -p "$tmp/cmd/tool"
{ echo 'static int run_tool(void)'; echo '{'; body $((MAX - 2)); echo '}'; } >"$tmp/cmd/tool/b.c"
out=$(check "$tmp")
if printf '%s\n' "$out" | grep -q "b.c:run_tool: $((MAX + 1)) lines"; then
	pass=$((pass + 1))
else
	fail=$((fail + 1)); echo "length: the check does not look at cmd/: $out"
fi

out=$(check "$ROOT")
if [ -z "$out" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); printf '%s\n' "$out"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
