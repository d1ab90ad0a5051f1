#!/usr/bin/env bash
# The `pip install` path, as a user takes it: builds sprintrt's wheel with
# pip (CMake against the venv's interpreter, offline), installs it into a
# fresh venv that sees the system's NumPy and PyTorch (sprintrt itself must
# come from the wheel), and, outside the source tree, runs a batch and an
# FSA export (scripts/wheel_check.py), the installed commands (--version,
# the README's first run: `sprintrt first-run`, then the doctor command it
# prints) and the PyTorch example (python/examples/fullsum_training.py,
# --short) with the installed package. The build must leave nothing in the
# checkout.
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
echo "== pip wheel (the build takes minutes: CMake builds the extension and the programs)"
# The files git does not track in the checkout (untracked or ignored), before
# and after: the build leaves nothing there.
untracked() {
  git -C "$root" status --porcelain --ignored --untracked-files=all | { grep -E '^(\?\?|!!)' || true; } | sort
}
before="$(untracked)"
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$venv_python" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$work/wheels" "$root"
echo "== the wheel was built in $((SECONDS - start)) s"
left="$(comm -13 <(echo "$before") <(untracked))"
if [ -n "$left" ]; then
  echo "test-wheel: the build left files in the checkout:" >&2
  echo "$left" >&2
  exit 1
fi
echo "== pip install into the venv"
"$venv_python" -m pip install --no-index --no-build-isolation "$work"/wheels/sprintrt-*.whl
cd "$work"
echo "== a batch and an FSA export from the installed package"
env -u PYTHONPATH -u SPRINTRT_CONTROL_DIR "$venv_python" "$root/scripts/wheel_check.py" \
  "$work/venv"
echo "== the installed commands, from outside the tree: --version, and the README's first run"
"$work/venv/bin/sprintrt" doctor --list-options > /dev/null
"$work/venv/bin/sprint-sim" --help > /dev/null
# same WHAT EXPECTED ACTUAL: fails, saying what differed, unless the two are equal.
same() {
  [ "$2" = "$3" ] || { echo "test-wheel: $1: expected '$2', got '$3'" >&2; exit 1; }
}
version="$("$venv_python" -c 'import sprintrt; print(sprintrt.__version__)')"
same "sprintrt --version" "sprintrt $version" "$("$work/venv/bin/sprintrt" --version)"
same "sprint-sim --version" "sprint-sim $version" "$("$work/venv/bin/sprint-sim" --version)"
(
  export PATH="$work/venv/bin:$PATH"
  mkdir "$work/first-run" && cd "$work/first-run"
  sprintrt first-run | tee first-run.out
  check="$(tail -n 1 first-run.out)"
  same "the check first-run prints" "  $work/venv/bin/sprintrt doctor --config sprintrt-first-run/sprint-sim.json --segment first/seg-1 --frames 20 --dim 10" "$check"
  $check | tee doctor.out
  grep -q "exit ok" doctor.out || { echo "test-wheel: the first run's doctor did not end with exit ok" >&2; exit 1; }
)
echo "== the PyTorch example with the installed package"
cp "$root/python/examples/fullsum_training.py" "$work/"
env -u PYTHONPATH -u SPRINTRT_SPRINT_SIM "$venv_python" "$work/fullsum_training.py" --short
echo "== the wheel works"
