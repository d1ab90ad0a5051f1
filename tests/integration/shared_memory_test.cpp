// Large segments through the shared region (docs/protocol.md section 7)
// against real sprint-sim children: the same bits as through the pipes, for
// single segments and for batches on two workers; the threshold; the
// negotiation; and children that lie about the region, race the parent's
// copy, try to shrink it or claim one they were not offered. Each test also
// checks that nothing is left behind.

#include "actors/worker/sprint_worker.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "sim/fault_injection.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using namespace std::chrono_literals;
using test::check_nothing_left;
using test::compute;
using test::make_job;
using test::random_log_posteriors;
using test::sim_options;
using test::stats_of;

namespace {

constexpr size_t dim = 7;

/// sprint-sim options through the region from the first byte on.
sprint_options shared_options(const std::string& corpus,
                              const std::vector<std::string>& params = {}) {
  auto opts = sim_options(corpus, params);
  opts.shared_memory = shared_memory_mode::automatic;
  opts.shared_memory_threshold = 0;
  return opts;
}

/// Segment `i`'s job: 1 to 60 frames, so that the region grows and its
/// slots are reused.
segment_job job_for(const test::test_segment& seg, size_t i) {
  const size_t frames = 1 + (i * 37) % 60;
  return make_job(seg.name, random_log_posteriors(frames, dim, 100 + i), dim);
}

/// Computes segment `i` on `worker`; returns its job and what the
/// in-process criterion gives for it.
std::pair<segment_job, test::reference_result>
compute_checked(caf::scoped_actor& self, const sprint_worker_actor& worker,
                const std::string& corpus, const test::test_segment& seg, size_t i) {
  auto job = job_for(seg, i);
  auto loss = compute(self, worker, job);
  REQUIRE(loss);
  auto expected =
      test::reference_loss(corpus, seg.name, job.log_posteriors.storage->to_vector(), dim);
  CHECK(*loss == expected.loss);
  return {std::move(job), std::move(expected)};
}

/// Computes segments 0..count-1 on `worker`, each exactly the criterion's.
void compute_exact(caf::scoped_actor& self, const sprint_worker_actor& worker,
                   const std::string& corpus, const std::vector<test::test_segment>& segments) {
  for (size_t i = 0; i < segments.size(); ++i) {
    auto [job, expected] = compute_checked(self, worker, corpus, segments[i], i);
    CHECK(job.error_signal.storage->to_vector() == expected.error_signal);
  }
}

/// The results of computing `count` segments, all queued at once.
struct results {
  std::vector<double> losses;
  std::vector<std::vector<float>> error_signals;
  worker_stats stats;
};

results compute_all(const sprint_options& opts, const std::vector<test::test_segment>& segments) {
  test::test_runtime rt;
  auto worker = rt.spawn_worker(opts);
  caf::scoped_actor self{rt.system()};
  std::vector<segment_job> jobs;
  for (size_t i = 0; i < segments.size(); ++i)
    jobs.push_back(job_for(segments[i], i));
  using handle = decltype(self->request(worker, caf::infinite, compute_atom::value, jobs[0]));
  std::vector<handle> handles;
  for (auto& job : jobs)
    handles.push_back(self->request(worker, caf::infinite, compute_atom::value, job));
  results out;
  for (size_t i = 0; i < jobs.size(); ++i) {
    handles[i].receive([&](double loss) { out.losses.push_back(loss); },
                       [&](caf::error& err) { FAIL(render(err)); });
    out.error_signals.push_back(jobs[i].error_signal.storage->to_vector());
  }
  out.stats = stats_of(self, worker);
  return out;
}

} // namespace

TEST_CASE("segments through the shared region give the pipes' bits, and the criterion's") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    const auto corpus = test::corpus_path(dir);
    auto segments = test::write_corpus(dir, 12, dim);
    auto piped_options = sim_options(corpus);
    piped_options.shared_memory = shared_memory_mode::off;
    auto piped = compute_all(piped_options, segments);
    auto shared = compute_all(shared_options(corpus), segments);
    CHECK(piped.stats.shared_memory_requests == 0);
    CHECK(shared.stats.shared_memory_requests == segments.size());
    CHECK(shared.stats.restarts == 0);
    for (size_t i = 0; i < segments.size(); ++i) {
      INFO(segments[i].name);
      CHECK(shared.losses[i] == piped.losses[i]);
      CHECK(shared.error_signals[i] == piped.error_signals[i]);
      auto job = job_for(segments[i], i);
      auto expected = test::reference_loss(corpus, segments[i].name,
                                           job.log_posteriors.storage->to_vector(), dim);
      CHECK(shared.losses[i] == expected.loss);
    }
  }
  check_nothing_left(fds);
}

TEST_CASE("segments below the threshold stay on the pipes") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 12, dim);
  auto opts = shared_options(test::corpus_path(dir));
  // job_for gives 1 + (37 i mod 60) frames: i = 0..11 -> 1, 38, 15, 52, 29, 6, 43, 20, 57, 34,
  // 11, 48; the six of 30 frames and more go through the region.
  opts.shared_memory_threshold = 30 * dim * sizeof(float);
  auto r = compute_all(opts, segments);
  CHECK(r.stats.shared_memory_requests == 6);
  CHECK(r.stats.requests_served == 12);
}

