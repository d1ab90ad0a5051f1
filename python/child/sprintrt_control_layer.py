"""RASR's NN python layer for sprintrt_control: sequence-discriminative training
(MMI, sMBR) in RASR's ``lattice-processor``, whose network holds a
``layer-type = python`` layer.

RASR makes ``SprintNnPythonLayer(config=...)`` from the module named by the
layer's ``pymod-name`` (``sprintrt_control``, whose class of that name is a
``PythonLayer`` on the process's one control), and
its SegmentwiseNnTrainer, with PythonControl enabled, calls the object
``init`` returned (sprintrt_control.Control). The segments come from the
Python segment order: the generator of ``getSegmentList`` yields the segment
of each loss request and so makes it the current one. For it RASR calls, in
this order:

- the layer's ``forward(input)``, when it rescores the lattice: it gets the
  features and returns the posteriors the parent sent;
- the control's ``init_segment(segment_name)``, then, once RASR has the
  criterion, ``notify_segment_loss(segment_name, loss)``: the loss;
- the layer's ``backpropagate(errorSignalIn)``: the error signal.

The reply goes to the parent when RASR has finished the segment, i.e. when it
asks the generator for the next one (``LayerPath.reply``): loss and error
signal when RASR gave both; loss inf and zeros when it gave neither (it
skipped the segment: no lattice, or one it could not use); an exception reply
naming the one that is missing otherwise. A call that cannot be served (the
parent's posteriors do not fit RASR's features, a call for another segment)
sends the segment's exception reply at once and raises, which ends RASR.
Python 3 and NumPy only; no threads of its own (RASR may call ``forward``
from one of its OpenMP threads, holding the GIL).
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import numpy

from sprintrt_control_pipes import _say, _shape_text, _text


class SegmentError(RuntimeError):
    """RASR's call for a segment cannot be served; the parent has been told."""


class LayerSegment:
    """What RASR gave for the current segment on the python-layer path."""

    def __init__(self) -> None:
        # The rows of the features, per stream, once forwarded.
        self.input_dims: list[int] | None = None
        self.started = False  # init_segment
        self.loss: float | None = None  # notify_segment_loss
        self.error_signal: numpy.ndarray | None = None  # backpropagate, float32 [T, D]


