#!/bin/sh
# The Debian package (label install; CI runs as root on Debian 12): cpack builds it; its Depends are
# the packages of every shared library the binary needs (dpkg-shlibdeps); it holds the binary, man
# pages, completions, unit and conffile; `dpkg -i` installs it, the installed binary runs the
# README demo on samples/bench-svm (the same report as the build's binary), `man` finds and renders
# every page warning-free, bash-completion's loader loads the completion, systemd-analyze verify
# accepts the installed unit; then `dpkg --purge` restores the machine (checked: no file left).
# Usage: deb_test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "dpkg -i needs root (CI runs as root; locally: sudo ctest -R install.deb)"
if dpkg-query -W -f='${Status}' exitscope 2>/dev/null | grep -q installed; then
  fail "an exitscope package is installed already; this test installs and purges its own (dpkg --purge exitscope)"
fi
tmp=$(mktemp -d)
installed=0
cleanup() {
  if [ $installed = 1 ]; then dpkg --purge exitscope >"$tmp/purge.log" 2>&1 || cat "$tmp/purge.log"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

cpack --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/pkg/exitscope_*.deb)
echo "built $(basename "$deb")"
dpkg-deb -f "$deb" Depends >"$tmp/depends"
echo "Depends: $(cat "$tmp/depends")"
# Each library the binary links (its NEEDED entries, resolved by the loader) or loads at run time
# (dlopened-libraries.txt, written by the build: serve's HTTP library) comes from a package that
# Depends names.
[ -s "$build/dlopened-libraries.txt" ] || fail "$build/dlopened-libraries.txt is missing or empty"
for lib in $(readelf -d "$build/exitscope" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p') \
           $(cat "$build/dlopened-libraries.txt"); do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
  [ -n "$path" ] || fail "cannot resolve $lib"
  pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1) ||
    pkg=$(dpkg -S "$path" | head -1 | cut -d: -f1)
  tr ',' '\n' <"$tmp/depends" | grep -q "^ *$pkg\( \|$\)" || fail "$lib is in $pkg, which Depends does not name"
done
dpkg-deb -c "$deb" >"$tmp/contents"
for f in ./usr/bin/exitscope ./usr/share/man/man1/exitscope.1.gz ./usr/share/bash-completion/completions/exitscope \
         ./usr/lib/systemd/system/exitscope.service ./etc/default/exitscope; do
  grep -q " $f\$" "$tmp/contents" || fail "$f not in the package"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/default/exitscope || fail "no conffile"

installed=1
dpkg -i "$deb" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i"; }
[ "$(command -v exitscope)" = /usr/bin/exitscope ] || fail "exitscope is not /usr/bin/exitscope on PATH"
/usr/bin/exitscope --version
# The README demo (scripts/demo.sh) with the installed binary.
(cd "$src" && /usr/bin/exitscope report samples/bench-svm/trace.dat) >"$tmp/demo.txt" || fail "the demo failed"
(cd "$src" && "$build/exitscope" report samples/bench-svm/trace.dat) >"$tmp/demo-build.txt"
grep -q cpuid "$tmp/demo.txt" || fail "the demo's report names no cpuid exits: $(head -5 "$tmp/demo.txt")"
cmp -s "$tmp/demo.txt" "$tmp/demo-build.txt" || fail "installed and built binaries report differently"
# man finds every page by name in the installed tree and renders it warning-free.
for page in $(dpkg -L exitscope | sed -n 's|^/usr/share/man/man1/\(.*\)\.1\.gz$|\1|p'); do
  MANWIDTH=80 man --warnings "$page" >"$tmp/page.txt" 2>"$tmp/page.err" || fail "man $page"
  [ ! -s "$tmp/page.err" ] || fail "man $page: $(cat "$tmp/page.err")"
  grep -q "EXIT STATUS" "$tmp/page.txt" || fail "man $page has no EXIT STATUS"
done
# bash-completion loads the file on demand, as an interactive shell does on the first <Tab>.
bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader exitscope; complete -p exitscope' \
  >"$tmp/complete.txt" 2>&1 || fail "bash-completion does not load it: $(cat "$tmp/complete.txt")"
grep -q "_exitscope exitscope" "$tmp/complete.txt" || fail "$(cat "$tmp/complete.txt")"
bash "$src/tests/install/completion_test.sh" /usr/share/bash-completion/completions
SYSTEMD_LOG_LEVEL=notice systemd-analyze verify /usr/lib/systemd/system/exitscope.service >"$tmp/verify.log" 2>&1 ||
  { cat "$tmp/verify.log"; fail "systemd-analyze verify"; }
if grep -v '^$' "$tmp/verify.log"; then fail "systemd-analyze verify printed warnings"; fi

dpkg -L exitscope >"$tmp/files"
dpkg --purge exitscope >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; fail "dpkg --purge"; }
installed=0
if dpkg-query -W -f='${Status}' exitscope 2>/dev/null | grep -q installed; then fail "still installed after purge"; fi
while read -r f; do
  [ -d "$f" ] || [ ! -e "$f" ] || fail "$f left after dpkg --purge"
done <"$tmp/files"
echo "ok: package built, installed, run, purged"
