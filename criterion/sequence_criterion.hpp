#pragma once

/// @file
/// The sequence-discriminative criteria of one segment: MMI, boosted MMI and
/// sMBR over a numerator FSA and a denominator graph, exactly as
/// docs/sequence-training.md defines them (its names are used here).

#include <cstdint>
#include <string_view>

#include "criterion/fsa.hpp"
#include "criterion/full_sum.hpp"
#include "criterion/matrix_views.hpp"
#include "criterion/sequence_engine.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// Which sequence-discriminative criterion.
enum class sequence_kind : uint8_t { mmi, bmmi, smbr };

/// The scales of the criteria (`--*.am-scale`, `--*.lm-scale`, `--*.boost`).
struct sequence_scales {
  /// KAPPA: multiplies the log-posteriors (finite, > 0).
  double am = 1;
  /// LAMBDA: multiplies hypothesis and LM costs (finite, >= 0).
  double lm = 1;
  /// B: the boost of `bmmi` (finite, >= 0).
  double boost = 0;
};

/// Returns what is wrong with `scales` for `kind` ("am-scale 0 is not a
/// finite number > 0", a boost for a criterion other than `bmmi`), or "".
std::string check_scales(sequence_kind kind, const sequence_scales& scales);

/// One segment's inputs to a criterion.
struct sequence_segment {
  /// The segment's name, for messages.
  std::string_view name;
  /// The reference's FSA, as the topology builds (and exports) it.
  const fsa* numerator = nullptr;
  /// Every hypothesis of the segment, the reference included.
  const wfsa* denominator = nullptr;
  /// The highest column `denominator` emits.
  uint32_t denominator_max_emission = 0;
  /// LAMBDA times the reference's cost, paid by the numerator's paths.
  double reference_cost = 0;
};

/// Computes `kind`'s loss of `segment` over `log_posteriors` [T, D] and
/// writes its error signal into `error_signal` [T, D]. A numerator without a
/// path of T frames skips the segment (loss +inf, zeros, a warning naming
/// it), as the full-sum does. Errors (`invalid_input`, nothing written): NaN
/// or +inf log-posteriors, T == 0 or D == 0, an emission of the numerator or
/// the denominator >= D, a wrongly shaped output. `engine` is the workspace.
caf::expected<full_sum_result> sequence_loss(sequence_kind kind, const sequence_scales& scales,
                                             const sequence_segment& segment,
                                             const log_posteriors_ref& log_posteriors,
                                             error_signal_ref error_signal,
                                             sequence_engine& engine);

} // namespace sprintrt::criterion
