// The blocking facade over a pool of in-process simulated workers: a batch
// equals its segments computed one by one, FSA queries answer in order with
// an error of their own, automata merge in batch order, a stop comes back as
// `cancelled` without work done, and the counters say what was computed.

#include "sprintrt/pool_client.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "criterion/random_posteriors.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/stop_token.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 5;

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"rec/a", {1, 2}}, {"rec/b", {3}}, {"rec/c", {1, 2, 3, 4}}}};
}

/// A [T, B, dim] batch of seeded random log-posteriors.
batch make_batch(std::vector<std::string> tags, std::vector<int64_t> lengths, size_t frames) {
  return test::random_batch(std::move(tags), std::move(lengths), frames, dim, 17);
}

/// Column `column`'s first `frames` rows of the [T, B, dim] tensor `x`.
std::vector<float> column_rows(const tensor& x, size_t column, size_t frames) {
  const size_t width = x.shape()[1];
  std::vector<float> rows;
  for (size_t t = 0; t < frames; ++t) {
    const float* row = x.data() + (t * width + column) * dim;
    rows.insert(rows.end(), row, row + dim);
  }
  return rows;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a batch through the client equals its segments computed one by one") {
  auto fx = make_corpus();
  sprint_runtime rt;
  pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 2))};
  const std::vector<std::string> tags{"rec/c", "rec/a", "rec/b"};
  const std::vector<int64_t> lengths{9, 6, 3};
  auto b = make_batch(tags, lengths, 9);
  const tensor input = b.log_posteriors;
  auto result = client.compute(std::move(b));
  REQUIRE(result);
  REQUIRE(result->loss.size() == 3);
  REQUIRE(result->error_signal.shape() == std::vector<size_t>{9, 3, dim});
  for (size_t i = 0; i < tags.size(); ++i) {
    INFO(tags[i]);
    const auto frames = static_cast<size_t>(lengths[i]);
    segment_job job{tags[i], matrix_slice::dense(frames, dim), matrix_slice::dense(frames, dim)};
    auto rows = column_rows(input, i, frames);
    std::memcpy(job.log_posteriors.row(0), rows.data(), rows.size() * sizeof(float));
    auto loss = client.compute_segment(job);
    REQUIRE(loss);
    CHECK(result->loss[i] == static_cast<float>(*loss));
    CHECK(std::isfinite(*loss));
    CHECK(same_bits(column_rows(result->error_signal, i, frames),
                    job.error_signal.storage->to_vector()));
    // The padding frames are zero.
    auto all = column_rows(result->error_signal, i, 9);
    CHECK(std::vector<float>(all.begin() + static_cast<ptrdiff_t>(frames * dim), all.end()) ==
          std::vector<float>((9 - frames) * dim, 0.0f));
  }
  auto stats = client.stats();
  REQUIRE(stats);
  CHECK(stats->capacity == 2);
  CHECK(stats->batches == 1);
  CHECK(stats->segments == 6);
  CHECK(stats->failed_segments == 0);
  uint64_t served = 0;
  for (const auto& w : stats->workers)
    served += w.requests_served;
  CHECK(served == 6);
}

TEST_CASE("FSA queries answer in their order, an unknown segment with an error of its own") {
  auto fx = make_corpus();
  sprint_runtime rt;
  pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 2))};
  auto results = client.fsas({{fsa_source::segment_name, "rec/c"},
                              {fsa_source::segment_name, "rec/none"},
                              {fsa_source::orthography, "3"},
                              {fsa_source::segment_name, "rec/b"}});
  REQUIRE(results.size() == 4);
  REQUIRE(results[0]);
  REQUIRE_FALSE(results[1]);
  REQUIRE(results[2]);
  REQUIRE(results[3]);
  CHECK(results[1].error() == errc::unknown_segment);
  CHECK(contains(error_message(results[1].error()), "unknown segment 'rec/none'"));
  // CTC over 4 labels has 2 * 4 + 1 label states and one final state.
  CHECK(results[0]->num_states == 10);
  // The orthography "3" is the label sequence of rec/b.
  CHECK(results[2]->num_states == results[3]->num_states);
  CHECK(results[2]->edges == results[3]->edges);
  CHECK(results[2]->weights == results[3]->weights);
  CHECK(client.fsas({}).empty());
}

