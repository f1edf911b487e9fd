#!/usr/bin/env bash
# arm64-debs.sh CACHE — fetches Debian's arm64 packages for the arm64 KVM host harness into CACHE and
# unpacks them, without touching the host's dpkg or APT state:
#   CACHE/apt/      a private APT configuration whose native architecture is arm64 (own sources, lists,
#                   cache and an empty dpkg status; the host's own archive URIs and keyring)
#   CACHE/debs/     the .debs (apt-get download), CACHE/packages.txt their exact versions
#   CACHE/kernel/   the newest linux-image-6.1.0-<abi>-arm64, unpacked (vmlinuz, modules)
#   CACHE/sysroot/  every other package unpacked with dpkg -x: the inner host's userland (busybox,
#                   trace-cmd and its libraries, the runtime libraries exitscope links) and the arm64
#                   -dev packages cross-building exitscope links against (tools/kvmhost-arm64/cross-build.sh)
# Idempotent: an up-to-date CACHE (same package list, stamp file) is left as it is (~1 s); a fresh one
# takes ~15-30 s. Needs the network path to Debian's archive that apt-get already uses.
set -euo pipefail
CACHE=${1:?usage: arm64-debs.sh CACHE}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
A=$CACHE/apt
SUITE=${SUITE:-bookworm}
# The userland of the inner host and what exitscope needs to build and run there. trace-cmd's library
# closure is listed by name (the recipe's `apt-cache depends --recurse` gave exactly these on bookworm).
PKGS=(busybox-static trace-cmd libtracecmd1 libtracefs1 libtraceevent1 libtraceevent1-plugin
      libc6 libzstd1 zlib1g libdeflate0 libelf1 libfmt9 libstdc++6 libgcc-s1
      libzstd-dev zlib1g-dev libdeflate-dev libelf-dev libfmt-dev nlohmann-json3-dev libcli11-dev
      libmicrohttpd12 libmicrohttpd-dev libgnutls30 libp11-kit0 libidn2-0 libunistring2 libtasn1-6
      libnettle8 libhogweed6 libgmp10 libffi8)
# (serve's libmicrohttpd12 and its closure by `apt-cache depends --recurse` on bookworm.)
STAMP="$SUITE ${PKGS[*]} v1"
if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$STAMP" ] && [ -d "$CACHE/sysroot" ] &&
   [ -d "$CACHE/kernel" ]; then
  echo "arm64-debs: cache up to date ($(wc -l < "$CACHE/packages.txt") packages)"
  exit 0
fi
rm -f "$CACHE/stamp"
SRC=/etc/apt/sources.list.d/debian.sources
mirror=$(awk '/^URIs:/{print $2}' "$SRC" 2>/dev/null | sed -n 1p)
security=$(awk '/^URIs:/{print $2}' "$SRC" 2>/dev/null | sed -n 2p)
[ -n "$mirror" ] || { echo "arm64-debs: error: no URIs in $SRC" >&2; exit 3; }
mkdir -p "$A"/{lists/partial,cache/archives/partial,etc/sources.list.d,etc/preferences.d,etc/apt.conf.d}
: > "$A/status"
{
  printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\n' "$mirror" "$SUITE" "$SUITE"
  printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
  if [ -n "$security" ]; then
    printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\n' "$security" "$SUITE"
    printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
  fi
} > "$A/etc/arm64.sources"
cat > "$A/apt.conf" <<EOF
Dir::State "$A";
Dir::State::Lists "$A/lists";
Dir::State::status "$A/status";
Dir::Cache "$A/cache";
Dir::Etc::sourcelist "$A/etc/arm64.sources";
Dir::Etc::sourceparts "$A/etc/sources.list.d";
Dir::Etc::preferences "$A/etc/preferences";
Dir::Etc::preferencesparts "$A/etc/preferences.d";
Dir::Etc::parts "$A/etc/apt.conf.d";
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
Acquire::Languages "none";
APT::Sandbox::User "root";
EOF
export APT_CONFIG=$A/apt.conf
apt-get update -qq
kpkg=$(apt-cache pkgnames linux-image-6.1.0- | grep -E '^linux-image-6\.1\.0-[0-9]+-arm64$' | sort -V | tail -1)
[ -n "$kpkg" ] || { echo "arm64-debs: error: no linux-image-6.1.0-*-arm64 in the arm64 lists" >&2; exit 3; }
rm -rf "$CACHE/debs"; mkdir -p "$CACHE/debs"
(cd "$CACHE/debs" && apt-get download -qq "$kpkg" "${PKGS[@]}")
for d in "$CACHE"/debs/*.deb; do dpkg-deb -f "$d" Package Version Architecture | paste -sd' '; done |
  sort > "$CACHE/packages.txt"
echo "${kpkg#linux-image-}" > "$CACHE/kernel.release"
rm -rf "$CACHE/kernel" "$CACHE/sysroot"
dpkg -x "$CACHE"/debs/"$kpkg"_*.deb "$CACHE/kernel"
for d in "$CACHE"/debs/*.deb; do
  case $d in */linux-image-*) continue ;; esac
  dpkg -x "$d" "$CACHE/sysroot"
done
echo "$STAMP" > "$CACHE/stamp"
echo "arm64-debs: $(wc -l < "$CACHE/packages.txt") packages, kernel $(cat "$CACHE/kernel.release")"
