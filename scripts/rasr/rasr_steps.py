"""Running RASR's tools for lattice_setup.py: where build.sh put them, the
output directory, and steps that are skipped when nothing they depend on
changed (their digests in DIR/steps.json); RASR's errors quoted from its
logs."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

TOOLS = {
    "feature-extraction": "FeatureExtraction/feature-extraction",
    "acoustic-model-trainer": "AcousticModelTrainer/acoustic-model-trainer",
    "allophone-tool": "AcousticModelTrainer/allophone-tool",
    "speech-recognizer": "SpeechRecognizer/speech-recognizer",
    "lattice-processor": "LatticeProcessor/lattice-processor",
    "archiver": "Archiver/archiver",
}


class StepError(RuntimeError):
    """A RASR run failed; the message quotes its log's errors."""


def tool_path(rasr_dir, name):
    """The binary of RASR tool `name` in build.sh's output directory."""
    path = os.path.join(rasr_dir, "src", "src", "Tools", TOOLS[name] + ".linux-x86_64-standard")
    if not os.access(path, os.X_OK):
        raise SystemExit("lattice_setup: %s not found (is %s a finished build.sh output?)"
                         % (path, rasr_dir))
    return path


class Setup:
    """The output directory, the tools, and the bookkeeping of steps: each
    step's digest (its configs and the digests of the steps it uses) and
    wall time are kept in DIR/steps.json, so an unchanged step is skipped."""

    def __init__(self, rasr_dir, out_dir, force):
        self.rasr = os.path.abspath(rasr_dir)
        self.out = os.path.abspath(out_dir)
        for sub in ("configs", "logs", "flows", "audio", "gmm", "lattices"):
            os.makedirs(os.path.join(self.out, sub), exist_ok=True)
        self.state_file = self.path("steps.json")
        self.state = {}
        if os.path.exists(self.state_file) and not force:
            with open(self.state_file) as f:
                self.state = json.load(f)
        self.digests = {}
        self.timings = {}

    def path(self, *parts):
        return os.path.join(self.out, *parts)

    def tool(self, name):
        return tool_path(self.rasr, name)

    def step(self, name, inputs, outputs, uses=()):
        """Whether step `name` must run: `inputs` (texts and values that
        determine it) and the digests of the steps in `uses` give its digest;
        it is current when the digest is the recorded one and all `outputs`
        exist. Returns True when it must run (its old outputs are then
        removed: RASR's caches would otherwise serve stale entries)."""
        h = hashlib.sha256(json.dumps([inputs, [self.digests[u] for u in uses]],
                                      sort_keys=True).encode()).hexdigest()
        self.digests[name] = h
        recorded = self.state.get(name, {})
        if recorded.get("digest") == h and all(os.path.exists(o) for o in outputs):
            self.timings[name] = recorded.get("seconds")
            print("lattice_setup: %-16s up to date" % name, file=sys.stderr)
            return False
        for o in outputs:
            if os.path.isdir(o):
                shutil.rmtree(o)
            elif os.path.exists(o):
                os.remove(o)
        self.state.pop(name, None)
        self._started = time.monotonic()
        print("lattice_setup: %-16s running" % name, file=sys.stderr)
        return True

    def done(self, name, **extra):
        """Records step `name` as successfully run now."""
        seconds = round(time.monotonic() - self._started, 2)
        self.timings[name] = seconds
        self.state[name] = {"digest": self.digests[name], "seconds": seconds, **extra}
        with open(self.state_file, "w") as f:
            json.dump(self.state, f, indent=1)

    def write(self, relative, text):
        path = self.path(relative)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_args(self, tool, label, args):
        """Runs RASR `tool` (niced) with command-line `args` only, its stdout
        (the log) into DIR/logs/LABEL.log, its stderr (warnings and errors)
        into DIR/logs/LABEL.err: kept apart, as each stream is an XML
        document of its own. Raises StepError quoting RASR's messages when it
        exits non-zero or reported an error. Returns the log's text."""
        log, err = self.path("logs", label + ".log"), self.path("logs", label + ".err")
        with open(log, "w") as out, open(err, "w") as errors:
            rc = subprocess.call(["nice", "-n", "10", self.tool(tool), *args], stdout=out,
                                 stderr=errors, cwd=self.out)
        with open(log, errors="replace") as f:
            text = f.read()
        with open(err, errors="replace") as f:
            err_text = f.read()
        if rc != 0 or "<error" in err_text + text or "<critical-error" in err_text + text:
            raise StepError("%s (%s) exited with %d; %s says:\n%s\n(arguments %s)"
                            % (tool, label, rc, err, rasr_errors(err_text + text), args))
        return text

    def run(self, tool, label, config_text):
        """run_args with `config_text` as DIR/configs/LABEL.config."""
        config = self.write(os.path.join("configs", label + ".config"), config_text)
        return self.run_args(tool, label, ["--config=" + config])


def check_archive(setup, archive, segments, suffix):
    """Raises StepError unless RASR archive `archive` holds "NAME" + `suffix`
    for every segment (a segment a RASR step silently skipped, e.g. one whose
    alignment failed, would kill the training child later: lattice-processor
    stops on a segment missing from its lattice archive)."""
    listing = setup.run_args("archiver", "list-" + os.path.basename(archive),
                             ["--mode=list", archive])
    members = {line.split()[0] for line in listing.splitlines() if line.strip()}
    missing = [s["name"] for s in segments if s["name"] + suffix not in members]
    if missing:
        raise StepError("%s lacks %s (see the step's log)" % (archive, missing))


def rasr_errors(log_text, limit=12):
    """RASR's messages from a log: each <error>, <critical-error> and
    <warning> element as "kind (component): text", and a "PROGRAM DEFECTIVE"
    report with its reason; stack frames left out. The last `limit`."""
    messages, current = [], None
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        opening = re.match(r'\s*<(critical-error|error|warning) component="([^"]*)">', line)
        if opening:
            current = [opening.group(1), opening.group(2), []]
        elif current and re.match(r"\s*</(critical-error|error|warning)>", line):
            messages.append("%s (%s): %s" % (current[0], current[1], " ".join(current[2])))
            current = None
        elif current is not None:
            text = line.strip()
            if text and not text.startswith("#") and not text.startswith("<") \
                    and not text.startswith("Creating stack trace"):
                current[2].append(text)
        elif "PROGRAM DEFECTIVE" in line:
            messages.append(" ".join([line.strip()] + [following.strip()
                            for following in lines[i + 1:i + 2]]))
    return "\n".join(messages[-limit:]) or "\n".join(lines[-limit:])
