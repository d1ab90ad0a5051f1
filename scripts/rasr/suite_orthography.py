"""The real-RASR suite's check of FSA exports by orthography (suite.py runs
it as its part ``orthography``): through real nn-trainer children with
sprintrt's child module (1 and 2 children), ``sprintrt.fsa_builder.FsaBuilder``'s
``build_by_orthography`` gives, for a few orthographies of the set-up's
corpus and one no segment has, exactly librasr's
``AllophoneStateFsaBuilder.build_by_orthography`` of the same config; and a
segment's FSA by orthography equals its FSA by segment name.

librasr is given each orthography as RASR's corpus reader normalizes one
(words separated by one blank, one trailing blank): RASR's export aborts on
any other form. Through sprintrt both that form and the plain words ("a b")
are checked: sprintrt's child module normalizes before it calls RASR.
"""

import json
import os
import subprocess
import sys

import numpy

#: How many of the corpus's orthographies are checked.
CORPUS_ORTHOGRAPHIES = 4

#: librasr's FSAs of the orthographies in sys.argv[2] (a JSON list) under the
#: config sys.argv[3], written into the .npz sys.argv[1].
LIBRASR_CODE = r"""
import json, sys
import numpy
import librasr
out, orthographies, config_path = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
config = librasr.Configuration()
config.set_from_file(config_path)
builder = librasr.AllophoneStateFsaBuilder(config)
arrays = {}
for i, orthography in enumerate(orthographies):
    states, count, edges, weights = builder.build_by_orthography(orthography)
    arrays["counts_%d" % i] = numpy.array([states, count], dtype=numpy.int64)
    arrays["edges_%d" % i] = numpy.asarray(edges, dtype=numpy.uint32).reshape(-1)
    arrays["weights_%d" % i] = numpy.asarray(weights, dtype=numpy.float32).reshape(-1)
numpy.savez(out, **arrays)
"""


def orthographies(setup):
    """The first corpus segments' (tag, orthography) pairs, and one
    orthography of their words that no segment has (tag None)."""
    pairs = [(s["name"], s["orth"]) for s in setup["segments"][:CORPUS_ORTHOGRAPHIES]]
    known = {s["orth"] for s in setup["segments"]}
    words = " ".join(orth for _, orth in pairs).split()
    for k in range(1, len(words)):
        unseen = " ".join(reversed(words[:k + 1]))
        if unseen not in known:
            pairs.append((None, unseen))
            break
    return pairs


def normalized(orthography):
    """`orthography` in the form RASR's export requires: "a b "."""
    return "".join(word + " " for word in orthography.split())


def librasr_fsas(suite, texts, config):
    """librasr's (num_states, num_edges, edges, weights) of each of `texts`,
    computed in an interpreter of its own."""
    out = os.path.join(suite.work, "orthography-fsas.npz")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(suite.args.librasr))
    run = subprocess.run([sys.executable, "-c", LIBRASR_CODE, out, json.dumps(texts), config],
                         env=env, capture_output=True, text=True, errors="replace", timeout=600)
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-3000:])
    with numpy.load(out) as arrays:
        return [(int(arrays["counts_%d" % i][0]), int(arrays["counts_%d" % i][1]),
                 arrays["edges_%d" % i], arrays["weights_%d" % i]) for i in range(len(texts))]


def same_fsa(got, want):
    """Whether two (num_states, num_edges, edges, weights) tuples are equal,
    dtypes included; a description of the first difference otherwise."""
    if (int(got[0]), int(got[1])) != (int(want[0]), int(want[1])):
        return False, "%d states, %d edges vs %d, %d" % (got[0], got[1], want[0], want[1])
    for what, x, y in (("edges", got[2], want[2]), ("weights", got[3], want[3])):
        x, y = numpy.asarray(x), numpy.asarray(y)
        if x.dtype != y.dtype or not numpy.array_equal(x, y):
            return False, "%s differ (%s %s vs %s %s)" % (what, x.dtype, x.shape, y.dtype, y.shape)
    return True, ""


def check_orthographies(suite):
    """The part's checks, counted by `suite` (suite.py's Suite)."""
    from sprintrt.fsa_builder import FsaBuilder  # from the build tree suite.py put on the path

    config = suite.setup["files"]["automata_config"]
    pairs = orthographies(suite.setup)
    texts = [orthography for _, orthography in pairs]
    want = librasr_fsas(suite, [normalized(text) for text in texts], config)
    print("     orthographies: %s" % "; ".join(texts))
    for children in (1, 2):
        builder = FsaBuilder(suite.options(config, children), cache_bytes=0)
        problems = []
        for (tag, text), expected in zip(pairs, want):
            for form in (text, normalized(text)):
                ok, detail = same_fsa(builder.build_by_orthography(form), expected)
                if not ok:
                    problems.append("'%s': %s" % (form, detail))
        suite.check("FSAs by orthography, %d nn-trainer child(ren), equal librasr's "
                    "build_by_orthography" % children, not problems, "; ".join(problems))
        problems = []
        for (tag, text), expected in zip(pairs, want):
            if tag is None:
                continue
            ok, detail = same_fsa(builder.build_single(tag), expected)
            if not ok:
                problems.append("'%s': %s" % (tag, detail))
        suite.check("FSAs by segment name, %d nn-trainer child(ren), equal those of their "
                    "orthographies" % children, not problems, "; ".join(problems))
