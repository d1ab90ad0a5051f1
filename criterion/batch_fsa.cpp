#include "criterion/batch_fsa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

namespace {

std::string text(int64_t value) {
  return std::to_string(value);
}

caf::error invalid(std::string message) {
  return make_error(errc::invalid_input, std::move(message));
}

// Checks edge e and returns its sequence.
caf::expected<int64_t> check_edge(const batch_fsa& fsa, int64_t classes, int64_t e) {
  const int64_t count = fsa.num_edges;
  const int64_t from = fsa.edges[e], to = fsa.edges[count + e];
  const int64_t emission = fsa.edges[2 * count + e], sequence = fsa.edges[3 * count + e];
  const std::string edge = fsa.name + ".edges: edge " + text(e);
  if (sequence < 0 || sequence >= fsa.sequences)
    return invalid(edge + " belongs to sequence " + text(sequence) + ", but " + fsa.name + " has " +
                   text(fsa.sequences) + " sequences");
  const int64_t start = fsa.start(sequence), end = fsa.end(sequence);
  for (const int64_t state : {from, to})
    if (state < start || state > end)
      return invalid(edge + " of sequence " + text(sequence) + " touches state " + text(state) +
                     ", outside the sequence's states [" + text(start) + ", " + text(end) + "] (" +
                     fsa.name + ".start_end_states)");
  if (emission < 0 || emission >= classes)
    return invalid(edge + " emits " + text(emission) + ", but log_probs has " + text(classes) +
                   " classes (D)");
  return sequence;
}

} // namespace

caf::error check_and_group(batch_fsa& fsa, int64_t classes) {
  const std::string states = fsa.name + ".start_end_states";
  for (int64_t b = 0; b < fsa.sequences; ++b) {
    const int64_t start = fsa.start(b), end = fsa.end(b);
    if (start < 0 || end < start || end >= fsa.num_states)
      return invalid(states + ": sequence " + text(b) + " has start state " + text(start) +
                     " and end state " + text(end) +
                     " (need 0 <= start <= end < num_states = " + text(fsa.num_states) + ")");
    if (end - start >= std::numeric_limits<uint32_t>::max())
      return invalid(states + ": sequence " + text(b) + " has more than 2^32-1 states");
  }
  std::vector<int64_t> by_start(fsa.sequences);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](int64_t x, int64_t y) { return fsa.start(x) < fsa.start(y); });
  for (int64_t i = 0; i + 1 < fsa.sequences; ++i)
    if (fsa.end(by_start[i]) >= fsa.start(by_start[i + 1]))
      return invalid(states + ": the states of sequences " + text(by_start[i]) + " and " +
                     text(by_start[i + 1]) + " overlap");
  for (int64_t e = 0; e < fsa.num_edges; ++e)
    if (std::isnan(fsa.weights[e]) || fsa.weights[e] == -std::numeric_limits<double>::infinity())
      return invalid(fsa.name + ".weights[" + text(e) + "] is " +
                     (std::isnan(fsa.weights[e]) ? "nan" : "-inf") + " (a cost: finite or +inf)");
  fsa.offsets.assign(fsa.sequences + 1, 0);
  std::vector<int64_t> sequence(fsa.num_edges);
  for (int64_t e = 0; e < fsa.num_edges; ++e) {
    auto checked = check_edge(fsa, classes, e);
    if (!checked)
      return std::move(checked.error());
    sequence[e] = *checked;
    ++fsa.offsets[sequence[e] + 1];
  }
  std::partial_sum(fsa.offsets.begin(), fsa.offsets.end(), fsa.offsets.begin());
  fsa.order.resize(fsa.num_edges);
  std::vector<int64_t> next(fsa.offsets.begin(), fsa.offsets.end() - 1);
  for (int64_t e = 0; e < fsa.num_edges; ++e)
    fsa.order[next[sequence[e]]++] = e;
  return {};
}

caf::expected<fsa> sequence_fsa(const batch_fsa& fsa, int64_t b, std::vector<fsa_edge>& edges) {
  const int64_t count = fsa.num_edges, start = fsa.start(b);
  edges.clear();
  for (int64_t i = fsa.offsets[b]; i < fsa.offsets[b + 1]; ++i) {
    const int64_t e = fsa.order[i];
    edges.push_back(fsa_edge{static_cast<uint32_t>(fsa.edges[e] - start),
                             static_cast<uint32_t>(fsa.edges[count + e] - start),
                             static_cast<uint32_t>(fsa.edges[2 * count + e]),
                             static_cast<float>(fsa.weights[e])});
  }
  return criterion::fsa::make(static_cast<uint32_t>(fsa.end(b) - start + 1), edges);
}

void sequence_wfsa(const batch_fsa& fsa, int64_t b, wfsa& graph) {
  const int64_t count = fsa.num_edges, start = fsa.start(b);
  const auto num_states = static_cast<size_t>(fsa.end(b) - start + 1);
  graph.initial.assign(num_states, wfsa::none);
  graph.final.assign(num_states, wfsa::none);
  graph.initial.front() = 0;
  graph.final.back() = 0;
  graph.edges.clear();
  for (int64_t i = fsa.offsets[b]; i < fsa.offsets[b + 1]; ++i) {
    const int64_t e = fsa.order[i];
    graph.edges.push_back(wfsa_edge{static_cast<uint32_t>(fsa.edges[e] - start),
                                    static_cast<uint32_t>(fsa.edges[count + e] - start),
                                    static_cast<uint32_t>(fsa.edges[2 * count + e]),
                                    fsa.weights[e]});
  }
}

} // namespace sprintrt::criterion
