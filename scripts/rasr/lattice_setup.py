#!/usr/bin/env python3
"""Builds a tiny but real lattice set-up with RASR's own tools, in which
RASR's lattice-processor computes sMBR ("ME") and MMI losses and error
signals for a trainer through sprintrt's pool, the way RWTH's sMBR recipe
runs it under RETURNN:

    scripts/rasr/lattice_setup.py --rasr RASR_OUT_DIR --out DIR

RASR_OUT_DIR is the output directory of scripts/rasr/build.sh (the tools
under src/src/Tools). Everything generated goes to DIR; nothing of RASR
belongs in this repository. The steps, each a RASR run with its config in
DIR/configs and its log in DIR/logs:

 1. corpus: 20 segments of 1-2 s, spoken by espeak-ng (resampled by sox),
    a Bliss corpus over them and a Bliss lexicon of 15 words (tiny_setup's);
 2. lm: a bigram ARPA LM of the corpus's sentences (written here);
 3. features: 16 MFCCs per 10 ms frame (feature-extraction), cached;
 4. classes: the emission classes (allophone-tool's state tying): one per
    phoneme, silence included;
 5. gmm: one Gaussian per class from a linear segmentation, then Viterbi
    realignment and reestimation (acoustic-model-trainer);
 6. numerator: each segment's Viterbi-aligned transcription as a word
    lattice (acoustic-model-trainer);
 7. raw-denominator: recognition lattices (speech-recognizer), their
    alphabet file corrected by RASR's archiver (see raw_denominator_lattices);
 8. denominator: pruned, numerator merged in (lattice-processor);
 9. accuracy: transition penalties and smoothed frame state accuracies per
    arc, and the arcs' state alignments (lattice-processor);
    8b/9b. pruned, pruned-accuracy: the denominator pruned to a few paths
    (--prune), with plain frame state accuracies (for the suite's exact
    comparison with sprint-sim, which needs the paths listed);
10. training configs: the sMBR and MMI lattice-processor configs (Python
    layer + bias layer, dry-run estimator) and sprint options for them;
    variants with the parts of "total" scaled by 1, and over the pruned
    lattices (see training_configs).

Steps are idempotent: a step whose configs and inputs are unchanged since
its last successful run is not repeated (--force repeats all). At the end a
JSON summary is printed (and written to DIR/summary.json): the sMBR and MMI
configs and options, the segments with their frame counts, the number of
classes and the feature dimension.

Using it: DIR/smbr.json and DIR/mmi.json are sprint options for
sprintrt.SprintInstancePool.get_global_instance (and `sprintrt doctor
--config`); the Python segment order is required. The trainer's batch must
give each segment exactly the frames in the summary, [T, B, D] log-posteriors
with D = num_classes; RASR scores the lattice arcs with them as they are (no
softmax), scaled by 1/lm_scale. Its error signal per frame and class is
gamma_den - gamma_num (MMI) or -gamma * (A - E[A]) (sMBR: the occupancy
times the accuracy of the paths through it minus the expected accuracy).
Each frame's row sums to zero, so it is also the gradient for the logits
under a log-softmax; it is lm_scale times the gradient of the returned loss
(which comes through PythonControl's notify_segment_loss).

Needs Python 3 (standard library only), espeak-ng and sox (scripts/setup.sh
espeak-ng sox installs them)."""

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import wave
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lattice_configs as cfg  # noqa: E402
from rasr_steps import Setup, StepError, check_archive  # noqa: E402
import tiny_setup  # noqa: E402  (its words and lexicon)

CEPSTRA = 16  # the feature dimension


# --------------------------------------------------------------------------
# 1. Corpus: audio, Bliss corpus, lexicon

def _wav_seconds(path):
    with wave.open(path) as w:
        return w.getnframes() / float(w.getframerate())


def synthesize(text, wav, rate=150):
    """`text` spoken by espeak-ng at `rate` words per minute, as a 16 kHz
    16-bit mono WAV with 0.15 s of silence either side. Returns its length
    in seconds."""
    raw = wav + ".espeak.wav"
    subprocess.check_call(["espeak-ng", "-v", "en-us", "-s", str(rate), "-w", raw, text])
    # sox dithers (adds noise of about one LSB), which keeps the log of the
    # filterbank finite in digital silence; -R seeds its noise generator with
    # a fixed number, so the audio (and all after it) is the same on every run.
    subprocess.check_call(["sox", "-q", "-R", raw, "-r", "16000", "-b", "16", "-c", "1", wav,
                           "pad", "0.15", "0.15"])
    os.remove(raw)
    return _wav_seconds(wav)


