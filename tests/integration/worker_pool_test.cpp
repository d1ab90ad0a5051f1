// The worker pool and its blocking facade against real sprint-sim children:
// batch results bit-exact with the in-process criterion for 1, 2 and 4
// workers, skewed lengths, merged automata, single segments, failures inside
// a batch, two trainer threads at once, the registry, and shutdown.

#include "sprintrt/pool_client.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <thread>
#include <utility>

#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/logging.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using test::check_nothing_left;
using test::random_log_posteriors;
using test::sim_options;

namespace {

constexpr size_t dim = 6;

/// A [T, B, D] batch of the first `lengths.size()` corpus segments, padding
/// filled with NaN (which must never be read).
batch make_batch(const std::vector<test::test_segment>& segments,
                 const std::vector<int64_t>& lengths, uint64_t seed) {
  size_t batch_size = lengths.size();
  size_t frames = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  batch b;
  b.log_posteriors = tensor::zeros({frames, batch_size, dim});
  std::fill(b.log_posteriors.data(), b.log_posteriors.data() + b.log_posteriors.size(), NAN);
  for (size_t i = 0; i < batch_size; ++i) {
    auto lp = random_log_posteriors(static_cast<size_t>(lengths[i]), dim, seed + i);
    auto slice = segment_slice(b.log_posteriors, i, static_cast<size_t>(lengths[i]));
    for (size_t t = 0; t < slice.rows; ++t)
      std::copy(lp.begin() + t * dim, lp.begin() + (t + 1) * dim, slice.row(t));
    b.tags.push_back(segments[i].name);
  }
  b.seq_lengths = lengths;
  return b;
}

/// Checks a batch result against the criterion computed segment by segment.
void check_result(const std::string& corpus, const batch& b, const batch_result& r) {
  size_t batch_size = b.tags.size();
  size_t frames = b.log_posteriors.dim(0);
  REQUIRE(r.loss.size() == batch_size);
  REQUIRE(r.error_signal.shape() == b.log_posteriors.shape());
  for (size_t i = 0; i < batch_size; ++i) {
    auto length = static_cast<size_t>(b.seq_lengths[i]);
    auto in = segment_slice(b.log_posteriors, i, length);
    std::vector<float> lp;
    for (size_t t = 0; t < length; ++t)
      lp.insert(lp.end(), in.row(t), in.row(t) + dim);
    auto expected = test::reference_loss(corpus, b.tags[i], lp, dim);
    INFO("segment " << i << " " << b.tags[i]);
    CHECK(r.loss[i] == static_cast<float>(expected.loss));
    auto out = segment_slice(r.error_signal, i, frames);
    for (size_t t = 0; t < frames; ++t)
      for (size_t d = 0; d < dim; ++d)
        REQUIRE(out.row(t)[d] == (t < length ? expected.error_signal[t * dim + d] : 0.0f));
  }
}

} // namespace

TEST_CASE("batch results equal the criterion per segment, for 1, 2 and 4 workers") {
  test::fd_snapshot fds;
  for (size_t workers : {1, 2, 4}) {
    INFO(workers << " workers");
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 8, dim);
    auto opts = sim_options(test::corpus_path(dir));
    opts.num_instances = workers;
    sprint_runtime rt;
    pool_client client{rt, opts};
    // Skewed: one long segment, several tiny ones.
    auto b = make_batch(segments, {40, 3, 3, 25, 3, 12, 3, 1}, 7);
    auto r = client.compute(b);
    REQUIRE(r);
    check_result(test::corpus_path(dir), b, *r);
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(stats->batches == 1);
    CHECK(stats->segments == 8);
    REQUIRE(stats->workers.size() == workers);
    for (const auto& w : stats->workers)
      CHECK(w.requests_served > 0);
    // A second batch reuses the first result's error signal buffer when it
    // is handed over (moved: a buffer someone else still holds is not reused).
    // Whatever the buffer held is gone: the replies overwrite the segments'
    // rows, the padding is zeroed (here other lengths, over NaN garbage).
    auto b2 = make_batch(segments, {3, 40, 25, 3, 12, 3, 1, 2}, 99);
    const float* reused = r->error_signal.data();
    std::fill(r->error_signal.data(), r->error_signal.data() + r->error_signal.size(), NAN);
    batch request = b2;
    request.reuse_error_signal = std::move(r->error_signal);
    auto r2 = client.compute(std::move(request));
    REQUIRE(r2);
    CHECK(r2->error_signal.data() == reused);
    check_result(test::corpus_path(dir), b2, *r2);
  }
  check_nothing_left(fds);
}

