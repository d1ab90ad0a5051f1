#include "criterion/label_lm.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <set>
#include <string>
#include <utility>

namespace sprintrt::criterion {

namespace {

constexpr double infinite_cost = std::numeric_limits<double>::infinity();

} // namespace

label_lm::label_lm(label_lm_options options, std::vector<uint32_t> vocabulary,
                   std::map<history, std::map<uint32_t, double>> counts)
    : options_(options), vocabulary_(std::move(vocabulary)), counts_(std::move(counts)) {
  // nop
}

caf::expected<label_lm> label_lm::estimate(const corpus& segments, label_lm_options options) {
  if (options.order < 1 || options.order > 3)
    return make_error(errc::invalid_options,
                      "label-lm: lm-order " + std::to_string(options.order) + " is not 1, 2 or 3");
  if (!std::isfinite(options.smoothing) || options.smoothing < 0)
    return make_error(errc::invalid_options, "label-lm: lm-smoothing " +
                                                 std::to_string(options.smoothing) +
                                                 " is not a finite number >= 0");
  std::set<uint32_t> labels;
  for (const auto& name : segments.segment_names()) {
    const auto sequence = *segments.labels(name);
    labels.insert(sequence.begin(), sequence.end());
  }
  label_lm lm{options, std::vector<uint32_t>(labels.begin(), labels.end()), {}};
  const size_t context = options.order - 1;
  for (const auto& name : segments.segment_names()) {
    history tokens(context, lm.begin_token());
    const auto sequence = *segments.labels(name);
    for (auto label : sequence) {
      const auto token = std::lower_bound(lm.vocabulary_.begin(), lm.vocabulary_.end(), label) -
                         lm.vocabulary_.begin();
      tokens.push_back(static_cast<uint32_t>(token));
    }
    tokens.push_back(lm.end_token());
    for (size_t i = context; i < tokens.size(); ++i)
      lm.counts_[history(tokens.begin() + (i - context), tokens.begin() + i)][tokens[i]] += 1;
  }
  return lm;
}

double label_lm::token_cost(const history& context, uint32_t token) const {
  const size_t n = options_.order - 1;
  const history h(context.end() - n, context.end());
  double count = 0;
  double total = 0;
  if (auto found = counts_.find(h); found != counts_.end()) {
    for (const auto& [w, c] : found->second)
      total += c;
    if (auto c = found->second.find(token); c != found->second.end())
      count = c->second;
  }
  const double delta = options_.smoothing;
  const double numerator = count + delta;
  if (numerator == 0)
    return infinite_cost;
  return -std::log(numerator / (total + delta * static_cast<double>(vocabulary_.size() + 1)));
}

double label_lm::cost(span<const uint32_t> labels) const {
  history context(std::max<size_t>(options_.order - 1, 1), begin_token());
  double total = 0;
  for (auto label : labels) {
    auto found = std::lower_bound(vocabulary_.begin(), vocabulary_.end(), label);
    if (found == vocabulary_.end() || *found != label)
      return infinite_cost;
    const auto token = static_cast<uint32_t>(found - vocabulary_.begin());
    total += token_cost(context, token);
    context.erase(context.begin());
    context.push_back(token);
  }
  return total + token_cost(context, end_token());
}

label_acceptor label_lm::acceptor(double scale) const {
  // A state is the last max(N-1, 1) tokens: for N = 1 the history is empty,
  // but the topologies need the last label.
  const size_t width = std::max<size_t>(options_.order - 1, 1);
  label_acceptor result;
  std::map<history, uint32_t> states;
  std::deque<history> queue;
  states.emplace(history(width, begin_token()), label_acceptor::start_state);
  queue.emplace_back(width, begin_token());
  while (!queue.empty()) {
    const history context = std::move(queue.front());
    queue.pop_front();
    const uint32_t from = states.at(context);
    if (const double end = token_cost(context, end_token()); end != infinite_cost)
      result.set_final(from, scale * end);
    for (uint32_t token = 0; token < vocabulary_.size(); ++token) {
      const double cost = token_cost(context, token);
      if (cost == infinite_cost)
        continue;
      history next(context.begin() + 1, context.end());
      next.push_back(token);
      auto [it, added] = states.emplace(next, 0);
      if (added) {
        it->second = result.add_state(vocabulary_[token]);
        queue.push_back(next);
      }
      result.add_arc(from, it->second, scale * cost);
    }
  }
  return result;
}

} // namespace sprintrt::criterion
