#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, address and undefined sanitizers) in
# build-fuzz/ and runs them. See fuzz/README.md.
#   scripts/fuzz.sh replay                 run every target once over its seeds
#                                          and its findings (what CI does)
#   scripts/fuzz.sh run SECONDS [TARGET]   fuzz TARGET for SECONDS (default:
#                                          every target, one after another,
#                                          SECONDS each); a target's corpus
#                                          grows in build-fuzz/corpus/TARGET,
#                                          crashes land in build-fuzz/artifacts/TARGET
#   scripts/fuzz.sh selftest               show that the harness still reports
#                                          a real leak (fuzz/selftest.sh)
# The memory limits and the sanitizer's options are fuzz/with_limits.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh clang-14 libclang-rt-14-dev
build_dir=build-fuzz
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSPRINTRT_FUZZ=ON -DSPRINTRT_SANITIZE=address,undefined -DSPRINTRT_BUILD_TESTS=OFF >/dev/null
fi
build() {
  cmake --build "$build_dir" -j "${JOBS:-2}" --target "$@"
}
usage="usage: scripts/fuzz.sh [replay | run SECONDS [TARGET] | selftest]"
case "${1:-replay}" in
  replay)
    build fuzz_replay
    ;;
  run)
    seconds=${2:?$usage}
    if [ -n "${3:-}" ]; then
      targets=("$3")
      build "$3" "$3_seeds"
    else
      # Builds them all first (configuring again if CMakeLists changed),
      # which writes their list.
      build fuzz_all
      mapfile -t targets <"$build_dir/fuzz/targets.txt"
    fi
    for target in "${targets[@]}"; do
      corpus="$build_dir/corpus/$target"
      artifacts="$build_dir/artifacts/$target"
      mkdir -p "$corpus" "$artifacts"
      # New inputs go to the first directory; the others are only read.
      inputs=("$corpus" "$build_dir/fuzz/seeds/$target")
      [ -d "fuzz/findings/$target" ] && inputs+=("fuzz/findings/$target")
      flags=(-max_len=65536 -max_total_time="$seconds" -print_final_stats=1
             -artifact_prefix="$artifacts/")
      [ -f "fuzz/$target.dict" ] && flags+=(-dict="fuzz/$target.dict")
      echo "== $target: $seconds s"
      fuzz/with_limits.sh "$build_dir/fuzz/$target" "${flags[@]}" "${inputs[@]}"
    done
    ;;
  selftest)
    build fuzz_selftest
    ;;
  *)
    echo "$usage" >&2
    exit 2
    ;;
esac
