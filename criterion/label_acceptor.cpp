#include "criterion/label_acceptor.hpp"

#include <cassert>

namespace sprintrt::criterion {

label_acceptor::label_acceptor() : last_labels_{no_label}, finals_{std::nullopt} {
  // nop
}

uint32_t label_acceptor::add_state(uint32_t last_label) {
  assert(last_label != no_label);
  last_labels_.push_back(last_label);
  finals_.emplace_back();
  return num_states() - 1;
}

void label_acceptor::add_arc(uint32_t from, uint32_t to, double weight) {
  assert(from < num_states() && to < num_states() && to != start_state);
  arcs_.push_back({from, to, last_labels_[to], weight});
}

void label_acceptor::set_final(uint32_t state, double weight) {
  assert(state < num_states());
  finals_[state] = weight;
}

std::optional<uint32_t> label_acceptor::last_label(uint32_t state) const {
  if (last_labels_[state] == no_label)
    return std::nullopt;
  return last_labels_[state];
}

std::optional<double> label_acceptor::final_weight(uint32_t state) const {
  return finals_[state];
}

label_acceptor hypotheses_acceptor(span<const hypothesis> hypotheses, double scale) {
  label_acceptor acceptor;
  for (const auto& h : hypotheses) {
    const double cost = scale * h.cost;
    if (h.labels.empty()) {
      acceptor.set_final(label_acceptor::start_state, cost);
      continue;
    }
    uint32_t state = label_acceptor::start_state;
    for (size_t i = 0; i < h.labels.size(); ++i) {
      const uint32_t next = acceptor.add_state(h.labels[i]);
      acceptor.add_arc(state, next, i == 0 ? cost : 0.0);
      state = next;
    }
    acceptor.set_final(state, 0.0);
  }
  return acceptor;
}

} // namespace sprintrt::criterion
