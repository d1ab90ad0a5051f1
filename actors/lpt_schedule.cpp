#include "actors/lpt_schedule.hpp"

#include <algorithm>
#include <numeric>

namespace sprintrt {

std::vector<std::vector<size_t>> lpt_assign(span<const int64_t> lengths,
                                            span<const int64_t> initial_loads) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<int64_t> load(initial_loads.begin(), initial_loads.end());
  std::vector<std::vector<size_t>> jobs(load.size());
  for (size_t segment : order) {
    // min_element returns the first minimum: ties go to the lower index.
    auto worker = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    jobs[worker].push_back(segment);
    load[worker] += lengths[segment];
  }
  return jobs;
}

} // namespace sprintrt
