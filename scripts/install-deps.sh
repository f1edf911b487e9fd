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
  libcli11-dev libfmt-dev nlohmann-json3-dev
  clang libclang-rt-14-dev       # libFuzzer targets and ASan/UBSan
  trace-cmd linux-perf           # peers used as oracles by tests and benchmarks
  time python3                   # bench/compare_peers.sh: GNU time (peak RSS), perfdata_scale.py
  # exitscope serve: HTTP server (libmicrohttpd; why not cpp-httplib: src/sinks/metrics_http_server.h);
  # promtool and a real Prometheus check the exposition, deploy/prometheus/ and a scrape end to end
  libmicrohttpd-dev prometheus
)
harness_pkgs=(
  qemu-system-x86 linux-image-amd64 busybox-static cpio kmod gzip
  python3 bc                     # kvmhost checks (tools/kvmhost/tests/check_suite.py), timings
  procps                         # pgrep: run.sh stops QEMU under timeout(1)
)
pkgs=("${build_pkgs[@]}")
[ "${1:-}" = "--build" ] || pkgs+=("${harness_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
