// The Sprint worker against real sprint-sim children: the handshake,
// results equal to the in-process criterion, both framings, exception
// replies, every kind of child failure, graceful stops, and that nothing is
// left behind (no child process, no open descriptor).

#include "actors/worker/sprint_worker.hpp"

#include <catch2/catch.hpp>

#include <optional>

#include <cmath>
#include <thread>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "sim/corpus_criterion.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using test::check_nothing_left;
using namespace std::chrono_literals;
using test::compute;
using test::export_fsa;
using test::make_job;
using test::random_log_posteriors;
using test::sim_options;

namespace {

constexpr size_t dim = 6;

std::string message_of(const caf::error& err) {
  return render(err);
}

} // namespace

TEST_CASE("a worker computes many segments in order, equal to the in-process criterion") {
  test::fd_snapshot fds;
  for (auto framing : {pipe_framing::length_prefixed, pipe_framing::raw}) {
    INFO("framing " << (framing == pipe_framing::raw ? "raw" : "length_prefixed"));
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 12, dim);
    test::test_runtime rt;
    auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir), {}, framing));
    caf::scoped_actor self{rt.system()};
    // Queue every request at once: the worker serves them one at a time, in order.
    std::vector<segment_job> jobs;
    for (size_t i = 0; i < segments.size(); ++i) {
      size_t frames = 3 + 4 * (i % 5);
      jobs.push_back(make_job(segments[i].name, random_log_posteriors(frames, dim, i), dim));
    }
    std::vector<double> losses(jobs.size(), -1);
    std::vector<caf::error> errors(jobs.size());
    auto handles =
        std::vector<decltype(self->request(worker, caf::infinite, compute_atom::value, jobs[0]))>{};
    for (auto& job : jobs)
      handles.push_back(self->request(worker, caf::infinite, compute_atom::value, job));
    for (size_t i = 0; i < jobs.size(); ++i)
      handles[i].receive([&](double loss) { losses[i] = loss; },
                         [&](caf::error& err) { errors[i] = err; });
    for (size_t i = 0; i < jobs.size(); ++i) {
      INFO(jobs[i].segment << ": " << message_of(errors[i]));
      REQUIRE_FALSE(errors[i]);
      auto expected = test::reference_loss(test::corpus_path(dir), jobs[i].segment,
                                           jobs[i].log_posteriors.storage->to_vector(), dim);
      // Bit-exact: the same code computes it, and the wire carries the
      // error signal's float32 bits and the loss's double bits unchanged.
      CHECK(losses[i] == expected.loss);
      CHECK(jobs[i].error_signal.storage->to_vector() == expected.error_signal);
    }
    caf::expected<worker_stats> stats = make_error(errc::cancelled, "");
    self->request(worker, caf::infinite, stats_atom::value)
        .receive([&](worker_stats& s) { stats = s; }, [&](caf::error& err) { stats = err; });
    REQUIRE(stats);
    CHECK(stats->requests_served == jobs.size());
    CHECK(stats->requests_failed == 0);
    CHECK(stats->restarts == 0);
    CHECK(stats->pid > 0);
    CHECK(stats->busy_ns > 0);
    // A graceful stop: `exit`, and the child exits with status 0.
    int32_t exit_code = -100;
    self->request(worker, caf::infinite, stop_atom::value)
        .receive([&](int32_t code) { exit_code = code; }, [&](caf::error&) {});
    CHECK(exit_code == 0);
  }
  check_nothing_left(fds);
}