TEST_CASE("a batch's automata are its segments' FSAs, states shifted in batch order") {
  auto fx = make_corpus();
  sprint_runtime rt;
  pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 2))};
  auto merged = client.automata({"rec/b", "rec/c"});
  REQUIRE(merged);
  auto fsas =
      client.fsas({{fsa_source::segment_name, "rec/b"}, {fsa_source::segment_name, "rec/c"}});
  REQUIRE(fsas[0]);
  REQUIRE(fsas[1]);
  const auto& b = *fsas[0];
  const auto& c = *fsas[1];
  const auto eb = b.num_edges();
  const auto ec = c.num_edges();
  REQUIRE(merged->num_edges() == eb + ec);
  const auto shift = static_cast<uint32_t>(b.num_states);
  CHECK(
      merged->start_end_states ==
      std::vector<uint32_t>{0, shift, shift - 1, shift + static_cast<uint32_t>(c.num_states) - 1});
  const auto e = eb + ec;
  for (size_t i = 0; i < eb; ++i) {
    CHECK(merged->edges[i] == b.edges[i]);
    CHECK(merged->edges[e + i] == b.edges[eb + i]);
    CHECK(merged->edges[2 * e + i] == b.edges[2 * eb + i]);
    CHECK(merged->edges[3 * e + i] == 0);
    CHECK(merged->weights[i] == b.weights[i]);
  }
  for (size_t i = 0; i < ec; ++i) {
    CHECK(merged->edges[eb + i] == c.edges[i] + shift);
    CHECK(merged->edges[e + eb + i] == c.edges[ec + i] + shift);
    CHECK(merged->edges[2 * e + eb + i] == c.edges[2 * ec + i]);
    CHECK(merged->edges[3 * e + eb + i] == 1);
    CHECK(merged->weights[eb + i] == c.weights[i]);
  }
}

TEST_CASE("a call whose stop was requested is cancelled and computes nothing") {
  auto fx = make_corpus();
  sprint_runtime rt;
  pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 1))};
  stop_source stop;
  stop.request_stop();
  auto result = client.compute(make_batch({"rec/a"}, {4}, 4), stop.get_token());
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::cancelled);
  segment_job job{"rec/a", matrix_slice::dense(4, dim), matrix_slice::dense(4, dim)};
  std::fill(job.error_signal.row(0), job.error_signal.row(0) + 4 * dim, 7.0f);
  auto single = client.compute_segment(job, stop.get_token());
  REQUIRE_FALSE(single);
  CHECK(single.error() == errc::cancelled);
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(4 * dim, 7.0f));
  for (auto& fsa : client.fsas({{fsa_source::segment_name, "rec/a"}}, stop.get_token())) {
    REQUIRE_FALSE(fsa);
    CHECK(fsa.error() == errc::cancelled);
  }
  auto stats = client.stats();
  REQUIRE(stats);
  CHECK(stats->segments == 0);
  CHECK(stats->fsa_exports == 0);
}

TEST_CASE("a client made after the runtime's shutdown answers every call cancelled") {
  sprint_runtime rt;
  rt.shutdown();
  auto fx = make_corpus();
  auto source = sim_worker_source(fx.options("--*.topology=ctc"));
  REQUIRE(source);
  pool_client client{rt, rt.pool(std::move(*source))};
  auto result = client.compute(make_batch({"rec/a"}, {4}, 4));
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::cancelled);
  CHECK(contains(error_message(result.error()), "made after the runtime was shut down"));
  auto fsas = client.fsas({{fsa_source::segment_name, "rec/a"}});
  REQUIRE(fsas.size() == 1);
  CHECK(fsas[0].error() == errc::cancelled);
  CHECK(client.stats().error() == errc::cancelled);
}

TEST_CASE("ask serves any command as its typed call does") {
  auto fx = make_corpus();
  sprint_runtime rt;
  pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 1))};
  const fsa_query query{fsa_source::segment_name, "rec/c"};
  auto asked = client.ask<export_fsa_command>(query);
  REQUIRE(asked);
  auto typed = client.fsas({query});
  REQUIRE(typed[0]);
  CHECK(asked->edges == typed[0]->edges);
  CHECK(asked->weights == typed[0]->weights);
  segment_job job{"rec/a", matrix_slice::dense(4, dim), matrix_slice::dense(4, dim)};
  criterion::fill_random_log_posteriors(job.log_posteriors.row(0), 4, dim, 5);
  auto loss = client.ask<get_loss_command>(job);
  REQUIRE(loss);
  auto same = client.compute_segment(job);
  REQUIRE(same);
  CHECK(*loss == *same);
  stop_source stop;
  stop.request_stop();
  CHECK(client.ask<export_fsa_command>(query, stop.get_token()).error() == errc::cancelled);
  auto unknown = client.ask<export_fsa_command>({fsa_source::segment_name, "rec/none"});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error() == errc::unknown_segment);
}
