#pragma once

/// @file
/// The loss of a batch over FSAs and its gradient, on the CPU, in the
/// calling thread and `threads - 1` more: what `sprintrt.torch.fsa_loss`
/// computes with its kernel, for a C++ engine. The full sum over batch FSAs
/// (CTC, HMM), and lattice-free or per-sequence MMI, boosted MMI and sMBR
/// against a denominator (docs/sequence-training.md defines them; the
/// layout is i6_models' WeightedFsa, docs/python.md).

#include <cstdint>

#include "sprintrt/error.hpp"

namespace sprintrt {

/// A batch of FSAs in the WeightedFsa layout, read in place: sequence b's
/// states are the range start_end_states[0, b] ..  start_end_states[1, b],
/// its end state the highest; the ranges are disjoint and below
/// `num_states`.
struct fsa_batch_view {
  /// [4, E] row-major: each edge's from state, to state, emitted column and
  /// sequence.
  const int64_t* edges = nullptr;
  /// E.
  int64_t num_edges = 0;
  /// [E] costs (-log weights): finite or +inf.
  const double* weights = nullptr;
  /// [2, N] row-major: each sequence's start and end state.
  const int64_t* start_end_states = nullptr;
  /// N.
  int64_t num_sequences = 0;
  /// The states of all sequences together.
  int64_t num_states = 0;
};

/// What `fsa_loss` computes.
enum class fsa_criterion : uint8_t {
  /// -log Z over the FSAs (no denominator).
  full_sum,
  /// MMI, boosted MMI and sMBR against `fsa_loss_options::denominator`.
  mmi,
  bmmi,
  smbr,
};

/// How `fsa_loss` computes it.
struct fsa_loss_options {
  /// The criterion.
  fsa_criterion criterion = fsa_criterion::full_sum;
  /// The denominator of the sequence criteria: 1 sequence (shared by the
  /// batch, read once) or B; null for the full sum.
  const fsa_batch_view* denominator = nullptr;
  /// KAPPA, which multiplies log_probs in the sequence criteria (> 0).
  double am_scale = 1.0;
  /// B of `bmmi` (>= 0; 0 for the others).
  double boost = 0.0;
  /// [B] what every numerator path of sequence b pays (`mmi`, `bmmi`), or
  /// null for none.
  const double* numerator_cost = nullptr;
  /// Threads, the calling one among them (at least 1). The results are the
  /// same bits for any number.
  int64_t threads = 1;
};

/// How one call computed its sequences' denominators.
struct fsa_loss_counts {
  /// In probability space, with per-frame scaling.
  uint64_t scaled = 0;
  /// In log space: what probability space could not hold, or a denominator
  /// without such a layout.
  uint64_t log_space = 0;
};

/// Computes the loss [B] of `fsa` (B sequences) over `log_probs` [T, B, D]
/// (float32, C order), each sequence b over its first `seq_lens[b]` frames,
/// into `loss` (float64 [B]), and the gradient of the summed loss with
/// respect to `log_probs` into `gradient` (float32 [T, B, D], C order; zero
/// after each sequence's end). A sequence without a path of nonzero
/// probability gets loss +inf and a zero gradient; one of 0 frames gets 0
/// if its FSA's start is its end, else +inf. Errors (`invalid_input`,
/// naming the first problem; the outputs then hold nothing of use): a
/// length outside [0, T], a broken FSA layout or an edge emitting a column
/// >= D, a number of sequences other than B (the denominator: 1 or B), a
/// scale out of range, a denominator given to the full sum or missing from
/// a criterion, NaN or +inf in log_probs within a sequence's frames.
caf::expected<fsa_loss_counts> fsa_loss(const float* log_probs, int64_t frames, int64_t batch,
                                        int64_t classes, const int64_t* seq_lens,
                                        const fsa_batch_view& fsa, const fsa_loss_options& options,
                                        double* loss, float* gradient);

} // namespace sprintrt
