#!/usr/bin/env bash
# The `pip install` path, as a user takes it: builds sprintrt's wheel with
# pip (CMake against the venv's interpreter, offline), installs it into a
# fresh venv that sees the system's NumPy and PyTorch (sprintrt itself must
# come from the wheel), and, outside the source tree, runs a batch and an
# FSA export (scripts/wheel_check.py) and the PyTorch example
# (python/examples/fullsum_training.py, --short) with the installed package.
#   PYTHON=/path/to/python3 scripts/test-wheel.sh   (default /usr/bin/python3)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-/usr/bin/python3}"
"$root/scripts/setup.sh" python3-venv python3-pip python3-setuptools
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "== a fresh venv ($python, with the system's site packages for NumPy and PyTorch)"
"$python" -m venv --system-site-packages "$work/venv"
venv_python="$work/venv/bin/python"
# A wheel packs setuptools' build-wheel/lib* as it finds it: start it afresh,
# so that nothing removed from the package is shipped from an earlier build.
rm -rf "$root"/build-wheel/lib.*
echo "== pip wheel (the build takes minutes: CMake builds the extension and the programs)"
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$venv_python" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$work/wheels" "$root"
echo "== pip install into the venv"
"$venv_python" -m pip install --no-index --no-build-isolation "$work"/wheels/sprintrt-*.whl
cd "$work"
echo "== a batch and an FSA export from the installed package"
env -u PYTHONPATH -u SPRINTRT_CONTROL_DIR "$venv_python" "$root/scripts/wheel_check.py" \
  "$work/venv"
echo "== the installed commands"
"$work/venv/bin/sprintrt" doctor --list-options > /dev/null
"$work/venv/bin/sprint-sim" --help > /dev/null
echo "== the PyTorch example with the installed package"
cp "$root/python/examples/fullsum_training.py" "$work/"
env -u PYTHONPATH -u SPRINTRT_SPRINT_SIM "$venv_python" "$work/fullsum_training.py" --short
echo "== the wheel works"