def lexicon_xml():
    """tiny_setup's Bliss lexicon (its phonemes, special lemmas and 15 words),
    except that the silence lemma also has an empty orthography: RASR's
    orthographic parser makes silence optional before, between and after
    the words only through a silence lemma that matches the empty string.
    Without it no Viterbi alignment contains silence, and reestimation
    fails on the silence mixture's zero weight."""
    text = tiny_setup.lexicon_xml()
    silence = '<lemma special="silence"><orth>[SILENCE]</orth>'
    assert silence in text
    return text.replace(silence, silence + "<orth></orth>")


def make_corpus(setup, count, seed):
    """Step 1. `count` segments of 2-4 words of tiny_setup's vocabulary,
    each spoken into its own recording of 1-2 s (a faster voice or fewer
    words when longer, trailing silence when shorter); writes corpus.xml
    (corpus "lat", recording rNN, segment sNN: full names "lat/rNN/sNN")
    and lexicon.xml. Returns [{"name", "orth", "seconds", "audio"}]."""
    listing = setup.path("segments.json")
    spec = {"count": count, "seed": seed, "lexicon": lexicon_xml(), "sox": "-R"}
    outputs = [listing, setup.path("corpus.xml"), setup.path("lexicon.xml")]
    if not setup.step("corpus", spec, outputs):
        with open(listing) as f:
            return json.load(f)
    rng = random.Random(seed)
    words = sorted(tiny_setup.WORDS)
    segments = []
    for i in range(count):
        orth = [rng.choice(words) for _ in range(2 + i % 3)]
        wav = setup.path("audio", "r%02d.wav" % i)
        while True:
            for rate in (150, 180, 210):
                seconds = synthesize(" ".join(orth), wav, rate)
                if seconds <= 2.0:
                    break
            if seconds <= 2.0 or len(orth) == 1:
                break
            orth = orth[:-1]
        if seconds < 1.0:
            padded = wav + ".pad.wav"
            subprocess.check_call(["sox", "-q", "-R", wav, padded,
                                  "pad", "0", "%.3f" % (1.0 - seconds)])
            os.replace(padded, wav)
            seconds = _wav_seconds(wav)
        segments.append({"name": "lat/r%02d/s%02d" % (i, i), "orth": " ".join(orth),
                         "seconds": round(seconds, 4), "audio": wav})
    lines = ['<?xml version="1.0" encoding="utf-8"?>', '<corpus name="lat">']
    for s in segments:
        recording, segment = s["name"].split("/")[1:]
        lines += ['  <recording name="%s" audio="%s">' % (recording, escape(s["audio"])),
                  '    <segment name="%s" start="0" end="%.4f"><orth>%s</orth></segment>'
                  % (segment, s["seconds"], escape(s["orth"])),
                  "  </recording>"]
    lines.append("</corpus>")
    setup.write("corpus.xml", "\n".join(lines) + "\n")
    setup.write("lexicon.xml", lexicon_xml())
    with open(listing, "w") as f:
        json.dump(segments, f, indent=1)
    setup.done("corpus")
    return segments


# --------------------------------------------------------------------------
# 2. Bigram LM

