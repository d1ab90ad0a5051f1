#pragma once

/// @file
/// The interface of the topologies: what turns a segment's
/// label sequence into the FSA that full-sum training sums over.

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "common/span.hpp"
#include "criterion/fsa.hpp"
#include "criterion/label_acceptor.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// Builds segment FSAs from label sequences. Implementations are immutable and
/// therefore safe to share between threads and workers.
class topology {
public:
  virtual ~topology();

  /// Returns the topology's name as the `--*.topology=` option spells it
  /// ("ctc", "hmm").
  virtual std::string_view name() const noexcept = 0;

  /// Builds the FSA of the label sequence `labels`, which belongs to `owner`:
  /// the description that error messages begin with, "segment 'NAME'" for a
  /// corpus segment or "orthography 'TEXT'" for an orthography. Labels are
  /// not checked against the posteriors' width here (the topology does not
  /// know it); the full-sum does that.
  virtual caf::expected<fsa> build(std::string_view owner, span<const uint32_t> labels) const = 0;

  /// Returns the error `build` gives for `labels` before it builds anything
  /// (a CTC label equal to the blank, an HMM segment without labels and
  /// without silence), naming `owner`; or none.
  virtual caf::error check_labels(std::string_view owner, span<const uint32_t> labels) const = 0;

  /// Expands `acceptor` into frames: every label sequence it accepts gets the
  /// paths and scores `build` gives that sequence, each also paying the
  /// acceptor's arc and final costs along its path (docs/sequence-training.md
  /// defines the construction per topology). A label `check_labels` refuses is
  /// an `invalid_input` error naming `owner`.
  virtual caf::expected<wfsa> expand(std::string_view owner,
                                     const label_acceptor& acceptor) const = 0;
};

/// Gives an automaton that may end in any of `end_states` a single final state,
/// as the protocol requires, without double counting: appends to `edges`, for
/// every edge that enters one of `end_states`, a copy that enters `final_state`
/// instead. `final_state` must be a new state without outgoing edges.
///
/// Why this is exact: a path of T edges that ends in `final_state` is a path of
/// T-1 edges to some state q followed by one copied edge q -> final. Because the
/// final state has no outgoing edges, no path passes through it earlier. So the
/// paths of length T into `final_state` are in one-to-one correspondence, with
/// equal scores, to the paths of length T of the original automaton that end
/// in one of `end_states`: no path is lost, none counted twice. (Merging the
/// end states instead would add paths: an end state's loop would become
/// reachable from the other end state.)
void add_final_state(std::vector<fsa_edge>& edges, std::initializer_list<uint32_t> end_states,
                     uint32_t final_state);

} // namespace sprintrt::criterion
