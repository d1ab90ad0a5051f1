#!/usr/bin/env bash
# sprintrt against a real RASR (outside CI, which has no RASR):
#
#   scripts/rasr/test.sh RASR_OUT_DIR [RETURNN_SRC]
#
# RASR_OUT_DIR is what scripts/rasr/build.sh built into; RETURNN_SRC a
# RETURNN checkout (the directory holding the `returnn` package), for the
# comparisons with RETURNN's child module and pool. Builds sprintrt first
# (scripts/build.sh), then runs scripts/rasr/suite.py on a tiny set-up in a
# temporary directory, and its sMBR/MMI part through lattice-processor when
# build.sh built one; exits non-zero if any check failed.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 RASR_OUT_DIR [RETURNN_SRC]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rasr=$(cd "$1" && pwd)
nn_trainer="$rasr/src/src/Tools/NnTrainer/nn-trainer.linux-x86_64-standard"
librasr="$rasr/src/src/Tools/LibRASR/librasr.so"
for binary in "$nn_trainer" "$librasr"; do
  [ -e "$binary" ] || { echo "rasr: $binary is missing: run scripts/rasr/build.sh first" >&2; exit 1; }
done
lattice_processor="$rasr/src/src/Tools/LatticeProcessor/lattice-processor.linux-x86_64-standard"
lattice=()
if [ -e "$lattice_processor" ]; then
  lattice=(--lattice-processor "$lattice_processor")
fi
returnn=()
if [ $# -eq 2 ]; then
  returnn=(--returnn "$(cd "$2" && pwd)")
fi
"$root/scripts/build.sh" >/dev/null
build="$root/${BUILD_DIR:-build}"
# Debian's python3: the one RASR was built against, with numpy.
exec /usr/bin/python3 "$here/suite.py" --nn-trainer "$nn_trainer" --librasr "$librasr" \
  --sprintrt-build "$build" "${returnn[@]}" "${lattice[@]}"
