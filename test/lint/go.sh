#!/bin/sh
# .ci/go (make deps, make test's first step, test/cluster/build.sh): the Go that builds the
# control plane on a machine with none, or one too old (Debian 12's golang-go is 1.19).
# It runs in a copy of the tree's pieces it reads (.ci/go, test/cluster/build.sh, the
# control plane's go.mod files) with PATH holding the tools it needs and no go, the
# machine's Go named by GO (a missing path, a fake too old, a fake new enough), a scratch
# XDG_CACHE_HOME, and GOPROXY pointing at a fake proxy on 127.0.0.1 (node) serving a small
# fake toolchain zip laid out as the real one (golang.org/toolchain@v0.0.1-VERSION.OS-ARCH/
# ...), whose SHA-256 a scratch .ci/go.pin pins. Nothing here reaches the real proxy.
. test/check.lib

T=$(mktemp -d)
srv=""
trap '[ -z "$srv" ] || kill "$srv" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
trap 'exit 1' INT TERM

# The tree: the pinned version is the real one, so the real go.mod files must accept it.
R=$T/tree
mkdir -p "$R/.ci" "$R/test/cluster"
cp .ci/go "$R/.ci/go"
cp test/cluster/build.sh "$R/test/cluster/build.sh"
for d in test/cluster/*/go.mod; do
	d=$(dirname "$d")
	mkdir -p "$R/$d"
	cp "$d"/go.mod "$d"/go.sum "$R/$d/" 2>/dev/null || cp "$d"/go.mod "$R/$d/"
done
ver=$(awk '$1 == "version" { print $2 }' .ci/go.pin)
os=$(uname -s | tr 'A-Z' 'a-z')
case $(uname -m) in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
mod=v0.0.1-$ver.$os-$arch

# The tools .ci/go and build.sh run, and no go.
mkdir "$T/tools"
for t in sh awk sed tr cut cat uname mktemp mkdir rm rmdir mv cp find chmod du dirname pwd \
	cksum curl sha256sum unzip; do
	p=$(command -v "$t") || { bad "$t missing"; continue; }
	ln -s "$p" "$T/tools/$t"
done
TOOLS=$T/tools

# fake_go DIR VERSION: DIR/bin/go, a go that reports VERSION and, asked to build, logs its
# command, environment and GOROOT's src/go.mod to $T/go.log and writes the -o file.
fake_go() {
	mkdir -p "$1/bin"
	cat >"$1/bin/go" <<EOF
#!/bin/sh
case \$1 in
version) echo "go version $2 $os/$arch" ;;
build)
	echo "\$0 \$* GOTOOLCHAIN=\${GOTOOLCHAIN:-} GOROOT=[\${GOROOT:-}]" >>"$T/go.log"
	[ -f "\$(dirname "\$0")/../src/go.mod" ] && echo "src/go.mod present" >>"$T/go.log"
	while [ \$# -gt 1 ] && [ "\$1" != -o ]; do shift; done
	[ "\$1" = -o ] && echo built >"\$2" && chmod +x "\$2" ;;
esac
EOF
	chmod +x "$1/bin/go"
}
fake_go "$T/old" go1.19.8
fake_go "$T/new" go1.99.0

# The fake toolchain zip, made with node's zlib (no zip command needed): the fake go, a
# tool, the standard library's _go.mod, every file stored with mode 0644 (a module zip
# need not keep execute bits; .ci/go sets them, as cmd/go does).
fake_go "$T/zipsrc" "$ver"
mkdir -p "$T/zipsrc/pkg/tool/${os}_$arch" "$T/zipsrc/src"
echo "fake compile" >"$T/zipsrc/pkg/tool/${os}_$arch/compile"
printf 'module std\n' >"$T/zipsrc/src/_go.mod"
mkdir -p "$T/proxy/golang.org/toolchain/@v"
cat >"$T/zip.js" <<'EOF'
// node zip.js DIR PREFIX OUT: a zip of DIR's files named PREFIX/path, stored, mode 0644.
const fs = require('fs'), path = require('path');
const [dir, prefix, out] = process.argv.slice(2);
const table = Array.from({ length: 256 }, (_, n) => {
	for (let k = 0; k < 8; k++) n = n & 1 ? 0xedb88320 ^ (n >>> 1) : n >>> 1;
	return n >>> 0;
});
const crc = (b) => { let c = ~0; for (const x of b) c = table[(c ^ x) & 0xff] ^ (c >>> 8); return ~c >>> 0; };
const files = [];
const walk = (d) => fs.readdirSync(d).sort().forEach((f) => {
	const p = path.join(d, f);
	fs.statSync(p).isDirectory() ? walk(p) : files.push(p);
});
walk(dir);
const parts = [], central = [];
let off = 0;
for (const f of files) {
	const name = Buffer.from(prefix + '/' + path.relative(dir, f)), data = fs.readFileSync(f), c = crc(data);
	const h = Buffer.alloc(30);
	h.writeUInt32LE(0x04034b50, 0); h.writeUInt16LE(20, 4); h.writeUInt32LE(c, 14);
	h.writeUInt32LE(data.length, 18); h.writeUInt32LE(data.length, 22); h.writeUInt16LE(name.length, 26);
	const e = Buffer.alloc(46);
	e.writeUInt32LE(0x02014b50, 0); e.writeUInt16LE(0x0314, 4); e.writeUInt16LE(20, 6);
	e.writeUInt32LE(c, 16); e.writeUInt32LE(data.length, 20); e.writeUInt32LE(data.length, 24);
	e.writeUInt16LE(name.length, 28); e.writeUInt32LE((0o100644 << 16) >>> 0, 38); e.writeUInt32LE(off, 42);
	parts.push(h, name, data); central.push(e, name);
	off += h.length + name.length + data.length;
}
const cd = Buffer.concat(central), end = Buffer.alloc(22);
end.writeUInt32LE(0x06054b50, 0); end.writeUInt16LE(files.length, 8); end.writeUInt16LE(files.length, 10);
end.writeUInt32LE(cd.length, 12); end.writeUInt32LE(off, 16);
fs.writeFileSync(out, Buffer.concat([...parts, cd, end]));
EOF
zip=$T/proxy/golang.org/toolchain/@v/$mod.zip
node "$T/zip.js" "$T/zipsrc" "golang.org/toolchain@$mod" "$zip" || bad "the fake zip was not made"
sum=$(sha256sum "$zip" | cut -d' ' -f1)

# The fake proxy: serves $T/proxy, logs every path asked to $T/proxy.log.
cat >"$T/proxy.js" <<'EOF'
const fs = require('fs'), http = require('http'), path = require('path');
const [root, log, portFile] = process.argv.slice(2);
http.createServer((q, r) => {
	fs.appendFileSync(log, q.url + '\n');
	fs.readFile(path.join(root, decodeURIComponent(q.url)), (err, b) => {
		if (err) { r.writeHead(404); r.end('not found\n'); } else { r.end(b); }
	});
}).listen(0, '127.0.0.1', function () { fs.writeFileSync(portFile, String(this.address().port)); });
EOF
: >"$T/proxy.log"
node "$T/proxy.js" "$T/proxy" "$T/proxy.log" "$T/port" &
srv=$!
eventually 10 test -s "$T/port" || bad "the fake proxy did not start"
PROXY=http://127.0.0.1:$(cat "$T/port" 2>/dev/null)

# pin SHA256: the scratch tree's .ci/go.pin, the real version pinned to SHA256 here.
pin() { printf 'version %s\nsha256 %s-%s %s\n' "$ver" "$os" "$arch" "$1" >"$R/.ci/go.pin"; }
# run GO [--check]: the tree's .ci/go with the machine's Go named GO ("-": GO unset, go
# looked for on PATH), PATH=$TOOLS, GOPROXY=$GP; sets RC, output in $T/out (the go) and $T/err.
GP=$PROXY,direct
run() {
	rgo=$1
	shift
	: >"$T/proxy.log"
	if [ "$rgo" = - ]; then
		env -i PATH="$TOOLS" HOME="$T/home" XDG_CACHE_HOME="$T/cache" GOPROXY="$GP" \
			sh "$R/.ci/go" "$@" >"$T/out" 2>"$T/err"
	else
		env -i PATH="$TOOLS" HOME="$T/home" XDG_CACHE_HOME="$T/cache" GOPROXY="$GP" GO="$rgo" \
			sh "$R/.ci/go" "$@" >"$T/out" 2>"$T/err"
	fi
	RC=$?
}
CACHED=$T/cache/gpu-admission/$ver

# --check on a machine with no Go: named, with make deps, nothing downloaded.
pin "$sum"
run "$T/none/go" --check
equals "$RC" 1 "--check with no Go fails"
has "$T/err" "make deps    installs $ver from the Go module proxy" "--check names make deps"
equals "$(wc -l <"$T/proxy.log")" 0 "--check downloads nothing"

# A wrong hash: refused, said so, nothing left in the cache.
pin 0000000000000000000000000000000000000000000000000000000000000000
run "$T/none/go"
equals "$RC" 1 "a zip whose SHA-256 is not the pinned one is refused"
has "$T/err" "refused $PROXY/golang.org/toolchain/@v/$mod.zip: its SHA-256 is $sum, but .ci/go.pin pins 0000" \
	"the refusal names the URL and both hashes"
has "$T/err" "nothing installed" "the refusal says nothing was installed"
equals "$(cat "$T/out")" "" "no go is printed"
equals "$(find "$T/cache" -mindepth 1 2>/dev/null | wc -l)" 0 "nothing is left in the cache"

# A zip the proxy does not have (404): the download fails, nothing is left.
GP=$PROXY/nothing-here
run "$T/none/go"
GP=$PROXY,direct
equals "$RC" 1 "a download that fails fails"
has "$T/err" "the download of $PROXY/nothing-here/golang.org/toolchain/@v/$mod.zip failed" "... naming the URL"
equals "$(find "$T/cache" -mindepth 1 2>/dev/null | wc -l)" 0 "... and leaves nothing"

# GOPROXY with no URL before direct or off: nowhere to download from, said so.
for p in direct off "direct,$PROXY" "off|$PROXY"; do
	GP=$p
	run "$T/none/go"
	equals "$RC" 1 "GOPROXY=$p: no download"
	has "$T/err" "names no proxy before direct or off" "GOPROXY=$p is said to name no proxy"
	equals "$(wc -l <"$T/proxy.log")" 0 "GOPROXY=$p: nothing asked of the proxy"
done
GP=$PROXY,direct

# The right hash, a machine Go too old: downloaded, verified, unpacked, and printed.
pin "$sum"
run "$T/old/bin/go"
equals "$RC" 0 "the pinned zip is installed"
[ "$RC" = 0 ] || indent "$T/err"
equals "$(cat "$T/out")" "$CACHED/bin/go" "the installed go is printed"
has "$T/err" "$T/old/bin/go (go1.19.8)" "the machine's Go too old is named"
has "$T/proxy.log" "/golang.org/toolchain/@v/$mod.zip" "the module proxy's toolchain zip is the one asked for"
check "bin/go is executable (the zip kept no mode)" test -x "$CACHED/bin/go"
check "pkg/tool is executable" test -x "$CACHED/pkg/tool/${os}_$arch/compile"
check "src/_go.mod is copied to src/go.mod, as cmd/go does" test -f "$CACHED/src/go.mod"
equals "$(find "$T/cache/gpu-admission" -mindepth 1 -maxdepth 1 | wc -l)" 1 "only the toolchain is left in the cache"

# Installed: found again, nothing downloaded; --check finds it too.
run "$T/none/go"
equals "$RC:$(cat "$T/out")" "0:$CACHED/bin/go" "a second run uses the cached toolchain"
equals "$(wc -l <"$T/proxy.log")" 0 "... and downloads nothing"
run "$T/none/go" --check
equals "$RC:$(cat "$T/out")" "0:$CACHED/bin/go" "--check finds the cached toolchain"

# ... and test/cluster/build.sh builds with it: GOTOOLCHAIN=local, no GOROOT.
: >"$T/go.log"
env -i PATH="$TOOLS" HOME="$T/home" XDG_CACHE_HOME="$T/cache" GO="$T/none/go" GOROOT=/usr/lib/go-1.19 \
	sh "$R/test/cluster/build.sh" >"$T/build.out" 2>&1
if [ "$?" = 0 ]; then ok; else bad "test/cluster/build.sh builds etcd with the cached toolchain"; indent "$T/build.out"; fi
has "$T/go.log" "$CACHED/bin/go build" "build.sh runs the cached go"
has "$T/go.log" "GOTOOLCHAIN=local GOROOT=[]" "... with GOTOOLCHAIN=local and no GOROOT"
has "$T/go.log" "src/go.mod present" "... whose standard library has its go.mod"
check "build.sh's etcd is there" test -x "$R/build/cluster/bin/etcd"

# A machine Go new enough: used, nothing downloaded, named by GO or found on PATH.
rm -rf "$T/cache"
run "$T/new/bin/go"
equals "$RC:$(cat "$T/out")" "0:$T/new/bin/go" "a machine Go new enough (GO) is used"
equals "$(wc -l <"$T/proxy.log")" 0 "... and nothing is downloaded"
check "... nor installed" test ! -e "$CACHED"
TOOLS=$T/tools:$T/new/bin
run -
TOOLS=$T/tools
equals "$RC:$(cat "$T/out")" "0:$T/new/bin/go" "a go new enough on PATH is used"
equals "$(wc -l <"$T/proxy.log")" 0 "... and nothing is downloaded"

# The scripts the control plane's tests run find Go through .ci/go alone: a machine with
# none but the pinned toolchain (~/.cache/gpu-admission) has no go on PATH and no
# /usr/local/go, where `command -v go || echo /usr/local/go/bin/go` finds nothing
# (scenario 85 failed so on a fresh Debian 12 with the toolchain of .ci/go).
git grep -n -E 'command -v go([^a-z_-]|$)|/usr/local/go/bin/go' -- test Makefile ':!test/lint/go.sh' >"$T/selfgo" 2>&1
equals "$(cat "$T/selfgo")" "" "no test script finds go but through .ci/go"

# The real pin: one hash for each platform, and a version every go.mod accepts.
awk '$1 == "sha256" && (length($3) != 64 || $3 !~ /^[0-9a-f]+$/) { bad = 1 } END { exit bad }' .ci/go.pin && ok ||
	bad ".ci/go.pin: a sha256 line without 64 hex digits"
grep -q "^sha256 linux-amd64 " .ci/go.pin && grep -q "^sha256 linux-arm64 " .ci/go.pin && ok ||
	bad ".ci/go.pin pins linux-amd64 and linux-arm64"

finish
