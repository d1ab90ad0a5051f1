#!/usr/bin/env bash
# The checks a developer runs before committing (CI runs them too, .ci/run):
# one function per section; the script exits non-zero if any section finds
# anything, after running them all.
#   scripts/lint.sh
# The tools are Debian's (scripts/setup.sh installs them).
set -uo pipefail
cd "$(dirname "$0")/.."

# The Python sources flake8 reads: the package, the child module, the
# examples, the tests and the scripts.
python_sources=(python/sprintrt python/child python/examples python/tests
                scripts/bench/*.py scripts/rasr/*.py scripts/wheel_check.py)

# Python: flake8 (style and pyflakes; configuration in .flake8) over every
# Python source, mypy (types; configuration in pyproject.toml) over the
# package, the child module and the examples.
lint_python() {
  scripts/setup.sh python3-flake8 mypy || return 1
  local status=0
  echo "-- flake8"
  /usr/bin/python3 -m flake8 "${python_sources[@]}" || status=1
  echo "-- mypy"
  mypy || status=1
  return $status
}

# C++: every tracked C++ file formatted as .clang-format says, and the
# layering without back-edges (cmake/check_layers.cmake).
lint_cpp() {
  scripts/setup.sh clang-format || return 1
  local status=0
  echo "-- clang-format"
  git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format --dry-run --Werror || status=1
  echo "-- layers"
  cmake -DSOURCE_DIR="$PWD" -P cmake/check_layers.cmake || status=1
  return $status
}

status=0
for section in lint_cpp lint_python; do
  echo "== ${section#lint_}"
  "$section" || { echo "== ${section#lint_}: findings above"; status=1; }
done
[ $status -eq 0 ] && echo "== lint passed"
exit $status
