"""A stand-in for RASR's nn-trainer with ``--*.action=python-control``, for the
tests of ``sprintrt_control``: it parses the RASR-style arguments sprintrt
passes, imports the module from ``--*.pymod-path``/``--*.pymod-name`` and
drives it as RASR's PythonControl does (``init`` with keyword arguments, then
``run_control_loop`` or the corpus iteration with ``getSegmentList``,
``init_processing`` and ``process_segment``, then ``exit``), answering the
module's ``callback`` commands itself over a corpus in sprint-sim's format
(``NAME<TAB>LABELS``; a segment's orthography is its label text): CTC FSAs with
blank 0 as sprint-sim builds them, and the full-sum CTC criterion in float64.

Own arguments: ``--*.corpus=FILE``, ``--*.python-control-loop-type=`` RASR's
``python-control-loop`` (default) or ``iterate-corpus``, and
``--*.broken-fsa=1``: every FSA export returns one edge value too few (a
reply that is no FSA, for the parent's checks). As RASR, it ends with
status 1 when the module raises, and exits as a ``SystemExit`` asks.

``--*.stand-in-mode=lattice-processor`` is RASR's ``lattice-processor``
instead (class ``LatticeProcessor``): sequence-discriminative training with a
``python`` layer in the network, whose criterion is computed in float64 by
sequence_criteria.py over the hypotheses of a denominator file.
"""

import importlib
import math
import os
import sys
import traceback

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sequence_criteria  # noqa: E402


def parse_args(argv):
    """``--SELECTOR.key=value`` arguments as {key: value} (the last wins)."""
    options = {}
    for arg in argv:
        if not arg.startswith("--") or "=" not in arg:
            raise SystemExit("stand-in: cannot read argument %r" % arg)
        name, value = arg[2:].split("=", 1)
        options[name.rsplit(".", 1)[-1]] = value
    return options


def read_corpus(path):
    corpus = {}
    with open(path) as lines:
        for line in lines:
            line = line.rstrip("\r\n")
            if line.strip() and not line.startswith("#"):
                name, labels = line.split("\t", 1)
                corpus[name] = labels.strip()
    return corpus


def ctc_fsa(labels):
    """sprint-sim's CTC FSA (criterion/ctc_topology.cpp): states B_0, L_1, B_1, ...,
    L_L, B_L and a final sink; edges (from, to, emission) in its order."""
    count = len(labels)
    label_state = lambda i: 2 * i + 1  # noqa: E731
    blank_state = lambda i: 2 * i  # noqa: E731
    final = 2 * count + 1
    edges = [(0, 0, 0)]
    if count:
        edges.append((0, 1, labels[0]))
    for i in range(count):
        here, after = label_state(i), blank_state(i + 1)
        edges.append((here, here, labels[i]))
        edges.append((here, after, 0))
        if i + 1 < count and labels[i + 1] != labels[i]:
            edges.append((here, label_state(i + 1), labels[i + 1]))
        edges.append((after, after, 0))
        if i + 1 < count:
            edges.append((after, label_state(i + 1), labels[i + 1]))
    ends = (0,) if count == 0 else (label_state(count - 1), blank_state(count))
    edges += [(f, final, e) for (f, t, e) in list(edges) if t in ends]
    return final + 1, numpy.array(edges, dtype=numpy.int64).reshape(-1, 3)


def full_sum(num_states, edges, log_posteriors):
    """-log P over the FSA (weights 0) and the state occupancy gamma [T, D], in
    float64; (None, None) when no path of T frames exists."""
    frames, dim = log_posteriors.shape
    src, dst, emission = edges[:, 0], edges[:, 1], edges[:, 2]
    alpha = numpy.full((frames + 1, num_states), -numpy.inf)
    beta = numpy.full((frames + 1, num_states), -numpy.inf)
    alpha[0, 0] = 0.0
    beta[frames, num_states - 1] = 0.0
    for t in range(frames):
        numpy.logaddexp.at(alpha[t + 1], dst, alpha[t, src] + log_posteriors[t, emission])
    for t in range(frames - 1, -1, -1):
        numpy.logaddexp.at(beta[t], src, beta[t + 1, dst] + log_posteriors[t, emission])
    total = alpha[frames, num_states - 1]
    if not numpy.isfinite(total):
        return None, None
    gamma = numpy.zeros((frames, dim))
    for t in range(frames):
        edge_posterior = numpy.exp(
            alpha[t, src] + log_posteriors[t, emission] + beta[t + 1, dst] - total)
        numpy.add.at(gamma[t], emission, edge_posterior)
    return -total, gamma


