"""The real-RASR suite's check 3 (suite_lattice.py runs it): what RASR's
lattice-processor computes, against two computations of our own.

a. RASR against a float64 reproduction (rasr_lattice.lattice_criteria) over
   the lattices as read back from RASR's archives: per segment the MMI and
   sMBR losses and error signals of the batch, for the recipe's configs,
   the LM-scale-1 ones and the pruned lattices'. This pins the conventions
   the docs state (which parts are scaled, what the numerator is, the
   LM_SCALE factor on the error signal).
b. sprint-sim's `mmi` and `smbr` against RASR's, over the pruned lattices:
   each lattice path becomes a hypothesis of sprint-sim's denominator file,
   its label sequence the path's state alignment (one label per frame), its
   cost the path's scaled non-acoustic score (transition penalties and LM);
   the corpus label sequence is the spoken paths' alignment. Under sprint-sim's
   HMM topology without silence a sequence of T labels has exactly one path
   of T frames, and every path of a segment pays the same transition costs,
   so sprint-sim's definitions then describe RASR's computation: where they
   allow it (the spoken paths share one alignment, their frames carry RASR's
   plain frame state accuracy), the losses agree (sMBR's up to the constant
   final accuracy weight RASR adds to every path) and RASR's error signal is
   LM_SCALE times sprint-sim's (sprint-sim's is the gradient, KAPPA = 1 /
   LM_SCALE). The set-up's pruned lattices are made so that this holds for
   every segment; a segment where it does not fails the check, named with
   the reason.
"""

import os

import numpy

import rasr_lattice

#: RASR accumulates in float32; the float64 computations here differ from it
#: by rounding only. Losses: |a - b| <= LOSS_TOL * max(1, |b|); error
#: signals: max |a - b| <= ERROR_TOL (absolute: their entries are differences
#: of occupancies, or occupancies times accuracy differences of a few frames).
LOSS_TOL = 1e-4
ERROR_TOL = 1e-4
MAX_PATHS = 20000  # paths enumerated per pruned lattice before giving up


def check_criteria(checks):
    """Runs a. and b. through `checks` (suite_lattice.LatticeChecks), counted
    by its suite; returns {} (no figures)."""
    criteria = CriteriaChecks(checks)
    criteria.against_reference()
    criteria.against_sprint_sim()
    return {}


