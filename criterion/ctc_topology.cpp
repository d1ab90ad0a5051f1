#include "criterion/ctc_topology.hpp"

#include <limits>
#include <string>
#include <vector>

namespace sprintrt::criterion {

// The CTC FSA
// ===========
//
// Standard CTC defines, for labels l_1..l_L over classes {0..D-1} with blank b
// (no l_i equal to b) and posteriors p[t, k]:
//
//   p(l | x) = sum over pi in {0..D-1}^T with B(pi) = l of prod_t p[t, pi_t],
//
// where B merges repeated symbols, then removes blanks. We need an FSA whose
// paths of exactly T edges from state 0 to the single final state are in
// one-to-one correspondence with those pi, each path emitting pi_t at frame t
// with weight 0. Then the full-sum over the FSA is exactly -log p(l | x).
//
// States (L labels, 2L+2 states):
//
//   B_0 = 0          "only blanks so far (possibly none)": the start state
//   L_i = 2i - 1     "the last frame emitted l_i"           (i = 1..L)
//   B_i = 2i         "l_i done, the last frame was a blank"  (i = 1..L)
//   F   = 2L + 1     the final state, a sink
//
// Edges of the base automaton, per source state, in this order:
//
//   B_0: B_0 -> B_0 emits b;  B_0 -> L_1 emits l_1
//   L_i: L_i -> L_i emits l_i (the label repeated: B merges it)
//        L_i -> B_i emits b
//        L_i -> L_{i+1} emits l_{i+1}, only if l_{i+1} != l_i: for equal
//             labels B would merge the two occurrences, so they need a blank
//             between them, i.e. the path through B_i
//   B_i: B_i -> B_i emits b;  B_i -> L_{i+1} emits l_{i+1}   (i < L)
//
// Starting in B_0 (instead of a separate non-emitting start state) is what
// makes the leading blanks optional without an extra state: B_0's loop takes
// them, and B_0 -> L_1 is taken when the first frame already emits l_1.
//
// Why each pi is exactly one path of the base automaton: from every state, each
// symbol labels at most one outgoing edge (a deterministic automaton), so a
// symbol sequence determines its path. The loop and blank edges preserve B's
// output; the edges into L_{i+1} are exactly the frames where B outputs
// l_{i+1}. So a path of T edges from B_0 reads a pi with B(pi) = l iff it ends
// in L_L (pi ends in l_L) or in B_L (pi ends in blanks after l_L), and every
// such pi has such a path.
//
// The single final state: a path may end in L_L or in B_L, but the protocol
// allows one final state. Merging L_L and B_L is wrong (B_L's blank loop and
// L_L's label loop would combine into l_L b l_L, which collapses to l_L l_L).
// So F is a new sink, and every edge into L_L or B_L gets a copy into F
// (`add_final_state`): a path into F is a path into L_L or B_L with its last
// edge redirected, one to one. The automaton stays deterministic (from L_L the
// two copies emit l_L and b, different symbols), so there is still no double
// counting. For L = 0 the end state is B_0 itself: its loop is copied into F,
// and the only path is T blanks.
//
// Minimum length: L frames plus one blank per pair of equal neighbours. With
// fewer frames there is no path, and the full-sum skips the segment.
//
// Edge count for L > 0: 2 (from B_0) + 3L (the loops of L_i and B_i, L_i -> B_i)
// + (L - 1) (B_i -> L_{i+1}) + one L_i -> L_{i+1} per pair of distinct
// neighbours + 5 copies into F (4 when L = 1 or l_{L-1} = l_L); for L = 0: 2.
caf::error ctc_topology::check_labels(std::string_view owner, span<const uint32_t> labels) const {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == blank_index_)
      return make_error(errc::invalid_input,
                        std::string{owner} + ": label number " + std::to_string(i + 1) + " is " +
                            std::to_string(labels[i]) + ", the CTC blank index");
  return {};
}

