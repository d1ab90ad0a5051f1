#!/usr/bin/env bash
# Builds everything and runs the whole test suite through ctest, then prints
# the Python tests' one-line account of the PyTorch tests they skipped, if
# any (ctest shows a passing test's output only on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd "${BUILD_DIR:-build}"
rm -f python/python_tests.summary
status=0
ctest --output-on-failure -j "${JOBS:-2}" "$@" || status=$?
if [ -s python/python_tests.summary ]; then
  echo "python_tests: $(cat python/python_tests.summary)"
fi
exit $status