TEST_CASE("merged automata equal the criterion's FSAs merged in batch order") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 5, dim);
    auto opts = sim_options(test::corpus_path(dir));
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client client{rt, opts};
    std::vector<std::string> tags{segments[3].name, segments[0].name, segments[4].name};
    auto merged = client.automata(tags);
    REQUIRE(merged);
    auto corpus = criterion::corpus::from_file(test::corpus_path(dir));
    REQUIRE(corpus);
    sim::corpus_criterion crit{std::move(*corpus), std::make_shared<criterion::ctc_topology>(0)};
    size_t total_edges = 0;
    std::vector<criterion::fsa> fsas;
    for (const auto& tag : tags) {
      fsas.push_back(*crit.segment_fsa(tag));
      total_edges += fsas.back().num_edges();
    }
    REQUIRE(merged->num_edges() == total_edges);
    uint32_t offset = 0;
    size_t column = 0;
    for (size_t b = 0; b < fsas.size(); ++b) {
      const auto& fsa = fsas[b];
      for (size_t e = 0; e < fsa.num_edges(); ++e, ++column) {
        CHECK(merged->edges[column] == fsa.sources()[e] + offset);
        CHECK(merged->edges[total_edges + column] == fsa.targets()[e] + offset);
        CHECK(merged->edges[2 * total_edges + column] == fsa.emissions()[e]);
        CHECK(merged->edges[3 * total_edges + column] == b);
        CHECK(merged->weights[column] == fsa.weights()[e]);
      }
      CHECK(merged->start_end_states[b] == offset);
      CHECK(merged->start_end_states[tags.size() + b] == offset + fsa.num_states() - 1);
      offset += fsa.num_states();
    }
  }
  check_nothing_left(fds);
}

TEST_CASE("single segments go to a free worker") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 3, dim);
    auto opts = sim_options(test::corpus_path(dir));
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client client{rt, opts};
    auto lp = random_log_posteriors(9, dim, 5);
    auto job = test::make_job(segments[2].name, lp, dim);
    auto loss = client.compute_segment(job);
    REQUIRE(loss);
    auto expected = test::reference_loss(test::corpus_path(dir), segments[2].name, lp, dim);
    CHECK(*loss == expected.loss);
    CHECK(job.error_signal.storage->to_vector() == expected.error_signal);
  }
  check_nothing_left(fds);
}

