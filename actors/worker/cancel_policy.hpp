#pragma once

/// @file
/// What a Sprint child's cancelled work costs under `onCancel` "auto":
/// whether a worker keeps the child computing requests nobody waits for, or
/// kills it and starts another, and when a kept child is given up on after
/// all. Pure: the worker (`sprint_worker.cpp`) measures and applies it.
/// Internal to the actors library.
///
/// Killing a child costs the next request the start-up of a new one (as the
/// last child took); keeping it costs the abandoned requests it computes
/// first. Each is expected to take the child's mean time per request; the
/// one it computes, once past that mean, is expected to take as long again
/// as it has taken so far (a request that runs long is likely to run
/// longer).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "sprintrt/options.hpp"

namespace sprintrt::detail {

/// What the cost model knows of one child.
struct child_timing {
  /// Its mean time per answered request; zero before the first
  /// (`mean_request_time`).
  std::chrono::steady_clock::duration mean_request{};
  /// How long it took to start (and so a new one is expected to take).
  std::chrono::steady_clock::duration start_up{};
};

/// The requests written to a child that nobody waits for once a cancel
/// takes effect.
struct unwanted_work {
  /// Whether the request the child computes now is one of them.
  bool current = false;
  /// How long the child has computed its current request.
  std::chrono::steady_clock::duration computing{};
  /// How many of those written behind the current one are.
  size_t queued = 0;
};

/// The mean time per request of a child that answered `answered` requests
/// in `busy_ns` nanoseconds; zero if it answered none.
std::chrono::steady_clock::duration mean_request_time(uint64_t answered, uint64_t busy_ns);

/// Whether a child is kept, under `policy`, when a cancel leaves it `work`
/// to compute for nobody: always for `keep`, never for `kill`, and for
/// `automatic` when that work is expected to take less than a new child's
/// start-up.
bool keeps_child(cancel_policy policy, const child_timing& timing, const unwanted_work& work);

/// When a child kept under `policy`, computing since `sent_at` a request
/// nobody waits for, is given up on after all: once it has taken a new
/// child's start-up longer than its mean; never unless `policy` is
/// `automatic` (a kept child is then only killed by its `replyTimeout`).
std::optional<std::chrono::steady_clock::time_point>
give_up_point(cancel_policy policy, const child_timing& timing,
              std::chrono::steady_clock::time_point sent_at);

} // namespace sprintrt::detail
