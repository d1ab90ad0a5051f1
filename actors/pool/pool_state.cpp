#include "actors/pool/pool_state.hpp"

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

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
  // Every waiting segment's request is tracked: it fails below.
  waiting.clear();
  auto tracked = std::move(in_progress_);
  in_progress_.clear();
  for (auto& [id, tracked_req] : tracked)
    tracked_req.cancel(err);
}

bool pool_state::cancel_one(const request_origin& origin, const caf::error& err) {
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

} // namespace sprintrt::detail
