#include "criterion/sequence_engine.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace sprintrt::criterion {

// The recursions
// ==============
//
// Frames are t = 1..T; row t-1 of `scores` belongs to frame t, and edge e
// taken at frame t scores v(e, t) = scores[t-1, emission(e)] - weight(e).
//
// Forward:  alpha[0, q] = -initial(q),
//           alpha[t, q] = logsumexp over edges e into q of alpha[t-1, from(e)] + v(e, t).
// Backward: beta[T, q]  = -final(q),
//           beta[t-1, q] = logsumexp over edges e out of q of v(e, t) + beta[t, to(e)].
// log Z = logsumexp over q of alpha[T, q] - final(q); the posterior of edge e
// at frame t is g(e, t) = exp(alpha[t-1, from] + v(e, t) + beta[t, to] - log Z),
// and the occupancy of column k at frame t sums g over the edges emitting k.
//
// Expected accuracy (the expectation semiring, kept as conditional
// expectations so that every quantity stays between 0 and T): with
// c(e, t) = 1 if e emits reference[t-1], else 0,
//   alpha_acc[t, q] = E[accuracy of the first t frames | the path is in q after t frames]
//                   = sum over e into q of exp(alpha[t-1, from] + v(e, t) - alpha[t, q])
//                     * (alpha_acc[t-1, from] + c(e, t)),
//   beta_acc[t-1, q] = E[accuracy of frames t..T | the path is in q after t-1 frames]
//                    = sum over e out of q of exp(v(e, t) + beta[t, to] - beta[t-1, q])
//                      * (c(e, t) + beta_acc[t, to]),
// with alpha_acc[0, .] = beta_acc[T, .] = 0. The expected accuracy of the
// paths that take e at frame t is alpha_acc[t-1, from] + c(e, t) + beta_acc[t, to],
// so sum over the paths with e_t = k of P(pi) (A(pi) - E[A]) sums, over the
// edges e emitting k, g(e, t) times that minus E[A]. Because scores[t-1, k]
// appears in S(pi) once for each path with e_t = k, this is also
// dE[A]/dscores[t-1, k] (the derivative of a mean under exp(S)).

namespace {

constexpr double minus_inf = -std::numeric_limits<double>::infinity();
constexpr uint32_t no_edge = std::numeric_limits<uint32_t>::max();

// logsumexp of `values`; -inf for none or all -inf.
double log_sum_exp(const std::vector<double>& values, size_t count) {
  double top = minus_inf;
  for (size_t i = 0; i < count; ++i)
    top = std::max(top, values[i]);
  if (top == minus_inf)
    return minus_inf;
  double sum = 0;
  for (size_t i = 0; i < count; ++i)
    sum += std::exp(values[i] - top);
  return top + std::log(sum);
}

// Groups the edge ids by `key(edge)` (a state), keeping edge order in each
// group: `begin[q]..begin[q+1]` index `ids`.
template <class Key>
void group_edges(const wfsa& graph, Key key, std::vector<uint32_t>& ids,
                 std::vector<uint32_t>& begin) {
  begin.assign(graph.num_states() + 1, 0);
  for (const auto& edge : graph.edges)
    ++begin[key(edge) + 1];
  for (uint32_t q = 0; q < graph.num_states(); ++q)
    begin[q + 1] += begin[q];
  ids.resize(graph.edges.size());
  std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
  for (uint32_t e = 0; e < graph.edges.size(); ++e)
    ids[next[key(graph.edges[e])]++] = e;
}

} // namespace

void sequence_engine::index(const wfsa& graph) {
  assert(check(graph).empty());
  group_edges(
      graph, [](const wfsa_edge& e) { return e.to; }, incoming_, incoming_begin_);
  group_edges(
      graph, [](const wfsa_edge& e) { return e.from; }, outgoing_, outgoing_begin_);
  size_t widest = 1;
  for (uint32_t q = 0; q < graph.num_states(); ++q) {
    widest = std::max<size_t>(widest, incoming_begin_[q + 1] - incoming_begin_[q]);
    widest = std::max<size_t>(widest, outgoing_begin_[q + 1] - outgoing_begin_[q]);
  }
  widest = std::max<size_t>(widest, graph.num_states());
  scratch_.resize(widest);
}