def bigram_arpa(sentences, vocabulary, discount=0.5):
    """A bigram ARPA LM of `sentences` (lists of words) over `vocabulary`:
    add-one unigrams (every word, and </s>), absolutely discounted bigrams
    backing off to them; <s> only as a history. A proper distribution for
    every history."""
    unigram_counts = {w: 0 for w in list(vocabulary) + ["</s>"]}
    bigrams = {}
    for sentence in sentences:
        tokens = ["<s>"] + sentence + ["</s>"]
        for w in tokens[1:]:
            unigram_counts[w] += 1
        for h, w in zip(tokens, tokens[1:]):
            bigrams.setdefault(h, {}).setdefault(w, 0)
            bigrams[h][w] += 1
    total = sum(unigram_counts.values()) + len(unigram_counts)
    p_uni = {w: (c + 1.0) / total for w, c in unigram_counts.items()}
    log10 = math.log10
    backoff, p_bi = {}, {}
    for h, successors in bigrams.items():
        count_h = float(sum(successors.values()))
        for w, c in successors.items():
            p_bi[(h, w)] = (c - discount) / count_h
        left = discount * len(successors) / count_h
        backoff[h] = left / (1.0 - sum(p_uni[w] for w in successors))
    lines = ["\\data\\", "ngram 1=%d" % (len(p_uni) + 1), "ngram 2=%d" % len(p_bi), "",
             "\\1-grams:", "-99\t<s>\t%.6f" % log10(backoff["<s>"])]
    for w in sorted(p_uni):
        if w in backoff:
            lines.append("%.6f\t%s\t%.6f" % (log10(p_uni[w]), w, log10(backoff[w])))
        else:
            lines.append("%.6f\t%s" % (log10(p_uni[w]), w))
    lines += ["", "\\2-grams:"]
    lines += ["%.6f\t%s %s" % (log10(p), h, w) for (h, w), p in sorted(p_bi.items())]
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)


def write_lm(setup, segments):
    """Step 2. lm.arpa: the bigram LM of the corpus's sentences over the
    lexicon's 15 words (the recognizer's LM, and the LM rescorer's in
    training)."""
    text = bigram_arpa([s["orth"].split() for s in segments], sorted(tiny_setup.WORDS))
    if setup.step("lm", text, [setup.path("lm.arpa")], uses=["corpus"]):
        setup.write("lm.arpa", text)
        setup.done("lm")
    return setup.path("lm.arpa")


# --------------------------------------------------------------------------
# 3.-5. Features, classes, GMM

def extract_features(setup, files, segments):
    """Step 3. MFCCs of every segment into DIR/features.cache by
    feature-extraction. Returns {segment name: number of frames}, as RASR's
    statistics report them (these are the frames lattice-processor's Python
    layer will see)."""
    cache = setup.path("features.cache")
    flow = cfg.mfcc_extraction_flow(cache, CEPSTRA)
    config = cfg.feature_extraction_config(files, setup.path("flows", "mfcc.flow"))
    frames_file = setup.path("frames.json")
    if setup.step("features", [flow, config], [cache, frames_file], uses=["corpus"]):
        setup.write("flows/mfcc.flow", flow)
        log = setup.run("feature-extraction", "features", config)
        frames = {}
        for m in re.finditer(r'<segment name="[^"]*" full-name="([^"]*)".*?'
                             r'<frames port="features" number="(\d+)"', log, re.S):
            frames[m.group(1)] = int(m.group(2))
        missing = [s["name"] for s in segments if s["name"] not in frames]
        if missing:
            raise StepError("feature-extraction reported no frames for %s (see logs/features.log)"
                            % missing)
        with open(frames_file, "w") as f:
            json.dump(frames, f, indent=1)
        setup.done("features")
    with open(frames_file) as f:
        return json.load(f)


def count_classes(setup, files):
    """Step 4. The number of emission classes: allophone-tool dumps the state
    tying (one "allophone-state emission-index" line per allophone state);
    the classes are the distinct indices."""
    tying = setup.path("state-tying.txt")
    config = cfg.allophone_tool_config(files, tying)
    if setup.step("classes", config, [tying], uses=["corpus"]):
        setup.run("allophone-tool", "classes", config)
        setup.done("classes")
    with open(tying) as f:
        return len({line.split()[-1] for line in f if line.strip()})


