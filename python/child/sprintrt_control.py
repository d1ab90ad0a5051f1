"""sprintrt's child side of the Sprint control protocol, for RASR's PythonControl.

RASR's nn-trainer (``--*.action=python-control``) imports this module
(``--*.pymod-name``, found through ``--*.pymod-path``) into its embedded Python
and passes the parent's pipes in ``--*.pymod-config``; the module answers the
parent's requests (docs/protocol.md) with what RASR computes through its
PythonControl ``callback``. It needs only Python 3 and NumPy: it must not
import ``sprintrt`` (its extension starts threads) or RETURNN.

- ``python-control-loop-type=python-control-loop``: RASR calls ``init``, then
  ``run_control_loop(callback)``, which serves requests until ``exit``; a loss
  takes the segment's orthography from ``get_orthography_by_segment_name``.
- ``iterate-corpus``: with the Python segment order, the generator of
  ``getSegmentList`` serves requests and yields the segment of each loss
  request, and RASR's ``process_segment`` of it (with its orthography, as
  bytes) sends the reply. Without it, RASR's corpus order must be the
  parent's: a segment out of that order fails at once, naming both.
- RASR's ``lattice-processor`` (MMI, sMBR) with a ``python`` layer
  (``SprintNnPythonLayer``, sprintrt_control_layer): the Python segment order
  yields the segments as above; the layer's ``forward`` returns the parent's
  posteriors, ``notify_segment_loss`` and ``backpropagate`` give the loss and
  the error signal, and the reply goes out when RASR asks for the next
  segment.

A request it cannot serve gets an ``("exception", message)`` reply naming it; a
broken pipe or bytes that are no request end the child with a message on
stderr and an exception to RASR (which then exits with an error).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator

import numpy

from sprintrt_control_layer import LayerPath, PythonLayer
from sprintrt_control_pipes import Pipes, ProtocolError, _describe, _say, _shape_text, _text
from sprintrt_control_shm import CONFIG_KEY, TAG, SharedRegion, is_reference, reference_of

__all__ = ["init", "getSegmentList", "SprintNnPythonLayer", "ProtocolError"]

#: The name this child gives in its ``init`` reply.
CHILD_NAME = "sprintrt_control"
#: The protocol version of the ``init`` handshake (docs/protocol.md section 4).
PROTOCOL_VERSION = 1
#: What RASR's ``calculate_criterion`` is asked for: the parent sends
#: log-posteriors and RASR, told ``--*.input-in-log-space=true``, returns the
#: gradient with respect to the activations before the softmax.
OUTPUT_ERROR_TYPE = "error-signal"

#: The characters RASR's orthographies separate words with (utf8::whitespace).
_RASR_WHITESPACE = " \t\n\r\f\v"


def _rasr_orthography(text):
    """`text` as RASR's corpus reader normalizes an orthography: no leading
    whitespace, each run of whitespace one blank, and one trailing blank.
    RASR's export by orthography requires exactly this form and aborts the
    whole process on any other, so the child sends it in this form."""
    words = [w for w in text.translate({ord(c): " " for c in _RASR_WHITESPACE}).split(" ") if w]
    return "".join(w + " " for w in words)


def parse_config(config: str) -> dict[str, str]:
    """The pymod config string ``k:v,k:v`` as a dict of str (RASR passes it to
    ``init`` and ``getSegmentList`` unchanged)."""
    result = {}
    for item in (config or "").split(","):
        if not item:
            continue
        key, sep, value = item.partition(":")
        if not sep:
            raise ValueError(f"pymod config item {item!r} is not key:value (config {config!r})")
        result[key] = value
    return result


# -- the control ---------------------------------------------------------------------


class _Request:
    """A loss request waiting for RASR's ``process_segment`` of its segment."""

    def __init__(self, name, log_posteriors):
        self.name = name
        self.log_posteriors = log_posteriors
        self.answered = False
        self.layer = None  # what RASR's python layer path gave (sprintrt_control_layer)


