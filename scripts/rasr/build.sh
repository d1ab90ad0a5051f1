#!/usr/bin/env bash
# Builds the parts of RASR that sprintrt talks to (nn-trainer and librasr)
# from the user's RASR git directory or source tree, at a commit that still
# has a CTC/full-sum training criterion and builds without ONNX Runtime:
#
#   scripts/rasr/build.sh RASR_GIT_OR_SOURCE_DIR OUT_DIR
#
# RASR_GIT_OR_SOURCE_DIR is a git directory (a clone, or a bare one) or an
# unpacked source tree; from a git directory the commit RASR_COMMIT
# (default b6ff1a89, 2025-04-04) is exported into OUT_DIR/src, a source tree
# is copied there as it is. Only the copy is configured: modules that need
# TensorFlow, OpenFst or FFmpeg, and the tests, are switched off, and only
# the tools sprintrt uses are built: NnTrainer and LibRASR (full-sum and
# automata), and for sequence-discriminative training LatticeProcessor with
# the tools that make its inputs (FeatureExtraction, AcousticModelTrainer,
# SpeechRecognizer, Flf, Archiver). Idempotent: a finished build is not
# repeated. Prints where the binaries are, as shell assignments
# (NN_TRAINER=..., LIBRASR=..., then one line per further tool) at its end.
#
# RASR's licence allows passing on only the unmodified whole: nothing of it
# (source, patches, binaries) belongs in sprintrt's repository.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 RASR_GIT_OR_SOURCE_DIR OUT_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
input=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
commit=${RASR_COMMIT:-b6ff1a89}
src="$out/src"
# The tools built, each as NAME=TOOL_DIR/binary: the variable the report
# prints, RASR's directory under src/Tools and the file it makes there.
binaries=(
  NN_TRAINER=NnTrainer/nn-trainer.linux-x86_64-standard
  LIBRASR=LibRASR/librasr.so
  LATTICE_PROCESSOR=LatticeProcessor/lattice-processor.linux-x86_64-standard
  FEATURE_EXTRACTION=FeatureExtraction/feature-extraction.linux-x86_64-standard
  ACOUSTIC_MODEL_TRAINER=AcousticModelTrainer/acoustic-model-trainer.linux-x86_64-standard
  ALLOPHONE_TOOL=AcousticModelTrainer/allophone-tool.linux-x86_64-standard
  SPEECH_RECOGNIZER=SpeechRecognizer/speech-recognizer.linux-x86_64-standard
  FLF_TOOL=Flf/flf-tool.linux-x86_64-standard
  ARCHIVER=Archiver/archiver.linux-x86_64-standard
)
tools="NnTrainer|LibRASR|LatticeProcessor|FeatureExtraction|AcousticModelTrainer|SpeechRecognizer|Flf|Archiver"

report() {
  local entry
  for entry in "${binaries[@]}"; do
    echo "${entry%%=*}=$src/src/Tools/${entry#*=}"
  done
}

all_built() {
  local entry
  for entry in "${binaries[@]}"; do
    [ -e "$src/src/Tools/${entry#*=}" ] || return 1
  done
}

if [ -f "$out/.built" ] && all_built; then
  echo "rasr: already built in $out ($(cat "$out/.built"))" >&2
  report
  exit 0
fi

# RASR's build needs these (and Debian's python3 with numpy and pybind11 for
# the Python modules).
"$here/../setup.sh" bison libxml2-dev libsndfile1-dev libflac-dev liblapack-dev libblas-dev \
  zlib1g-dev python3-dev python3-numpy pybind11-dev

if [ ! -f "$src/Modules.make" ]; then
  rm -rf "$src.tmp"
  mkdir -p "$src.tmp"
  if git --git-dir="$input" rev-parse --verify -q "$commit^{commit}" >/dev/null 2>&1; then
    git --git-dir="$input" archive "$commit" | tar -x -C "$src.tmp"
    origin="commit $(git --git-dir="$input" rev-parse "$commit")"
  elif git -C "$input" rev-parse --verify -q "$commit^{commit}" >/dev/null 2>&1; then
    git -C "$input" archive "$commit" | tar -x -C "$src.tmp"
    origin="commit $(git -C "$input" rev-parse "$commit")"
  elif [ -f "$input/Modules.make" ]; then
    cp -a "$input/." "$src.tmp/"
    origin="source tree $input"
  else
    echo "rasr: $input is neither a git directory with commit $commit nor a RASR source tree" \
      "(no Modules.make)" >&2
    exit 1
  fi
  # Modules this machine has no libraries for, and the tests.
  for module in MODULE_TENSORFLOW MODULE_LM_TFRNN MODULE_OPENFST MODULE_SEARCH_WFST \
    MODULE_AUDIO_FFMPEG MODULE_TEST; do
    sed -i "s/^MODULES *+= *$module\$/# MODULES += $module/" "$src.tmp/Modules.make"
  done
  echo "$origin" > "$src.tmp/.sprintrt-origin"
  mv "$src.tmp" "$src"
fi
# Only the tools sprintrt uses (on every run, so that a tree an earlier
# version of this script configured gains the tools added since).
sed -i -E 's/^TOOLS *\+= *(.*)$/# TOOLS += \1/' "$src/Modules.make"
sed -i -E "s/^# TOOLS \\+= ($tools)\$/TOOLS += \\1/" "$src/Modules.make"

echo "rasr: building $(cat "$src/.sprintrt-origin") in $src (about 30 minutes on 2 cores)" >&2
# Debian's python3 (with numpy) must be the one RASR's makefiles find.
(cd "$src" && PATH="/usr/bin:$PATH" make -j"${JOBS:-2}" >"$out/build.log" 2>&1) || {
  echo "rasr: the build failed; the end of $out/build.log:" >&2
  tail -30 "$out/build.log" >&2
  exit 1
}
for entry in "${binaries[@]}"; do
  if [ ! -e "$src/src/Tools/${entry#*=}" ]; then
    echo "rasr: the build ended without $src/src/Tools/${entry#*=}; see $out/build.log" >&2
    exit 1
  fi
done
cat "$src/.sprintrt-origin" > "$out/.built"
report
