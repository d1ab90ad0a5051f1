#!/usr/bin/env bash
# Configures (once) and builds sprintrt in build/ (Release). Extra arguments are
# passed to `cmake --build`, e.g. `scripts/build.sh --target sprintrt`.
# Environment: BUILD_DIR (default build), CMAKE_ARGS (extra configure flags).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=${BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" "$@"