class Control:
    """The object ``init`` returns to RASR: serves the parent's requests with
    RASR's callback. There is one per process (RASR's PythonControl and its
    Python segment order share it)."""

    def __init__(self, config: dict[str, str], callback: Callable[..., Any] | None = None,
                 version_number: int | None = None) -> None:
        self.config = config
        for key in ("c2p_fd", "p2c_fd"):
            if key not in config:
                raise ValueError(f"the pymod config lacks {key} (sprintrt passes "
                                 f"c2p_fd:C,p2c_fd:P): {config!r}")
        self.pipes = Pipes(int(config["p2c_fd"]), int(config["c2p_fd"]),
                           config.get("framing", "length_prefixed"))
        self.callback: Callable[..., Any] | None = None
        self.version_number: int | None = None
        self.control_loop_running = False
        self.serving_segment_order = False
        self.handling = False
        self.pending: _Request | None = None
        self.exited = False
        self.layer_path = LayerPath(self)
        # The parent's shared region (docs/protocol.md section 7), if offered
        # and what it must be; else everything goes through the pipes.
        self.region: SharedRegion | None = None
        # The loss request being served through it: its offset and its view.
        self.shared_loss: tuple[int, numpy.ndarray] | None = None
        if CONFIG_KEY in config:
            try:
                self.region = SharedRegion(int(config[CONFIG_KEY]))
            except (OSError, ValueError) as exc:
                _say(f"not using the shared region: {exc}")
        self.update(callback, version_number)

    def update(self, callback: Callable[..., Any] | None, version_number: int | None) -> None:
        """Takes RASR's callback and version from a (later) ``init`` call."""
        if callback is not None:
            self.callback = callback
        if version_number is not None:
            needed = int(self.config.get("minPythonControlVersion", 0))
            if version_number < needed:
                raise RuntimeError(f"RASR's PythonControl has version {int(version_number)}, "
                                   f"minPythonControlVersion asks for {needed}: use a newer RASR")
            self.version_number = version_number

    # What RASR calls -------------------------------------------------------------

    def run_control_loop(self, callback: Callable[..., Any], **_kwargs: Any) -> None:
        """RASR's ``python-control-loop``: serves requests until ``exit``."""
        self.callback = callback
        self.control_loop_running = True
        try:
            while self._serve_one(loss=self._loss_by_segment_name) != "exit":
                pass
        finally:
            self.control_loop_running = False

    def init_processing(self, input_dim: int | None = None, output_dim: int | None = None,
                        **_kwargs: Any) -> None:
        """RASR's ``iterate-corpus``, before its first segment: nothing to set up
        (features and alignments are not used)."""

    def process_segment(self, name: str, orthography: str | bytes | None = None,
                        **_kwargs: Any) -> None:
        """RASR's ``iterate-corpus``: one segment of its corpus, with its
        orthography (bytes): answers the parent's loss request for it."""
        name = _text(name)
        if not self.serving_segment_order:
            self._wait_for_loss_request(name)
        request = self.pending
        if request is None or request.name != name:
            wanted = "no segment" if request is None else f"segment '{request.name}'"
            raise RuntimeError(f"RASR processes segment '{name}' but the parent asked for {wanted}")
        request.answered = True
        self._reply_guarded(
            "get_loss_and_error_signal", name,
            lambda: self._criterion(name, request.log_posteriors, _text(orthography)))

    def exit(self, **_kwargs: Any) -> None:
        """RASR is done: closes the pipes."""
        self.exited = True
        self.pipes.close()

    def init_segment(self, segment_name: str | None = None, **_kwargs: Any) -> None:
        """RASR's SegmentwiseNnTrainer starts the current segment's criterion."""
        self.layer_path.init_segment(segment_name)

    def notify_segment_loss(self, segment_name: str | None = None, loss: float | None = None,
                            **_kwargs: Any) -> None:
        """RASR's SegmentwiseNnTrainer has the current segment's loss."""
        self.layer_path.notify_segment_loss(segment_name, loss)

    def segment_list(self, corpus_name: str, segment_list: Iterable[Any]) -> Iterator[str]:
        """The generator behind ``getSegmentList``: yields the segment of each
        loss request. RASR's ``process_segment`` for it answers it; on the
        python-layer path the answer goes out when RASR asks for the next
        segment, i.e. is done with this one."""
        known = {_text(s) for s in segment_list or ()}
        self.serving_segment_order = True
        try:
            while True:
                self.pending = None
                found: list[_Request] = []
                served = self._serve_one(
                    loss=lambda n, lp: self._queue(n, lp, known, corpus_name, found))
                if served == "exit":
                    return
                if not found:
                    continue
                try:
                    yield found[0].name
                except GeneratorExit:
                    self._abandoned(found[0])
                    raise
                self._finished(found[0], corpus_name)
        finally:
            self.serving_segment_order = False
            self.pending = None

    def _finished(self, request, corpus_name):
        """RASR is done with `request`'s segment: answers it if not yet."""
        if request.answered:
            return
        if self.layer_path.in_use(request):
            self.layer_path.reply(request)
            return
        self.send_exception(
            "get_loss_and_error_signal", request.name,
            f"RASR did not process segment '{request.name}' (not in its corpus '{corpus_name}', or "
            "left out by its segment selection)")

    def _abandoned(self, request):
        """RASR dropped the segment order while at `request` (it is ending):
        the parent gets the segment's answer if RASR gave all of it, else an
        error naming it, as far as the pipe still takes one."""
        if request.answered or self.pipes.c2p_fd is None:
            return
        state = request.layer
        try:
            if state is not None and state.loss is not None and state.error_signal is not None:
                self.layer_path.reply(request)
            else:
                request.answered = True
                self.send_exception("get_loss_and_error_signal", request.name,
                                    "RASR stopped iterating its segments at segment "
                                    f"'{request.name}' before it finished it")
        except ProtocolError:
            pass

    # Requests ----------------------------------------------------------------------

    def _serve_one(self, loss):
        """Reads and answers one request; ``loss(name, log_posteriors)`` answers
        a loss request. Returns "exit" for ``exit``."""
        try:
            message = self.pipes.read()
        except ProtocolError as exc:
            self._fail(exc)
        if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
            self.send_exception("request", None, "a request must be a tuple (command, ...), got "
                                                 f"{message!r}")
            return None
        command, args = message[0], message[1:]
        if command == "exit" and not args:
            return "exit"
        self.handling = True
        try:
            self._dispatch(command, args, loss)
        finally:
            self.handling = False
        return None

    def _dispatch(self, command, args, loss):
        if command == "init" and len(args) == 2:
            self._reply_guarded(command, None, lambda: self._init_reply(*args))
        elif command == "export_allophone_state_fsa_by_segment_name" and len(args) == 1:
            name = _text(args[0])
            self._reply_guarded(command, name, lambda: self._fsa(command, "segment_name", name))
        elif command == "export_allophone_state_fsa_by_orthography" and len(args) == 1:
            orthography = _text(args[0])
            self._reply_guarded(command, orthography, lambda: self._fsa(
                command, "orthography", orthography, _rasr_orthography(orthography)))
        elif command == "get_loss_and_error_signal" and len(args) == 3:
            name = _text(args[0])
            try:
                log_posteriors = self._check_loss_request(name, *args[1:])
            except ValueError as exc:
                self.send_exception(command, name, str(exc))
                return
            loss(name, log_posteriors)
        else:
            self.send_exception(command, None,
                                f"unknown command '{command}' with {len(args)} arguments (this "
                                "child serves init, get_loss_and_error_signal, "
                                "export_allophone_state_fsa_by_segment_name, "
                                "export_allophone_state_fsa_by_orthography and exit)")

    def _init_reply(self, parent_name, version):
        if version != PROTOCOL_VERSION:
            _say(f"init from {parent_name!r} asks for protocol version {version!r}, this child "
                 f"speaks {PROTOCOL_VERSION}")
        if self.region is not None:
            return (CHILD_NAME, PROTOCOL_VERSION, TAG)  # accepts the region
        return (CHILD_NAME, PROTOCOL_VERSION)

    def _check_loss_request(self, name, seg_len, log_posteriors):
        self.shared_loss = None  # a request's reply never goes where an earlier one's did
        if not isinstance(name, str) or not name:
            raise ValueError("get_loss_and_error_signal: segment name must be a non-empty str, "
                             f"got {name!r}")
        if (isinstance(seg_len, bool) or not isinstance(seg_len, (int, numpy.integer))
                or seg_len <= 0):
            raise ValueError(f"get_loss_and_error_signal for '{name}': seg_len must be a positive "
                             f"int, got {seg_len!r}")
        if is_reference(log_posteriors):
            what = f"get_loss_and_error_signal for '{name}': log_posteriors"
            if self.region is None:
                raise ValueError(f"{what} are in a shared region, but none was offered")
            view = self.region.view(log_posteriors, int(seg_len), what)
            self.shared_loss = (log_posteriors[1], view)
            return view
        if (not isinstance(log_posteriors, numpy.ndarray) or log_posteriors.dtype != numpy.float32
                or log_posteriors.ndim != 2 or log_posteriors.shape[0] != seg_len
                or log_posteriors.shape[1] == 0):
            raise ValueError(f"get_loss_and_error_signal for '{name}': log_posteriors must be "
                             f"float32 [seg_len={seg_len}, D], got "
                             f"{_shape_text(log_posteriors)!r}")
        return log_posteriors

    def _queue(self, name, log_posteriors, known, corpus_name, found):
        if known and name not in known:
            self.send_exception("get_loss_and_error_signal", name,
                                f"unknown segment '{name}': not in RASR's corpus '{corpus_name}' "
                                f"({len(known)} segments)")
            return
        self.pending = _Request(name, log_posteriors)
        found.append(self.pending)

    def _wait_for_loss_request(self, name):
        """``iterate-corpus`` without the Python segment order: RASR's corpus
        order must be the parent's."""
        while True:
            found = []
            if self._serve_one(loss=lambda n, lp: found.append(_Request(n, lp))) == "exit":
                self.exit()
                raise SystemExit(0)
            if found:
                self.pending = found[0]
                if found[0].name != name:
                    message = ("RASR iterates its corpus in its own order and is at segment "
                               f"'{name}', but the parent asked for '{found[0].name}': use the "
                               "Python segment order (usePythonSegmentOrder true)")
                    self.send_exception("get_loss_and_error_signal", found[0].name, message)
                    raise RuntimeError(message)
                return

    def _rasr(self, *args, **kwargs):
        if self.callback is None:
            raise RuntimeError(
                "RASR gave no callback to init (a PythonControl older than version 5?)")
        return self.callback(*args, **kwargs)

    def _fsa(self, command, keyword, text, argument=None):
        """RASR's automaton for the segment name or orthography `text`: the
        callback `command` with `argument` (`text` if None) as its argument
        `keyword`."""
        if not isinstance(text, str) or not text:
            what = keyword.replace("_", " ")
            raise ValueError(f"{command}: the {what} must be a non-empty str, got {text!r}")
        num_states, num_edges, edges, weights = self._rasr(
            command, **{keyword: text if argument is None else argument})
        edges = numpy.asarray(edges, dtype=numpy.uint32).reshape(-1)
        weights = numpy.asarray(weights, dtype=numpy.float32).reshape(-1)
        if edges.size != 3 * int(num_edges) or weights.size != int(num_edges):
            raise ValueError(f"RASR's FSA of '{text}' has {num_edges} edges but {edges.size} edge "
                             f"values and {weights.size} weights")
        return (int(num_states), int(num_edges), edges, weights)

    def _loss_by_segment_name(self, name, log_posteriors):
        def compute():
            orthography = self._rasr("get_orthography_by_segment_name", segment_name=name)
            return self._criterion(name, log_posteriors, _text(orthography))
        self._reply_guarded("get_loss_and_error_signal", name, compute)

    def _criterion(self, name, log_posteriors, orthography):
        frames, dim = log_posteriors.shape
        # RASR's matrices are (D, T) in Fortran order: the transpose of the
        # C-ordered (T, D) posteriors, without a copy.
        loss, error_signal = self._rasr("calculate_criterion", posteriors=log_posteriors.T,
                                        orthography=orthography,
                                        output_error_type=OUTPUT_ERROR_TYPE, segment_name=name)
        if loss is None:  # RASR discarded the segment: skipped
            return (math.inf, numpy.zeros((frames, dim), dtype=numpy.float32))
        error_signal = numpy.asarray(error_signal)
        if error_signal.shape != (dim, frames):
            raise ValueError(f"RASR's error signal of '{name}' has shape {error_signal.shape}, "
                             f"expected ({dim}, {frames})")
        return (float(loss), numpy.ascontiguousarray(error_signal.T, dtype=numpy.float32))

    # Replies ----------------------------------------------------------------------

    def _reply_guarded(self, command, name, compute):
        """Sends ``("ok",) + compute()``, or an exception reply if it raised."""
        try:
            result = compute()
            if command == "get_loss_and_error_signal":
                result = self._through_region(*result)
        except Exception as exc:  # the parent gets it as an error naming command and segment
            self.send_exception(command, name, _describe(exc))
            return
        self._send(("ok",) + result)

    def send_loss(self, name: str, loss: float, error_signal: Any) -> None:
        """Answers the loss request of segment `name`."""
        self._reply_guarded("get_loss_and_error_signal", name, lambda: (loss, error_signal))

    def _through_region(self, loss, error_signal):
        """A loss reply's items: as they are, or for a request that came through
        the shared region, the error signal written over its posteriors there and
        referenced."""
        shared, self.shared_loss = self.shared_loss, None
        if shared is None:
            return (loss, error_signal)
        offset, view = shared
        error_signal = numpy.asarray(error_signal)
        if error_signal.shape != view.shape:
            raise ValueError(f"the error signal has shape {error_signal.shape}, the posteriors "
                             f"{view.shape}")
        view[...] = error_signal
        return (loss, reference_of(offset, view))

    def send_exception(self, command: str, name: str | None, message: str) -> None:
        """Sends the exception reply to `command` (of segment `name`, if any)
        and says why on stderr."""
        if command == "get_loss_and_error_signal":
            self.shared_loss = None
        subject = "" if name is None else f" '{name}'"
        _say(f"{command}{subject}: {message}")
        self._send(("exception", message))

    def _send(self, reply):
        try:
            self.pipes.write(reply)
        except ProtocolError as exc:
            self._fail(exc)

    def _fail(self, exc):
        _say(f"{exc}; ending")
        raise exc


