#include "actors/pool/lpt_schedule.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

using sprintrt::detail::lpt_assign;

namespace {

std::vector<std::vector<size_t>> assign(std::vector<int64_t> lengths, std::vector<int64_t> loads) {
  return lpt_assign(lengths, loads);
}

} // namespace

TEST_CASE("LPT sends the longest segments first to the least loaded worker") {
  // Sorted: 8 (idx 1), 7 (idx 3), 5 (idx 0), 4 (idx 4), 2 (idx 2).
  // 8 -> w0 (0,0); 7 -> w1 (8,0); 5 -> w1 (8,7); 4 -> w0 (8,12); 2 -> w0 (12,12 tie -> w0).
  auto jobs = assign({5, 8, 2, 7, 4}, {0, 0});
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0] == std::vector<size_t>{1, 4, 2});
  CHECK(jobs[1] == std::vector<size_t>{3, 0});
}

TEST_CASE("LPT keeps batch order among equal lengths and breaks load ties by index") {
  auto jobs = assign({3, 3, 3, 3, 3}, {0, 0, 0});
  CHECK(jobs[0] == std::vector<size_t>{0, 3});
  CHECK(jobs[1] == std::vector<size_t>{1, 4});
  CHECK(jobs[2] == std::vector<size_t>{2});
}

TEST_CASE("LPT starts from the workers' queued load") {
  // Worker 0 still has 10 frames queued: the first two segments go elsewhere.
  auto jobs = assign({4, 4, 4}, {10, 0, 0});
  CHECK(jobs[0].empty());
  CHECK(jobs[1] == std::vector<size_t>{0, 2});
  CHECK(jobs[2] == std::vector<size_t>{1});
}

TEST_CASE("LPT with one worker sends everything to it, longest first") {
  auto jobs = assign({1, 9, 4}, {0});
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0] == std::vector<size_t>{1, 2, 0});
}

TEST_CASE("LPT assigns every segment exactly once and matches the original's makespan") {
  std::vector<int64_t> lengths{120, 30, 500, 77, 77, 300, 12, 250, 90, 410, 5, 60};
  auto jobs = assign(lengths, {0, 0, 0, 0});
  std::vector<size_t> all;
  int64_t makespan = 0;
  for (const auto& job : jobs) {
    all.insert(all.end(), job.begin(), job.end());
    int64_t load = 0;
    for (auto i : job)
      load += lengths[i];
    makespan = std::max(makespan, load);
  }
  std::sort(all.begin(), all.end());
  std::vector<size_t> expected(lengths.size());
  std::iota(expected.begin(), expected.end(), size_t{0});
  CHECK(all == expected);
  // The RETURNN scheduler on this input, computed by hand:
  // 500->w0, 410->w1, 300->w2, 250->w3, 120->w3(370), 90->w2(390), 77->w3(447),
  // 77->w2(467), 60->w1(470), 30->w3(477), 12->w2(479), 5->w1(475).
  CHECK(makespan == 500);
  CHECK(jobs[3] == std::vector<size_t>{7, 0, 3, 1});
}

TEST_CASE("LPT by rate gives a worker three times as fast three times the work") {
  // Worker 1 (rate 3, e.g. a remote pool of three) would finish the first
  // two segments at 2 and 4, before worker 0 at 6; the third at 6, a tie that
  // goes to worker 0; then the rest at 6, 8, 10, against worker 0's 12.
  auto jobs = lpt_assign(std::vector<int64_t>(6, 6), std::vector<int64_t>{0, 0},
                         std::vector<double>{1.0, 3.0});
  CHECK(jobs[0] == std::vector<size_t>{2});
  CHECK(jobs[1] == std::vector<size_t>{0, 1, 3, 4, 5});
}

TEST_CASE("LPT by rate leaves out workers of rate 0, and assigns nothing without any") {
  auto jobs = lpt_assign(std::vector<int64_t>{5, 4}, std::vector<int64_t>{0, 0, 0},
                         std::vector<double>{0.0, 1.0, 0.0});
  CHECK(jobs[0].empty());
  CHECK(jobs[1] == std::vector<size_t>{0, 1});
  CHECK(jobs[2].empty());
  auto none = lpt_assign(std::vector<int64_t>{5, 4}, std::vector<int64_t>{0, 0},
                         std::vector<double>{0.0, 0.0});
  CHECK(none == std::vector<std::vector<size_t>>(2));
}
