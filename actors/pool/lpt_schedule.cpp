#include "actors/pool/lpt_schedule.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

namespace sprintrt::detail {

std::vector<std::vector<size_t>> lpt_assign(span<const int64_t> lengths,
                                            span<const int64_t> initial_loads,
                                            span<const double> rates) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<int64_t> load(initial_loads.begin(), initial_loads.end());
  std::vector<std::vector<size_t>> jobs(load.size());
  for (size_t segment : order) {
    std::optional<size_t> best;
    double best_finish = 0;
    for (size_t w = 0; w < load.size(); ++w) {
      if (!(rates[w] > 0))
        continue;
      double finish = static_cast<double>(load[w] + lengths[segment]) / rates[w];
      if (!best || finish < best_finish) { // strictly less: ties go to the lower index
        best = w;
        best_finish = finish;
      }
    }
    if (!best)
      return std::vector<std::vector<size_t>>(load.size());
    jobs[*best].push_back(segment);
    load[*best] += lengths[segment];
  }
  return jobs;
}

std::vector<std::vector<size_t>> lpt_assign(span<const int64_t> lengths,
                                            span<const int64_t> initial_loads) {
  // Equal rates: the earliest finish is the least load (exact in double for
  // any realistic frame count), ties to the lower index.
  std::vector<double> equal(initial_loads.size(), 1.0);
  return lpt_assign(lengths, initial_loads, equal);
}

} // namespace sprintrt::detail