class CriteriaChecks:
    def __init__(self, checks):
        self.checks, self.suite = checks, checks.suite
        summary = checks.summary
        self.lattices = summary["lattices"]
        self.archive = rasr_lattice.Archive(summary["archiver"], checks.work)
        self.lm = rasr_lattice.read_arpa_bigram(summary["lm"])
        self.lm_scale = summary["lm_scale"]
        self.orth = {s["name"]: s["orth"] for s in summary["segments"]}
        self.lp, self.lengths = checks.batch()

    def lattice(self, family, tag):
        """Segment `tag`'s lattice with its parts and state alignments:
        `family` "full" (the recipe's, smoothed accuracies) or "pruned"."""
        if family == "full":
            archive, alignment = self.lattices["accuracy"], self.lattices["segmentwise_alignment"]
        else:
            archive, alignment = self.lattices["pruned_accuracy"], self.lattices["pruned_alignment"]
        return self.archive.lattice(archive, tag, ["tdps", "accuracy"], alignment)

    def x(self, b):
        return self.lp[:self.lengths[b], b].astype(numpy.float64)

    # -- a. ---------------------------------------------------------------------

    def against_reference(self):
        variants = [("", "full", 1.0 / self.lm_scale), ("-scale1", "full", 1.0),
                    ("-pruned", "pruned", 1.0 / self.lm_scale)]
        for suffix, family, scale in variants:
            reference = [rasr_lattice.lattice_criteria(self.lattice(family, tag), self.x(b), scale,
                                                       self.orth[tag], self.lm, self.lm_scale)
                         for b, tag in enumerate(self.checks.tags)]
            for criterion in ("mmi", "smbr"):
                loss, error = self.checks.compute(criterion + suffix)
                loss_dev, error_dev, worst = deviations(
                    loss, error, self.lengths, [r[criterion] for r in reference], 1.0)
                self.suite.check(
                    "lattice %s%s: RASR's losses and error signals equal a float64 computation "
                    "over its own archives (%d segments; loss %.1g, error signal %.1g)"
                    % (criterion, suffix, len(reference), LOSS_TOL, ERROR_TOL),
                    loss_dev <= LOSS_TOL and error_dev <= ERROR_TOL,
                    "worst loss deviation %.3g, error signal %.3g (segment %s)"
                    % (loss_dev, error_dev, self.checks.tags[worst]))
                print(f"     {criterion}{suffix}: RASR against float64, worst relative loss "
                      f"deviation {loss_dev:.2g}, worst error-signal deviation {error_dev:.2g}")

    # -- b. ---------------------------------------------------------------------

    def against_sprint_sim(self):
        scale = 1.0 / self.lm_scale
        corpus, hypotheses, usable, refused, offsets = [], [], [], [], []
        for b, tag in enumerate(self.checks.tags):
            lattice = self.lattice("pruned", tag)
            reason, reference, groups, final_accuracy = self.hypotheses(
                lattice, self.orth[tag], int(self.lengths[b]), scale)
            if reason:
                refused.append("%s (%s)" % (tag, reason))
                continue
            usable.append(b)
            offsets.append(final_accuracy)
            corpus.append("%s\t%s" % (tag, " ".join(map(str, reference))))
            for sequence, cost in sorted(groups.items()):
                hypotheses.append("%s\t%s\t%r" % (tag, " ".join(map(str, sequence)), cost))
        self.suite.check("lattice: sprint-sim's definitions describe RASR's computation on every "
                         "pruned lattice (%d of %d segments)" % (
                             len(usable), len(self.checks.tags)),
                         not refused, "; ".join(refused))
        for line in refused:
            print("     not comparable with sprint-sim: " + line)
        if not usable:
            return
        work = os.path.join(self.checks.work, "sprint-sim")
        os.makedirs(work, exist_ok=True)
        corpus_path = write_lines(os.path.join(work, "corpus.txt"), corpus)
        hypotheses_path = write_lines(os.path.join(work, "hypotheses.txt"), hypotheses)
        tags = [self.checks.tags[b] for b in usable]
        lp, lengths = self.lp[:, usable], self.lengths[usable]
        for criterion in ("mmi", "smbr"):
            want_loss, want_error = self.checks.compute(criterion + "-pruned")
            opts = {"sprintExecPath": os.path.join(self.suite.args.sprintrt_build, "tools",
                                                   "sprint-sim", "sprint-sim"),
                    "numInstances": 1,
                    "sprintConfigStr": ["--*.corpus=" + corpus_path, "--*.topology=hmm",
                                        "--*.hmm-silence-index=none", "--*.criterion=" + criterion,
                                        "--*.denominator=" + hypotheses_path,
                                        "--*.am-scale=%r" % scale, "--*.lm-scale=1"]}
            pool = self.checks.sp.SprintInstancePool.get_global_instance(opts)
            loss, error = pool.get_batch_loss_and_error_signal(lp, lengths, tags)
            # RASR's sMBR adds the accuracy part's final weight to every
            # path's accuracy: a constant per segment, which only its loss shows.
            reference = [(float(loss[j]) - (offsets[j] if criterion == "smbr" else 0.0),
                          error[:lengths[j], j].astype(numpy.float64) * self.lm_scale)
                         for j in range(len(usable))]
            loss_dev, error_dev, worst = deviations(want_loss[usable], want_error[:, usable],
                                                    lengths, reference, 1.0)
            self.suite.check(
                "lattice %s: sprint-sim over the pruned lattices' paths equals RASR (%d segments; "
                "loss %.1g, error signal = LM_SCALE x sprint-sim's to %.1g)"
                % (criterion, len(usable), LOSS_TOL, ERROR_TOL),
                loss_dev <= LOSS_TOL and error_dev <= ERROR_TOL,
                "worst loss deviation %.3g, error signal %.3g (segment %s)"
                % (loss_dev, error_dev, tags[worst]))
            print(f"     {criterion}: sprint-sim against RASR over {len(usable)} pruned lattices, "
                  f"worst relative loss deviation {loss_dev:.2g}, error signal {error_dev:.2g}")

    def hypotheses(self, lattice, orthography, frames, scale):
        """sprint-sim's view of a pruned lattice: (reason it does not fit or
        None, the spoken paths' alignment, {alignment: cost}, the accuracy
        part's final weight) with cost = -log sum over the lattice paths with
        that alignment of exp(-scale x their transition and LM costs)."""
        tdps, accuracy = lattice.costs["tdps"], lattice.costs["accuracy"]
        final_accuracy = float(lattice.final_costs["accuracy"].max())

        def paths(orth):
            found = []
            for arcs, extra in enumerate_paths(*rasr_lattice.expanded_arcs(
                    lattice, orth, self.lm, self.lm_scale)):
                sequence = tuple(k for i in arcs for k in lattice.alignment[i])
                found.append((sequence, scale * (sum(tdps[i] for i in arcs) + extra),
                              sum(accuracy[i] for i in arcs) + final_accuracy))
            return found

        spoken, every = paths(orthography), paths(None)
        references = {s for s, _, _ in spoken}
        if len(references) != 1:
            return "%d spoken alignments" % len(references), None, None, None
        reference = next(iter(references))
        if any(len(s) != frames for s, _, _ in every):
            return "a path is not %d frames long" % frames, None, None, None
        for sequence, _, acc in every:
            agree = sum(a == r for a, r in zip(sequence, reference))
            if abs(acc - final_accuracy - agree) > 1e-4:
                return ("an accuracy of %g where %d frames agree with the spoken path"
                        % (acc - final_accuracy, agree)), None, None, None
        groups = {}
        for sequence, cost, _ in every:
            groups.setdefault(sequence, []).append(cost)
        spoken_cost = log_sum_cost([c for _, c, _ in spoken])
        if abs(log_sum_cost(groups[reference]) - spoken_cost) > 1e-9:
            return "a path that is not spoken has the spoken alignment", None, None, None
        return None, reference, {s: log_sum_cost(c) for s, c in groups.items()}, final_accuracy


