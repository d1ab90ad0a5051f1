#include "criterion/frame_graph.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

namespace sprintrt::criterion {

// Why frame states
// ================
//
// In probability space a frame's forward step is
//   alpha_t(q) = sum over edges e into q of alpha_{t-1}(from(e)) w(e) p_t(emission(e)),
// which is a matrix product only when the emission factor can leave the sum:
// when every edge into q emits the same column. Splitting q by the columns
// of its incoming edges makes it so, and the frame states of q each inherit
// all of q's outgoing edges, so every path of the wfsa is one path of the
// layout and back. A label n-gram composed with CTC or HMM topologies is
// mostly of this form already (a state is entered by its label); a lattice's
// arcs may need a split per label.
//
// Scaling. Costs become probabilities relative to the most probable edge
// (and initial, final state): w(e) = exp(-weight(e) - edge_offset) <= 1,
// with edge_offset = max(-weight). A path of T edges then loses exactly
// T * edge_offset, which log Z adds back. A cost whose probability relative
// to the best would fall below `min_log_ratio` (near double's smallest
// normal number) makes the graph unrepresentable: the callers take the
// log-space recursions, which keep every path.

namespace {

constexpr double min_log_ratio = -700;

std::string describe(const char* what, size_t index, double cost, double offset) {
  char text[160];
  std::snprintf(text, sizeof(text), "%s %zu costs %g, %g above the least costly", what, index, cost,
                cost + offset);
  return text;
}

// max(-cost) over the finite costs, 0 if none.
template <class Items, class Cost>
double offset_of(const Items& items, Cost cost_of) {
  double top = -std::numeric_limits<double>::infinity();
  for (const auto& item : items) {
    const double cost = cost_of(item);
    if (std::isfinite(cost))
      top = std::max(top, -cost);
  }
  return std::isfinite(top) ? top : 0;
}

} // namespace

void frame_graph_builder::group_by_column(frame_graph& out) {
  order_.resize(out.num_states);
  for (uint32_t q = 0; q < out.num_states; ++q)
    order_[q] = q;
  std::sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) {
    return std::tie(out.emission[x], x) < std::tie(out.emission[y], y);
  });
  out.column_states.assign(order_.begin(), order_.end());
  out.columns.clear();
  out.column_begin.clear();
  for (uint32_t i = 0; i < out.num_states; ++i)
    if (i == 0 || out.emission[order_[i]] != out.emission[order_[i - 1]]) {
      out.columns.push_back(out.emission[order_[i]]);
      out.column_begin.push_back(i);
    }
  out.column_begin.push_back(out.num_states);
}

// A diagonal (target - source fixed) becomes a band when it holds at least
// `min_band` transitions covering at least a quarter of its span (a gap
// costs a multiplication by 0, cheaper than a transition in the rows);
// `transitions_` keeps the others in their order.
void frame_graph_builder::take_bands(frame_graph& out) {
  constexpr uint32_t min_band = 8;
  const int64_t states = out.num_states;
  diagonals_.assign(static_cast<size_t>(2 * states + 1), diagonal{});
  const auto index = [&](uint32_t from, uint32_t to) {
    return static_cast<size_t>(int64_t{to} - int64_t{from} + states);
  };
  for (const auto& [from, to, w] : transitions_) {
    auto& d = diagonals_[index(from, to)];
    d.low = d.count == 0 ? to : std::min(d.low, to);
    d.high = d.count == 0 ? to : std::max(d.high, to);
    ++d.count;
  }
  out.bands.clear();
  out.band_weight.clear();
  for (size_t i = 0; i < diagonals_.size(); ++i) {
    auto& d = diagonals_[i];
    if (d.count < min_band || 4 * d.count < d.high - d.low + 1)
      continue;
    d.band = static_cast<int32_t>(out.bands.size());
    const uint32_t size = d.high - d.low + 1;
    out.bands.push_back({static_cast<int64_t>(i) - states, d.low,
                         static_cast<uint32_t>(out.band_weight.size()), size});
    out.band_weight.resize(out.band_weight.size() + size, 0.0);
  }
  size_t kept = 0;
  for (size_t i = 0; i < transitions_.size(); ++i) {
    const auto [from, to, w] = transitions_[i];
    const auto& d = diagonals_[index(from, to)];
    if (d.band >= 0)
      out.band_weight[out.bands[static_cast<size_t>(d.band)].begin + (to - d.low)] = w;
    else
      transitions_[kept++] = transitions_[i];
  }
  transitions_.resize(kept);
}

void frame_graph_builder::compress(frame_graph& out) {
  // By target: `transitions_` is sorted so.
  out.in_begin.assign(out.num_states + 1, 0);
  out.out_begin.assign(out.num_states + 1, 0);
  out.in_source.clear();
  out.in_weight.clear();
  for (const auto& [from, to, w] : transitions_) {
    ++out.in_begin[to + 1];
    ++out.out_begin[from + 1];
    out.in_source.push_back(from);
    out.in_weight.push_back(w);
  }
  out.in_rows.clear();
  out.out_rows.clear();
  for (uint32_t s = 0; s < out.num_states; ++s) {
    if (out.in_begin[s + 1] > 0)
      out.in_rows.push_back(s);
    if (out.out_begin[s + 1] > 0)
      out.out_rows.push_back(s);
    out.in_begin[s + 1] += out.in_begin[s];
    out.out_begin[s + 1] += out.out_begin[s];
  }
  out.out_target.resize(transitions_.size());
  out.out_weight.resize(transitions_.size());
  next_out_.assign(out.out_begin.begin(), out.out_begin.end() - 1);
  for (const auto& [from, to, w] : transitions_) {
    const uint32_t i = next_out_[from]++;
    out.out_target[i] = to;
    out.out_weight[i] = w;
  }
}

