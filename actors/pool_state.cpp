#include "actors/pool_state.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/lpt_schedule.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

uint64_t pool_state::track(std::function<void(const caf::error&)> cancel) {
  auto id = next_id_++;
  in_progress_.emplace(id, std::move(cancel));
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
  for (auto& [id, cancel] : tracked)
    cancel(err);
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

std::optional<size_t> idle_worker(pool_pointer self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.workers.size(); ++i)
    if (st.workers[i].load->requests == 0)
      return i;
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

std::vector<std::vector<size_t>> lpt_lists(pool_pointer self, span<const int64_t> lengths) {
  ensure_workers(self, lengths.size());
  std::vector<int64_t> loads;
  for (const auto& slot : self->state.workers)
    loads.push_back(slot.load->frames);
  return lpt_assign(lengths, loads);
}

} // namespace sprintrt::detail