def enumerate_paths(arcs, initial, finals):
    """Every path of a graph from rasr_lattice.expanded_arcs: (lattice arc
    indices, summed extra and final cost)."""
    leaving = {}
    for s, t, i, extra in arcs:
        leaving.setdefault(s, []).append((t, i, extra))
    found, stack = [], [(initial, (), 0.0)]
    while stack:
        state, taken, cost = stack.pop()
        if state in finals:
            found.append((taken, cost + finals[state]))
            if len(found) > MAX_PATHS:
                raise RuntimeError("more than %d paths in a pruned lattice" % MAX_PATHS)
        for t, i, extra in leaving.get(state, []):
            stack.append((t, taken + (i,), cost + extra))
    return found


def log_sum_cost(costs):
    """-log sum exp(-c) over `costs`."""
    low = min(costs)
    return low - float(numpy.log(numpy.exp(-(numpy.asarray(costs) - low)).sum()))


def deviations(loss, error, lengths, reference, factor):
    """(worst relative loss deviation, worst error-signal deviation, batch
    index of the worse) of RASR's (loss [B], error [T, B, D]) against
    `reference`, a list of (loss, error [T_b, D]) per segment, the reference's
    error signal times `factor`.
    A loss or error signal that is not finite on either side counts as an
    infinite deviation (NaN never hides in a maximum)."""
    loss_devs, error_devs = [], []
    for b, (ref_loss, ref_error) in enumerate(reference):
        got_error = error[:lengths[b], b].astype(numpy.float64)
        if not (numpy.isfinite(float(loss[b])) and numpy.isfinite(ref_loss)):
            loss_devs.append(numpy.inf)
        else:
            loss_devs.append(abs(float(loss[b]) - ref_loss) / max(1.0, abs(ref_loss)))
        if not (numpy.isfinite(got_error).all() and numpy.isfinite(ref_error).all()):
            error_devs.append(numpy.inf)
        else:
            error_devs.append(float(numpy.abs(got_error - factor * ref_error).max()))
    loss_devs, error_devs = numpy.array(loss_devs), numpy.array(error_devs)
    worst_at = int(numpy.argmax(numpy.maximum(loss_devs / LOSS_TOL, error_devs / ERROR_TOL)))
    return float(loss_devs.max()), float(error_devs.max()), worst_at


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return path
