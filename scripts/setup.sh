#!/usr/bin/env bash
# Installs the Debian 12 packages sprintrt builds with, and any packages named
# as arguments (scripts/fuzz.sh adds clang). Idempotent: when every package is
# present it prints nothing and does not touch apt.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  libcaf-dev libboost-dev libeigen3-dev libspdlog-dev
  catch2 libcli11-dev nlohmann-json3-dev
  libbenchmark-dev
  pybind11-dev python3-dev python3-numpy python3-pytest
  # An optimized BLAS for numpy and Debian's PyTorch, which otherwise run on
  # the reference BLAS (a [32, 162] x [162, 162] product 10x slower).
  libopenblas0-pthread
  bsdutils  # script(1): the tests give the CLI a terminal with it
  "$@"
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