void frame_graph_builder::lay_out(const wfsa& graph, frame_graph_storage storage,
                                  frame_graph& out) {
  assert(check(graph).empty());
  constexpr uint32_t no_state = std::numeric_limits<uint32_t>::max();
  const uint32_t num_states = graph.num_states();
  out.num_states = 0;
  out.emission.clear();
  out.original.clear();
  out.unrepresentable.clear();
  // Per state of the wfsa, the columns its incoming edges emit, in the
  // order first met (a state has few: a scan finds a column).
  head_.assign(num_states, no_state);
  column_.clear();
  next_.clear();
  const auto note = [&](uint32_t state, uint32_t column) {
    uint32_t* link = &head_[state];
    while (*link != no_state) {
      if (column_[*link] == column)
        return;
      link = &next_[*link];
    }
    *link = static_cast<uint32_t>(column_.size());
    column_.push_back(column);
    next_.push_back(no_state);
  };
  for (const auto& edge : graph.edges)
    if (std::isfinite(edge.weight))
      note(edge.to, edge.emission);
  for (uint32_t q = 0; q < num_states; ++q)
    if (graph.initial[q] != wfsa::none && head_[q] == no_state)
      note(q, 0);
  // Frame states in the order of the states they stand for, so that the
  // diagonals of a graph's transitions (the loops and steps of CTC and HMM
  // topologies) stay diagonals, bands for the sparse product. Those of
  // state q are `first_[q]` .. `first_[q + 1]`.
  first_.assign(num_states + 1, 0);
  for (uint32_t q = 0; q < num_states; ++q) {
    first_[q] = out.num_states;
    for (uint32_t i = head_[q]; i != no_state; i = next_[i]) {
      out.original.push_back(q);
      out.emission.push_back(column_[i]);
      ++out.num_states;
    }
  }
  first_[num_states] = out.num_states;
  target_.assign(graph.edges.size(), 0);
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const auto& edge = graph.edges[e];
    if (!std::isfinite(edge.weight))
      continue;
    uint32_t s = first_[edge.to];
    while (out.emission[s] != edge.emission)
      ++s;
    target_[e] = s;
  }

  out.edge_offset = offset_of(graph.edges, [](const wfsa_edge& edge) { return edge.weight; });
  out.initial_offset = offset_of(graph.initial, [](double cost) { return cost; });
  out.final_offset = offset_of(graph.final, [](double cost) { return cost; });
  const auto probability = [&](double cost, double offset, const char* what, size_t index) {
    if (!std::isfinite(cost))
      return 0.0;
    const double log_ratio = -cost - offset;
    if (log_ratio < min_log_ratio && out.unrepresentable.empty())
      out.unrepresentable = describe(what, index, cost, offset);
    return std::exp(log_ratio);
  };

  // The initial mass of a state goes to its first frame state only: all of
  // its frame states have the same outgoing transitions.
  out.initial.assign(out.num_states, 0.0);
  out.final.assign(out.num_states, 0.0);
  for (uint32_t q = 0; q < num_states; ++q)
    if (first_[q] < first_[q + 1])
      out.initial[first_[q]] =
          probability(graph.initial[q], out.initial_offset, "initial state", q);
  for (uint32_t s = 0; s < out.num_states; ++s)
    out.final[s] =
        probability(graph.final[out.original[s]], out.final_offset, "final state", out.original[s]);

  // Transitions (source frame state, target frame state, probability),
  // merged where several edges connect the same pair.
  transitions_.clear();
  for (size_t e = 0; e < graph.edges.size(); ++e) {
    const auto& edge = graph.edges[e];
    if (!std::isfinite(edge.weight))
      continue;
    const double w = probability(edge.weight, out.edge_offset, "edge", e);
    for (uint32_t source = first_[edge.from]; source < first_[edge.from + 1]; ++source)
      transitions_.emplace_back(source, target_[e], w);
  }
  std::sort(transitions_.begin(), transitions_.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<1>(x), std::get<0>(x)) < std::tie(std::get<1>(y), std::get<0>(y));
  });
  size_t merged = 0;
  for (size_t i = 0; i < transitions_.size(); ++i) {
    if (merged > 0 && std::get<0>(transitions_[merged - 1]) == std::get<0>(transitions_[i]) &&
        std::get<1>(transitions_[merged - 1]) == std::get<1>(transitions_[i]))
      std::get<2>(transitions_[merged - 1]) += std::get<2>(transitions_[i]);
    else
      transitions_[merged++] = transitions_[i];
  }
  transitions_.resize(merged);
  out.num_transitions = merged;
  group_by_column(out);

  const double states = out.num_states;
  out.is_dense = storage == frame_graph_storage::dense ||
                 (storage == frame_graph_storage::automatic && out.num_states <= 2048 &&
                  8.0 * static_cast<double>(merged) >= states * states);
  out.bands.clear();
  out.band_weight.clear();
  if (out.is_dense) {
    out.dense.assign(static_cast<size_t>(out.num_states) * out.num_states, 0.0);
    for (const auto& [from, to, w] : transitions_)
      out.dense[from + size_t{to} * out.num_states] = w;
    transitions_.clear();
    compress(out);
    return;
  }
  out.dense.clear();
  take_bands(out);
  compress(out);
}

frame_graph lay_out(const wfsa& graph, frame_graph_storage storage) {
  frame_graph out;
  frame_graph_builder{}.lay_out(graph, storage, out);
  return out;
}

} // namespace sprintrt::criterion
