#include "actors/caller/actor_census.hpp"

#include <algorithm>

#include <caf/abstract_actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

namespace sprintrt::detail {

void actor_census::enlist(const caf::strong_actor_ptr& actor) {
  if (!actor)
    return;
  bool stopped = false;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopped = stopped_;
    ++alive_;
    // Forget members that ended, so that a program making actor after
    // actor does not grow the list.
    members_.erase(std::remove_if(members_.begin(), members_.end(),
                                  [](const caf::actor_addr& addr) {
                                    return !caf::actor_cast<caf::strong_actor_ptr>(addr);
                                  }),
                   members_.end());
    members_.push_back(caf::actor_cast<caf::actor_addr>(actor));
  }
  // Runs when the actor terminates, or right here if it already has.
  actor->get()->attach_functor([census = shared_from_this()] { census->retire(); });
  if (stopped)
    caf::anon_send_exit(caf::actor_cast<caf::actor>(actor), caf::exit_reason::user_shutdown);
}

void actor_census::stop_all() {
  std::vector<caf::actor_addr> members;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    stopped_ = true;
    members = members_;
  }
  // Sent outside the lock: an actor may terminate, and retire, at once.
  for (const auto& member : members)
    if (auto actor = caf::actor_cast<caf::actor>(member))
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

void actor_census::await_all_done() {
  std::unique_lock<std::mutex> lock{mutex_};
  all_done_.wait(lock, [this] { return alive_ == 0; });
}

size_t actor_census::alive() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return alive_;
}

void actor_census::retire() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (--alive_ == 0)
    all_done_.notify_all();
}

} // namespace sprintrt::detail
