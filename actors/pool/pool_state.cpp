#include "actors/pool/pool_state.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/pool/lpt_schedule.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

uint64_t pool_state::track(std::function<void(const caf::error&)> cancel, request_origin origin,
                           std::function<void()> drop_at_workers) {
  auto id = next_id_++;
  in_progress_.emplace(
      id, tracked_request{std::move(cancel), std::move(origin), std::move(drop_at_workers)});
  return id;
}

void pool_state::untrack(uint64_t id) {
  in_progress_.erase(id);
}

void pool_state::cancel_all(const caf::error& err) {
  // Taken out first: a cancel hook may release assignments, never add.
  auto waiting_now = std::move(waiting);
  waiting.clear();
  auto tracked = std::move(in_progress_);
  in_progress_.clear();
  for (auto& req : waiting_now)
    req.fail(err);
  for (auto& [id, tracked_req] : tracked)
    tracked_req.cancel(err);
}

bool pool_state::cancel_one(const request_origin& origin, const caf::error& err) {
  if (auto req = take_request(waiting, origin)) {
    req->cancel(err);
    return true;
  }
  for (auto i = in_progress_.begin(); i != in_progress_.end(); ++i)
    if (i->second.origin == origin) {
      auto req = std::move(i->second);
      in_progress_.erase(i);
      req.cancel(err);
      if (req.drop_at_workers)
        req.drop_at_workers();
      return true;
    }
  return false;
}

pool_state::~pool_state() {
  cancel_all(make_error(errc::cancelled, label + " terminated"));
  for (auto& slot : workers)
    caf::anon_send_exit(slot.handle, caf::exit_reason::user_shutdown);
  if (preparer)
    caf::anon_send_exit(preparer, caf::exit_reason::user_shutdown);
}

void start_worker(pool_pointer self, size_t index) {
  auto& st = self->state;
  auto name = st.label + " worker " + std::to_string(index);
  auto handle = st.source.make(self->system(), index, name);
  self->monitor(handle);
  st.workers[index].handle = handle;
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

bool any_worker_available(pool_pointer self) {
  auto& st = self->state;
  if (!st.source.slot_state || st.workers.size() < st.source.capacity)
    return true;
  for (size_t i = 0; i < st.workers.size(); ++i)
    if (slot_state(self, i).unavailable.empty())
      return true;
  return false;
}

caf::error no_worker_available(pool_pointer self) {
  auto& st = self->state;
  std::string text = st.label + ": no worker can take it";
  for (size_t i = 0; i < st.workers.size(); ++i)
    if (auto state = slot_state(self, i); !state.unavailable.empty())
      text += "\n  worker " + std::to_string(i) + ": " + state.unavailable;
  return make_error(errc::worker_unavailable, text);
}

bool worker_was_unavailable(const caf::error& err) {
  return err == errc::worker_unavailable;
}

size_t max_reroutes(pool_pointer self) {
  return 2 * self->state.source.capacity + self->state.source.max_resends;
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

bool worker_was_gone(pool_pointer self, size_t index, const sprint_worker_actor& used,
                     const caf::error& err) {
  if (err != caf::sec::request_receiver_down)
    return false;
  if (self->state.workers[index].handle == used)
    start_worker(self, index);
  return true;
}

caf::error workers_kept_terminating(pool_pointer self, size_t resends) {
  return make_error(errc::child_failed, self->state.label + ": the worker serving it terminated " +
                                            std::to_string(resends + 1) + " times (resent " +
                                            std::to_string(resends) +
                                            " times, the most the worker source allows)");
}

assignment assign(pool_pointer self, size_t index, int64_t frames) {
  return assignment{self->state.workers[index].load, index, frames};
}

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
