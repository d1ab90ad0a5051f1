/// @file
/// The pool's worker slots (see the header).

#include "actors/pool/pool_slots.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include <caf/sec.hpp>

#include "actors/pool/lpt_schedule.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

namespace {

/// Each worker's estimated speed for LPT by finish time: its measured
/// frames per second; for a worker not measured yet, its parallelism times
/// the measured speed per parallel request of the others (1 if none is
/// measured); 0 for an unavailable worker.
std::vector<double> slot_rates(pool_pointer self) {
  auto& st = self->state;
  std::vector<worker_slot_state> states;
  std::vector<double> measured_fps;
  double per_request_sum = 0;
  size_t measured = 0;
  for (size_t i = 0; i < st.workers.size(); ++i) {
    states.push_back(slot_state(self, i));
    measured_fps.push_back(st.workers[i].load->frames_per_second());
    if (measured_fps[i] > 0) {
      per_request_sum +=
          measured_fps[i] / static_cast<double>(std::max<size_t>(states[i].parallelism, 1));
      ++measured;
    }
  }
  double per_request = measured > 0 ? per_request_sum / static_cast<double>(measured) : 1.0;
  std::vector<double> rates;
  for (size_t i = 0; i < st.workers.size(); ++i) {
    if (!states[i].unavailable.empty())
      rates.push_back(0);
    else if (measured_fps[i] > 0)
      rates.push_back(measured_fps[i]);
    else
      rates.push_back(per_request *
                      static_cast<double>(std::max<size_t>(states[i].parallelism, 1)));
  }
  return rates;
}

} // namespace

void start_worker(pool_pointer self, size_t index) {
  auto& st = self->state;
  auto& slot = st.workers[index];
  if (slot.handle) {
    // A replacement counts as a restart, as a Sprint worker counts a new
    // child, whatever kind of worker the source makes.
    slot.replaced.requests_served += slot.seen.requests_served;
    slot.replaced.requests_failed += slot.seen.requests_failed;
    ++slot.replaced.restarts;
    slot.seen = worker_stats{};
  }
  auto name = st.label + " worker " + std::to_string(index);
  auto handle = st.source.make(self->system(), index, name);
  self->monitor(handle);
  slot.handle = handle;
}

void count_answer(pool_pointer self, size_t w, const sprint_worker_actor& used,
                  const caf::error* err) {
  auto& slot = self->state.workers[w];
  auto& counts = slot.handle == used ? slot.seen : slot.replaced;
  if (!err)
    ++counts.requests_served;
  else if (*err != caf::sec::request_receiver_down && *err != errc::cancelled)
    ++counts.requests_failed;
}

void ensure_workers(pool_pointer self, size_t count) {
  auto& st = self->state;
  count = std::min(count, st.source.capacity);
  while (st.workers.size() < count) {
    st.workers.emplace_back();
    start_worker(self, st.workers.size() - 1);
  }
}

worker_slot_state slot_state(pool_pointer self, size_t index) {
  auto& source = self->state.source;
  return source.slot_state ? source.slot_state(index) : worker_slot_state{};
}

bool any_worker_may_return(pool_pointer self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.workers.size(); ++i)
    if (auto state = slot_state(self, i); !state.unavailable.empty() && !state.lasting)
      return true;
  return false;
}

bool any_worker_available(pool_pointer self) {
  auto& st = self->state;
  if (!st.source.slot_state || st.workers.size() < st.source.capacity)
    return true;
  for (size_t i = 0; i < st.workers.size(); ++i)
    if (slot_state(self, i).unavailable.empty())
      return true;
  return false;
}

caf::error no_worker_available(pool_pointer self, std::chrono::milliseconds waited) {
  auto& st = self->state;
  std::string text = st.label + ": no worker can take it";
  if (waited.count() > 0)
    text += " (waited " + std::to_string(waited.count()) + " ms for one to come back: remoteWait)";
  for (size_t i = 0; i < st.workers.size(); ++i)
    if (auto state = slot_state(self, i); !state.unavailable.empty())
      text += "\n  worker " + std::to_string(i) + ": " + state.unavailable;
  return make_error(errc::worker_unavailable, text);
}

std::optional<size_t> idle_worker(pool_pointer self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.workers.size(); ++i) {
    if (!st.source.slot_state) {
      if (st.workers[i].load->requests == 0)
        return i;
      continue;
    }
    auto state = slot_state(self, i);
    if (state.unavailable.empty() && st.workers[i].load->requests < state.parallelism)
      return i;
  }
  if (st.workers.size() >= st.source.capacity)
    return std::nullopt;
  ensure_workers(self, st.workers.size() + 1);
  return st.workers.size() - 1;
}

assignment assign(pool_pointer self, size_t index, int64_t frames) {
  return assignment{self->state.workers[index].load, index, frames};
}

std::vector<std::vector<size_t>> lpt_lists(pool_pointer self, span<const int64_t> lengths) {
  ensure_workers(self, lengths.size());
  std::vector<int64_t> loads;
  for (const auto& slot : self->state.workers)
    loads.push_back(slot.load->frames);
  if (!self->state.source.slot_state)
    return lpt_assign(lengths, loads);
  return lpt_assign(lengths, loads, slot_rates(self));
}

} // namespace sprintrt::detail