class LayerPath:
    """The python-layer path of one Control: the calls RASR makes for the
    current segment (``control.pending``) and the reply once it is done."""

    def __init__(self, control: Any) -> None:
        self.control = control
        self.layers = 0  # PythonLayer objects RASR made

    def in_use(self, request: Any) -> bool:
        """Whether `request` is answered on this path (a python layer exists,
        or RASR called part of it for the segment)."""
        return self.layers > 0 or request.layer is not None

    def current(self, call: str) -> Any:
        """The request of the segment RASR is at, for its call `call`."""
        request = self.control.pending
        if request is None or request.answered:
            if self.control.serving_segment_order:
                message = (f"RASR called {call}, but no segment of the parent's is pending (RASR "
                           "processes only the segments the Python segment order yields)")
            else:
                message = (f"RASR called {call} outside the Python segment order: the python "
                           "layer serves only segments that the segment order yields "
                           "(usePythonSegmentOrder true; RASR's own corpus order is not the "
                           "parent's)")
            _say(message)
            raise RuntimeError(message)
        if request.layer is None:
            request.layer = LayerSegment()
        return request

    def fail(self, request: Any, message: str) -> NoReturn:
        """Sends the segment's exception reply and raises: RASR ends."""
        request.answered = True
        self.control.send_exception("get_loss_and_error_signal", request.name, message)
        raise SegmentError(message)

    # RASR's calls --------------------------------------------------------------------

    def forward(self, layer: PythonLayer, inputs: Any) -> numpy.ndarray:
        request = self.current("the python layer's forward")
        name = request.name
        if not isinstance(inputs, (list, tuple)) or not inputs:
            self.fail(request, f"segment '{name}': the python layer's forward got "
                      f"{_shape_text(inputs)}, not a list of feature matrices (dim x T)")
        for stream, matrix in enumerate(inputs):
            if not isinstance(matrix, numpy.ndarray) or matrix.ndim != 2:
                self.fail(request, f"segment '{name}': feature stream {stream} is "
                                   f"{_shape_text(matrix)}, not a (dim x T) matrix")
            wanted = layer.input_dims.get(stream)
            if wanted is not None and matrix.shape[0] != wanted:
                self.fail(request, f"segment '{name}': feature stream {stream} has "
                          f"{matrix.shape[0]} rows, but RASR set the python layer's input "
                          f"dimension {wanted}")
        frames = inputs[0].shape[1]
        if any(matrix.shape[1] != frames for matrix in inputs):
            self.fail(request, f"segment '{name}': the feature streams differ in length: "
                               f"{[list(m.shape) for m in inputs]}")
        posteriors = request.log_posteriors  # float32 [T, D], checked with the request
        dim = posteriors.shape[1] if layer.output_dim is None else layer.output_dim
        if posteriors.shape != (frames, dim):
            transposed = (" (transposed? the parent sends [T, D])"
                          if posteriors.shape == (dim, frames) and dim != frames else "")
            self.fail(request, f"segment '{name}': the parent's log-posteriors are "
                      f"[T={posteriors.shape[0]}, D={posteriors.shape[1]}], but RASR's features "
                      f"have T={frames} frames and the python layer's output dimension is D={dim}: "
                      f"expected [{frames}, {dim}]{transposed}")
        request.layer.input_dims = [matrix.shape[0] for matrix in inputs]
        # RASR's matrices are (D, T) in Fortran order: the transpose of the
        # C-ordered [T, D] posteriors, which RASR copies as they are.
        return posteriors.T

    def init_segment(self, segment_name: str | None) -> None:
        request = self.current("init_segment")
        self._same_segment(request, "init_segment", segment_name)
        request.layer.started = True

    def notify_segment_loss(self, segment_name: str | None, loss: float | None) -> None:
        request = self.current("notify_segment_loss")
        self._same_segment(request, "notify_segment_loss", segment_name)
        try:
            if loss is None:
                raise TypeError("no loss")
            request.layer.loss = float(loss)
        except (TypeError, ValueError):
            self.fail(request, f"segment '{request.name}': notify_segment_loss gave the loss "
                               f"{loss!r}, not a number")

    def backpropagate(self, layer: PythonLayer,
                      error_signal: Any) -> tuple[numpy.ndarray, ...]:
        request = self.current("the python layer's backpropagate")
        name = request.name
        if request.layer.input_dims is None:
            self.fail(request, f"segment '{name}': RASR called the python layer's backpropagate "
                               "without its forward")
        frames, dim = request.log_posteriors.shape
        if (not isinstance(error_signal, numpy.ndarray) or error_signal.ndim != 2
                or error_signal.dtype not in (numpy.float32, numpy.float64)):
            self.fail(request, f"segment '{name}': RASR's error signal is "
                               f"{_shape_text(error_signal)}, not a float matrix (D x T)")
        if error_signal.shape != (dim, frames):
            self.fail(request, f"segment '{name}': RASR's error signal has shape "
                      f"({error_signal.shape[0]}, {error_signal.shape[1]}), but the segment's "
                      f"posteriors are (D x T) = ({dim}, {frames})")
        request.layer.error_signal = numpy.array(error_signal.T, dtype=numpy.float32, order="C")
        # The gradient for the layer's inputs, the features: there is none.
        return tuple(numpy.zeros((rows, frames), dtype=numpy.float32, order="F")
                     for rows in request.layer.input_dims)

    def _same_segment(self, request, call, segment_name):
        if _text(segment_name) != request.name:
            self.fail(request, f"RASR's {call} names segment '{_text(segment_name)}', but the "
                               f"segment order gave it '{request.name}'")

    # The reply ------------------------------------------------------------------------

    def reply(self, request: Any) -> None:
        """Answers `request` with what RASR gave for it (RASR is done with it)."""
        request.answered = True
        state = request.layer or LayerSegment()
        name = request.name
        if state.loss is None and state.error_signal is None:
            how = ("after its forward pass: RASR could not use its lattice"
                   if state.input_dims is not None
                   else "without a forward pass: RASR found no lattice or no features for it")
            _say(f"RASR skipped segment '{name}' ({how}; see RASR's log): loss inf and an all-zero "
                 "error signal")
            zeros = numpy.zeros(request.log_posteriors.shape, numpy.float32)
            self.control.send_loss(name, math.inf, zeros)
        elif state.loss is None:
            why = ("" if state.started else
                   " (nor init_segment: RASR's SegmentwiseNnTrainer calls them only with "
                   "python-control-enabled true and this module as its pymod-name)")
            self.control.send_exception(
                "get_loss_and_error_signal", name,
                f"RASR backpropagated segment '{name}' but never called notify_segment_loss for "
                f"it: no loss{why}")
        elif state.error_signal is None:
            self.control.send_exception(
                "get_loss_and_error_signal", name,
                f"RASR gave segment '{name}' its loss (notify_segment_loss) but never called the "
                "python layer's backpropagate: no error signal (RASR backpropagates only when its "
                "estimator computes a gradient, e.g. estimator = dry-run, and only into a layer "
                "below the top one)")
        else:
            self.control.send_loss(name, state.loss, state.error_signal)


class PythonLayer:
    """RASR's NN python layer (``layer-type = python``) on sprintrt's pipes;
    ``sprintrt_control.SprintNnPythonLayer`` makes it on the process's control.

    RASR constructs it with the layer's ``pymod-config`` (which must carry the
    pipes, as sprintrt passes them) and calls the methods below with keyword
    arguments. ``forward`` returns the parent's log-posteriors of the current
    segment as (D x T) float32; ``backpropagate`` takes RASR's error signal
    (D x T) for the parent and returns zeros for the features, one (dim x T)
    float32 matrix per input stream. The layer has no parameters of its own;
    it says it is trainable, since RASR backpropagates only into trainable
    layers."""

    def __init__(self, path: LayerPath) -> None:
        self.path = path
        self.path.layers += 1
        self.input_dims: dict[int, int] = {}
        self.output_dim: int | None = None

    def setInputDimension(self, stream: int, size: int) -> None:  # noqa: N802 (RASR's names)
        self.input_dims[int(stream)] = int(size)

    def setOutputDimension(self, size: int) -> None:  # noqa: N802
        self.output_dim = int(size)

    def initializeNetworkParameters(self) -> None:  # noqa: N802
        """No parameters: the trainer holds them."""

    def loadNetworkParameters(self, filename: str) -> None:  # noqa: N802
        """No parameters to load."""

    def saveNetworkParameters(self, filename: str) -> None:  # noqa: N802
        """No parameters to save."""

    def isTrainable(self) -> bool:  # noqa: N802
        return True

    def getNumberOfFreeParameters(self) -> int:  # noqa: N802
        return 0

    def forward(self, input: Any) -> numpy.ndarray:  # noqa: A002 (RASR's keyword)
        return self.path.forward(self, input)

    def backpropagate(self, errorSignalIn: Any) -> tuple[numpy.ndarray, ...]:  # noqa: N803
        return self.path.backpropagate(self, errorSignalIn)

    def finalize(self) -> None:
        """RASR is done with the network: nothing to do."""
