#!/bin/sh
# .ci/deps (make deps, and make test's first step) beside another apt-get. A loaded run
# of make test went red before its first test: podman's install (make image-test) was
# running, so man-db's status read "install ok triggers-pending" and counted as missing,
# and the apt-get that followed found dpkg's lock taken ("Could not get lock
# /var/lib/dpkg/lock-frontend"). The same happens beside unattended-upgrades.
# apt-get install waits for dpkg's locks when asked (DPkg::Lock::Timeout, apt.conf(5));
# apt-get update (apt 2.6, Debian 12) fails at once on /var/lib/apt/lists/lock whatever
# that timeout says (tried on the machine), so .ci/deps tries it again.
# Nothing here calls the real apt-get or dpkg-query: fakes stand first in PATH (sudo too,
# so that a run as a user does not reach the real one).
. test/check.lib

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/bin"
# dpkg-query -W -f=FMT PKG: the status of PKG from $T/status ("PKG STATUS..." lines),
# "install ok installed" for any other.
cat >"$T/bin/dpkg-query" <<'EOF'
#!/bin/sh
for p; do :; done
s=$(awk -v p="$p" '$1 == p { $1 = ""; sub(/^ /, ""); print; exit }' "$FAKE/status")
echo "${s:-install ok installed}"
EOF
# apt-get: logged; "update" fails on the lists lock while $FAKE/update-locked counts down;
# -s prints $FAKE/plan (apt-get's simulation lines); an install says it is done.
cat >"$T/bin/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >>"$FAKE/apt.log"
case " $* " in
*" -s "*)
	cat "$FAKE/plan" 2>/dev/null
	exit 0 ;;
*" update "*)
	n=$(cat "$FAKE/update-locked" 2>/dev/null || echo 0)
	if [ "$n" -gt 0 ]; then
		echo $((n - 1)) >"$FAKE/update-locked"
		echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2
		echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
		exit 100
	fi ;;
*" install "*)
	[ ! -e "$FAKE/install-fails" ] || { echo "E: Unable to locate package nosuch" >&2; exit 100; }
	echo "FAKE: installed" >&2 ;;
esac
exit 0
EOF
printf '#!/bin/sh\nexec "$@"\n' >"$T/bin/sudo"
printf '#!/bin/sh\nexit 0\n' >"$T/bin/node"
printf '#!/bin/sh\nexit 0\n' >"$T/bin/npm"
chmod +x "$T/bin/"*
export FAKE="$T"

# deps ARGS...: .ci/deps with the fakes; sets RC, output in $T/out.
deps() {
	: >"$T/apt.log"
	PATH="$T/bin:$PATH" DEPS_RETRY_SECONDS=0 sh .ci/deps "$@" >"$T/out" 2>&1
	RC=$?
}

# A package whose triggers wait (another install is running) is installed.
printf 'man-db install ok triggers-pending\njq install ok triggers-awaited\n' >"$T/status"
deps --check test
equals "$RC" 0 "--check test: triggers-pending and triggers-awaited count as installed"
[ "$RC" = 0 ] || indent "$T/out"

# A package only unpacked, or absent, is missing: named, and nothing installed.
printf 'wrk install ok unpacked\njq unknown ok not-installed\n' >"$T/status"
deps --check test
equals "$RC" 1 "--check test: an unpacked and an absent package are missing"
has "$T/out" "missing Debian packages (test): wrk jq" "--check names both"
equals "$(wc -l <"$T/apt.log")" 0 "--check runs no apt-get"

# The install waits for dpkg's locks; an update refused for the lists lock is tried again.
echo 2 >"$T/update-locked"
deps test
equals "$RC" 0 "test: installs beside another apt-get (its update refused twice for the lock)"
[ "$RC" = 0 ] || indent "$T/out"
equals "$(grep -c ' update' "$T/apt.log")" 3 "the update is tried until the lock is free"
has "$T/out" "waiting for the lock" "the wait is said"
grep ' install ' "$T/apt.log" | grep -v ' -s ' | grep -q 'DPkg::Lock::Timeout=' && ok ||
	{ bad "apt-get install waits for dpkg's locks (DPkg::Lock::Timeout)"; indent "$T/apt.log"; }
has "$T/apt.log" " wrk jq" "the missing packages are installed"

# Any other failure is not retried: it fails at once, with apt-get's message.
rm -f "$T/update-locked"
: >"$T/install-fails"
deps test
equals "$RC" 100 "an install that fails for another reason fails with apt-get's exit code"
equals "$(grep ' install ' "$T/apt.log" | grep -vc ' -s ')" 1 "... tried once"
has "$T/out" "Unable to locate package" "... with its message"
rm -f "$T/install-fails"

# make run's set (a Debian 12 without curl): curl is installed, and what apt-get will add and
# upgrade is said before it does, from its simulation; only the missing package is named to
# apt-get install, and nothing runs apt-get upgrade.
printf 'curl unknown ok not-installed\n' >"$T/status"
cat >"$T/plan" <<'EOF'
NOTE: This is only a simulation!
Inst libcurl4 [7.88.1-10+deb12u4] (7.88.1-10+deb12u12 Debian-Security:12/stable-security [amd64])
Inst curl (7.88.1-10+deb12u12 Debian-Security:12/stable-security [amd64])
Conf libcurl4 (7.88.1-10+deb12u12 Debian-Security:12/stable-security [amd64])
Conf curl (7.88.1-10+deb12u12 Debian-Security:12/stable-security [amd64])
EOF
deps run
equals "$RC" 0 "run: installs what is missing"
has "$T/out" "deps: missing Debian packages: curl; installing them" "run: names curl first"
has "$T/out" "deps: apt-get install will add: curl" "run: says what it adds"
has "$T/out" "deps: and upgrade, as those need them (nothing else is upgraded): libcurl4 7.88.1-10+deb12u4 -> 7.88.1-10+deb12u12" "run: says what it upgrades"
said=$(grep -n "will add" "$T/out" | cut -d: -f1); done_=$(grep -n "FAKE: installed" "$T/out" | cut -d: -f1)
[ -n "$said" ] && [ -n "$done_" ] && [ "$said" -lt "$done_" ] && ok || { bad "run: said before installed"; indent "$T/out"; }
grep ' install ' "$T/apt.log" | grep -v ' -s ' | grep -q -- '--no-install-recommends curl$' && ok ||
	{ bad "run: apt-get install names curl alone"; indent "$T/apt.log"; }
lacks "$T/apt.log" "upgrade" "run: no apt-get upgrade"
rm -f "$T/plan"
deps run
has "$T/out" "deps: no installed package is upgraded" "run: no upgrade said"

# The image's packages (make image-test) are asked the same way.
printf 'podman unknown ok not-installed\n' >"$T/status"
deps --check image
equals "$RC" 1 "--check image: podman missing"
has "$T/out" "missing Debian packages (image): podman" "--check image names it"

finish