# -- the module interface RASR calls -----------------------------------------------

_control = None


def init(name: str, reference: Any = None, config: str = "", sprint_unit: str | None = None,
         version_number: int | None = None, callback: Callable[..., Any] | None = None,
         **_kwargs: Any) -> Control:
    """RASR's PythonControl: ``init(name, sprint_unit, reference, callback,
    version_number, config)``; returns the object it then drives."""
    global _control
    if _control is None:
        _control = Control(parse_config(config), callback, version_number)
    else:
        _control.update(callback, version_number)
    return _control


class SprintNnPythonLayer(PythonLayer):
    """RASR's NN python layer (``layer-type = python``): RASR makes it from
    this module with the layer's ``pymod-config``, which carries the pipes as
    sprintrt passes them; it serves the process's one control."""

    def __init__(self, config: str = "", **_kwargs: Any) -> None:
        super().__init__(init(name="sprintrt.python-layer", config=config).layer_path)


def getSegmentList(corpusName: str | bytes, segmentList: Iterable[Any],  # noqa: N802, N803
                   segmentsInfo: Any = None, config: str = "", **_kwargs: Any) -> Iterator[Any]:
    """RASR's Python segment order: yields the segments to process, in the
    order of the parent's loss requests."""
    control = init(name="sprintrt.segment-order", reference=corpusName, config=config)
    if control.control_loop_running or control.serving_segment_order or control.handling:
        # RASR reads its corpus inside a callback while a request is served
        # (to map segment names to orthographies): its own order, all segments.
        return iter(list(segmentList))
    return control.segment_list(_text(corpusName), segmentList)
