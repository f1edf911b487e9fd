#!/usr/bin/env bash
# Installs every Debian package exitscope needs to build, test, benchmark and run its real-KVM-host
# harness. Idempotent; run as root (or with sudo) on Debian 12.
#   scripts/install-deps.sh          build + tests + harness
#   scripts/install-deps.sh --build  build + unit tests only (no QEMU/kernel)
set -euo pipefail
build_pkgs=(
  g++ cmake make pkg-config git
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  zlib1g-dev libzstd-dev libelf-dev
  libdeflate-dev                 # zlib trace.dat chunks: whole-buffer inflate (src/sources/tracedat/decompressor.cc)
  libcli11-dev libfmt-dev nlohmann-json3-dev
  clang libclang-rt-14-dev       # libFuzzer targets and ASan/UBSan
  clang-format                   # scripts/check_format.sh: the one layout (.clang-format)
  trace-cmd linux-perf           # peers used as oracles by tests and benchmarks
  time python3                   # bench/compare_peers.sh: GNU time (peak RSS), perfdata_scale.py
  # install tests (issue 20, cmake/install.cmake): the .deb's dependencies (dpkg-shlibdeps), man pages
  # rendered with warnings on, the completions loaded, the exporter's unit checked
  dpkg-dev binutils groff-base man-db bash-completion zsh systemd
  # exitscope serve: HTTP server (libmicrohttpd; why not cpp-httplib: src/sinks/metrics_http_server.h);
  # promtool and a real Prometheus check the exposition, deploy/prometheus/ and a scrape end to end
  libmicrohttpd-dev prometheus
  # top/serve --mode bpf, bench --observe bpf (issue 16, cmake/bpf.cmake): libbpf (static archive
  # linked in, so the kvmhost guest needs no .so), bpftool's skeleton generator; clang -target bpf above
  libbpf-dev bpftool
)
harness_pkgs=(
  qemu-system-x86 linux-image-amd64 busybox-static cpio kmod gzip
  python3 bc                     # kvmhost checks (tools/kvmhost/tests/check_suite.py), timings
  procps                         # pgrep: run.sh stops QEMU under timeout(1)
)
# The arm64 KVM host (tools/kvmhost-arm64/, label kvmhost-arm64): QEMU's aarch64 system emulator and
# Debian's arm64 cross toolchain (exitscope and the guest VMM are cross-built for the inner host).
# The arm64 kernel, busybox, trace-cmd and the libraries exitscope links are arm64 .debs fetched by
# tools/kvmhost-arm64/arm64-debs.sh through a private APT configuration (the host's dpkg is untouched).
harness_arm64_pkgs=(
  qemu-system-arm crossbuild-essential-arm64 file
  debian-archive-keyring         # Signed-By of the private arm64 APT sources
)
# Browser checks of `report --html` and `timeline` (CTest label browser, tests/browser/): headless
# Chromium opens the page; node runs the checks and DevTools' trace engine (npm, pinned in
# tests/browser/package-lock.json) loads the timeline. npm comes with nodesource's nodejs, else apart.
browser_pkgs=(
  chromium fonts-dejavu-core
  nodejs
)
pkgs=("${build_pkgs[@]}" "${browser_pkgs[@]}")
[ "${1:-}" = "--build" ] || pkgs+=("${harness_pkgs[@]}" "${harness_arm64_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
command -v npm >/dev/null || missing+=(npm)
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The browser checks' node modules, at the versions of the lock file (tests/browser/node_modules).
browser_dir="$(dirname "$0")/../tests/browser"
if ! cmp -s "$browser_dir/package-lock.json" "$browser_dir/node_modules/.exitscope-lock.json" 2>/dev/null; then
  npm ci --prefix "$browser_dir" --no-audit --no-fund --loglevel=error
  cp "$browser_dir/package-lock.json" "$browser_dir/node_modules/.exitscope-lock.json"
fi
