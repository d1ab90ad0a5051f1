"""The RASR flow networks and configuration files of the lattice set-up
(`lattice_setup.py`), as text. Nothing here runs anything: each function
returns a file's content, given the paths it names.

RASR configuration files are sections of `key = value` lines; a section name
is a component path in which `*` matches any components, so `[*.lexicon]`
reaches every lexicon a tool loads, however deep its component sits. Each
tool gets a file of its own, so these wildcards never reach another tool.

The set-up's model everywhere: a monophone acoustic model with one HMM state
per phoneme, so that the emission classes (RASR's "emission indices") are the
phonemes, silence included; a corrected transition applicator (RWTH's sMBR
recipe refuses the legacy one); transition penalties of RWTH's GMM systems.
"""

import os


def render(sections):
    """A configuration file's text from [(section, {key: value})], in order.
    Values are written as Python formats them, booleans as RASR's true/false,
    lists joined by blanks."""
    lines = []
    for section, entries in sections:
        lines.append("[%s]" % section)
        for key, value in entries.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (list, tuple)):
                value = " ".join(str(v) for v in value)
            lines.append("%s = %s" % (key, value))
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Flow networks

def _flow(outputs, params, nodes, links):
    """A flow network's XML: `nodes` are (name, filter, {attribute: value}),
    `links` (from, to) with "network:PORT" for the network's own ports."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', '<network name="network">']
    lines += ['  <out name="%s"/>' % o for o in outputs]
    lines += ['  <param name="%s"/>' % p for p in params]
    for name, filter_name, attributes in nodes:
        attrs = "".join(' %s="%s"' % (k, v) for k, v in attributes.items())
        lines.append('  <node name="%s" filter="%s"%s/>' % (name, filter_name, attrs))
    lines += ['  <link from="%s" to="%s"/>' % link for link in links]
    lines.append("</network>")
    return "\n".join(lines) + "\n"


def mfcc_extraction_flow(cache_path, cepstra):
    """Reads a segment of a 16 kHz 16-bit WAV file and writes its MFCCs to the
    feature cache: 25 ms Hamming windows every 10 ms, a mel filterbank, the
    log, `cepstra` cosine-transform outputs, then mean and variance
    normalization over the whole segment. The cache node keys each segment by
    its full name ($(id))."""
    nodes = [
        ("samples", "audio-input-file-wav",
         {"file": "$(input-file)", "start-time": "$(start-time)", "end-time": "$(end-time)"}),
        ("demultiplex", "generic-vector-s16-demultiplex", {"track": "0"}),
        ("convert", "generic-convert-vector-s16-to-vector-f32", {}),
        ("preemphasis", "signal-preemphasis", {"alpha": "1.0"}),
        ("window", "signal-window", {"type": "hamming", "shift": "0.01", "length": "0.025"}),
        ("fft", "signal-real-fast-fourier-transform", {"maximum-input-size": "0.025"}),
        ("amplitude", "signal-vector-alternating-complex-f32-amplitude", {}),
        ("filterbank", "signal-filterbank", {"warping-function": "mel", "filter-width": "268.258"}),
        ("log", "generic-vector-f32-log", {}),
        ("cepstrum", "signal-cosine-transform", {"nr-outputs": str(cepstra)}),
        ("normalization", "signal-normalization",
         {"type": "mean-and-variance", "length": "infinity", "right": "infinity"}),
        ("cache", "generic-cache", {"id": "$(id)", "path": cache_path}),
    ]
    chain = [n[0] for n in nodes]
    links = list(zip(chain, chain[1:])) + [("cache", "network:features")]
    return _flow(["features"], ["input-file", "start-time", "end-time", "id"], nodes, links)


def cached_features_flow(cache_path):
    """The segment's features, read from the feature cache (every later step
    reads features this way, so all see exactly the same frames)."""
    return _flow(["features"], ["id"],
                 [("features", "generic-cache", {"id": "$(id)", "path": cache_path})],
                 [("features", "network:features")])


def linear_segmentation_flow(cache_path):
    """Features from the cache, and a linear segmentation of the orthography
    over them: RASR's speech-linear-segmentation node wants one energy value
    per frame to find leading and trailing silence; the first cepstral
    coefficient (log energy, normalized) serves."""
    nodes = [
        ("features", "generic-cache", {"id": "$(id)", "path": cache_path}),
        ("split", "generic-vector-f32-split", {}),
        ("energy", "generic-convert-vector-f32-to-f32", {}),
        ("alignment", "speech-linear-segmentation",
         {"id": "$(id)", "orthography": "$(orthography)"}),
    ]
    links = [("features", "network:features"), ("features", "split"), ("split:0", "energy"),
             ("energy", "alignment"), ("alignment", "network:alignments")]
    return _flow(["features", "alignments"], ["id", "orthography"], nodes, links)


def alignment_flow(cache_path, alignment_cache=None):
    """Features from the cache and a Viterbi alignment of the orthography by
    the speech-alignment node (configured as `...feature-extraction.alignment`);
    with `alignment_cache`, the alignment is also written there."""
    nodes = [
        ("features", "generic-cache", {"id": "$(id)", "path": cache_path}),
        ("aggregate", "generic-aggregation-vector-f32", {}),
        ("alignment", "speech-alignment", {"id": "$(id)", "orthography": "$(orthography)"}),
    ]
    links = [("features", "network:features"),
             ("features", "aggregate"), ("aggregate", "alignment")]
    if alignment_cache:
        nodes.append(("alignment-cache", "generic-cache", {"id": "$(id)", "path": alignment_cache}))
        links += [("alignment", "alignment-cache"), ("alignment-cache", "network:alignments")]
    else:
        links.append(("alignment", "network:alignments"))
    return _flow(["features", "alignments"], ["id", "orthography"], nodes, links)


def cached_alignment_flow(cache_path, alignment_cache):
    """Features and a stored alignment, both from caches (for accumulating a
    mixture set over a fixed alignment)."""
    nodes = [
        ("features", "generic-cache", {"id": "$(id)", "path": cache_path}),
        ("alignment-cache", "generic-cache", {"id": "$(id)", "path": alignment_cache}),
    ]
    links = [("features", "network:features"), ("alignment-cache", "network:alignments")]
    return _flow(["features", "alignments"], ["id"], nodes, links)


# --------------------------------------------------------------------------
# Configuration pieces every tool shares

def channels(log_file=None):
    """Where RASR writes: log, statistics and progress (the corpus walk: one
    element per segment) to `log_file` (stdout if None), warnings and errors
    also to stderr, the noisy rest nowhere."""
    log = "output-channel" if log_file else "stdout"
    entries = {
        "log.channel": log,
        "statistics.channel": log,
        "warning.channel": log + ", stderr" if log_file else "stderr",
        "error.channel": log + ", stderr" if log_file else "stderr",
        "configuration.channel": "nil",
        "system-info.channel": "nil",
        "progress.channel": log,
        "dot.channel": "nil",
    }
    if log_file:
        entries.update({"output-channel.file": log_file, "output-channel.unbuffered": True})
    return ("*", entries)


def corpus_and_lexicon(setup):
    """The Bliss corpus and lexicon, for every component that loads them."""
    return [
        ("*.corpus", {"file": setup["corpus"], "capitalize-transcriptions": False,
                      "warn-about-unexpected-elements": True}),
        ("*.lexicon", {"file": setup["lexicon"], "normalize-pronunciation": False}),
    ]


def acoustic_model(mixtures=None):
    """The acoustic model for every component that builds one: monophones, one
    state each, every allophone, corrected transition applicator; with
    `mixtures`, the GMM as its mixture set (a diagonal-covariance
    maximum-approximation scorer)."""
    entries = {
        "state-tying.type": "monophone",
        "allophones.add-from-lexicon": False,
        "allophones.add-all": True,
        "hmm.states-per-phone": 1,
        "hmm.state-repetitions": 1,
        "hmm.across-word-model": True,
        "hmm.early-recombination": False,
        "phonology.history-length": 0,
        "phonology.future-length": 0,
        "tdp.applicator-type": "corrected",
        "tdp.scale": 1.0,
        "tdp.*.loop": 3.0,
        "tdp.*.forward": 0.0,
        "tdp.*.skip": "infinity",
        "tdp.*.exit": 0.0,
        "tdp.silence.loop": 0.0,
        "tdp.silence.forward": 3.0,
        "tdp.silence.skip": "infinity",
        "tdp.silence.exit": 0.0,
        "tdp.entry-m1.loop": "infinity",
        "tdp.entry-m2.loop": "infinity",
        "fix-allophone-context-at-word-boundaries": True,
        "transducer-builder-filter-out-invalid-allophones": True,
    }
    if mixtures:
        entries.update({"mixture-set.file": mixtures,
                        "mixture-set.feature-scorer-type": "diagonal-maximum",
                        "mixture-set.scale": 1.0})
    return ("*.acoustic-model", entries)


def language_model(setup, scale):
    """The bigram ARPA LM for every component that loads one."""
    return ("*.lm", {"type": "ARPA", "file": setup["lm"], "scale": scale})


def aligner_options(minimum=500, maximum=10000):
    """Viterbi aligner pruning as RWTH's alignment jobs set it: start narrow,
    widen until the score no longer changes."""
    return {"aligner.increase-pruning-until-no-score-difference": True,
            "aligner.min-acoustic-pruning": minimum,
            "aligner.max-acoustic-pruning": maximum,
            "aligner.acoustic-pruning-increment-factor": 2}


def _orthographic_parser(prefix):
    """The FSA fixes RWTH's recipes set wherever an orthography becomes an
    allophone-state graph (no silence repetitions, no lemma score normalizing)."""
    parser = prefix + "allophone-state-graph-builder.orthographic-parser."
    return {parser + "allow-for-silence-repetitions": False,
            parser + "normalize-lemma-sequence-scores": False}


# --------------------------------------------------------------------------
# One configuration per RASR run

def feature_extraction_config(setup, flow):
    """feature-extraction: runs `flow` over every segment of the corpus."""
    return render([channels(), *corpus_and_lexicon(setup),
                   ("extraction.feature-extraction", {"file": flow}),
                   ("*", {"allow-overwrite": True})])


def allophone_tool_config(setup, state_tying_file):
    """allophone-tool: dumps the state tying (allophone state -> emission
    index), from which the number of classes is read."""
    return render([channels(), *corpus_and_lexicon(setup), acoustic_model(),
                   ("allophone-tool", {"dump-state-tying.channel": state_tying_file})])


_AFE = "acoustic-model-trainer.aligning-feature-extractor.feature-extraction"


def linear_accumulation_config(setup, flow, accumulator):
    """acoustic-model-trainer, accumulate-mixture-set-text-dependent over the
    linear segmentation of `flow`: accumulates one Gaussian per emission class
    (the first run creates the estimator) and writes the accumulator."""
    return render([
        channels(), *corpus_and_lexicon(setup), acoustic_model(),
        ("acoustic-model-trainer", {"action": "accumulate-mixture-set-text-dependent"}),
        ("acoustic-model-trainer.mixture-set-trainer", {"new-mixture-set-file": accumulator}),
        (_AFE, {"file": flow}),
        (_AFE + ".alignment", {"linear-segmenter.minimum-segment-length": 0,
                               "linear-segmenter.maximum-segment-length": 6000,
                               "linear-segmenter.delimiter.number-of-iterations": 1,
                               "linear-segmenter.delimiter.penalty": 0,
                               "linear-segmenter.delimiter.minimum-speech-proportion": 0.7}),
    ])


def accumulation_config(setup, flow, old_mixtures, accumulator):
    """acoustic-model-trainer, accumulate-mixture-set-text-dependent over the
    stored alignment of `flow`, starting from `old_mixtures` (not split: one
    Gaussian per class stays one)."""
    return render([
        channels(), *corpus_and_lexicon(setup), acoustic_model(),
        ("acoustic-model-trainer", {"action": "accumulate-mixture-set-text-dependent"}),
        ("acoustic-model-trainer.mixture-set-trainer",
         {"old-mixture-set-file": old_mixtures, "new-mixture-set-file": accumulator,
          "split-first": False}),
        (_AFE, {"file": flow}),
    ])


def combine_config(accumulators, mixtures):
    """acoustic-model-trainer, combine-mixture-sets: maximum-likelihood
    estimate of the mixture set from the accumulators."""
    return render([
        channels(),
        ("acoustic-model-trainer", {"action": "combine-mixture-sets"}),
        ("acoustic-model-trainer.mixture-set-trainer",
         {"mixture-set-files-to-combine": accumulators, "new-mixture-set-file": mixtures,
          "estimator-type": "maximum-likelihood"}),
    ])


def alignment_config(setup, flow, mixtures, lattice_archive=None):
    """acoustic-model-trainer, dry: runs `flow`, whose speech-alignment node
    aligns each segment's orthography with the GMM. With `lattice_archive`
    the node also stores the aligned word sequence as a word lattice there:
    the numerator lattices."""
    node = {**aligner_options(), **_orthographic_parser("")}
    if lattice_archive:
        node.update({"store-lattices": True, "lattice-archive.path": lattice_archive})
    return render([
        channels(), *corpus_and_lexicon(setup), acoustic_model(mixtures),
        ("acoustic-model-trainer", {"action": "dry"}),
        (_AFE, {"file": flow}),
        (_AFE + ".alignment", node),
        ("*", {"allow-overwrite": True}),
    ])


def raw_denominator_config(setup, flow, mixtures, lattice_archive, lm_scale, beam):
    """speech-recognizer with advanced tree search over the bigram LM, writing
    each segment's word lattice (acoustic and LM scores) to
    `lattice_archive`: the raw denominator lattices."""
    return render([
        channels(), *corpus_and_lexicon(setup), acoustic_model(mixtures),
        language_model(setup, lm_scale),
        ("speech-recognizer", {"search-type": "advanced-tree-search",
                               "feature-extraction.file": flow,
                               "store-lattices": True,
                               "lattice-archive.path": lattice_archive}),
        ("speech-recognizer.recognizer", {"create-lattice": True,
                                          "optimize-lattice": "simple",
                                          "beam-pruning": beam,
                                          "beam-pruning-limit": 100000,
                                          "word-end-pruning": 0.5,
                                          "word-end-pruning-limit": 10000,
                                          "lm-lookahead": True,
                                          "lm-lookahead-laziness": 15,
                                          "lm-lookahead.history-limit": 1,
                                          "lm-lookahead.tree-cutoff": 30,
                                          "lm-lookahead.minimum-representation": 1}),
        ("*", {"allow-overwrite": True}),
    ])


def _merge_numerator_and_write(numerator, out):
    """The sections that merge each segment's numerator lattice in where the
    spoken word sequence is not in the lattice (as DenominatorLatticeJob
    does), and write the result to archive `out`."""
    return [
        ("lattice-processor.merging", {"fsa-prefix": "acoustic",
                                       "merge-only-if-spoken-not-in-lattice": True,
                                       "numerator-lattice-archive.path": numerator}),
        ("lattice-processor.lattice-writer", {"lattice-archive.path": out}),
        ("*", {"allow-overwrite": True}),
    ]


def denominator_config(setup, raw, numerator, out, lm_scale, beam):
    """lattice-processor: reads the raw denominator lattices, combines
    acoustic and LM scores (each divided by the LM scale, i.e. acoustic scale
    1/lm_scale and LM scale 1), prunes them forward-backward, reports the
    graph error rate, merges the numerator lattice in where the spoken word
    sequence is missing, and writes the denominator lattices (part "total")."""
    scale = 1.0 / lm_scale
    return render([
        channels(), *corpus_and_lexicon(setup), acoustic_model(), language_model(setup, lm_scale),
        ("lattice-processor",
         {"actions": "read,linear-combination,prune,graph-error-rate,merge,write",
          "selections": "lattice-reader,linear-combination,pruning,ger,merging,lattice-writer"}),
        ("lattice-processor.lattice-reader",
         {"readers": "acoustic,lm", "lattice-archive.path": raw}),
        ("lattice-processor.linear-combination", {"scales": [scale, scale]}),
        ("lattice-processor.pruning", {"threshold": beam, "threshold-is-relative": True}),
        *_merge_numerator_and_write(numerator, out),
    ])


def pruning_config(setup, denominator, numerator, out, threshold, lm_scale):
    """lattice-processor: reads the denominator lattices (part "total"),
    prunes them forward-backward to the arcs whose best path is within
    `threshold` (in "total" units) of the best, merges the numerator in
    where the spoken word sequence was pruned away, and writes them (part
    "total"): small lattices whose paths can be listed (the suite compares
    RASR's criteria over them with sprint-sim's over the same paths). The
    LM is loaded because the merge needs it: without it, the merged
    lattices have states of two word histories, which the training's LM
    rescorer refuses ("ambiguous history at state ...")."""
    return render([
        channels(), *corpus_and_lexicon(setup), acoustic_model(), language_model(setup, lm_scale),
        ("lattice-processor", {"actions": "read,prune,merge,write",
                               "selections": "lattice-reader,pruning,merging,lattice-writer"}),
        ("lattice-processor.lattice-reader",
         {"readers": "total", "lattice-archive.path": denominator}),
        ("lattice-processor.pruning", {"threshold": threshold, "threshold-is-relative": True}),
        *_merge_numerator_and_write(numerator, out),
    ])


def state_accuracy_config(setup, flow, mixtures, denominator, out, alignment_cache,
                          distance_type="smoothed-frame-state-accuracy"):
    """lattice-processor: reads the denominator lattices' topology (part
    "total"), adds the transition penalties of each arc ("tdps") and its
    frame state accuracy against the spoken orthography ("accuracy"), and
    writes them. The per-arc state alignments the GMM aligner computes on
    the way are written to `alignment_cache` (emission indices): the
    segment-wise alignment the sMBR/MMI runs read back.

    `distance_type`: "smoothed-frame-state-accuracy" (RWTH's recipe; with
    RASR's default identity smoothing an arc gets, per frame whose state is
    a state of a spoken-sequence path at that frame, the lattice posterior
    of those paths' arcs there) or "frame-state-accuracy" (1 per such
    frame)."""
    rescoring = {
        "share-acoustic-model": True,
        "tdp-rescorers": "tdps",
        "distance-rescorers": "accuracy",
        "accuracy.spoken-source": "orthography",
        "accuracy.distance-type": distance_type,
        "accuracy.approximate-phone-accuracy-lattice-builder.token-type": "state",
        "segmentwise-alignment.port-name": "features",
        "segmentwise-alignment.alignment-cache.alignment-label-type": "emission-ids",
        "segmentwise-alignment.alignment-cache.path": alignment_cache,
        "segmentwise-feature-extraction.feature-extraction.file": flow,
    }
    rescoring.update({"segmentwise-alignment." + k: v for k, v in
                      aligner_options(1000, 512000).items()})
    rescoring["segmentwise-alignment.aligner.min-average-number-of-states"] = 12
    rescoring.update(_orthographic_parser("segmentwise-alignment."))
    return render([
        channels(), *corpus_and_lexicon(setup), acoustic_model(mixtures),
        ("lattice-processor", {"actions": "read,rescore,write",
                               "selections": "topology-reader,rescoring,accuracy-writer"}),
        ("lattice-processor.topology-reader",
         {"readers": "total", "lattice-archive.path": denominator}),
        ("lattice-processor.rescoring", rescoring),
        ("lattice-processor.accuracy-writer", {"lattice-archive.path": out}),
        ("*", {"allow-overwrite": True}),
    ])


def training_config(setup, criterion, flow, mixtures, accuracy_lattices, alignment_cache,
                    num_classes, feature_dim, lm_scale, log_file=None, margin=0.0,
                    combination_scale=None):
    """lattice-processor as RWTH's sMBR recipe runs it under RETURNN, for
    `criterion` "ME" (sMBR with the state accuracies) or "MMI": for each
    segment (in the order the Python segment order gives), read the lattice
    topology with its transition penalties and accuracies, rescore every arc
    with the network's outputs (its state alignment read back from
    `alignment_cache`) and the LM, combine (acoustic + tdps + LM) / lm_scale
    (+ margin * accuracy) into "total", and accumulate the criterion's
    error signal at the network's output.

    The network is a Python layer (the trainer's module: its forward returns
    the posteriors the trainer sent, its backpropagate hands the error signal
    back) followed by a bias layer (zero bias) that RASR takes to be in log
    space already. `estimator = dry-run` computes the gradient but changes
    nothing. The GMM is given only because the acoustic model of the
    rescorer and the aligner must load a mixture set; it scores nothing.
    `combination_scale` replaces the scale 1 / lm_scale of the acoustic, LM
    and tdp parts in "total" (1: the error signal is the gradient of the
    loss itself, not lm_scale times it)."""
    scale = 1.0 / lm_scale if combination_scale is None else combination_scale
    lp = "lattice-processor."
    return render([
        channels(log_file), *corpus_and_lexicon(setup), acoustic_model(mixtures),
        language_model(setup, lm_scale),
        ("lattice-processor", {
            "actions": "read,rescore,linear-combination,accumulate-discriminatively",
            "selections": "topology-reader,rescoring,linear-combination,accumulation"}),
        (lp + "class-labels", {"number-of-classes": num_classes}),
        (lp + "neural-network", {"links": "0->python-layer:0"}),
        (lp + "python-layer", {"layer-type": "python", "links": "0->bias-layer:0",
                               "dimension-input": feature_dim, "dimension-output": num_classes}),
        (lp + "bias-layer", {"layer-type": "bias", "dimension-input": num_classes,
                             "dimension-output": num_classes}),
        (lp + "topology-reader", {"readers": "tdps,accuracy",
                                  "lattice-archive.path": accuracy_lattices,
                                  "lattice-archive.lm-scale": 0.0,
                                  "lattice-archive.pronunciation-scale": 0.0}),
        (lp + "rescoring", {
            "nn-emission-rescorers": "nn-em-rescorer",
            "nn-em-rescorer.port-name": "features",
            "combined-lm-rescorers": "lm-rescorer",
            "lm-rescorer.fall-back-value": 10000,
            "pass-extractors": "tdps,accuracy",
            "segmentwise-feature-extraction.feature-extraction.file": flow,
            "segmentwise-alignment.port-name": "features",
            "segmentwise-alignment.alignment-cache.alignment-label-type": "emission-ids",
            "segmentwise-alignment.alignment-cache.path": alignment_cache,
            "segmentwise-alignment.alignment-cache.read-only": True,
            **_orthographic_parser("segmentwise-alignment."),
        }),
        # Parts in the order the rescoring appends them: acoustic (network),
        # LM, tdps, accuracy.
        (lp + "linear-combination", {"outputs": "total accuracy",
                                     "total.scales": [scale, scale, scale, margin],
                                     "accuracy.scales": [0.0, 0.0, 0.0, 1.0]}),
        (lp + "accumulation", {"model-type": "neural-network", "criterion": criterion,
                               "posterior-tolerance": 100, "lattice-name": "total",
                               "port-name": "features", "estimator": "dry-run",
                               "batch-mode": False,
                               "enable-feature-description-check": False}),
    ])


def sprint_options(exec_path, config_path):
    """RETURNN-style sprint_opts for sprintrt's pool (and `sprintrt doctor`):
    the Python segment order is required, as RWTH's recipe says: RASR walks
    the corpus in the order the trainer's batch gives."""
    return {"sprintExecPath": exec_path,
            "sprintConfigStr": "--config=" + os.path.abspath(config_path),
            "numInstances": 1,
            "usePythonSegmentOrder": True}
