// `pool_client::fsas` against real sprint-sim children: a batch of queries
// is sent at once and spread over the children as they become free, each
// result equal to the same query exported alone; queries by orthography give
// the FSAs of the segments with those labels; a failed query fails only its
// own result; a stop cancels every query not answered yet.

#include "sprintrt/pool_client.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sim/corpus.hpp"
#include "sim/criterion.hpp"
#include "sim/ctc_topology.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/stop_token.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using test::check_nothing_left;
using test::sim_options;

namespace {

constexpr uint32_t num_labels = 6;

/// Queries by segment name for `segments`, in order.
std::vector<fsa_query> by_name(const std::vector<test::test_segment>& segments) {
  std::vector<fsa_query> queries;
  for (const auto& segment : segments)
    queries.push_back({fsa_source::segment_name, segment.name});
  return queries;
}

/// The orthography sprint-sim reads as `labels`: "2 3 1".
std::string orthography_of(const std::vector<uint32_t>& labels) {
  std::string text;
  for (auto label : labels)
    text += (text.empty() ? "" : " ") + std::to_string(label);
  return text;
}

/// Checks that `got` is the criterion's FSA `want`, value for value.
void check_same_fsa(const segment_fsa& got, const sim::fsa& want) {
  CHECK(got.num_states == want.num_states());
  CHECK(got.edges == std::vector<uint32_t>(want.flat_edges().begin(), want.flat_edges().end()));
  CHECK(got.weights == std::vector<float>(want.weights().begin(), want.weights().end()));
}

/// Checks that two FSAs are equal, value for value.
void check_same_fsa(const segment_fsa& got, const segment_fsa& want) {
  CHECK(got.num_states == want.num_states);
  CHECK(got.edges == want.edges);
  CHECK(got.weights == want.weights);
}

/// The in-process reference over the corpus in `dir` (CTC, blank 0).
sim::criterion reference(const test::temp_dir& dir) {
  auto corpus = sim::corpus::from_file(test::corpus_path(dir));
  REQUIRE(corpus);
  return sim::criterion{std::move(*corpus), std::make_shared<sim::ctc_topology>(0)};
}

} // namespace