class Rasr:
    """What RASR's PythonControl offers the module through ``callback``."""

    def __init__(self, options, corpus, module):
        self.options = options
        self.corpus = corpus
        self.module = module
        self.orthographies = None

    def callback(self, *args, **kwargs):
        if not args or not isinstance(args[0], str):
            raise TypeError("PythonControl callback(): first arg must be a string")
        command = args[0]
        if command == "version":
            return "<version>rasr stand-in</version>"
        if command == "version_number":
            return 5
        if command == "calculate_criterion":
            posteriors, orthography, _alignment, error_type, segment_name = bind(
                args, kwargs, ["posteriors", "orthography", "alignment", "output_error_type",
                               "segment_name"], required=1, strings=(2, 4, 5))
            return self.calculate_criterion(posteriors, orthography, error_type, segment_name)
        if command == "export_allophone_state_fsa_by_segment_name":
            (name,) = bind(args, kwargs, ["segment_name"], required=1, strings=(1,))
            num_states, num_edges, flat, weights = self.exported_fsa(
                self.orthography(name, command))
            if self.options.get("broken-fsa") == "1":
                flat = flat[:-1]
            return num_states, num_edges, flat, weights
        if command == "export_allophone_state_fsa_by_orthography":
            (orthography,) = bind(args, kwargs, ["orthography"], required=1, strings=(1,))
            # RASR's precondition (it aborts on anything else): words
            # separated by one blank, one trailing blank.
            if orthography and (orthography != orthography.lstrip()
                                or not orthography.endswith(" ") or "  " in orthography
                                or any(c in orthography for c in "\t\n\r\f\v")):
                raise RuntimeError("stand-in: orthography %r is not whitespace-normalized with a "
                                   "trailing blank" % orthography)
            return self.exported_fsa(orthography)
        if command == "get_orthography_by_segment_name":
            (name,) = bind(args, kwargs, ["segment_name"], required=1, strings=(1,))
            return self.orthography(name, command)
        raise ValueError("PythonControl callback(): unknown command '%s'" % command)

    @staticmethod
    def exported_fsa(orthography):
        """The automaton of an orthography (its label text), as RASR's export returns it."""
        num_states, edges = ctc_fsa([int(x) for x in orthography.split()])
        flat = numpy.ascontiguousarray(edges.T).reshape(-1).astype(numpy.uint32)
        return num_states, len(edges), flat, numpy.zeros(len(edges), dtype=numpy.float32)

    def orthography(self, name, command):
        if self.orthographies is None:
            # RASR reads its corpus for this map through a corpus description,
            # which asks the Python segment order for its order when that is on.
            names = list(self.corpus)
            if self.options.get("python-segment-order") == "true":
                names = list(self.module.getSegmentList(
                    corpusName="corpus", segmentList=names, segmentsInfo=None,
                    config=self.options["python-segment-order-config"]))
            self.orthographies = {n: self.corpus[n] for n in names if n in self.corpus}
        if name not in self.orthographies:
            raise KeyError("PythonControl %s: unknown segment name '%s'" % (command, name))
        return self.orthographies[name]

    @staticmethod
    def calculate_criterion(posteriors, orthography, error_type, segment_name):
        if error_type != "error-signal":
            raise ValueError("stand-in: output_error_type %r is not error-signal" % error_type)
        if (not isinstance(posteriors, numpy.ndarray) or posteriors.ndim != 2
                or posteriors.dtype not in (numpy.float32, numpy.float64)):
            raise TypeError("numpy2nnMatrix: expected a 2-d float array")
        if orthography is None:
            raise ValueError("stand-in: no orthography for '%s'" % segment_name)
        log_posteriors = numpy.asarray(posteriors, dtype=numpy.float64).T  # (D, T) -> (T, D)
        num_states, edges = ctc_fsa([int(x) for x in orthography.split()])
        loss, gamma = full_sum(num_states, edges, log_posteriors)
        if loss is None:
            return None, None
        error_signal = numpy.exp(log_posteriors) - gamma
        # RASR returns its f32 loss as a Python float, the signal as (D, T) f32.
        return float(numpy.float32(loss)), numpy.asfortranarray(error_signal.T, dtype=numpy.float32)