def train_gmm(setup, files, iterations):
    """Step 5. A GMM with one Gaussian per class, by acoustic-model-trainer:
    accumulate over a linear segmentation of each orthography and estimate
    (gmm/am-0.mix), then `iterations` times: Viterbi-align with the last model
    (gmm/alignment-N.cache), accumulate over that alignment, estimate
    (gmm/am-N.mix). Quality does not matter here; the model only has to give
    the recognizer and the aligner scores. Returns the last mixture file."""
    cache = setup.path("features.cache")
    g = lambda name: setup.path("gmm", name)  # noqa: E731
    flow = cfg.linear_segmentation_flow(cache)
    accumulate = cfg.linear_accumulation_config(
        files, setup.path("flows", "linear.flow"), g("linear.acc"))
    combine = cfg.combine_config(g("linear.acc"), g("am-0.mix"))
    if setup.step("gmm-0", [flow, accumulate, combine], [g("linear.acc"), g("am-0.mix")],
                  uses=["features"]):
        setup.write("flows/linear.flow", flow)
        setup.run("acoustic-model-trainer", "gmm-0-linear-accumulate", accumulate)
        setup.run("acoustic-model-trainer", "gmm-0-combine", combine)
        setup.done("gmm-0")
    for n in range(1, iterations + 1):
        old, alignment = g("am-%d.mix" % (n - 1)), g("alignment-%d.cache" % n)
        align_flow = cfg.alignment_flow(cache, alignment)
        acc_flow = cfg.cached_alignment_flow(cache, alignment)
        align = cfg.alignment_config(files, setup.path("flows", "align-%d.flow" % n), old)
        accumulate = cfg.accumulation_config(files, setup.path("flows", "accumulate-%d.flow" % n),
                                             old, g("am-%d.acc" % n))
        combine = cfg.combine_config(g("am-%d.acc" % n), g("am-%d.mix" % n))
        if setup.step("gmm-%d" % n, [align_flow, acc_flow, align, accumulate, combine],
                      [alignment, g("am-%d.acc" % n), g("am-%d.mix" % n)],
                      uses=["gmm-%d" % (n - 1)]):
            setup.write("flows/align-%d.flow" % n, align_flow)
            setup.write("flows/accumulate-%d.flow" % n, acc_flow)
            setup.run("acoustic-model-trainer", "gmm-%d-align" % n, align)
            setup.run("acoustic-model-trainer", "gmm-%d-accumulate" % n, accumulate)
            setup.run("acoustic-model-trainer", "gmm-%d-combine" % n, combine)
            setup.done("gmm-%d" % n)
    return g("am-%d.mix" % iterations), "gmm-%d" % iterations


# --------------------------------------------------------------------------
# 6.-9. Lattices

def numerator_lattices(setup, files, segments, mixtures, gmm_step):
    """Step 6. lattices/numerator.cache: acoustic-model-trainer (dry) whose
    speech-alignment node stores each segment's aligned transcription as a
    word lattice with its acoustic scores (as i6_core's NumeratorLatticeJob)."""
    out = setup.path("lattices", "numerator.cache")
    flow = cfg.alignment_flow(setup.path("features.cache"))
    config = cfg.alignment_config(files, setup.path("flows", "numerator.flow"), mixtures, out)
    if setup.step("numerator", [flow, config], [out], uses=[gmm_step]):
        setup.write("flows/numerator.flow", flow)
        setup.run("acoustic-model-trainer", "numerator", config)
        check_archive(setup, out, segments, ".binwb.gz")
        setup.done("numerator")
    return out


def raw_denominator_lattices(setup, files, segments, mixtures, numerator, lm_scale, beam):
    """Step 7. lattices/raw-denominator.cache: speech-recognizer's lattices
    (acoustic and LM scores) over the bigram LM (as RawDenominatorLatticeJob;
    without its precomputed LM image and global search-network cache, which
    only save time on large set-ups).

    RASR b6ff1a89's advanced tree search labels lattice arcs with lemma
    pronunciation ids but stores the lexicon's *lemma* alphabet with them
    (Lattice::StandardWordLattice's alphabet type defaults to lemmas since
    RASR commit 79a19657). Every reader maps the archive's alphabet to the
    lexicon's lemma pronunciations by symbol name, so all labels become
    invalid ("Fsa::mapAlphabet: ... 19 symbols were mapped to *INVALID*")
    and the next step's pruning crashes (SIGSEGV). The archive's alphabet
    file is therefore replaced, with RASR's archiver, by the numerator
    archive's: the same lexicon's lemma-pronunciation alphabet, which is what
    the labels index."""
    out = setup.path("lattices", "raw-denominator.cache")
    flow = cfg.cached_features_flow(setup.path("features.cache"))
    config = cfg.raw_denominator_config(files, setup.path("flows", "features.flow"), mixtures,
                                        out, lm_scale, beam)
    if setup.step("raw-denominator", [flow, config, "alphabet-fix-2"], [out],
                  uses=["numerator", "lm"]):
        setup.write("flows/features.flow", flow)
        log = setup.run("speech-recognizer", "raw-denominator", config)
        selection = setup.write("lattices/alphabet.selection", "alphabets.binfsa.gz\n")
        setup.run_args("archiver", "raw-denominator-alphabet",
                       ["--mode=combine", "--overwrite=replace", "--select=" + selection, out,
                        numerator])
        check_archive(setup, out, segments, ".binwb.gz")
        setup.done("raw-denominator", word_error_rate=_word_error_rate(log))
    return out


