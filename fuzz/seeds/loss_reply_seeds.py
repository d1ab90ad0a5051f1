"""Writes the seeds of loss_reply_fuzzer: the replies to loss requests that
sprintrt's child module sends on RASR's NN python-layer path, made by the
module itself, and the loss replies of the golden vectors.

    loss_reply_seeds.py OUTPUT_DIR CHILD_MODULE_DIR PROTOCOL_VECTORS_DIR

The module (python/child/sprintrt_control.py) runs here as under RASR's
lattice-processor, on a pair of pipes: the parent's requests come from the
module's own encoder, and this script makes RASR's calls (the python layer's
forward and backpropagate, notify_segment_loss) for one segment in each of
the ways the module answers: the loss and the error signal, loss inf and
zeros for a segment RASR skipped, an exception for a loss without an error
signal and for one the other way round, for features of the wrong length,
and "unknown segment" for a segment RASR's corpus lacks. Each reply becomes
one input in loss_reply_fuzzer.cpp's layout: the request's shape and the
segment's name, then the reply as the child wrote it on its pipe, and once
more as it writes it with framing:raw.
"""

import json
import os
import struct
import sys

import numpy

#: Segments of RASR's corpus; "not-in-corpus" is asked for but not in it.
CORPUS = ["corpus/rec/seg-%d" % i for i in range(1, 7)]

#: The flags byte of loss_reply_fuzzer's input: raw framing.
RAW = 1


def header(frames, dim, name, flags=0):
    """The start of a loss_reply_fuzzer input: what was asked."""
    raw = name.encode("utf-8")
    return bytes([frames - 1, dim - 1, flags, len(raw)]) + raw


def framed(message):
    return struct.pack("<i", len(message)) + message


class Lattice:
    """What RASR's lattice-processor does to the module for one segment."""

    def __init__(self, control_module, layer, frames, dim):
        self.module = control_module
        self.layer = layer
        self.frames = frames
        self.dim = dim

    def forward(self, frames=None):
        self.layer.forward([numpy.zeros((2, frames or self.frames), numpy.float32, order="F")])

    def loss(self, name, value):
        control = self.module.init(name="lattice-processor")
        control.init_segment(segment_name=name)
        control.notify_segment_loss(segment_name=name, loss=value)

    def backpropagate(self):
        error = numpy.arange(self.dim * self.frames, dtype=numpy.float32).reshape(
            (self.dim, self.frames)) / 7.0 - 0.5
        self.layer.backpropagate(numpy.asfortranarray(error))


def answer_requests(control_module, segment_error, config, cases):
    """RASR's lattice-processor over the Python segment order: for each
    segment the module yields, the calls its case names."""
    segments = control_module.getSegmentList("corpus", CORPUS, config=config)
    layer = control_module.SprintNnPythonLayer(config=config)
    layer.setInputDimension(0, 2)
    expected = iter(case for case in cases if case[3] != "unknown")
    for name in segments:
        _, frames, dim, what = next(expected)
        layer.setOutputDimension(dim)
        rasr = Lattice(control_module, layer, frames, dim)
        try:
            if what in ("both", "loss only", "error signal only"):
                rasr.forward()
            if what in ("both", "loss only"):
                rasr.loss(name, 12.375)
            if what in ("both", "error signal only"):
                rasr.backpropagate()
            if what == "features of another length":
                rasr.forward(frames + 1)
        except segment_error:
            pass  # the module answered the segment with its exception


def child_replies(child_dir):
    """Runs the module through the python-layer cases; returns its replies as
    (frames, dim, name, bytes on the pipe)."""
    sys.path.insert(0, child_dir)
    import sprintrt_control  # noqa: PLC0415 (found through child_dir)
    from sprintrt_control_layer import SegmentError  # noqa: PLC0415
    from sprintrt_control_pipes import encode_message  # noqa: PLC0415

    p2c_read, p2c_write = os.pipe()
    c2p_read, c2p_write = os.pipe()
    config = "c2p_fd:%d,p2c_fd:%d" % (c2p_write, p2c_read)
    # Each case: the segment asked for, its shape, and what RASR does.
    cases = [
        (CORPUS[0], 3, 4, "both"),
        (CORPUS[1], 5, 7, "skipped"),
        (CORPUS[2], 2, 3, "loss only"),
        (CORPUS[3], 4, 2, "error signal only"),
        ("not-in-corpus", 3, 4, "unknown"),
        (CORPUS[4], 6, 5, "features of another length"),
        (CORPUS[5], 1, 1, "both"),
    ]
    rng = numpy.random.default_rng(44)
    requests = b""
    for name, frames, dim, _ in cases:
        posteriors = numpy.log(rng.dirichlet(numpy.ones(dim), size=frames)).astype(numpy.float32)
        requests += framed(encode_message(("get_loss_and_error_signal", name, frames, posteriors)))
    requests += framed(encode_message(("exit",)))
    os.write(p2c_write, requests)

    # The module reports each failed segment on stderr, as RASR's log would
    # show it: not news here.
    saved_stderr = os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    try:
        answer_requests(sprintrt_control, SegmentError, config, cases)
    finally:
        os.dup2(saved_stderr, 2)
        os.close(quiet)
        os.close(saved_stderr)
    os.close(c2p_write)
    data = b""
    while chunk := os.read(c2p_read, 65536):
        data += chunk
    # One reply per request, in order (the unknown segment's too).
    replies = []
    offset = 0
    for name, frames, dim, _ in cases:
        (size,) = struct.unpack_from("<i", data, offset)
        replies.append((frames, dim, name, data[offset:offset + 4 + size]))
        offset += 4 + size
    if offset != len(data):
        raise SystemExit("loss_reply_seeds: the child sent more replies than requests")
    return replies


def vector_replies(vectors_dir):
    """The golden vectors' loss replies and exception, with their shapes."""
    with open(os.path.join(vectors_dir, "vectors.json")) as f:
        vectors = json.load(f)
    for name, vector in sorted(vectors.items()):
        if not name.startswith(("c2p_loss_reply", "legacy_c2p_loss_reply", "c2p_exception")):
            continue
        items = vector["value"]["tuple"]
        shape = items[2]["ndarray"]["shape"] if len(items) == 3 else [3, 4]
        if max(shape) > 256:
            continue  # beyond what the input's first bytes can ask for
        with open(os.path.join(vectors_dir, name + ".bin"), "rb") as f:
            data = f.read()
        flags = RAW if vector["framing"] == "raw" else 0
        yield name, header(shape[0], shape[1], "corpus/rec/seg-1", flags) + data


def main():
    out_dir, child_dir, vectors_dir = sys.argv[1:]
    written = 0
    for i, (frames, dim, name, data) in enumerate(child_replies(child_dir)):
        for suffix, flags, wire in (("", 0, data), ("-raw", RAW, data[4:])):
            path = os.path.join(out_dir, "python-layer-%d%s" % (i + 1, suffix))
            with open(path, "wb") as f:
                f.write(header(frames, dim, name, flags) + wire)
            written += 1
    for name, data in vector_replies(vectors_dir):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
        written += 1
    print("loss_reply_seeds: %d seeds" % written)


if __name__ == "__main__":
    main()
