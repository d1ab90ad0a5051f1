#include "actors/worker/cancel_policy.hpp"

namespace sprintrt::detail {

using clock = std::chrono::steady_clock;

clock::duration mean_request_time(uint64_t answered, uint64_t busy_ns) {
  if (answered == 0)
    return clock::duration::zero();
  return std::chrono::duration_cast<clock::duration>(
      std::chrono::nanoseconds{static_cast<int64_t>(busy_ns / answered)});
}

bool keeps_child(cancel_policy policy, const child_timing& timing, const unwanted_work& work) {
  if (policy != cancel_policy::automatic)
    return policy == cancel_policy::keep;
  const auto mean = timing.mean_request;
  auto for_nobody = mean * static_cast<int64_t>(work.queued);
  if (work.current)
    for_nobody += work.computing < mean ? mean - work.computing : work.computing;
  return for_nobody < timing.start_up;
}

std::optional<clock::time_point> give_up_point(cancel_policy policy, const child_timing& timing,
                                               clock::time_point sent_at) {
  if (policy != cancel_policy::automatic)
    return std::nullopt;
  return sent_at + timing.mean_request + timing.start_up;
}

} // namespace sprintrt::detail