def _word_error_rate(log):
    """The recognizer's word error rates in percent, from its per-segment
    evaluations: "single_best" (the first best sequence) and "lattice" (the
    best path through the lattice, its oracle error rate)."""
    totals = {}
    for m in re.finditer(r'<evaluation name="(single best|lattice)".*?source="reference">(\d+)<.*?'
                         r'"deletion">\s*(\d+).*?"insertion">\s*(\d+).*?"substitution">\s*(\d+)',
                         log, re.S):
        errors, reference = totals.setdefault(m.group(1).replace(" ", "_"), [0, 0])
        totals[m.group(1).replace(" ", "_")] = [
            errors + sum(int(m.group(i)) for i in (3, 4, 5)), reference + int(m.group(2))]
    return {k: round(100.0 * e / r, 2) for k, (e, r) in totals.items() if r}


def denominator_lattices(setup, files, segments, raw, numerator, lm_scale, beam):
    """Step 8. lattices/denominator.cache: lattice-processor reads the raw
    lattices, forms "total" = (acoustic + LM) / lm_scale, prunes, merges the
    numerator in where the spoken sequence is missing (as
    DenominatorLatticeJob)."""
    out = setup.path("lattices", "denominator.cache")
    config = cfg.denominator_config(files, raw, numerator, out, lm_scale, beam)
    if setup.step("denominator", config, [out], uses=["raw-denominator", "numerator"]):
        setup.run("lattice-processor", "denominator", config)
        check_archive(setup, out, segments, "-total.binfsa.gz")
        setup.done("denominator")
    return out


def state_accuracies(setup, files, segments, mixtures, denominator, name="accuracy",
                     distance_type="smoothed-frame-state-accuracy", uses="denominator"):
    """Step 9 (and 9b, `name` "pruned-accuracy"). lattices/NAME.cache (parts
    "total", "tdps", "accuracy") and lattices/NAME-alignment.cache
    (each arc's state alignment; "segmentwise-alignment.cache" for the
    step "accuracy") by lattice-processor (as StateAccuracyJob)."""
    out = setup.path("lattices", name + ".cache")
    alignment = setup.path("lattices", "segmentwise-alignment.cache" if name == "accuracy"
                           else name + "-alignment.cache")
    config = cfg.state_accuracy_config(files, setup.path("flows", "features.flow"), mixtures,
                                       denominator, out, alignment, distance_type)
    if setup.step(name, config, [out, alignment], uses=[uses]):
        setup.run("lattice-processor", name, config)
        check_archive(setup, out, segments, "-accuracy.binfsa.gz")
        check_archive(setup, alignment, segments, "")
        setup.done(name)
    return out, alignment


def pruned_lattices(setup, files, segments, denominator, numerator, threshold, lm_scale):
    """Step 8b. lattices/pruned.cache: the denominator lattices pruned to
    `threshold` (a few paths each), the numerator merged in where pruned
    away; their accuracies (step 9b) are plain frame state accuracies."""
    out = setup.path("lattices", "pruned.cache")
    config = cfg.pruning_config(files, denominator, numerator, out, threshold, lm_scale)
    if setup.step("pruned", config, [out], uses=["denominator"]):
        setup.run("lattice-processor", "pruned", config)
        check_archive(setup, out, segments, "-total.binfsa.gz")
        setup.done("pruned")
    return out


# --------------------------------------------------------------------------
# 10. Training configs