def bind(args, kwargs, names, required, strings):
    """PyArg_ParseTupleAndKeywords for ``(command, *names)``: positional or by
    keyword; the arguments numbered in `strings` (1-based among `names`) must
    be str, as RASR's format "s" wants (CPython's message counts the command)."""
    values = list(args[1:]) + [None] * (len(names) - len(args[1:]))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError("'%s' is an invalid keyword argument for callback()" % key)
        values[names.index(key)] = value
    for i in range(required):
        if values[i] is None:
            raise TypeError("callback() missing required argument '%s'" % names[i])
    for number in strings:
        value = values[number - 1] if number - 1 < len(values) else None
        if value is not None and not isinstance(value, str):
            raise TypeError("callback() argument %d must be str, not %s"
                            % (number + 1, type(value).__name__))
    return values


def warn(message):
    """A warning on stderr, as RASR's log would carry it."""
    print("stand-in (lattice-processor) WARNING: %s" % message, file=sys.stderr)


def read_lengths(path):
    """``NAME<TAB>T`` per line: the number of feature frames of each segment."""
    lengths = {}
    with open(path) as lines:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\r\n")
            if line.strip() and not line.startswith("#"):
                name, _, frames = line.partition("\t")
                if not frames.strip().isdigit() or int(frames) <= 0:
                    raise SystemExit("stand-in: %s line %d: expected NAME<TAB>frames, got %r"
                                     % (path, number, line))
                lengths[name] = int(frames)
    return lengths