TEST_CASE("a worker writes the error signal into a strided slice of a batch") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    test::test_runtime rt;
    auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir)));
    caf::scoped_actor self{rt.system()};
    // Batch [T=7, B=2, D]: segment 1 of the batch, 5 frames long.
    auto lp = random_log_posteriors(5, dim, 42);
    auto batch_in = make_storage(7 * 2 * dim, 99.0f);
    for (size_t t = 0; t < 5; ++t)
      std::copy(lp.begin() + t * dim, lp.begin() + (t + 1) * dim,
                batch_in->begin() + (t * 2 + 1) * dim);
    auto batch_out = make_storage(7 * 2 * dim, 0.0f);
    segment_job job{
        segments[1].name, {batch_in, dim, 5, dim, 2 * dim}, {batch_out, dim, 5, dim, 2 * dim}};
    auto loss = compute(self, worker, job);
    REQUIRE(loss);
    auto expected = test::reference_loss(test::corpus_path(dir), segments[1].name, lp, dim);
    CHECK(*loss == expected.loss);
    for (size_t t = 0; t < 7; ++t)
      for (size_t b = 0; b < 2; ++b)
        for (size_t d = 0; d < dim; ++d) {
          float got = (*batch_out)[(t * 2 + b) * dim + d];
          float want = (b == 1 && t < 5) ? expected.error_signal[t * dim + d] : 0.0f;
          REQUIRE(got == want);
        }
  }
  check_nothing_left(fds);
}

TEST_CASE("a worker exports FSAs equal to the criterion's") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 3, dim);
    test::test_runtime rt;
    auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir), {}, pipe_framing::raw));
    caf::scoped_actor self{rt.system()};
    auto corpus = criterion::corpus::from_file(test::corpus_path(dir));
    REQUIRE(corpus);
    sim::corpus_criterion crit{std::move(*corpus), std::make_shared<criterion::ctc_topology>(0)};
    for (const auto& seg : segments) {
      auto fsa = export_fsa(self, worker, seg.name);
      REQUIRE(fsa);
      auto expected = crit.segment_fsa(seg.name);
      REQUIRE(expected);
      CHECK(fsa->num_states == expected->num_states());
      auto flat = expected->flat_edges();
      CHECK(fsa->edges == std::vector<uint32_t>(flat.begin(), flat.end()));
      auto weights = expected->weights();
      CHECK(fsa->weights == std::vector<float>(weights.begin(), weights.end()));
    }
  }
  check_nothing_left(fds);
}

TEST_CASE("an exception reply fails that request only; the child keeps serving") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    test::test_runtime rt;
    auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir)));
    caf::scoped_actor self{rt.system()};
    auto bad =
        compute(self, worker,
                make_job("corpus/rec/no-such-segment", random_log_posteriors(4, dim, 1), dim));
    REQUIRE_FALSE(bad);
    // sprint-sim's exception reply says "unknown segment 'NAME'": read as
    // such, and the child is kept (no restart below).
    CHECK(bad.error() == errc::unknown_segment);
    CHECK_THAT(message_of(bad.error()),
               Catch::Contains("get_loss_and_error_signal of segment 'corpus/rec/no-such-segment': "
                               "unknown segment 'corpus/rec/no-such-segment': not in corpus"));
    auto fsa = export_fsa(self, worker, "corpus/rec/nothing");
    REQUIRE_FALSE(fsa);
    CHECK(fsa.error() == errc::unknown_segment);
    auto good =
        compute(self, worker, make_job(segments[0].name, random_log_posteriors(6, dim, 2), dim));
    REQUIRE(good);
    std::optional<worker_stats> stats;
    self->request(worker, caf::infinite, stats_atom::value)
        .receive([&](worker_stats& s) { stats = s; }, [&](caf::error& err) { FAIL(render(err)); });
    REQUIRE(stats);
    CHECK(stats->restarts == 0);
    CHECK(stats->requests_failed == 2);
    CHECK(stats->requests_served == 1);
  }
  check_nothing_left(fds);
}

TEST_CASE("invalid jobs are refused before anything is sent") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, dim);
  test::test_runtime rt;
  auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir)));
  caf::scoped_actor self{rt.system()};
  auto job = make_job("corpus/rec/seg-0", random_log_posteriors(4, dim, 1), dim);
  job.error_signal = matrix_slice::dense(3, dim);
  auto r = compute(self, worker, job);
  REQUIRE_FALSE(r);
  CHECK(r.error() == errc::invalid_input);
  CHECK_THAT(message_of(r.error()), Catch::Contains("error signal slice must be a valid 4 x 6"));
  job = make_job("corpus/rec/seg-0", random_log_posteriors(4, dim, 1), dim);
  job.log_posteriors.rows = 1000;
  CHECK(compute(self, worker, job).error() == errc::invalid_input);
}
