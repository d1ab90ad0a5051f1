#include "criterion/hmm_topology.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace sprintrt::criterion {

caf::expected<hmm_topology> hmm_topology::make(const hmm_options& options) {
  const std::pair<const char*, float> costs[] = {
      {"loop_cost", options.loop_cost},
      {"forward_cost", options.forward_cost},
      {"silence_loop_cost", options.silence_loop_cost},
      {"silence_entry_cost", options.silence_entry_cost},
      {"silence_exit_cost", options.silence_exit_cost},
  };
  for (const auto& [name, cost] : costs)
    if (std::isnan(cost) || cost == -std::numeric_limits<float>::infinity())
      return make_error(errc::invalid_options, std::string{"HMM "} + name + " is " +
                                                   std::to_string(cost) +
                                                   " (must not be NaN or -inf)");
  return hmm_topology{options};
}

// The HMM FSA
// ===========
//
// An HMM whose states emit (state i emits label l_i on every frame spent in it)
// becomes an FSA whose edges emit by putting the target state's label on every
// edge into it: the edge taken at frame t says "at frame t the HMM is in this
// state". A path of T edges is then exactly an HMM state sequence of T frames,
// and its score is the sum of the transition costs plus the emission scores, so
// the full-sum is -log sum over state alignments, as in RASR.
//
// States, numbered in time order (S_i: label i's state, Q_i: a silence state):
//
//   0                the start state: no frame emitted yet
//   Q_0              silence before the first label   (if silence_at_start)
//   S_1, Q_1, S_2, Q_2, ..., S_L
//                    Q_i between S_i and S_{i+1}       (if silence_between_labels)
//   Q_L              silence after the last label     (if silence_at_end)
//   F                the final sink                   (only with Q_L)
//
// Edges, in the order the construction walks the labels (c = costs):
//
//   into S_i:  P -> S_i emits l_i, c = forward_cost, where P is S_{i-1}, or the
//              start state for i = 1
//              Q_{i-1} -> S_i emits l_i, c = silence_exit_cost  (if Q_{i-1})
//   S_i loop:  S_i -> S_i emits l_i, c = loop_cost
//   into Q_i:  S_i -> Q_i (or 0 -> Q_0) emits silence, c = silence_entry_cost
//   Q_i loop:  Q_i -> Q_i emits silence, c = silence_loop_cost
//
// Every silence is optional: the direct edge into S_{i+1} bypasses Q_i. Each
// pair of HMM states has at most one edge, so every state sequence is exactly
// one path. (Two equal neighbouring labels are two different states; their
// alignments differ in where the first ends, and each is counted once.)
//
// The single final state: without trailing silence every path ends in S_L,
// which is the last state, so S_L is final. With trailing silence a path may
// end in S_L or in Q_L. Merging the two would create sequences this HMM does
// not have (S_L's loop after silence frames, Q_L's loop after label frames), so
// F is a new sink and every edge into S_L or Q_L gets a copy into F
// (`add_final_state` explains why that is exact). S_L then has two edges into
// F, one per HMM state the last frame can be in: still one path per sequence.
//
// No labels: the segment is silence only: states 0 and Q (final), edges
// 0 -> Q (silence_entry_cost) and Q's loop. Without a silence index there is
// nothing to align, which is an error rather than a silently skipped segment.
//
// Minimum length: L frames (one per label), 1 for the silence-only segment.
caf::error hmm_topology::check_labels(std::string_view owner, span<const uint32_t> labels) const {
  if (labels.empty() && !options_.silence_index)
    return make_error(errc::invalid_input, std::string{owner} +
                                               " has no labels, and the HMM topology has no "
                                               "silence state to align it to");
  return {};
}

