#pragma once

/// @file
/// Stopping a blocking call from outside: a trainer's signal handler, a
/// watchdog thread, or an embedding engine's own cancellation. The names
/// and the contract follow C++20's `std::stop_source`/`std::stop_token`
/// (which C++17 lacks), plus a poll hook for callers that can notice a stop
/// condition only on the waiting thread itself (Python runs its signal
/// handlers on the main thread, with the GIL).

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

namespace sprintrt {

class stop_source;

/// The waiting side of a `stop_source`: a blocking call checks it while it
/// waits. A default-constructed token never asks to stop and costs nothing.
class stop_token {
public:
  /// How often a waiting call checks its token (and runs the source's
  /// poll hook, if any).
  static constexpr std::chrono::milliseconds poll_interval{20};

  /// A token that never asks to stop.
  stop_token() = default;

  /// Returns whether a stop was requested. Runs the source's poll hook
  /// first, if it has one: call it only on the thread that waits.
  bool stop_requested() const;

  /// Returns whether a stop can ever be requested (the token has a source).
  bool stop_possible() const noexcept { return static_cast<bool>(state_); }

private:
  friend class stop_source;

  struct state {
    std::atomic<bool> requested{false};
    std::function<bool()> poll;
  };

  explicit stop_token(std::shared_ptr<state> s) : state_(std::move(s)) {}

  std::shared_ptr<state> state_;
};

/// Requests a stop of the calls that were given its tokens. Copies share
/// the same request. Thread-safe: `request_stop` may be called from any
/// thread, while the calls wait on others.
class stop_source {
public:
  /// A source whose stop is requested only by `request_stop`.
  stop_source() : state_(std::make_shared<stop_token::state>()) {}

  /// A source that also asks `poll()` while a call waits, on the waiting
  /// thread, every `stop_token::poll_interval`: a true result requests the
  /// stop. For conditions only that thread can see (a pending Python
  /// signal).
  explicit stop_source(std::function<bool()> poll) : stop_source() {
    state_->poll = std::move(poll);
  }

  /// Requests the stop; returns whether this call was the first to.
  bool request_stop() noexcept { return !state_->requested.exchange(true); }

  /// Returns whether a stop was requested (does not poll).
  bool stop_requested() const noexcept { return state_->requested.load(); }

  /// Returns a token for a call.
  stop_token get_token() const noexcept { return stop_token{state_}; }

private:
  std::shared_ptr<stop_token::state> state_;
};

inline bool stop_token::stop_requested() const {
  if (!state_)
    return false;
  if (state_->requested.load())
    return true;
  if (state_->poll && state_->poll())
    state_->requested.store(true);
  return state_->requested.load();
}

} // namespace sprintrt
