#!/bin/sh
# `cmake --install` with DESTDIR (label install): everything lands under DESTDIR and nowhere else,
# at the FHS places for prefix /usr (config in /etc) and under the prefix for any other; the unit
# names the installed binary and defaults file; systemd-analyze verify accepts the unit.
# Usage: destdir_test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmds=$("$build/exitscope" --help | sed -n '/^commands:/,/^$/p' | awk 'NF && !/commands:/ {print $1}')

check_tree() {  # ROOT PREFIX ETC
  root=$1 prefix=$2 etc=$3
  DESTDIR=$root cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "cmake --install --prefix $prefix"; }
  for f in "$prefix/bin/exitscope" "$prefix/share/man/man1/exitscope.1.gz" \
           "$prefix/share/bash-completion/completions/exitscope" "$prefix/share/zsh/vendor-completions/_exitscope" \
           "$prefix/share/doc/exitscope/README.md" "$prefix/lib/systemd/system/exitscope.service" \
           "$etc/default/exitscope"; do
    [ -f "$root$f" ] || fail "$root$f not installed"
  done
  for c in $cmds; do
    [ -f "$root$prefix/share/man/man1/exitscope-$c.1.gz" ] || fail "no man page for $c under $root"
  done
  if [ -d "$src/deploy/prometheus" ]; then
    [ -d "$root$prefix/share/exitscope/prometheus" ] || fail "deploy/prometheus not installed"
  fi
  # The manifest (paths without DESTDIR) and the files under DESTDIR are the same list: each
  # installed file went under DESTDIR, none to the real /usr or /etc.
  sort "$build/install_manifest.txt" >"$tmp/manifest"
  (cd "$root" && find . -type f | sed 's|^\.||' | sort) >"$tmp/found"
  diff "$tmp/manifest" "$tmp/found" || fail "install manifest and DESTDIR=$root differ"
  unit=$root$prefix/lib/systemd/system/exitscope.service
  grep -qx "ExecStart=$prefix/bin/exitscope serve \$EXITSCOPE_SERVE_OPTS" "$unit" || fail "$unit: $(grep ExecStart= "$unit")"
  grep -qx "EnvironmentFile=-$etc/default/exitscope" "$unit" || fail "$unit: $(grep EnvironmentFile "$unit")"
  grep -q '^EXITSCOPE_SERVE_OPTS="--listen 127.0.0.1:' "$root$etc/default/exitscope" || fail "the defaults do not listen on loopback"
  "$root$prefix/bin/exitscope" --version >/dev/null || fail "the installed binary does not run"
  gzip -t "$root$prefix/share/man/man1/exitscope.1.gz" || fail "man page not gzip"
}
check_tree "$tmp/usr-root" /usr /etc
check_tree "$tmp/opt-root" /opt/exitscope /opt/exitscope/etc

# systemd-analyze verify: the unit as installed, its ExecStart binary (which verify requires to exist)
# pointed at the staged one, and the man pages of its Documentation= looked up in the staged tree.
mkdir "$tmp/units"
sed "s|/usr/bin/exitscope|$tmp/usr-root/usr/bin/exitscope|g" "$tmp/usr-root/usr/lib/systemd/system/exitscope.service" \
  >"$tmp/units/exitscope.service"
MANPATH=$tmp/usr-root/usr/share/man SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$tmp/units/exitscope.service" >"$tmp/verify.log" 2>&1 ||
  { cat "$tmp/verify.log"; fail "systemd-analyze verify"; }
if grep -v '^$' "$tmp/verify.log"; then fail "systemd-analyze verify printed warnings"; fi
echo "ok: DESTDIR install and unit"
