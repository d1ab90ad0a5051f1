#include "actors/pool_state.hpp"

#include <algorithm>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/lpt_schedule.hpp"
#include "actors/sprint_worker.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

void segment_lists::record_failure(size_t index, const caf::error& err) {
  if (!first_error)
    first_error = err;
  failures.push_back("segment " + std::to_string(index) + " ('" + tags[index] +
                     "'): " + render(err));
}

pool_state::~pool_state() {
  auto gone = make_error(errc::cancelled, label + " terminated");
  for (auto& req : waiting)
    req.fail(gone);
  for (auto& [id, cancel] : in_progress)
    cancel(gone);
  for (auto& slot : workers)
    caf::anon_send_exit(slot.handle, caf::exit_reason::user_shutdown);
}

uint64_t track(pool_pointer self, std::function<void(const caf::error&)> cancel) {
  auto id = self->state.next_id++;
  self->state.in_progress.emplace(id, std::move(cancel));
  return id;
}

void untrack(pool_pointer self, uint64_t id) {
  self->state.in_progress.erase(id);
}

void start_worker(pool_pointer self, size_t index) {
  auto& st = self->state;
  auto name = st.label + " worker " + std::to_string(index);
  auto handle = spawn_sprint_worker(self->system(), *st.io, st.opts, name);
  self->monitor(handle);
  st.workers[index].handle = handle;
}

void ensure_workers(pool_pointer self, size_t count) {
  auto& st = self->state;
  count = std::min(count, st.opts.num_instances);
  while (st.workers.size() < count) {
    st.workers.emplace_back();
    start_worker(self, st.workers.size() - 1);
  }
}

bool worker_was_gone(pool_pointer self, size_t index, const sprint_worker_actor& used,
                     const caf::error& err) {
  if (err != caf::sec::request_receiver_down)
    return false;
  if (self->state.workers[index].handle == used)
    start_worker(self, index);
  return true;
}

void assign(pool_pointer self, size_t index, int64_t frames) {
  auto& slot = self->state.workers[index];
  slot.queued_frames += frames;
  ++slot.queued_requests;
}

void unassign(pool_pointer self, size_t index, int64_t frames) {
  auto& slot = self->state.workers[index];
  slot.queued_frames -= frames;
  --slot.queued_requests;
}

void worker_done(pool_pointer self, size_t index, int64_t frames) {
  unassign(self, index, frames);
  serve_waiting(self);
}

std::vector<std::deque<size_t>> assign_lists(pool_pointer self, span<const int64_t> lengths) {
  ensure_workers(self, lengths.size());
  std::vector<int64_t> loads;
  for (const auto& slot : self->state.workers)
    loads.push_back(slot.queued_frames);
  std::vector<std::deque<size_t>> lists;
  for (auto& list : lpt_assign(lengths, loads))
    lists.emplace_back(list.begin(), list.end());
  return lists;
}

caf::error combined_error(const std::string& what, const segment_lists& progress) {
  std::string text = what + ": " + std::to_string(progress.failures.size()) + " of " +
                     std::to_string(progress.tags.size()) + " segments failed";
  for (const auto& failure : progress.failures)
    text += "\n  " + failure;
  const auto& first = progress.first_error;
  auto code = first && first.category() == error_category ? static_cast<errc>(first.code())
                                                          : errc::child_failed;
  return make_error(code, text);
}

} // namespace sprintrt::detail