double sequence_engine::run(const wfsa& graph, const row_matrix_d& scores) {
  index(graph);
  graph_ = &graph;
  scores_ = &scores;
  const auto frames = scores.rows();
  const uint32_t num_states = graph.num_states();
  alpha_.resize(frames + 1, num_states);
  beta_.resize(frames + 1, num_states);
  const auto score = [&](uint32_t e, Eigen::Index t) {
    const auto& edge = graph.edges[e];
    return scores(t - 1, edge.emission) - edge.weight;
  };
  for (uint32_t q = 0; q < num_states; ++q) {
    alpha_(0, q) = -graph.initial[q];
    beta_(frames, q) = -graph.final[q];
  }
  for (Eigen::Index t = 1; t <= frames; ++t)
    for (uint32_t q = 0; q < num_states; ++q) {
      size_t n = 0;
      for (uint32_t i = incoming_begin_[q]; i < incoming_begin_[q + 1]; ++i) {
        const uint32_t e = incoming_[i];
        scratch_[n++] = alpha_(t - 1, graph.edges[e].from) + score(e, t);
      }
      alpha_(t, q) = log_sum_exp(scratch_, n);
    }
  for (Eigen::Index t = frames; t >= 1; --t)
    for (uint32_t q = 0; q < num_states; ++q) {
      size_t n = 0;
      for (uint32_t i = outgoing_begin_[q]; i < outgoing_begin_[q + 1]; ++i) {
        const uint32_t e = outgoing_[i];
        scratch_[n++] = score(e, t) + beta_(t, graph.edges[e].to);
      }
      beta_(t - 1, q) = log_sum_exp(scratch_, n);
    }
  for (uint32_t q = 0; q < num_states; ++q)
    scratch_[q] = alpha_(frames, q) - graph.final[q];
  log_z_ = log_sum_exp(scratch_, num_states);
  return log_z_;
}

void sequence_engine::add_occupancy(double factor, row_matrix_d& out) const {
  assert(graph_ != nullptr && std::isfinite(log_z_));
  const auto& graph = *graph_;
  const auto& scores = *scores_;
  for (Eigen::Index t = 1; t <= scores.rows(); ++t)
    for (const auto& edge : graph.edges) {
      const double from = alpha_(t - 1, edge.from);
      const double to = beta_(t, edge.to);
      if (from == minus_inf || to == minus_inf)
        continue;
      const double v = scores(t - 1, edge.emission) - edge.weight;
      out(t - 1, edge.emission) += factor * std::exp(from + v + to - log_z_);
    }
}