def training_configs(setup, files, mixtures, lattices, num_classes, lm_scale):
    """Step 10. NAME.config for lattice-processor under a trainer's pool and
    NAME.json, sprint options for it (sprintrt's own child module: add
    pymodPath for RETURNN's), for NAME in smbr and mmi (RWTH's recipe),
    smbr-scale1 and mmi-scale1 (the same with the parts of "total" scaled
    by 1, not 1 / lm_scale) and smbr-pruned and mmi-pruned (the recipe's
    configs over the pruned lattices with plain frame state accuracies).
    `lattices`: {"full" / "pruned": (accuracy archive, alignment cache)}.
    RASR's log goes to DIR/logs/train-NAME.log; warnings and errors to
    stderr. Returns {NAME: {"config", "options"}}."""
    result = {}
    variants = [("", "full", None), ("-scale1", "full", 1.0), ("-pruned", "pruned", None)]
    for suffix, family, scale in variants:
        accuracy, alignment = lattices[family]
        for criterion_name, criterion in (("smbr", "ME"), ("mmi", "MMI")):
            name = criterion_name + suffix
            text = cfg.training_config(files, criterion, setup.path("flows", "features.flow"),
                                       mixtures, accuracy, alignment, num_classes, CEPSTRA,
                                       lm_scale, log_file=setup.path("logs", "train-%s.log" % name),
                                       combination_scale=scale)
            config = setup.write(name + ".config", text)
            options = cfg.sprint_options(setup.tool("lattice-processor"), config)
            with open(setup.path(name + ".json"), "w") as f:
                json.dump(options, f, indent=1)
            result[name] = {"config": config, "options": setup.path(name + ".json")}
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rasr", required=True, help="scripts/rasr/build.sh's output directory")
    parser.add_argument("--out", required=True, help="where everything is written")
    parser.add_argument("--segments", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=2, help="GMM realignment iterations")
    parser.add_argument("--lm-scale", type=float, default=10.0)
    parser.add_argument("--beam", type=float, default=15.0)
    parser.add_argument("--prune", type=float, default=1.0,
                        help="the pruned lattices' threshold (in 'total' units)")
    parser.add_argument("--force", action="store_true", help="repeat every step")
    args = parser.parse_args()
    for program in ("espeak-ng", "sox"):
        if not shutil.which(program):
            raise SystemExit(
                "lattice_setup: %s is missing (scripts/setup.sh espeak-ng sox)" % program)
    setup = Setup(args.rasr, args.out, args.force)
    try:
        segments = make_corpus(setup, args.segments, args.seed)
        files = {"corpus": setup.path("corpus.xml"), "lexicon": setup.path("lexicon.xml"),
                 "lm": write_lm(setup, segments)}
        frames = extract_features(setup, files, segments)
        num_classes = count_classes(setup, files)
        mixtures, gmm_step = train_gmm(setup, files, args.iterations)
        numerator = numerator_lattices(setup, files, segments, mixtures, gmm_step)
        raw = raw_denominator_lattices(setup, files, segments, mixtures, numerator, args.lm_scale,
                                       args.beam)
        denominator = denominator_lattices(setup, files, segments, raw, numerator, args.lm_scale,
                                           args.beam)
        accuracy, alignment = state_accuracies(setup, files, segments, mixtures, denominator)
        pruned = pruned_lattices(setup, files, segments, denominator, numerator, args.prune,
                                 args.lm_scale)
        pruned_accuracy = state_accuracies(setup, files, segments, mixtures, pruned,
                                           "pruned-accuracy", "frame-state-accuracy", "pruned")
        configs = training_configs(setup, files, mixtures, {"full": (accuracy, alignment),
                                                            "pruned": pruned_accuracy},
                                   num_classes, args.lm_scale)
    except StepError as e:
        raise SystemExit("lattice_setup: " + str(e))
    summary = {
        "smbr_config": configs["smbr"]["config"], "smbr_options": configs["smbr"]["options"],
        "mmi_config": configs["mmi"]["config"], "mmi_options": configs["mmi"]["options"],
        "configs": {name: c["config"] for name, c in configs.items()},
        "lm_scale": args.lm_scale, "lm": files["lm"], "lexicon": files["lexicon"],
        "state_tying": setup.path("state-tying.txt"),
        "lattice_processor": setup.tool("lattice-processor"),
        "archiver": setup.tool("archiver"),
        "num_classes": num_classes, "feature_dim": CEPSTRA,
        "segments": [{"name": s["name"], "frames": frames[s["name"]], "orth": s["orth"],
                      "seconds": s["seconds"]} for s in segments],
        "lattices": {"numerator": numerator, "raw_denominator": raw, "denominator": denominator,
                     "accuracy": accuracy, "segmentwise_alignment": alignment,
                     "pruned": pruned, "pruned_accuracy": pruned_accuracy[0],
                     "pruned_alignment": pruned_accuracy[1]},
        "mixtures": mixtures,
        "word_error_rate": setup.state.get("raw-denominator", {}).get("word_error_rate"),
        "seconds": setup.timings,
    }
    with open(setup.path("summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