TEST_CASE("a batch of FSA queries is spread over both children, each equal to its export alone") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 16, num_labels);
    // 16 exports of 50 ms each: one child alone would need 800 ms, so the
    // second child, started at the first request, serves some of them.
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=50"});
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client client{rt, opts};
    auto results = client.fsas(by_name(segments));
    REQUIRE(results.size() == segments.size());
    auto stats = client.stats();
    REQUIRE(stats);
    REQUIRE(stats->workers.size() == 2);
    CHECK(stats->workers[0].requests_served > 0);
    CHECK(stats->workers[1].requests_served > 0);
    CHECK(stats->workers[0].requests_served + stats->workers[1].requests_served == segments.size());
    CHECK(stats->fsa_exports == segments.size());
    auto crit = reference(dir);
    for (size_t i = 0; i < segments.size(); ++i) {
      INFO("query " << i);
      REQUIRE(results[i]);
      auto alone = client.fsas({{fsa_source::segment_name, segments[i].name}});
      REQUIRE(alone.size() == 1);
      REQUIRE(alone[0]);
      check_same_fsa(*results[i], *alone[0]);
      check_same_fsa(*results[i], *crit.segment_fsa(segments[i].name));
    }
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("a failed FSA query fails its own result only, naming the segment and the cause") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 3, num_labels);
    auto opts = sim_options(test::corpus_path(dir));
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client client{rt, opts};
    auto results = client.fsas({{fsa_source::segment_name, segments[0].name},
                                {fsa_source::segment_name, "corpus/rec/unknown"},
                                {fsa_source::segment_name, ""},
                                {fsa_source::segment_name, segments[2].name}});
    REQUIRE(results.size() == 4);
    auto crit = reference(dir);
    REQUIRE(results[0]);
    check_same_fsa(*results[0], *crit.segment_fsa(segments[0].name));
    REQUIRE_FALSE(results[1]);
    CHECK(results[1].error() == errc::child_exception);
    CHECK_THAT(render(results[1].error()),
               Catch::Contains("segment 'corpus/rec/unknown'") &&
                   Catch::Contains("export_allophone_state_fsa_by_segment_name"));
    REQUIRE_FALSE(results[2]);
    CHECK(results[2].error() == errc::invalid_input);
    CHECK_THAT(render(results[2].error()), Catch::Contains("segment name is empty"));
    REQUIRE(results[3]);
    check_same_fsa(*results[3], *crit.segment_fsa(segments[2].name));
    CHECK(client.fsas({}).empty());
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("FSA queries by orthography give the FSAs of the segments with those labels") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 6, num_labels);
    auto opts = sim_options(test::corpus_path(dir));
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client client{rt, opts};
    // By name and by orthography interleaved, a malformed orthography among
    // them.
    std::vector<fsa_query> queries;
    for (const auto& segment : segments) {
      queries.push_back({fsa_source::orthography, orthography_of(segment.labels)});
      queries.push_back({fsa_source::segment_name, segment.name});
    }
    queries.push_back({fsa_source::orthography, "1 2 x"});
    queries.push_back({fsa_source::orthography, ""});
    queries.push_back({fsa_source::orthography, orthography_of(segments[0].labels)});
    auto results = client.fsas(queries);
    REQUIRE(results.size() == queries.size());
    auto crit = reference(dir);
    for (size_t i = 0; i < segments.size(); ++i) {
      INFO(segments[i].name << ": " << queries[2 * i].text);
      REQUIRE(results[2 * i]);
      REQUIRE(results[2 * i + 1]);
      check_same_fsa(*results[2 * i], *results[2 * i + 1]);
      check_same_fsa(*results[2 * i], *crit.segment_fsa(segments[i].name));
    }
    const auto& malformed = results[2 * segments.size()];
    REQUIRE_FALSE(malformed);
    CHECK(malformed.error() == errc::child_exception);
    CHECK_THAT(render(malformed.error()),
               Catch::Contains("export_allophone_state_fsa_by_orthography of orthography '1 2 x': "
                               "label number 3 of orthography '1 2 x' is 'x', not a "
                               "non-negative integer"));
    const auto& empty = results[2 * segments.size() + 1];
    REQUIRE_FALSE(empty);
    CHECK(empty.error() == errc::invalid_input);
    CHECK_THAT(render(empty.error()), Catch::Contains("orthography is empty"));
    // The children serve on after the malformed one.
    REQUIRE(results.back());
    check_same_fsa(*results.back(), *crit.segment_fsa(segments[0].name));
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(stats->fsa_exports == 2 * segments.size() + 1);
    uint64_t restarts = 0;
    for (const auto& worker : stats->workers)
      restarts += worker.restarts;
    CHECK(restarts == 0);
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("a stop cancels every FSA query not answered yet, and the pool serves on") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 8, num_labels);
    // 8 exports of 1 s over two children: none is answered 300 ms in.
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=1000"});
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client client{rt, opts};
    stop_source source;
    std::vector<caf::expected<segment_fsa>> results;
    std::thread caller{[&] { results = client.fsas(by_name(segments), source.get_token()); }};
    std::this_thread::sleep_for(std::chrono::milliseconds{300});
    source.request_stop();
    caller.join();
    REQUIRE(results.size() == segments.size());
    for (size_t i = 0; i < results.size(); ++i) {
      INFO("query " << i);
      REQUIRE_FALSE(results[i]);
      CHECK(results[i].error() == errc::cancelled);
    }
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(stats->fsa_exports == 0);
    // The children that held the cancelled exports are replaced; the next
    // query is exact.
    auto again = client.fsas({{fsa_source::segment_name, segments[5].name}});
    REQUIRE(again.size() == 1);
    REQUIRE(again[0]);
    check_same_fsa(*again[0], *reference(dir).segment_fsa(segments[5].name));
    rt.shutdown();
  }
  check_nothing_left(fds);
}
