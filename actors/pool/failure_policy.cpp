#include "actors/pool/failure_policy.hpp"

#include <caf/sec.hpp>

#include "sprintrt/error.hpp"

namespace sprintrt::detail {

failure_verdict decide_after_failure(const caf::error& err, retry_counts& counts,
                                     const retry_limits& limits) {
  if (err == errc::worker_unavailable && counts.reroutes < limits.max_reroutes) {
    ++counts.reroutes;
    return {after_failure::reroute, false};
  }
  if (err == caf::sec::request_receiver_down) {
    if (counts.resends < limits.max_resends) {
      ++counts.resends;
      return {after_failure::resend, false};
    }
    return {after_failure::fail, true};
  }
  return {after_failure::fail, false};
}

} // namespace sprintrt::detail
