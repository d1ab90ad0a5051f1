#include "sequence_reference.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "tests/support/criterion_test_support.hpp"

namespace sprintrt::criterion::test {

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

struct scored {
  std::vector<uint32_t> emissions;
  double score = 0;
};

double log_sum(const std::vector<scored>& paths) {
  double top = neg_inf;
  for (const auto& p : paths)
    top = std::max(top, p.score);
  if (top == neg_inf)
    return neg_inf;
  double sum = 0;
  for (const auto& p : paths)
    sum += std::exp(p.score - top);
  return top + std::log(sum);
}

// The paths of `h`'s FSA scored S(pi) = KAPPA sum x - w - LAMBDA cost.
std::vector<scored> scored_paths(const topology& automaton_topology, const hypothesis& h,
                                 const sequence_scales& scales, const row_matrix_f& x) {
  std::vector<scored> result;
  const auto automaton = unwrap(automaton_topology.build("hypothesis", h.labels));
  for (const auto& p : all_paths(automaton, x.rows())) {
    double score = -p.weight - scales.lm * h.cost;
    for (Eigen::Index t = 0; t < x.rows(); ++t)
      score += scales.am * static_cast<double>(x(t, p.emissions[t]));
    result.push_back({p.emissions, score});
  }
  return result;
}

size_t accuracy(const std::vector<uint32_t>& path, const std::vector<uint32_t>& best) {
  size_t n = 0;
  for (size_t t = 0; t < path.size(); ++t)
    n += path[t] == best[t];
  return n;
}

} // namespace

std::vector<path_emissions> all_paths(const fsa& automaton, Eigen::Index frames) {
  std::vector<path_emissions> result;
  // The weight is passed down, not added and subtracted again: +inf - +inf
  // would be NaN.
  path_emissions path;
  std::function<void(uint32_t, double)> extend = [&](uint32_t state, double weight) {
    if (static_cast<Eigen::Index>(path.emissions.size()) == frames) {
      if (state == automaton.final_state()) {
        result.push_back(path);
        result.back().weight = weight;
      }
      return;
    }
    for (uint32_t e = 0; e < automaton.num_edges(); ++e) {
      const auto edge = automaton.edge(e);
      if (edge.from != state)
        continue;
      path.emissions.push_back(edge.emission);
      extend(edge.to, weight + edge.weight);
      path.emissions.pop_back();
    }
  };
  extend(fsa::start_state, 0.0);
  return result;
}

sequence_reference sequence_by_definition(sequence_kind kind, const sequence_scales& scales,
                                          const topology& automaton_topology,
                                          const hypothesis& reference,
                                          const std::vector<hypothesis>& hypotheses,
                                          const row_matrix_f& log_posteriors) {
  const auto frames = log_posteriors.rows();
  const auto classes = log_posteriors.cols();
  sequence_reference result;
  result.error_signal = row_matrix_d::Zero(frames, classes);
  const auto numerator = scored_paths(automaton_topology, reference, scales, log_posteriors);
  result.log_numerator = log_sum(numerator);
  if (result.log_numerator == neg_inf) {
    result.loss = std::numeric_limits<double>::infinity();
    return result;
  }
  double best_score = neg_inf;
  for (const auto& p : numerator)
    if (p.score > best_score) {
      best_score = p.score;
      result.best = p.emissions;
    }
  std::vector<scored> denominator;
  for (const auto& h : hypotheses)
    for (auto& p : scored_paths(automaton_topology, h, scales, log_posteriors))
      denominator.push_back(std::move(p));
  result.log_denominator = log_sum(denominator);
  if (kind == sequence_kind::smbr) {
    double expected = 0;
    for (const auto& p : denominator)
      expected += std::exp(p.score - result.log_denominator) *
                  static_cast<double>(accuracy(p.emissions, result.best));
    for (const auto& p : denominator) {
      const double weight = std::exp(p.score - result.log_denominator) *
                            (static_cast<double>(accuracy(p.emissions, result.best)) - expected);
      for (Eigen::Index t = 0; t < frames; ++t)
        result.error_signal(t, p.emissions[t]) -= scales.am * weight;
    }
    result.loss = -expected;
    return result;
  }
  auto boosted = denominator;
  if (kind == sequence_kind::bmmi)
    for (auto& p : boosted)
      p.score -= scales.boost * static_cast<double>(accuracy(p.emissions, result.best));
  const double log_boosted = log_sum(boosted);
  result.loss = log_boosted - result.log_numerator;
  for (const auto& p : boosted)
    for (Eigen::Index t = 0; t < frames; ++t)
      result.error_signal(t, p.emissions[t]) += scales.am * std::exp(p.score - log_boosted);
  for (const auto& p : numerator)
    for (Eigen::Index t = 0; t < frames; ++t)
      result.error_signal(t, p.emissions[t]) -=
          scales.am * std::exp(p.score - result.log_numerator);
  return result;
}

} // namespace sprintrt::criterion::test
