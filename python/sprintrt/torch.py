"""sprintrt for PyTorch: a Sprint loss as an autograd function, ``sprint_loss``,
and the full-sum loss over batch FSAs with the lattice-free sequence criteria
(MMI, boosted MMI, sMBR against a denominator graph), ``fsa_loss`` (from
``sprintrt.fsa_loss``, whose docstring says how its gradient relates to the
convention below); the batch FSAs themselves come from ``FsaBuilder``
(``sprintrt.fsa_builder``) in i6_models' layouts ``WeightedFsa`` and
``WeightedFsaV2`` (``sprintrt.fsa_layouts``), or from label tensors through
``label_numerators`` (``sprintrt.numerators``), the denominators from
``label_lm_denominator`` and ``hypotheses_denominator``
(``sprintrt.denominators``).

Import it explicitly (``import sprintrt.torch``); ``import sprintrt`` does
not import PyTorch.

The gradient follows RETURNN's ``generic_loss_and_error_signal``: Sprint's
error signal (softmax - occupancy, per frame) is the gradient of the loss with
respect to the pre-softmax activations z, and it is returned as the gradient
with respect to ``log_probs = log_softmax(z)``. log_softmax's backward maps a
gradient g to g - softmax * sum_d g, and the error signal sums to zero over d
in each frame, so the gradient that reaches z is exactly the error signal.
(The true gradient with respect to log_probs is -occupancy; it differs by
softmax, which log_softmax's backward maps to zero. PyTorch's own
``ctc_loss`` returns its gradient the same way.) ``log_probs`` must therefore
be the output of a log_softmax over its last axis; the gradient with respect
to anything else computed from them is not the loss's.
"""

from __future__ import annotations

from .denominators import LabelLm, hypotheses_denominator, join_graphs, label_lm_denominator
from .fsa_builder import FsaBuilder
from .fsa_layouts import WeightedFsa, WeightedFsaV2
from .fsa_loss import fsa_loss, fsa_loss_stats
from .numerators import label_numerators
from .overlapped import OverlappedBatches, OverlappedSprintLoss, Pending, overlapped
from .sprint_autograd import PartialLoss, SprintLoss, sprint_loss

__all__ = ["FsaBuilder", "LabelLm", "OverlappedBatches", "OverlappedSprintLoss", "PartialLoss",
           "Pending", "SprintLoss", "WeightedFsa", "WeightedFsaV2", "fsa_loss", "fsa_loss_stats",
           "hypotheses_denominator", "join_graphs", "label_lm_denominator", "label_numerators",
           "overlapped", "sprint_loss"]