TEST_CASE("batches and automata with failing segments fail after all are done, listing each") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 4, dim);
    auto opts = sim_options(test::corpus_path(dir));
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client client{rt, opts};
    auto b = make_batch(segments, {5, 6, 7, 8}, 1);
    b.tags[1] = "corpus/rec/unknown-1";
    b.tags[3] = "corpus/rec/unknown-3";
    auto r = client.compute(b);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::unknown_segment);
    CHECK_THAT(render(r.error()), Catch::Contains("pool 0: batch: 2 of 4 segments failed") &&
                                      Catch::Contains("segment 1 ('corpus/rec/unknown-1')") &&
                                      Catch::Contains("segment 3 ('corpus/rec/unknown-3')"));
    // Automata requests fail the same way.
    auto automata = client.automata({segments[0].name, "corpus/rec/unknown-1"});
    REQUIRE_FALSE(automata);
    CHECK(automata.error() == errc::unknown_segment);
    CHECK_THAT(render(automata.error()),
               Catch::Contains("pool 0: automata: 1 of 2 segments failed") &&
                   Catch::Contains("segment 1 ('corpus/rec/unknown-1')"));
    // Invalid input is refused before anything is sent.
    auto nan_batch = make_batch(segments, {5, 6}, 1);
    nan_batch.log_posteriors.data()[(2 * 2 + 1) * dim + 3] = NAN;
    auto refused = client.compute(nan_batch);
    REQUIRE_FALSE(refused);
    CHECK(refused.error() == errc::invalid_input);
    CHECK_THAT(
        render(refused.error()),
        Catch::Contains("segment 1 ('corpus/rec/seg-1'), frame 2, class 3: log-posterior is NaN"));
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(stats->failed_segments == 2);
    CHECK(stats->segments == 2);
    CHECK(stats->fsa_exports == 1);
    CHECK(stats->automata == 1);
    // Partial, the same batch returns its good segments' results exactly as
    // a batch without the unknown ones does, and each unknown one's error.
    auto want = client.compute(make_batch(segments, {5, 6, 7, 8}, 1));
    REQUIRE(want);
    b.partial = true;
    auto partial = client.compute(b);
    REQUIRE(partial);
    for (size_t i : {0, 2})
      CHECK(partial->loss[i] == want->loss[i]);
    CHECK(std::isnan(partial->loss[1]));
    CHECK(std::isnan(partial->loss[3]));
    const float* got_signal = partial->error_signal.data();
    const float* want_signal = want->error_signal.data();
    for (size_t t = 0; t < 8; ++t)
      for (size_t i = 0; i < 4; ++i)
        for (size_t d = 0; d < dim; ++d) {
          size_t at = (t * 4 + i) * dim + d;
          float expected = i == 1 || i == 3 ? 0.0f : want_signal[at];
          if (got_signal[at] != expected)
            FAIL("error signal at frame " << t << ", segment " << i << ", class " << d);
        }
    REQUIRE(partial->failures.size() == 2);
    CHECK(partial->failures[0].index == 1);
    CHECK(partial->failures[0].tag == "corpus/rec/unknown-1");
    CHECK(partial->failures[0].error == errc::unknown_segment);
    CHECK(partial->failures[1].index == 3);
    CHECK(partial->failures[1].error == errc::unknown_segment);
    // The children were kept: an unknown segment is no broken child.
    auto after = client.stats();
    REQUIRE(after);
    for (const auto& worker : after->workers)
      CHECK(worker.restarts == 0);
  }
  check_nothing_left(fds);
}

TEST_CASE("two trainer threads use one pool at once") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 6, dim);
    auto opts = sim_options(test::corpus_path(dir));
    opts.num_instances = 3;
    sprint_runtime rt;
    pool_client client{rt, opts};
    // Catch2 assertions are not thread-safe: the threads only compute, and
    // the results are checked here once both are done.
    using outcome = std::pair<batch, caf::expected<batch_result>>;
    auto work = [&](uint64_t seed, std::vector<outcome>& outcomes) {
      for (int round = 0; round < 5; ++round) {
        auto b = make_batch(segments, {7, 4, 9, 2, 6, 3}, seed + static_cast<uint64_t>(round));
        auto r = client.compute(b);
        outcomes.emplace_back(std::move(b), std::move(r));
      }
    };
    std::vector<outcome> outcomes_a;
    std::vector<outcome> outcomes_b;
    std::thread a{work, 100, std::ref(outcomes_a)};
    std::thread b{work, 200, std::ref(outcomes_b)};
    a.join();
    b.join();
    for (auto* outcomes : {&outcomes_a, &outcomes_b})
      for (auto& [in, out] : *outcomes) {
        if (!out)
          FAIL(render(out.error()));
        check_result(test::corpus_path(dir), in, *out);
      }
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(stats->batches == 10);
    CHECK(stats->segments == 60);
  }
  check_nothing_left(fds);
}

TEST_CASE("the registry gives one pool per distinct options value") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, dim);
  sprint_runtime rt;
  auto opts = sim_options(test::corpus_path(dir));
  auto same = opts;
  auto other = opts;
  other.num_instances = 2;
  CHECK(rt.pool(opts) == rt.pool(same));
  CHECK(rt.pool(opts) != rt.pool(other));
  CHECK(pool_client(rt, same).pool() == rt.pool(opts));
}