double sequence_engine::expect_accuracy(span<const uint32_t> reference, double factor,
                                        row_matrix_d& out) {
  assert(graph_ != nullptr && std::isfinite(log_z_));
  const auto& graph = *graph_;
  const auto& scores = *scores_;
  const auto frames = scores.rows();
  assert(reference.size() == static_cast<size_t>(frames));
  const uint32_t num_states = graph.num_states();
  alpha_accuracy_.setZero(frames + 1, num_states);
  beta_accuracy_.setZero(frames + 1, num_states);
  const auto correct = [&](const wfsa_edge& edge, Eigen::Index t) {
    return edge.emission == reference[t - 1] ? 1.0 : 0.0;
  };
  const auto score = [&](const wfsa_edge& edge, Eigen::Index t) {
    return scores(t - 1, edge.emission) - edge.weight;
  };
  for (Eigen::Index t = 1; t <= frames; ++t)
    for (uint32_t q = 0; q < num_states; ++q) {
      if (alpha_(t, q) == minus_inf)
        continue;
      double sum = 0;
      for (uint32_t i = incoming_begin_[q]; i < incoming_begin_[q + 1]; ++i) {
        const auto& edge = graph.edges[incoming_[i]];
        const double from = alpha_(t - 1, edge.from);
        if (from == minus_inf)
          continue;
        sum += std::exp(from + score(edge, t) - alpha_(t, q)) *
               (alpha_accuracy_(t - 1, edge.from) + correct(edge, t));
      }
      alpha_accuracy_(t, q) = sum;
    }
  for (Eigen::Index t = frames; t >= 1; --t)
    for (uint32_t q = 0; q < num_states; ++q) {
      if (beta_(t - 1, q) == minus_inf)
        continue;
      double sum = 0;
      for (uint32_t i = outgoing_begin_[q]; i < outgoing_begin_[q + 1]; ++i) {
        const auto& edge = graph.edges[outgoing_[i]];
        const double to = beta_(t, edge.to);
        if (to == minus_inf)
          continue;
        sum += std::exp(score(edge, t) + to - beta_(t - 1, q)) *
               (correct(edge, t) + beta_accuracy_(t, edge.to));
      }
      beta_accuracy_(t - 1, q) = sum;
    }
  double expected = 0;
  for (uint32_t q = 0; q < num_states; ++q) {
    const double end = alpha_(frames, q) - graph.final[q];
    if (end != minus_inf)
      expected += std::exp(end - log_z_) * alpha_accuracy_(frames, q);
  }
  for (Eigen::Index t = 1; t <= frames; ++t)
    for (const auto& edge : graph.edges) {
      const double from = alpha_(t - 1, edge.from);
      const double to = beta_(t, edge.to);
      if (from == minus_inf || to == minus_inf)
        continue;
      const double posterior = std::exp(from + score(edge, t) + to - log_z_);
      const double accuracy =
          alpha_accuracy_(t - 1, edge.from) + correct(edge, t) + beta_accuracy_(t, edge.to);
      out(t - 1, edge.emission) += factor * posterior * (accuracy - expected);
    }
  return expected;
}

std::optional<std::vector<uint32_t>> sequence_engine::best_path(const wfsa& graph,
                                                                const row_matrix_d& scores) {
  std::vector<uint32_t> edges;
  if (best_edges(graph, scores, edges) == minus_inf)
    return std::nullopt;
  for (auto& e : edges)
    e = graph.edges[e].emission;
  return edges;
}

double sequence_engine::best_edges(const wfsa& graph, const row_matrix_d& scores,
                                   std::vector<uint32_t>& edges) {
  index(graph);
  graph_ = nullptr; // the queries of an earlier run no longer apply
  const auto frames = scores.rows();
  const uint32_t num_states = graph.num_states();
  // The best prefix scores reuse alpha_'s storage.
  alpha_.resize(frames + 1, num_states);
  best_edge_.resize(frames, num_states);
  for (uint32_t q = 0; q < num_states; ++q)
    alpha_(0, q) = -graph.initial[q];
  for (Eigen::Index t = 1; t <= frames; ++t)
    for (uint32_t q = 0; q < num_states; ++q) {
      double best = minus_inf;
      uint32_t best_edge = no_edge;
      for (uint32_t i = incoming_begin_[q]; i < incoming_begin_[q + 1]; ++i) {
        const uint32_t e = incoming_[i];
        const auto& edge = graph.edges[e];
        const double v = alpha_(t - 1, edge.from) + scores(t - 1, edge.emission) - edge.weight;
        if (v > best) {
          best = v;
          best_edge = e;
        }
      }
      alpha_(t, q) = best;
      best_edge_(t - 1, q) = best_edge;
    }
  double best = minus_inf;
  uint32_t state = 0;
  for (uint32_t q = 0; q < num_states; ++q)
    if (const double end = alpha_(frames, q) - graph.final[q]; end > best) {
      best = end;
      state = q;
    }
  edges.clear();
  if (best == minus_inf)
    return best;
  edges.resize(static_cast<size_t>(frames));
  for (Eigen::Index t = frames; t >= 1; --t) {
    const uint32_t e = best_edge_(t - 1, state);
    edges[static_cast<size_t>(t - 1)] = e;
    state = graph.edges[e].from;
  }
  return best;
}

} // namespace sprintrt::criterion
