#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, address and undefined sanitizers) in
# build-fuzz/ and runs them. See fuzz/README.md.
#   scripts/fuzz.sh replay        run once over the seeds and the committed
#                                 findings (what CI does)
#   scripts/fuzz.sh run SECONDS   fuzz for SECONDS; the corpus grows in
#                                 build-fuzz/corpus, crashes land in
#                                 build-fuzz/artifacts
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh clang-14 libclang-rt-14-dev
build_dir=build-fuzz
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSPRINTRT_FUZZ=ON -DSPRINTRT_SANITIZE=address,undefined -DSPRINTRT_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build_dir" -j "${JOBS:-2}" --target protocol_fuzzer
fuzzer="$build_dir/fuzz/protocol_fuzzer"
limits=(-rss_limit_mb=512 -malloc_limit_mb=256)
case "${1:-replay}" in
  replay)
    inputs=(tests/data/protocol-vectors)
    [ -d fuzz/findings ] && inputs+=(fuzz/findings)
    "$fuzzer" "${limits[@]}" -runs=0 "${inputs[@]}"
    ;;
  run)
    seconds=${2:?usage: scripts/fuzz.sh run SECONDS}
    mkdir -p "$build_dir/corpus" "$build_dir/artifacts"
    cp -n tests/data/protocol-vectors/*.bin fuzz/findings/* "$build_dir/corpus/" 2>/dev/null || true
    "$fuzzer" "${limits[@]}" -max_len=65536 -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$build_dir/artifacts/" "$build_dir/corpus"
    ;;
  *)
    echo "usage: scripts/fuzz.sh [replay | run SECONDS]" >&2
    exit 2
    ;;
esac
