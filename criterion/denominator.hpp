#pragma once

/// @file
/// The competing hypotheses of the sequence-discriminative criteria, per
/// segment: read from a file of hypotheses, or every label sequence under a
/// label n-gram (`label-lm`); docs/sequence-training.md defines both. Built
/// once at start-up, immutable afterwards, so that the workers of one source
/// share it.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "criterion/corpus.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/label_lm.hpp"
#include "criterion/topology.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// What `--*.denominator` names: a file of hypotheses, or `label-lm`.
struct denominator_options {
  /// The value that selects the label n-gram; any other value is a file.
  static constexpr std::string_view label_lm_value = "label-lm";

  /// `denominator`: a file name or `label-lm` (empty: none given).
  std::string source;
  /// `lm-order` and `lm-smoothing`, for `label-lm`.
  label_lm_options lm;

  /// Returns whether `source` selects the label n-gram.
  bool is_label_lm() const noexcept { return source == label_lm_value; }
};

/// The denominators of a corpus' segments.
class denominator {
public:
  /// One segment's part.
  struct segment_view {
    /// Every hypothesis of the segment, the reference included, expanded by
    /// the topology, their costs scaled by LAMBDA.
    const wfsa* graph = nullptr;
    /// The highest column the graph emits.
    uint32_t max_emission = 0;
    /// `graph` laid out for the scaled recursions.
    const frame_graph* layout = nullptr;
    /// LAMBDA times the reference's cost, which the numerator pays too.
    double reference_cost = 0;
  };

  /// Reads the hypotheses file `path` for the segments of `segments`, expands
  /// them with `automaton_topology` and scales their costs by `lm_scale`.
  /// Errors (`invalid_input`, `io_error` if the file cannot be opened) name
  /// the file and the line: see docs/sequence-training.md.
  static caf::expected<denominator> from_file(const std::string& path, const corpus& segments,
                                              const topology& automaton_topology, double lm_scale);

  /// Estimates the label n-gram of `segments` and composes it with
  /// `automaton_topology`, its costs scaled by `lm_scale`: one graph for
  /// every segment. Errors: the n-gram's and the expansion's.
  static caf::expected<denominator> from_label_lm(const corpus& segments,
                                                  const topology& automaton_topology,
                                                  const label_lm_options& options, double lm_scale);

  /// Reads or estimates what `options` names (see the two above).
  static caf::expected<denominator> make(const denominator_options& options, const corpus& segments,
                                         const topology& automaton_topology, double lm_scale);

  /// Returns the denominator of `segment`: an `unknown_segment` error for a
  /// segment the corpus does not have, or the topology's error for a
  /// reference it cannot build (that segment fails, not the start).
  caf::expected<segment_view> lookup(std::string_view segment) const;

  /// Returns a description for logs: "hypotheses of 'FILE' (N lines)" or
  /// "label 2-gram over V labels (add-1 smoothing)".
  const std::string& description() const noexcept { return description_; }

private:
  struct entry {
    // An index into graphs_, or the error of this segment's reference.
    std::variant<size_t, caf::error> graph;
    double reference_cost = 0;
  };

  // Adds `graph` and returns its index.
  size_t add_graph(wfsa graph);

  std::string description_;
  std::vector<wfsa> graphs_;
  std::vector<frame_graph> layouts_;
  std::vector<uint32_t> max_emissions_;
  std::map<std::string, entry, std::less<>> segments_;
};

} // namespace sprintrt::criterion
