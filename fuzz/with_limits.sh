#!/usr/bin/env bash
# Runs a libFuzzer target with the harness's memory limits and sanitizer
# options: the one place that sets them, for scripts/fuzz.sh (run, replay,
# selftest) and for the CMake targets <target>_replay and fuzz_selftest.
#
#   fuzz/with_limits.sh FUZZER [libFuzzer flags and corpus directories...]
#
# Limits: an allocation the peer merely asks for must fail the run, not the
# machine, so one malloc may take 256 MB and the process 512 MB of RSS.
#
# AddressSanitizer keeps freed memory in a quarantine, unusable, to catch
# a use after free; by default 256 MB of it, which (with the allocator's
# per-size free lists and libFuzzer's corpus) outgrows the RSS limit in a
# long run that leaks nothing. 16 MB still holds what many inputs freed
# (scripts/fuzz.sh lets libFuzzer make inputs of at most 64 kB, and the
# decoders are linear in them), and leaves the RSS limit to memory that stays
# reachable, i.e. a real leak (fuzz/selftest.sh shows both).
#
# Precedence: the user's own settings win. ASAN_OPTIONS from the environment
# come after ours (the sanitizer takes the last value of an option), and
# libFuzzer flags given here come after the limits (libFuzzer takes the last
# value of a flag).
set -euo pipefail
fuzzer=${1:?usage: fuzz/with_limits.sh FUZZER [libFuzzer flags and directories...]}
shift
export ASAN_OPTIONS="quarantine_size_mb=16${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
exec "$fuzzer" -rss_limit_mb=512 -malloc_limit_mb=256 "$@"
