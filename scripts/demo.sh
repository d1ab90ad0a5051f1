#!/usr/bin/env bash
# Builds the command-line tools and runs the built-in demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --target sprintrt sprint-sim
exec "${BUILD_DIR:-build}/tools/sprintrt/sprintrt" demo "$@"