caf::expected<fsa> hmm_topology::build(std::string_view owner, span<const uint32_t> labels) const {
  const auto& opt = options_;
  const bool has_silence = opt.silence_index.has_value();
  const uint32_t silence = opt.silence_index.value_or(0);
  const size_t num_labels = labels.size();
  if (auto err = check_labels(owner, labels))
    return err;
  if (num_labels > std::numeric_limits<uint32_t>::max() / 2 - 2)
    return make_error(errc::invalid_input, std::string{owner} + " has too many labels for one FSA");
  std::vector<fsa_edge> edges;
  edges.reserve(6 * num_labels + 8);
  uint32_t num_states = 1;
  // Appends a silence state entered from `from`; returns its id.
  const auto add_silence = [&](uint32_t from) {
    const uint32_t state = num_states++;
    edges.push_back({from, state, silence, opt.silence_entry_cost});
    edges.push_back({state, state, silence, opt.silence_loop_cost});
    return state;
  };
  if (num_labels == 0) {
    add_silence(fsa::start_state);
    return fsa::make(num_states, edges);
  }
  // The state the next label is entered from by a forward transition, and the
  // silence state it may be entered from instead.
  uint32_t previous = fsa::start_state;
  std::optional<uint32_t> previous_silence;
  if (has_silence && opt.silence_at_start)
    previous_silence = add_silence(fsa::start_state);
  for (size_t i = 0; i < num_labels; ++i) {
    const uint32_t state = num_states++;
    edges.push_back({previous, state, labels[i], opt.forward_cost});
    if (previous_silence)
      edges.push_back({*previous_silence, state, labels[i], opt.silence_exit_cost});
    edges.push_back({state, state, labels[i], opt.loop_cost});
    previous = state;
    previous_silence.reset();
    const bool last = i + 1 == num_labels;
    if (has_silence && (last ? opt.silence_at_end : opt.silence_between_labels))
      previous_silence = add_silence(state);
  }
  if (previous_silence) {
    const uint32_t final_state = num_states++;
    add_final_state(edges, {previous, *previous_silence}, final_state);
  }
  return fsa::make(num_states, edges);
}

// The expansion of a label acceptor (docs/sequence-training.md): S(q) plays
// S_i's role and Q(q) Q_i's, with the acceptor state q in place of "i labels
// read". Q(q) exists where `build` would place a silence: after the start
// when labels may follow (silence_at_start) or when the empty sequence is
// accepted (silence only, as `build` makes it), after a label state when
// labels may follow (silence_between_labels) or when q is final
// (silence_at_end). It leaves into labels only in the first cases of each
// pair and ends only in the second; S(q) ends at q's final cost. Instead of
// `build`'s copies into one final state, the ends are final costs.
caf::expected<wfsa> hmm_topology::expand(std::string_view owner,
                                         const label_acceptor& acceptor) const {
  const auto& opt = options_;
  const uint32_t num_states = acceptor.num_states();
  std::vector<bool> has_arcs(num_states, false);
  for (const auto& arc : acceptor.arcs())
    has_arcs[arc.from] = true;
  wfsa graph;
  const uint32_t start = graph.add_state(0.0);
  // S(q) (the start for q = start) and, where it exists, Q(q) with whether
  // labels may follow it.
  std::vector<uint32_t> label_state(num_states, start);
  std::vector<std::optional<uint32_t>> silence_state(num_states);
  std::vector<bool> silence_exits(num_states, false);
  for (uint32_t q = 0; q < num_states; ++q) {
    const auto label = acceptor.last_label(q);
    const auto final_cost = acceptor.final_weight(q);
    if (label) {
      label_state[q] = graph.add_state(wfsa::none, final_cost.value_or(wfsa::none));
      graph.edges.push_back({label_state[q], label_state[q], *label, opt.loop_cost});
    }
    if (!opt.silence_index)
      continue;
    const bool exits = has_arcs[q] && (label ? opt.silence_between_labels : opt.silence_at_start);
    const bool ends = final_cost && (label ? opt.silence_at_end : true);
    if (!exits && !ends)
      continue;
    silence_state[q] = graph.add_state(wfsa::none, ends ? *final_cost : wfsa::none);
    silence_exits[q] = exits;
    const uint32_t silence = *opt.silence_index;
    graph.edges.push_back({label_state[q], *silence_state[q], silence, opt.silence_entry_cost});
    graph.edges.push_back({*silence_state[q], *silence_state[q], silence, opt.silence_loop_cost});
  }
  for (const auto& arc : acceptor.arcs()) {
    const uint32_t target = label_state[arc.to];
    graph.edges.push_back(
        {label_state[arc.from], target, arc.label, opt.forward_cost + arc.weight});
    if (silence_exits[arc.from])
      graph.edges.push_back(
          {*silence_state[arc.from], target, arc.label, opt.silence_exit_cost + arc.weight});
  }
  if (auto problem = check(graph); !problem.empty())
    return make_error(errc::invalid_input, std::string{owner} + ": " + problem);
  return graph;
}

} // namespace sprintrt::criterion
