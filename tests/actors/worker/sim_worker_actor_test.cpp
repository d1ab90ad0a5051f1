// The in-process simulated worker, without child processes: results equal to
// the sim criterion on the same strided slices, FSA exports, exception-like
// failures, the behavior's delays and injected failures, stats and stop.

#include "sprintrt/sim_worker.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "criterion/hmm_topology.hpp"
#include "criterion/random_posteriors.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;
using namespace std::chrono_literals;

namespace {

constexpr size_t dim = 6;

/// The corpus of these tests; "skip" has more labels than the short jobs
/// below have frames.
test::sim_corpus make_corpus() {
  return test::sim_corpus{
      {{"rec/a", {1, 2}}, {"rec/b", {3}}, {"rec/c", {1, 2, 3, 4, 5}}, {"rec/skip", {2, 2, 2, 2}}}};
}

/// An actor system with two scheduler threads.
struct test_system {
  caf::actor_system_config config;
  caf::actor_system system{configure(config)};

  static caf::actor_system_config& configure(caf::actor_system_config& cfg) {
    cfg.set("scheduler.max-threads", size_t{2});
    return cfg;
  }
};

sprint_worker_actor make_worker(caf::actor_system& system, const sprint_options& opts,
                                sim_worker_behavior behavior = {}, size_t slot = 0) {
  auto source = sim_worker_source(opts, std::move(behavior));
  if (!source)
    throw std::runtime_error(render(source.error()));
  return source->make(system, slot, "sim worker " + std::to_string(slot));
}

/// A time-major batch [T, B, D] of random log-posteriors, and its output.
struct test_batch {
  size_t frames;
  size_t width;
  float_storage input;
  float_storage output;

  test_batch(size_t t, size_t b, uint64_t seed)
      : frames(t), width(b), input(make_storage(t * b * dim)),
        output(make_storage(t * b * dim, 7.0f)) {
    criterion::fill_random_log_posteriors(input->data(), t * b, dim, seed);
  }

