#!/usr/bin/env python3
"""Writes a tiny real RASR set-up for nn-trainer's PythonControl into a
directory: a Bliss corpus of synthetic segments (no audio: features are not
extracted), a Bliss lexicon of a few words over a small phoneme inventory,
and RASR configs for the automata (python-control-loop) and for CTC losses
(iterate-corpus), monophone, one state per phone, every allophone.

    scripts/rasr/tiny_setup.py OUT_DIR [--segments N] [--seed S]

Prints a JSON summary: the files, the segment names and their word counts,
and the number of emission classes (allophone states: one per phoneme)."""

import argparse
import json
import os
import random
from xml.sax.saxutils import escape

# The phonemes and the words made of them; "[SILENCE]" is RASR's silence.
PHONEMES = ["a", "b", "d", "e", "g", "i", "k", "o", "s", "t"]
WORDS = {
    "bad": "b a d", "dab": "d a b", "bed": "b e d", "dig": "d i g", "kid": "k i d",
    "god": "g o d", "dog": "d o g", "sit": "s i t", "tis": "t i s", "stab": "s t a b",
    "best": "b e s t", "kits": "k i t s", "doe": "d o e", "ago": "a g o", "ask": "a s k",
}


def corpus_xml(segments):
    """A Bliss corpus "tiny": one recording per segment, no audio."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', '<corpus name="tiny">']
    for name, orth in segments:
        recording, segment = name.split("/")[1:]
        lines.append('  <recording name="%s" audio="/dev/null">' % recording)
        lines.append('    <segment name="%s" start="0" end="1"><orth>%s</orth></segment>'
                     % (segment, escape(orth)))
        lines.append("  </recording>")
    lines.append("</corpus>")
    return "\n".join(lines) + "\n"


def lexicon_xml():
    """A Bliss lexicon: the phoneme inventory with [SILENCE], the four
    special lemmas, and the words."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', "<lexicon>", "  <phoneme-inventory>",
             "    <phoneme><symbol>[SILENCE]</symbol><variation>none</variation></phoneme>"]
    lines += ["    <phoneme><symbol>%s</symbol></phoneme>" % p for p in PHONEMES]
    lines.append("  </phoneme-inventory>")
    lines += [
        '  <lemma special="silence"><orth>[SILENCE]</orth><phon>[SILENCE]</phon>'
        "<synt/><eval/></lemma>",
        '  <lemma special="unknown"><orth>[UNKNOWN]</orth><synt><tok>&lt;UNK&gt;</tok></synt>'
        "<eval/></lemma>",
        '  <lemma special="sentence-begin"><orth>[SENTENCE-BEGIN]</orth>'
        "<synt><tok>&lt;s&gt;</tok></synt><eval/></lemma>",
        '  <lemma special="sentence-end"><orth>[SENTENCE-END]</orth>'
        "<synt><tok>&lt;/s&gt;</tok></synt><eval/></lemma>",
    ]
    for word, phon in sorted(WORDS.items()):
        lines.append("  <lemma><orth>%s</orth><phon>%s</phon></lemma>" % (word, phon))
    lines.append("</lexicon>")
    return "\n".join(lines) + "\n"


def common_config(out_dir):
    """What both configs share: corpus, lexicon, a monophone acoustic model
    with one state per phone and every allophone, the transition penalties
    of RWTH's CTC recipes (all zero but the impossible skip), and logs."""
    return """\
[*]
log-channel.file = /dev/null
error-channel.file = stderr
warning-channel.file = stderr
statistics-channel.file = /dev/null
configuration-channel.file = /dev/null
system-info-channel.file = /dev/null
unbuffered = true

[*.corpus]
file = {dir}/corpus.xml
capitalize-transcriptions = false

# RASR selects them under several paths (the FSA exporter's model
# combination, the CTC criterion's own lexicon): "*." matches them all.
[*.lexicon]
file = {dir}/lexicon.xml
normalize-pronunciation = false

[*.acoustic-model]
state-tying.type = monophone
allophones.add-all = yes
allophones.add-from-lexicon = no
hmm.states-per-phone = 1
hmm.state-repetitions = 1
hmm.across-word-model = yes
hmm.early-recombination = no
phonology.history-length = 0
phonology.future-length = 0
tdp.scale = 1.0
tdp.*.loop = 0.0
tdp.*.forward = 0.0
tdp.*.skip = infinity
tdp.*.exit = 0.0
tdp.silence.loop = 0.0
tdp.silence.forward = 0.0
tdp.silence.skip = infinity
tdp.silence.exit = 0.0
tdp.entry-m1.loop = infinity
tdp.entry-m2.loop = infinity

[*.neural-network-trainer]
action = python-control
extract-features = false
""".format(dir=out_dir)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--segments", type=int, default=36)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(args.seed)
    words = sorted(WORDS)
    segments = []
    for i in range(args.segments):
        count = 1 + i % 10  # 1 to 10 words
        orth = " ".join(rng.choice(words) for _ in range(count))
        segments.append(("tiny/r%d/s%d" % (i, i), orth))
    files = {
        "corpus": os.path.join(out_dir, "corpus.xml"),
        "lexicon": os.path.join(out_dir, "lexicon.xml"),
        "automata_config": os.path.join(out_dir, "automata.config"),
        "loss_config": os.path.join(out_dir, "loss.config"),
    }
    with open(files["corpus"], "w") as out:
        out.write(corpus_xml(segments))
    with open(files["lexicon"], "w") as out:
        out.write(lexicon_xml())
    common = common_config(out_dir)
    with open(files["automata_config"], "w") as out:
        out.write(common + "python-control-loop-type = python-control-loop\n")
    with open(files["loss_config"], "w") as out:
        out.write(common + """\
python-control-loop-type = iterate-corpus
training-criterion = ctc
input-in-log-space = true
use-search-aligner = false
""")
    print(json.dumps({"files": files,
                      "segments": [{"name": n, "orth": o, "words": len(o.split())}
                                   for n, o in segments],
                      "phonemes": ["[SILENCE]"] + PHONEMES}, indent=1))


if __name__ == "__main__":
    main()
