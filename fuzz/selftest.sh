#!/usr/bin/env bash
# The harness's self-test: runs fuzz/harness_selftest.cpp's modes through
# fuzz/with_limits.sh, each for a bounded number of inputs, and fails unless
# each ends as it must:
#   grow   memory that stays reachable: libFuzzer's RSS limit ends the run
#   leak   memory that nobody frees: LeakSanitizer reports it
#   churn  memory freed again: a clean run, whose peak RSS stays below a
#          quarter of the RSS limit (with AddressSanitizer's default
#          quarantine of 256 MB it would not)
#
#   fuzz/selftest.sh HARNESS_SELFTEST_BINARY
set -uo pipefail
fuzzer=${1:?usage: fuzz/selftest.sh HARNESS_SELFTEST_BINARY}
with_limits="$(dirname "$0")/with_limits.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log="$work/log"
failed=0

# Runs mode $1 with libFuzzer flags $2...; leaves its status in $status and
# its output in $log. `timeout` bounds a run that would not stop, and kills
# one that does not stop when asked (a process stopped under a tracer does
# not take SIGTERM).
run_mode() {
  local mode=$1
  shift
  SPRINTRT_FUZZ_SELFTEST=$mode timeout -k 5 60 "$with_limits" "$fuzzer" -print_final_stats=1 \
    -artifact_prefix="$work/" "$@" >"$log" 2>&1
  status=$?
}

# Reports how mode $1 ended: $2 says what happened, $3 is "ok" if that was
# what the mode must do.
verdict() {
  if [ "$3" = ok ]; then
    echo "selftest: $1: $2"
  else
    echo "selftest: $1: FAILED: $2; the run's last lines:"
    tail -n 20 "$log" | sed 's/^/    /'
    failed=1
  fi
}

# Without libFuzzer's leak checks between inputs: what grow keeps is no leak,
# and a check's stop-the-world could meet the RSS limit's exit and hang.
run_mode grow -runs=1000000 -max_total_time=30 -detect_leaks=0
if [ "$status" -ne 0 ] && grep -Eq 'ERROR: libFuzzer: out-of-memory \(used: [0-9]+Mb' "$log"; then
  verdict grow "the RSS limit ended the run ($(grep -Eo 'out-of-memory \(used: [0-9]+Mb[^)]*\)' "$log" | head -n 1), status $status)" ok
else
  verdict grow "expected libFuzzer's out-of-memory report, got status $status" failed
fi

run_mode leak -runs=1000
if [ "$status" -ne 0 ] && grep -q 'ERROR: LeakSanitizer: detected memory leaks' "$log"; then
  verdict leak "LeakSanitizer reported it ($(grep -m 1 '^SUMMARY' "$log"), status $status)" ok
else
  verdict leak "expected LeakSanitizer's report, got status $status" failed
fi

run_mode churn -runs=200
peak=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
if [ "$status" -eq 0 ] && [ -n "$peak" ] && [ "$peak" -lt 128 ]; then
  verdict churn "a clean run, peak RSS $peak MB" ok
else
  verdict churn "expected a clean run under 128 MB, got status $status, peak RSS ${peak:-unknown} MB" failed
fi

exit "$failed"