  /// The job of column `b`, its first `t` frames.
  segment_job job(const std::string& segment, size_t b, size_t t) const {
    return {segment, {input, b * dim, t, dim, width * dim}, {output, b * dim, t, dim, width * dim}};
  }
};

/// What the criterion computes on `job`'s strided slices (into new storage
/// of the same layout), and the error signal rows as one vector.
struct reference {
  caf::expected<double> loss;
  std::vector<float> error_signal;
};

reference criterion_reference(sim::corpus_criterion& crit, const segment_job& job) {
  using strided = Eigen::OuterStride<>;
  const auto& in = job.log_posteriors;
  const auto rows = static_cast<Eigen::Index>(in.rows);
  const auto cols = static_cast<Eigen::Index>(in.cols);
  std::vector<float> out(in.storage->size(), 7.0f);
  Eigen::Map<const criterion::row_matrix_f, Eigen::Unaligned, strided> lp{
      in.row(0), rows, cols, strided{static_cast<Eigen::Index>(in.row_stride)}};
  Eigen::Map<criterion::row_matrix_f, Eigen::Unaligned, strided> es{
      out.data() + in.offset, rows, cols, strided{static_cast<Eigen::Index>(in.row_stride)}};
  reference result{make_error(errc::cancelled), {}};
  auto r = crit.loss_and_error_signal(job.segment, lp, es);
  if (r)
    result.loss = r->loss;
  else
    result.loss = r.error();
  for (size_t t = 0; t < in.rows; ++t)
    result.error_signal.insert(result.error_signal.end(),
                               out.begin() + static_cast<ptrdiff_t>(in.offset + t * in.row_stride),
                               out.begin() +
                                   static_cast<ptrdiff_t>(in.offset + t * in.row_stride + dim));
  return result;
}

/// The error signal rows `job` wrote.
std::vector<float> written(const segment_job& job) {
  std::vector<float> rows;
  for (size_t t = 0; t < job.error_signal.rows; ++t)
    rows.insert(rows.end(), job.error_signal.row(t), job.error_signal.row(t) + dim);
  return rows;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

/// Sends every job at once, then collects the answers.
std::vector<caf::expected<double>> compute_all(caf::scoped_actor& self,
                                               const sprint_worker_actor& worker,
                                               const std::vector<segment_job>& jobs) {
  using handle = decltype(self->request(worker, caf::infinite, compute_atom::value, jobs[0]));
  std::vector<handle> handles;
  for (const auto& job : jobs)
    handles.push_back(self->request(worker, caf::infinite, compute_atom::value, job));
  std::vector<caf::expected<double>> results;
  for (auto& h : handles) {
    results.emplace_back(make_error(errc::cancelled, "no answer"));
    h.receive([&](double loss) { results.back() = loss; },
              [&](caf::error& err) { results.back() = std::move(err); });
  }
  return results;
}

worker_stats stats_of(caf::scoped_actor& self, const sprint_worker_actor& worker) {
  worker_stats result;
  self->request(worker, caf::infinite, stats_atom::value)
      .receive([&](worker_stats& s) { result = s; }, [&](caf::error& err) { FAIL(render(err)); });
  return result;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Sends jobs one after another from an event-based actor and records the
/// order of the answers (index, or index + 1000 for an error).
caf::behavior recorder(caf::event_based_actor* self, sprint_worker_actor worker,
                       std::vector<segment_job> jobs, std::shared_ptr<std::vector<size_t>> order) {
  auto left = std::make_shared<size_t>(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i)
    self->request(worker, caf::infinite, compute_atom::value, jobs[i])
        .then(
            [=](double) {
              order->push_back(i);
              if (--*left == 0)
                self->quit();
            },
            [=](caf::error&) {
              order->push_back(i + 1000);
              if (--*left == 0)
                self->quit();
            });
  return {[](int32_t) {}};
}

} // namespace

TEST_CASE("a sim worker computes what the criterion computes on the same strided slice") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  struct variant {
    const char* params;
    bool hmm;
    bool float32;
  };
  for (auto v : {variant{"--*.topology=ctc", false, false},
                 variant{"--*.topology=ctc --*.loss-type=numpy-float32", false, true},
                 variant{"--*.topology=hmm --*.hmm-silence-index=0", true, false}}) {
    INFO(v.params);
    auto worker = make_worker(ts.system, fx.options(v.params));
    std::shared_ptr<const criterion::topology> topology;
    if (v.hmm) {
      criterion::hmm_options hmm;
      hmm.silence_index = 0;
      topology = std::make_shared<criterion::hmm_topology>(*criterion::hmm_topology::make(hmm));
    } else {
      topology = std::make_shared<criterion::ctc_topology>(0);
    }
    sim::corpus_criterion crit{fx.read(), topology};
    // Four columns of a [12, 4, D] batch: the slices are strided.
    test_batch batch{12, 4, 42};
    std::vector<segment_job> jobs{batch.job("rec/a", 0, 12), batch.job("rec/b", 1, 5),
                                  batch.job("rec/c", 2, 9), batch.job("rec/skip", 3, 3)};
    auto results = compute_all(self, worker, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
      INFO(jobs[i].segment);
      auto expected = criterion_reference(crit, jobs[i]);
      REQUIRE(expected.loss);
      REQUIRE(results[i]);
      double loss = *expected.loss;
      if (v.float32)
        loss = static_cast<double>(static_cast<float>(loss));
      CHECK(std::memcmp(&*results[i], &loss, sizeof(double)) == 0);
      CHECK(same_bits(written(jobs[i]), expected.error_signal));
    }
    // The skipped segment: +inf and a zero error signal, as sprint-sim.
    CHECK(*results[3] == std::numeric_limits<double>::infinity());
    CHECK(written(jobs[3]) == std::vector<float>(3 * dim, 0.0f));
    // Rows beyond a segment's frames are not touched.
    CHECK((*batch.output)[12 * 4 * dim - 1] == 7.0f);
    CHECK((*batch.output)[5 * 4 * dim + 1 * dim] == 7.0f);
    auto stats = stats_of(self, worker);
    CHECK(stats.requests_served == 4);
    CHECK(stats.requests_failed == 0);
    CHECK(stats.pid == -1);
    CHECK(stats.restarts == 0);
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("a sim worker exports the criterion's FSA, and fails unknown segments as unknown") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  auto worker = make_worker(ts.system, fx.options("--*.topology=ctc"));
  sim::corpus_criterion crit{fx.read(), std::make_shared<criterion::ctc_topology>(0)};
  auto expected = *crit.segment_fsa("rec/c");
  self->request(worker, caf::infinite, fsa_atom::value,
                fsa_query{fsa_source::segment_name, "rec/c"})
      .receive(
          [&](segment_fsa& fsa) {
            CHECK(fsa.num_states == expected.num_states());
            CHECK(fsa.edges == std::vector<uint32_t>(expected.flat_edges().begin(),
                                                     expected.flat_edges().end()));
            CHECK(fsa.weights ==
                  std::vector<float>(expected.weights().begin(), expected.weights().end()));
          },
          [&](caf::error& err) { FAIL(render(err)); });
  self->request(worker, caf::infinite, fsa_atom::value,
                fsa_query{fsa_source::segment_name, "rec/nope"})
      .receive([&](segment_fsa&) { FAIL("an unknown segment was exported"); },
               [&](caf::error& err) {
                 CHECK(err == errc::unknown_segment);
                 CHECK(contains(error_message(err), "sim worker 0: "
                                                    "export_allophone_state_fsa_by_segment_name "
                                                    "of segment 'rec/nope'"));
               });
  test_batch batch{4, 1, 7};
  auto results = compute_all(self, worker, {batch.job("rec/nope", 0, 4)});
  REQUIRE_FALSE(results[0]);
  CHECK(results[0].error() == errc::unknown_segment);
  // The message sprint-sim's exception reply carries, behind the context
  // the real worker puts in front of it.
  auto sprint_message = error_message(crit.segment_fsa("rec/nope").error());
  CHECK(error_message(results[0].error()) ==
        "sim worker 0: get_loss_and_error_signal of segment 'rec/nope': " + sprint_message);
  // Nothing written for a failed request.
  CHECK(batch.output->to_vector() == std::vector<float>(4 * dim, 7.0f));
  auto stats = stats_of(self, worker);
  CHECK(stats.requests_served == 1);
  CHECK(stats.requests_failed == 2);
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("a sim worker with criterion=zero answers loss 0 and zeros, even unknown segments") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  auto source = sim_worker_source(fx.options("--*.topology=ctc --*.criterion=zero"));
  REQUIRE(source);
  CHECK(contains(source->description, "criterion zero"));
  auto worker = source->make(ts.system, 0, "sim worker 0");
  test_batch batch{8, 3, 11};
  std::vector<segment_job> jobs{batch.job("rec/a", 0, 8), batch.job("rec/nope", 1, 4),
                                batch.job("rec/skip", 2, 3)};
  auto results = compute_all(self, worker, jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    INFO(jobs[i].segment);
    REQUIRE(results[i]);
    CHECK(*results[i] == 0.0);
    CHECK(written(jobs[i]) == std::vector<float>(jobs[i].error_signal.rows * dim, 0.0f));
  }
  // Rows beyond a segment's frames are not touched.
  CHECK((*batch.output)[4 * 3 * dim + 1 * dim] == 7.0f);
  // FSAs still come from the corpus.
  self->request(worker, caf::infinite, fsa_atom::value,
                fsa_query{fsa_source::segment_name, "rec/b"})
      .receive([&](segment_fsa& fsa) { CHECK(fsa.num_states > 0); },
               [&](caf::error& err) { FAIL(render(err)); });
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("fail_request and fail_segment fail exactly their requests") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  test_batch batch{6, 4, 3};
  std::vector<segment_job> jobs{batch.job("rec/a", 0, 6), batch.job("rec/b", 1, 6),
                                batch.job("rec/a", 2, 6), batch.job("rec/c", 3, 6)};
  sim_worker_behavior behavior;
  behavior.fail_request = 2;
  behavior.fail_segment = "rec/c";
  auto worker = make_worker(ts.system, fx.options(""), behavior);
  auto results = compute_all(self, worker, jobs);
  CHECK(results[0]);
  CHECK(results[2]);
  REQUIRE_FALSE(results[1]);
  CHECK(results[1].error() == errc::child_failed);
  CHECK(contains(error_message(results[1].error()), "segment 'rec/b'"));
  CHECK(contains(error_message(results[1].error()), "fail_request"));
  REQUIRE_FALSE(results[3]);
  CHECK(results[3].error() == errc::child_failed);
  CHECK(contains(error_message(results[3].error()), "segment 'rec/c'"));
  CHECK(contains(error_message(results[3].error()), "fail_segment"));
  // The segment fails every time, the request number only once.
  auto again = compute_all(self, worker, {jobs[3], jobs[1]});
  CHECK_FALSE(again[0]);
  CHECK(again[1]);
  auto stats = stats_of(self, worker);
  CHECK(stats.requests_served == 3);
  CHECK(stats.requests_failed == 3);
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("a job whose output gate is closed is cancelled and its output left alone") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  test_batch batch{6, 2, 3};
  auto closed = batch.job("rec/a", 0, 6);
  closed.gate = std::make_shared<output_gate>();
  closed.gate->close();
  auto open = batch.job("rec/b", 1, 6);
  open.gate = std::make_shared<output_gate>();
  auto worker = make_worker(ts.system, fx.options(""));
  auto results = compute_all(self, worker, {closed, open});
  REQUIRE_FALSE(results[0]);
  CHECK(results[0].error() == errc::cancelled);
  CHECK(contains(error_message(results[0].error()), "segment 'rec/a'"));
  CHECK(results[1]);
  // Column 0 keeps its 7s; column 1 got its error signal.
  for (size_t t = 0; t < 6; ++t)
    for (size_t k = 0; k < dim; ++k) {
      CHECK((*batch.output)[(t * 2 + 0) * dim + k] == 7.0f);
      CHECK((*batch.output)[(t * 2 + 1) * dim + k] != 7.0f);
    }
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("die_at_request terminates the worker; its requests get request_receiver_down") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  test_batch batch{6, 5, 3};
  std::vector<segment_job> jobs;
  for (size_t b = 0; b < 5; ++b)
    jobs.push_back(batch.job("rec/a", b, 6));
  sim_worker_behavior behavior;
  behavior.die_at_request = 3;
  // A long delay keeps the first requests inside the worker when it dies.
  behavior.min_delay = behavior.max_delay = 60s;
  auto worker = make_worker(ts.system, fx.options(""), behavior);
  self->monitor(worker);
  auto results = compute_all(self, worker, jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    INFO(i);
    // Whatever was pending is answered as by a terminated actor.
    REQUIRE_FALSE(results[i]);
    CHECK(results[i].error() == caf::sec::request_receiver_down);
  }
  self->receive([&](caf::down_msg& msg) {
    CHECK(msg.reason == errc::child_failed);
    CHECK(contains(error_message(msg.reason), "die_at_request"));
  });
  // Without a delay, the requests before the fatal one are served.
  behavior.min_delay = behavior.max_delay = 0us;
  auto second = make_worker(ts.system, fx.options(""), behavior);
  auto served = compute_all(self, second, jobs);
  CHECK(served[0]);
  CHECK(served[1]);
  for (size_t i = 2; i < jobs.size(); ++i)
    CHECK(served[i].error() == caf::sec::request_receiver_down);
}

TEST_CASE("random delays answer every request once, in order, with the same results") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  const size_t n = 24;
  test_batch batch{8, n, 11};
  std::vector<segment_job> jobs;
  for (size_t b = 0; b < n; ++b)
    jobs.push_back(batch.job(b % 3 == 0 ? "rec/a" : b % 3 == 1 ? "rec/b" : "rec/c", b, 3 + b % 6));
  auto plain = make_worker(ts.system, fx.options(""));
  auto expected = compute_all(self, plain, jobs);
  auto expected_output = batch.output->to_vector();
  std::fill(batch.output->begin(), batch.output->end(), 7.0f);
  sim_worker_behavior behavior;
  behavior.min_delay = 0us;
  behavior.max_delay = 3ms;
  behavior.seed = 5;
  behavior.fail_request = 7;
  auto worker = make_worker(ts.system, fx.options(""), behavior, 1);
  auto order = std::make_shared<std::vector<size_t>>();
  auto rec = ts.system.spawn(recorder, worker, jobs, order);
  self->wait_for(rec);
  std::vector<size_t> in_order;
  for (size_t i = 0; i < n; ++i)
    in_order.push_back(i == 6 ? i + 1000 : i);
  CHECK(*order == in_order);
  // Same bits as without delays, except the failed request's rows.
  for (size_t t = 0; t < batch.frames; ++t)
    for (size_t b = 0; b < n; ++b)
      if (b != 6)
        CHECK(std::memcmp(batch.output->data() + (t * n + b) * dim,
                          expected_output.data() + (t * n + b) * dim, dim * sizeof(float)) == 0);
  auto stats = stats_of(self, worker);
  CHECK(stats.requests_served == n - 1);
  CHECK(stats.requests_failed == 1);
  CHECK(stats.busy_ns > 0);
  caf::anon_send_exit(plain, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("stop replies 0, cancels what is pending and terminates") {
  auto fx = make_corpus();
  test_system ts;
  caf::scoped_actor self{ts.system};
  sim_worker_behavior behavior;
  behavior.min_delay = behavior.max_delay = 60s; // never served before the stop
  auto worker = make_worker(ts.system, fx.options(""), behavior);
  test_batch batch{4, 3, 1};
  using handle =
      decltype(self->request(worker, caf::infinite, compute_atom::value, batch.job("rec/a", 0, 4)));
  std::vector<handle> handles;
  for (size_t b = 0; b < 3; ++b)
    handles.push_back(
        self->request(worker, caf::infinite, compute_atom::value, batch.job("rec/a", b, 4)));
  self->request(worker, caf::infinite, stop_atom::value)
      .receive([&](int32_t code) { CHECK(code == 0); },
               [&](caf::error& err) { FAIL(render(err)); });
  for (auto& h : handles)
    h.receive([&](double) { FAIL("served after stop"); },
              [&](caf::error& err) { CHECK(err == errc::cancelled); });
  self->wait_for(worker);
  CHECK(batch.output->to_vector() == std::vector<float>(4 * 3 * dim, 7.0f));
}

namespace {

/// A [6, 4, dim] batch of corpus segments a, b, c, a with 6, 3, 5, 2 frames.
batch pool_batch() {
  test_batch data{6, 4, 11};
  batch b;
  b.log_posteriors = *tensor::from_vector(data.input->to_vector(), {6, 4, dim});
  b.seq_lengths = {6, 3, 5, 2};
  b.tags = {"rec/a", "rec/b", "rec/c", "rec/a"};
  return b;
}

} // namespace

TEST_CASE("a pool replaces sim workers that die and resends their requests") {
  auto fx = make_corpus();
  auto opts = fx.options("");
  opts.num_instances = 2;
  sprint_runtime rt;
  auto healthy = sim_worker_source(opts);
  REQUIRE(healthy);
  auto expected = pool_client{rt, rt.pool(std::move(*healthy))}.compute(pool_batch());
  REQUIRE(expected);
  sim_worker_behavior dying;
  dying.die_at_request = 2; // every worker (and every replacement) dies at its 2nd request
  auto source = sim_worker_source(opts, dying);
  REQUIRE(source);
  pool_client client{rt, rt.pool(std::move(*source))};
  auto result = client.compute(pool_batch());
  REQUIRE(result);
  CHECK(result->loss == expected->loss);
  CHECK(
      same_bits(std::vector<float>(result->error_signal.data(),
                                   result->error_signal.data() + result->error_signal.size()),
                std::vector<float>(expected->error_signal.data(),
                                   expected->error_signal.data() + expected->error_signal.size())));
  auto single = client.compute_segment(test_batch{4, 1, 5}.job("rec/b", 0, 4));
  CHECK(single);
}

TEST_CASE("a request that kills every worker fails after max_resends, it never loops") {
  auto fx = make_corpus();
  auto opts = fx.options("");
  opts.num_instances = 2;
  opts.max_retries = 1;
  sim_worker_behavior dying;
  dying.die_at_request = 1; // each worker dies at its first request
  auto source = sim_worker_source(opts, dying);
  REQUIRE(source);
  CHECK(source->max_resends == 1);
  sprint_runtime rt;
  pool_client client{rt, rt.pool(std::move(*source), "dying pool")};
  auto result = client.compute(pool_batch());
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::child_failed);
  auto text = error_message(result.error());
  CHECK(contains(text, "dying pool: batch: 4 of 4 segments failed"));
  CHECK(contains(text, "4 segments: 0 ('rec/a'), 1 ('rec/b'), 2 ('rec/c') and 1 more: "
                       "child_failed: dying pool: the worker serving it terminated 2 times "
                       "(resent 1 times, the most the worker source allows)"));
  auto single = client.compute_segment(test_batch{4, 1, 5}.job("rec/b", 0, 4));
  REQUIRE_FALSE(single);
  CHECK(error_message(single.error()) ==
        "segment 'rec/b': dying pool: the worker serving it terminated 2 times (resent 1 times, "
        "the most the worker source allows)");
  auto fsa = client.automata({"rec/a"});
  REQUIRE_FALSE(fsa);
  CHECK(fsa.error() == errc::child_failed);
}