caf::expected<fsa> ctc_topology::build(std::string_view owner, span<const uint32_t> labels) const {
  const size_t num_labels = labels.size();
  if (auto err = check_labels(owner, labels))
    return err;
  if (num_labels > (std::numeric_limits<uint32_t>::max() - 2) / 2)
    return make_error(errc::invalid_input, std::string{owner} + " has too many labels for one FSA");
  const auto label_state = [](size_t i) { return static_cast<uint32_t>(2 * i + 1); }; // L_{i+1}
  const auto blank_state = [](size_t i) { return static_cast<uint32_t>(2 * i); };     // B_i
  const uint32_t final_state = static_cast<uint32_t>(2 * num_labels + 1);
  std::vector<fsa_edge> edges;
  edges.reserve(5 * num_labels + 7);
  edges.push_back({blank_state(0), blank_state(0), blank_index_, 0.0f});
  if (num_labels > 0)
    edges.push_back({blank_state(0), label_state(0), labels[0], 0.0f});
  for (size_t i = 0; i < num_labels; ++i) {
    const uint32_t here = label_state(i);
    const uint32_t after = blank_state(i + 1);
    edges.push_back({here, here, labels[i], 0.0f});
    edges.push_back({here, after, blank_index_, 0.0f});
    if (i + 1 < num_labels && labels[i + 1] != labels[i])
      edges.push_back({here, label_state(i + 1), labels[i + 1], 0.0f});
    edges.push_back({after, after, blank_index_, 0.0f});
    if (i + 1 < num_labels)
      edges.push_back({after, label_state(i + 1), labels[i + 1], 0.0f});
  }
  if (num_labels == 0)
    add_final_state(edges, {blank_state(0)}, final_state);
  else
    add_final_state(edges, {label_state(num_labels - 1), blank_state(num_labels)}, final_state);
  return fsa::make(final_state + 1, edges);
}

// The expansion of a label acceptor (docs/sequence-training.md): the states
// B(q) and L(q) play the roles of B_i and L_i above, with the acceptor state q
// in place of "i labels read". A frame path reads the labels of one acceptor
// path, so a label sequence the acceptor accepts once gets exactly the paths
// `build` gives it; the repetition rule needs only the label L(q) emits,
// which is q's last label. Ends: B(q) and L(q) of every final q, at q's
// final cost.
caf::expected<wfsa> ctc_topology::expand(std::string_view owner,
                                         const label_acceptor& acceptor) const {
  const uint32_t num_states = acceptor.num_states();
  if (num_states > (std::numeric_limits<uint32_t>::max() - 1) / 2)
    return make_error(errc::invalid_input,
                      std::string{owner} + " has too many states for one graph");
  const auto blank_state = [](uint32_t q) { return 2 * q; };
  const auto label_state = [](uint32_t q) { return 2 * q + 1; }; // unused for the start
  wfsa graph;
  graph.initial.assign(2 * num_states, wfsa::none);
  graph.final.assign(2 * num_states, wfsa::none);
  graph.initial[blank_state(label_acceptor::start_state)] = 0;
  for (uint32_t q = 0; q < num_states; ++q) {
    graph.edges.push_back({blank_state(q), blank_state(q), blank_index_, 0.0});
    const auto label = acceptor.last_label(q);
    if (label) {
      if (*label == blank_index_)
        return make_error(errc::invalid_input, std::string{owner} + ": label " +
                                                   std::to_string(*label) +
                                                   " is the CTC blank index");
      graph.edges.push_back({label_state(q), label_state(q), *label, 0.0});
      graph.edges.push_back({label_state(q), blank_state(q), blank_index_, 0.0});
    }
    if (const auto cost = acceptor.final_weight(q)) {
      graph.final[blank_state(q)] = *cost;
      if (label)
        graph.final[label_state(q)] = *cost;
    }
  }
  for (const auto& arc : acceptor.arcs()) {
    graph.edges.push_back({blank_state(arc.from), label_state(arc.to), arc.label, arc.weight});
    const auto previous = acceptor.last_label(arc.from);
    if (previous && *previous != arc.label)
      graph.edges.push_back({label_state(arc.from), label_state(arc.to), arc.label, arc.weight});
  }
  return graph;
}

} // namespace sprintrt::criterion
