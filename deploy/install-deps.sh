#!/usr/bin/env bash
# Installs the Debian 12 packages fieldbrain builds and tests with, only those that are missing.
# Idempotent; uses sudo only when not root. The CUDA toolkit is not a Debian package: when
# /usr/local/cuda/bin/nvcc exists the build adds the CUDA engine, otherwise it is CPU-only.
# --bench adds what only `make bench` uses: PyTorch, for the peer the CPU engine is measured
# against (tests/bench/cpu_vs_torch.py).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libssl-dev openssl
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus-cpp-dev libkissfft-dev
  python3-grpcio python3-grpc-tools python3-protobuf python3-numpy
  libgpiod-dev
  clang libfuzzer-14-dev
  nginx-light prometheus python3-yaml
  libboost-context1.81-dev
)
[ "${1:-}" = --bench ] && packages+=(python3-torch)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "install-deps: all ${#packages[@]} packages present"; exit 0; }

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

# nginx and Prometheus are test tools here (the failover and the dashboard tests start their own
# instances on free ports): the services their packages start on a systemd machine are stopped and
# disabled again, only when this script installed them.
for svc in nginx prometheus; do
  pkg=$svc; [ "$svc" = nginx ] && pkg=nginx-light
  if [[ " ${missing[*]} " == *" $pkg "* ]] && command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    echo "install-deps: disabling the $svc service (fieldbrain's tests run their own)"
    $sudo systemctl disable --now "$svc" >/dev/null 2>&1 || true
  fi
done