def number_option(options, key, default, low, strict):
    """A finite float option >= `low` (> `low` if `strict`), or exit naming it."""
    text = options.get(key, default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < low or (strict and value == low):
        raise SystemExit("stand-in: --*.%s=%s must be a finite number %s %g"
                         % (key, text, ">" if strict else ">=", low))
    return value


class LatticeProcessor:
    """RASR's lattice-processor training a network whose lowest layer is a
    ``python`` layer (the module's ``SprintNnPythonLayer``), with the
    SegmentwiseNnTrainer's PythonControl (``sprint_unit``
    "SegmentwiseNnTrainer"), calling both in RASR's order:

    - the network: the layer is constructed (its ``setOutputDimension`` is
      called from its constructor), ``setInputDimension``,
      ``loadNetworkParameters`` (with ``--*.parameters-old``) or
      ``initializeNetworkParameters``, ``isTrainable`` (a bool),
      ``getNumberOfFreeParameters`` (an int >= 0); then PythonControl's
      ``init`` (only with ``--*.python-control-enabled=true``);
    - the segments in the Python segment order; per segment: a segment
      without denominator lines has no lattice and is skipped with a
      warning; else ``forward`` with features of T frames (T from
      ``--*.feature-lengths=FILE``, ``NAME<TAB>T``; a segment without one
      fails, as RASR's feature extraction would), ``init_segment``, the
      criterion on the layer's output (a numerator without a path of T
      frames, or a label that is no column, skips the segment with a
      warning after the forward), ``notify_segment_loss`` (the loss as a
      float of its float32 value), ``backpropagate`` (the error signal (D, T)
      float32 in Fortran order);
    - at the end the layer's ``finalize`` and, with ``--*.parameters-new``,
      ``saveNetworkParameters``.

    The criterion: ``--*.criterion=mmi|bmmi|smbr``, ``--*.denominator=FILE``,
    ``--*.am-scale``, ``--*.lm-scale``, ``--*.boost`` as sprint-sim names
    them, CTC with blank 0. The layer's dimensions: ``--*.dimension-input``
    (default 3) and ``--*.dimension-output`` (required: D). Faults:
    ``--*.stand-in-fault=no-notify`` or ``no-backpropagate`` leaves that call
    out for every segment."""

    def __init__(self, options, corpus, module):
        self.options = options
        self.corpus = corpus
        self.module = module
        self.kind = options.get("criterion")
        if self.kind not in sequence_criteria.CRITERIA:
            raise SystemExit("stand-in: --*.criterion=%s is not one of %s"
                             % (self.kind, ", ".join(sequence_criteria.CRITERIA)))
        self.am_scale = number_option(options, "am-scale", "1", 0.0, strict=True)
        self.lm_scale = number_option(options, "lm-scale", "1", 0.0, strict=False)
        self.boost = number_option(options, "boost", "0", 0.0, strict=False)
        if "denominator" not in options or "feature-lengths" not in options:
            raise SystemExit(
                "stand-in: lattice-processor needs --*.denominator and --*.feature-lengths")
        try:
            self.denominator = sequence_criteria.read_denominator(options["denominator"], corpus)
        except sequence_criteria.DenominatorError as exc:
            raise SystemExit("stand-in: %s" % exc) from exc
        self.lengths = read_lengths(options["feature-lengths"])
        self.input_dim = int(options.get("dimension-input", "3"))
        if "dimension-output" not in options:
            raise SystemExit("stand-in: the python layer needs --*.dimension-output")
        self.output_dim = int(options["dimension-output"])
        self.fault = options.get("stand-in-fault", "")
        if self.fault not in ("", "no-notify", "no-backpropagate"):
            raise SystemExit("stand-in: --*.stand-in-fault=%s is not no-notify or no-backpropagate"
                             % self.fault)

    def make_layer(self):
        config = self.options.get("pymod-config", "")
        layer = self.module.SprintNnPythonLayer(config=config)
        layer.setOutputDimension(size=self.output_dim)
        layer.setInputDimension(stream=0, size=self.input_dim)
        if self.options.get("parameters-old"):
            layer.loadNetworkParameters(
                filename=self.options["parameters-old"] + "-f32-layer-0.xml")
        else:
            layer.initializeNetworkParameters()
        trainable = layer.isTrainable()
        if not isinstance(trainable, bool):
            raise TypeError("PythonLayer: 'isTrainable' must return a bool, got %r" % (trainable,))
        if not trainable:
            raise RuntimeError("stand-in: the python layer is not trainable: RASR would never "
                               "backpropagate into it")
        free = layer.getNumberOfFreeParameters()
        if isinstance(free, bool) or not isinstance(free, int) or free < 0:
            raise TypeError("PythonLayer: 'getNumberOfFreeParameters' must return an int >= 0, "
                            f"got {free!r}")
        return layer

    def segment_order(self):
        names = list(self.corpus)
        if self.options.get("python-segment-order") != "true":
            return names
        if self.options.get("python-segment-order-pymod-path"):
            sys.path.insert(0, self.options["python-segment-order-pymod-path"])
        ordering = importlib.import_module(self.options["python-segment-order-pymod-name"])
        return ordering.getSegmentList(corpusName="corpus", segmentList=names, segmentsInfo=None,
                                       config=self.options["python-segment-order-config"])

    def hypotheses(self, name):
        """(numerator (FSA, cost), [(FSA, cost)]) of a segment."""
        reference = [int(x) for x in self.corpus[name].split()]
        cost, hypotheses = sequence_criteria.segment_hypotheses(reference, self.denominator[name])
        return (fsa(reference), cost), [(fsa(labels), c) for labels, c in hypotheses]

    def run(self, rasr):
        layer = self.make_layer()
        control = None
        if self.options.get("python-control-enabled") == "true":
            control = self.module.init(name="Sprint.PythonControl",
                                       sprint_unit="SegmentwiseNnTrainer", reference=object(),
                                       callback=rasr.callback, version_number=5,
                                       config=self.options.get("pymod-config", ""))
            if control is None:
                raise RuntimeError("PythonControl(SegmentwiseNnTrainer): init() returned None")
        for name in self.segment_order():
            if not isinstance(name, str):
                raise TypeError("python-segment-order: segment-name is not a string")
            if name not in self.corpus:
                print("stand-in: segment '%s' not found" % name, file=sys.stderr)
                continue
            self.segment(layer, control, name)
        layer.finalize()
        if self.options.get("parameters-new"):
            layer.saveNetworkParameters(
                filename=self.options["parameters-new"] + "-f32-layer-0.xml")

    def segment(self, layer, control, name):
        if name not in self.denominator:
            warn("segment '%s' has no lattice (no line in %s): skipped"
                 % (name, self.options["denominator"]))
            return
        if name not in self.lengths:
            raise RuntimeError("stand-in: no features for segment '%s' (not in %s)"
                               % (name, self.options["feature-lengths"]))
        frames = self.lengths[name]
        features = numpy.asfortranarray(
            numpy.tile(numpy.arange(frames, dtype=numpy.float32), (self.input_dim, 1)))
        output = layer.forward(input=[features])
        # numpy2nnMatrix: any 2-d float array, copied into RASR's f32 matrix.
        if not isinstance(output, numpy.ndarray) or output.ndim != 2 or output.dtype.kind != "f":
            raise TypeError("numpy2nnMatrix: expected a 2-d float array, got %r" % type(output))
        output = numpy.asfortranarray(output, dtype=numpy.float32)
        if output.shape != (self.output_dim, frames):
            raise RuntimeError(f"stand-in: the python layer's output is {output.shape}, the "
                               f"network needs ({self.output_dim}, {frames})")
        if control is not None:
            control.init_segment(segment_name=name)
        numerator, hypotheses = self.hypotheses(name)
        try:
            loss, error_signal = sequence_criteria.criterion(
                self.kind, output.T, numerator, hypotheses, self.am_scale, self.lm_scale,
                self.boost)
        except ValueError as exc:
            warn("segment '%s': no error signal (%s): skipped" % (name, exc))
            return
        if loss is None:
            warn(f"segment '{name}': the reference has no alignment to {frames} frames: skipped")
            return
        if control is not None and self.fault != "no-notify":
            control.notify_segment_loss(segment_name=name, loss=float(numpy.float32(loss)))
        if self.fault == "no-backpropagate":
            return
        result = layer.backpropagate(
            errorSignalIn=numpy.asfortranarray(error_signal.T, dtype=numpy.float32))
        if not isinstance(result, tuple):
            raise TypeError(
                "PythonLayer: 'backpropagate' must return a tuple, got %r" % type(result))
        if len(result) != 1 or not isinstance(result[0], numpy.ndarray) \
                or result[0].shape != (self.input_dim, frames):
            raise ValueError("PythonLayer: 'backpropagate' must return one (%d, %d) matrix, got %r"
                             % (self.input_dim, frames, [getattr(r, "shape", r) for r in result]))


def fsa(labels):
    """The CTC FSA of `labels` with its weights (all 0), as sequence_criteria takes it."""
    num_states, edges = ctc_fsa(labels)
    return num_states, edges, numpy.zeros(len(edges))


def main():
    options = parse_args(sys.argv[1:])
    corpus = read_corpus(options["corpus"])
    if options.get("pymod-path"):
        sys.path.insert(0, options["pymod-path"])
    module = importlib.import_module(options["pymod-name"])
    rasr = Rasr(options, corpus, module)
    mode = options.get("stand-in-mode", "nn-trainer")
    if mode == "lattice-processor":
        LatticeProcessor(options, corpus, module).run(rasr)
        return
    if mode != "nn-trainer":
        raise SystemExit("stand-in: invalid stand-in-mode %r" % mode)
    control = module.init(name="Sprint.PythonControl", sprint_unit="NnTrainer.pythonControl",
                          reference=object(), callback=rasr.callback, version_number=5,
                          config=options["pymod-config"])
    loop_type = options.get("python-control-loop-type", "python-control-loop")
    if loop_type == "python-control-loop":
        control.run_control_loop(callback=rasr.callback)
    elif loop_type == "iterate-corpus":
        order = list(corpus)
        if options.get("python-segment-order") == "true":
            if options.get("python-segment-order-pymod-path"):
                sys.path.insert(0, options["python-segment-order-pymod-path"])
            ordering = importlib.import_module(options["python-segment-order-pymod-name"])
            order = ordering.getSegmentList(corpusName="corpus", segmentList=list(corpus),
                                            segmentsInfo=None,
                                            config=options["python-segment-order-config"])
        first = True
        for name in order:
            if not isinstance(name, str):
                raise TypeError("python-segment-order: segment-name is not a string")
            if name not in corpus:
                print("stand-in: segment '%s' not found" % name, file=sys.stderr)
                continue
            if first:
                control.init_processing(input_dim=-1, output_dim=-1)
                first = False
            # RASR hands the orthography to Python as bytes.
            control.process_segment(name=name, orthography=corpus[name].encode("utf-8"),
                                    speaker_name=None, features=None, alignment=None,
                                    soft_alignment=None)
    else:
        raise SystemExit("stand-in: invalid python-control-loop-type %r" % loop_type)
    control.exit()


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException:  # as RASR's pythonCriticalError: the traceback, then an error exit
        traceback.print_exc()
        print("stand-in: CRITICAL ERROR: PythonControl failed", file=sys.stderr)
        sys.exit(1)
