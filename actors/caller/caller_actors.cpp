#include "actors/caller/caller_actors.hpp"

#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

namespace sprintrt::detail {

caller_actors::caller_actors(caf::actor_system& system) : system_(&system) {}

caller_actors::~caller_actors() {
  clear();
}

caf::blocking_actor& caller_actors::of_this_thread() {
  std::lock_guard<std::mutex> guard{mutex_};
  auto& slot = actors_[std::this_thread::get_id()];
  if (!slot)
    slot = std::make_unique<caf::scoped_actor>(*system_, /*hide=*/true);
  return **slot;
}

void caller_actors::clear() {
  std::unordered_map<std::thread::id, std::unique_ptr<caf::scoped_actor>> gone;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    gone.swap(actors_);
  }
}

size_t caller_actors::size() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return actors_.size();
}

} // namespace sprintrt::detail