TEST_CASE("a batch on two workers through the shared region equals it through the pipes") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 6, dim);
    batch b;
    const std::vector<int64_t> lengths{40, 3, 25, 12, 33, 1};
    b.log_posteriors = tensor::zeros({40, lengths.size(), dim});
    for (size_t i = 0; i < lengths.size(); ++i) {
      auto lp = random_log_posteriors(static_cast<size_t>(lengths[i]), dim, 9 + i);
      auto slice = segment_slice(b.log_posteriors, i, static_cast<size_t>(lengths[i]));
      for (size_t t = 0; t < slice.rows; ++t)
        std::copy(lp.begin() + t * dim, lp.begin() + (t + 1) * dim, slice.row(t));
      b.tags.push_back(segments[i].name);
    }
    b.seq_lengths = lengths;
    std::vector<batch_result> results;
    for (auto mode : {shared_memory_mode::off, shared_memory_mode::automatic}) {
      auto opts = shared_options(test::corpus_path(dir));
      opts.shared_memory = mode;
      opts.num_instances = 2;
      sprint_runtime rt;
      pool_client client{rt, opts};
      auto r = client.compute(b);
      REQUIRE(r);
      results.push_back(std::move(*r));
      auto stats = client.stats();
      REQUIRE(stats);
      uint64_t through_region = 0;
      for (const auto& w : stats->workers)
        through_region += w.shared_memory_requests;
      CHECK(through_region == (mode == shared_memory_mode::off ? 0 : lengths.size()));
    }
    CHECK(results[0].loss == results[1].loss);
    const auto& piped = results[0].error_signal;
    const auto& shared = results[1].error_signal;
    REQUIRE(piped.shape() == shared.shape());
    CHECK(std::equal(piped.data(), piped.data() + piped.size(), shared.data()));
  }
  check_nothing_left(fds);
}

TEST_CASE("a reply that points past the region's end: restart, resend, exact") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    const auto corpus = test::corpus_path(dir);
    test::test_runtime rt;
    // The first child lies in its second reply; the second child gets that
    // request as its first and answers it.
    auto worker = rt.spawn_worker(shared_options(corpus, {"fault=shm-outside", "fault-after=1"}));
    caf::scoped_actor self{rt.system()};
    compute_exact(self, worker, corpus, segments);
    CHECK(stats_of(self, worker).restarts == 1);
  }
  check_nothing_left(fds);
}

TEST_CASE("a reply past the region's end fails the segment by name once retries are used up") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 1, dim);
  auto opts = shared_options(test::corpus_path(dir), {"fault=shm-outside", "fault-after=0"});
  opts.max_retries = 0;
  test::test_runtime rt;
  auto worker = rt.spawn_worker(opts, "worker 3");
  caf::scoped_actor self{rt.system()};
  auto job = job_for(segments[0], 1);
  auto loss = compute(self, worker, job);
  REQUIRE_FALSE(loss);
  CHECK(loss.error() == errc::child_failed);
  CHECK_THAT(render(loss.error()),
             Catch::Contains("worker 3: get_loss_and_error_signal of segment 'corpus/rec/seg-0'") &&
                 Catch::Contains("the child's reply is not a valid answer") &&
                 Catch::Contains("outside the region"));
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(38 * dim, 0.0f));
}

TEST_CASE("a child racing the parent's copy changes nothing after it: the result is the parent's") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 4, dim);
  const auto corpus = test::corpus_path(dir);
  test::test_runtime rt;
  auto worker = rt.spawn_worker(shared_options(corpus, {"fault=shm-scribble"}));
  caf::scoped_actor self{rt.system()};
  for (size_t i = 0; i < segments.size(); ++i) {
    auto [job, expected] = compute_checked(self, worker, corpus, segments[i], i);
    const auto got = job.error_signal.storage->to_vector();
    // The child writes NaN over every 7th value while the parent copies:
    // those may be either; every other value is exact.
    for (size_t k = 0; k < got.size(); ++k)
      if (k % 7 != 0 || !std::isnan(got[k]))
        REQUIRE(got[k] == expected.error_signal[k]);
    std::this_thread::sleep_for(sim::shm_scribble_time + 50ms);
    const auto later = job.error_signal.storage->to_vector();
    REQUIRE(later.size() == got.size());
    CHECK(std::memcmp(later.data(), got.data(), got.size() * sizeof(float)) == 0);
  }
  CHECK(stats_of(self, worker).restarts == 0);
}

TEST_CASE("a child cannot shrink its region or seal it against growth; results stay exact") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 3, dim);
  const auto corpus = test::corpus_path(dir);
  auto opts = shared_options(corpus, {"fault=shm-shrink"});
  opts.child_output = {child_output_mode::file, dir.path() + "/logs"};
  {
    test::test_runtime rt;
    auto worker = rt.spawn_worker(opts, "worker 1");
    caf::scoped_actor self{rt.system()};
    compute_exact(self, worker, corpus, segments);
    CHECK(stats_of(self, worker).shared_memory_requests == segments.size());
  }
  std::ifstream log{dir.path() + "/logs/worker-1.log"};
  std::stringstream text;
  text << log.rdbuf();
  CHECK_THAT(text.str(), Catch::Contains("to 0 failed: Operation not permitted") &&
                             Catch::Contains("sealing the shared region against growing failed"));
}

TEST_CASE("a child that accepts a region it was not offered is refused at init") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 1, dim);
  auto opts = sim_options(test::corpus_path(dir), {"fault=shm-claim"});
  opts.shared_memory = shared_memory_mode::off;
  opts.max_retries = 0;
  test::test_runtime rt;
  auto worker = rt.spawn_worker(opts);
  caf::scoped_actor self{rt.system()};
  auto job = job_for(segments[0], 1);
  auto loss = compute(self, worker, job);
  REQUIRE_FALSE(loss);
  CHECK_THAT(render(loss.error()), Catch::Contains("accepts a shared region that it was not "
                                                   "offered"));
}