TEST_CASE("shutting down the runtime with a batch in flight fails it and ends every child") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=500"});
    sprint_runtime rt;
    pool_client client{rt, opts};
    caf::expected<batch_result> result = make_error(errc::timeout, "not returned");
    std::thread trainer{[&] { result = client.compute(make_batch(segments, {4, 5}, 3)); }};
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
    // Stopping the pools lets the blocking call return with `cancelled`, so
    // that shutdown need not wait for it (the Python module's order).
    rt.stop_pools();
    trainer.join();
    REQUIRE_FALSE(result);
    CHECK(result.error() == errc::cancelled);
    CHECK_FALSE(rt.pool(opts));
    rt.shutdown();
  }
  check_nothing_left(fds);
}

namespace {

/// Computes one small segment of `segment` through `client`.
caf::expected<double> compute_one(const pool_client& client, const test::test_segment& segment) {
  auto lp = test::random_log_posteriors(4, dim, 1);
  return client.compute_segment(test::make_job(segment.name, lp, dim));
}

} // namespace

TEST_CASE("a pool asked for after shutdown is an error, and none is made") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 1, dim);
    auto opts = sim_options(test::corpus_path(dir));
    sprint_runtime rt;
    rt.shutdown();
    CHECK_FALSE(rt.pool(opts));
    pool_client late{rt, opts};
    auto r = compute_one(late, segments[0]);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::cancelled);
    CHECK_THAT(render(r.error()), Catch::Contains("made after the runtime was shut down"));
    CHECK_FALSE(late.stats());
  }
  check_nothing_left(fds);
}

TEST_CASE("numInstances 0 through the C++ API is an error naming the pool") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 1, dim);
  auto opts = sim_options(test::corpus_path(dir));
  opts.num_instances = 0;
  sprint_runtime rt;
  pool_client client{rt, opts};
  auto r = compute_one(client, segments[0]);
  REQUIRE_FALSE(r);
  CHECK(r.error() == errc::invalid_options);
  CHECK_THAT(render(r.error()), Catch::Contains("cannot make workers (capacity 0"));
}

namespace {

/// Routes sprintrt's logger into a ring buffer while it lives.
struct captured_log {
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  captured_log() {
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_level(spdlog::level::info);
    logger->set_pattern("%l %v");
    sprintrt::set_logger(logger);
  }
  ~captured_log() { sprintrt::set_logger(nullptr); }
  captured_log(const captured_log&) = delete;
  captured_log& operator=(const captured_log&) = delete;

  /// The records that contain `text`.
  std::vector<std::string> containing(const std::string& text) const {
    std::vector<std::string> found;
    for (auto& line : sink->last_formatted())
      if (line.find(text) != std::string::npos)
        found.push_back(line);
    return found;
  }
};

} // namespace

TEST_CASE("a child that cannot start is logged once, and the batch names its segments in order") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 3, dim);
    auto opts = sim_options(test::corpus_path(dir), {"fault=exit-at-start"});
    opts.max_retries = 2;
    captured_log log;
    sprint_runtime rt;
    pool_client client{rt, opts};
    // Longest first: the worker gets segments 1, 2, 0 in that order.
    auto result = client.compute(make_batch(segments, {3, 5, 4}, 1));
    REQUIRE_FALSE(result);
    // One cause: one line naming the three in batch order.
    auto text = render(result.error());
    INFO(text);
    CHECK_THAT(text, Catch::Contains("batch: 3 of 3 segments failed\n  3 segments: 0 ('" +
                                     segments[0].name + "'), 1 ('" + segments[1].name + "'), 2 ('" +
                                     segments[2].name + "'): child_failed: "));
    rt.shutdown();
    // The cause with the child's output once; the retries only counted.
    CHECK(log.containing("exited with status 2").size() == 1);
    CHECK(log.containing("failed to start again (attempt 2 of 3)").size() == 1);
    CHECK(log.containing("failed to start 3 times; failing 3 request(s)").size() == 1);
  }
  check_nothing_left(fds);
}
