// `pool_client::fsas` against real sprint-sim children: a batch of queries
// is sent at once and spread over the children as they become free, each
// result equal to the same query exported alone; queries by orthography give
// the FSAs of the segments with those labels; a failed query fails only its
// own result; a stop cancels every query not answered yet, also while
// another child keeps answering.

#include "sprintrt/pool_client.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/stop_token.hpp"
#include "sprintrt/worker_source.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using test::check_nothing_left;
using test::sim_options;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr uint32_t num_labels = 6;

/// Queries by segment name for `segments`, in order.
std::vector<fsa_query> by_name(const std::vector<test::test_segment>& segments) {
  std::vector<fsa_query> queries;
  for (const auto& segment : segments)
    queries.push_back({fsa_source::segment_name, segment.name});
  return queries;
}

/// Checks that `got` is the criterion's FSA `want`, value for value.
void check_same_fsa(const segment_fsa& got, const criterion::fsa& want) {
  CHECK(got.num_states == want.num_states());
  CHECK(got.edges == std::vector<uint32_t>(want.flat_edges().begin(), want.flat_edges().end()));
  CHECK(got.weights == std::vector<float>(want.weights().begin(), want.weights().end()));
}

/// A pool of two sprint-sim children (extra sprint-sim `params`) over a new
/// corpus of `count` segments, and the in-process reference over it.
struct sim_pool {
  test::temp_dir dir;
  std::vector<test::test_segment> segments;
  sprint_runtime rt;
  pool_client client;

  sim_pool(size_t count, const std::vector<std::string>& params)
      : segments(test::write_corpus(dir, count, num_labels)), client{rt, options(params)} {}

  ~sim_pool() { rt.shutdown(); }

  sprint_options options(const std::vector<std::string>& params) const {
    auto opts = sim_options(test::corpus_path(dir), params);
    opts.num_instances = 2;
    return opts;
  }

  /// The criterion's FSA of segment `i` (CTC, blank 0).
  criterion::fsa reference(size_t i) const {
    auto corpus = criterion::corpus::from_file(test::corpus_path(dir));
    REQUIRE(corpus);
    sim::corpus_criterion crit{std::move(*corpus), std::make_shared<criterion::ctc_topology>(0)};
    return *crit.segment_fsa(segments[i].name);
  }
};

/// Runs `body` on a `sim_pool`; checks that nothing is left once it is gone.
template <class Body>
void with_pool(size_t count, const std::vector<std::string>& params, Body body) {
  test::fd_snapshot fds;
  {
    sim_pool pool{count, params};
    body(pool);
  }
  check_nothing_left(fds);
}

} // namespace

TEST_CASE("a batch of FSA queries is spread over both children, each equal to its export alone") {
  // 16 exports of 50 ms each: one child alone would need 800 ms, so the
  // second child, started at the first request, serves some of them.
  with_pool(16, {"delay-ms=50"}, [](sim_pool& pool) {
    auto& client = pool.client;
    const auto& segments = pool.segments;
    auto results = client.fsas(by_name(segments));
    REQUIRE(results.size() == segments.size());
    auto stats = client.stats();
    REQUIRE(stats);
    REQUIRE(stats->workers.size() == 2);
    CHECK(stats->workers[0].requests_served > 0);
    CHECK(stats->workers[1].requests_served > 0);
    CHECK(stats->workers[0].requests_served + stats->workers[1].requests_served == segments.size());
    CHECK(stats->fsa_exports == segments.size());
    for (size_t i = 0; i < segments.size(); ++i) {
      INFO("query " << i);
      REQUIRE(results[i]);
      auto alone = client.fsas({{fsa_source::segment_name, segments[i].name}});
      REQUIRE(alone.size() == 1);
      REQUIRE(alone[0]);
      test::check_same_fsa(*results[i], *alone[0]);
      check_same_fsa(*results[i], pool.reference(i));
    }
  });
}

TEST_CASE("a failed FSA query fails its own result only, naming the segment and the cause") {
  with_pool(3, {}, [](sim_pool& pool) {
    const auto& segments = pool.segments;
    auto results = pool.client.fsas({{fsa_source::segment_name, segments[0].name},
                                     {fsa_source::segment_name, "corpus/rec/unknown"},
                                     {fsa_source::segment_name, ""},
                                     {fsa_source::segment_name, segments[2].name}});
    REQUIRE(results.size() == 4);
    REQUIRE(results[0]);
    check_same_fsa(*results[0], pool.reference(0));
    REQUIRE_FALSE(results[1]);
    CHECK(results[1].error() == errc::unknown_segment);
    CHECK_THAT(render(results[1].error()),
               Catch::Contains("segment 'corpus/rec/unknown'") &&
                   Catch::Contains("export_allophone_state_fsa_by_segment_name"));
    REQUIRE_FALSE(results[2]);
    CHECK(results[2].error() == errc::invalid_input);
    CHECK_THAT(render(results[2].error()), Catch::Contains("segment name is empty"));
    REQUIRE(results[3]);
    check_same_fsa(*results[3], pool.reference(2));
    CHECK(pool.client.fsas({}).empty());
  });
}

TEST_CASE("FSA queries by orthography give the FSAs of the segments with those labels") {
  with_pool(6, {}, [](sim_pool& pool) {
    const auto& segments = pool.segments;
    // By name and by orthography interleaved, a malformed orthography among
    // them.
    std::vector<fsa_query> queries;
    for (const auto& segment : segments) {
      queries.push_back({fsa_source::orthography, test::orthography_of(segment.labels)});
      queries.push_back({fsa_source::segment_name, segment.name});
    }
    queries.push_back({fsa_source::orthography, "1 2 x"});
    queries.push_back({fsa_source::orthography, ""});
    queries.push_back({fsa_source::orthography, test::orthography_of(segments[0].labels)});
    auto results = pool.client.fsas(queries);
    REQUIRE(results.size() == queries.size());
    for (size_t i = 0; i < segments.size(); ++i) {
      INFO(segments[i].name << ": " << queries[2 * i].text);
      REQUIRE(results[2 * i]);
      REQUIRE(results[2 * i + 1]);
      test::check_same_fsa(*results[2 * i], *results[2 * i + 1]);
      check_same_fsa(*results[2 * i], pool.reference(i));
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
    check_same_fsa(*results.back(), pool.reference(0));
    auto stats = pool.client.stats();
    REQUIRE(stats);
    CHECK(stats->fsa_exports == 2 * segments.size() + 1);
    uint64_t restarts = 0;
    for (const auto& worker : stats->workers)
      restarts += worker.restarts;
    CHECK(restarts == 0);
  });
}

TEST_CASE("a stop cancels every FSA query not answered yet, and the pool serves on") {
  // 8 exports of 1 s over two children: none is answered 300 ms in.
  with_pool(8, {"delay-ms=1000"}, [](sim_pool& pool) {
    stop_source source;
    std::vector<caf::expected<segment_fsa>> results;
    std::thread caller{
        [&] { results = pool.client.fsas(by_name(pool.segments), source.get_token()); }};
    std::this_thread::sleep_for(std::chrono::milliseconds{300});
    source.request_stop();
    caller.join();
    REQUIRE(results.size() == pool.segments.size());
    for (size_t i = 0; i < results.size(); ++i) {
      INFO("query " << i);
      REQUIRE_FALSE(results[i]);
      CHECK(results[i].error() == errc::cancelled);
    }
    auto stats = pool.client.stats();
    REQUIRE(stats);
    CHECK(stats->fsa_exports == 0);
    // The children that held the cancelled exports are replaced; the next
    // query is exact.
    auto again = pool.client.fsas({{fsa_source::segment_name, pool.segments[5].name}});
    REQUIRE(again.size() == 1);
    REQUIRE(again[0]);
    check_same_fsa(*again[0], pool.reference(5));
  });
}

TEST_CASE("a stop cancels the FSA queries not answered yet while another child keeps answering") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 8, num_labels);
    auto corpus = test::corpus_path(dir);
    sprint_runtime rt;
    // Slot 0 hangs on its first export; slot 1 answers one every 10 ms. 400
    // queries: slot 1 alone needs 4 s, and a reply arrives far more often
    // than every poll interval all the while.
    auto hung = rt.child_process_source(sim_options(corpus, {"fault=hang"}));
    auto steady = rt.child_process_source(sim_options(corpus, {"delay-ms=10"}));
    worker_source mixed;
    mixed.description = "a hung and a steady sprint-sim";
    mixed.capacity = 2;
    mixed.make = [hung, steady](caf::actor_system& system, size_t index, const std::string& name) {
      return index == 0 ? hung.make(system, index, name) : steady.make(system, index, name);
    };
    pool_client client{rt, rt.pool(std::move(mixed))};
    std::vector<fsa_query> queries;
    std::vector<size_t> segment_of;
    for (size_t i = 0; i < 400; ++i) {
      segment_of.push_back(i % segments.size());
      queries.push_back({fsa_source::segment_name, segments[segment_of.back()].name});
    }
    stop_source source;
    std::vector<caf::expected<segment_fsa>> results;
    clock_type::time_point returned;
    std::thread caller{[&] {
      results = client.fsas(queries, source.get_token());
      returned = clock_type::now();
    }};
    std::this_thread::sleep_for(std::chrono::milliseconds{500});
    auto stopped = clock_type::now();
    source.request_stop();
    caller.join();
    // Within the poll interval and a few messages (with a margin for
    // sanitizer builds), not when the steady child's 3.5 s of replies end.
    using std::chrono::milliseconds;
    CHECK(std::chrono::duration_cast<milliseconds>(returned - stopped).count() < 500);
    REQUIRE(results.size() == queries.size());
    auto reference_corpus = criterion::corpus::from_file(corpus);
    REQUIRE(reference_corpus);
    sim::corpus_criterion crit{std::move(*reference_corpus),
                               std::make_shared<criterion::ctc_topology>(0)};
    size_t answered = 0;
    size_t first_cancelled = results.size();
    size_t last_answered = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      INFO("query " << i);
      if (results[i]) {
        check_same_fsa(*results[i], *crit.segment_fsa(segments[segment_of[i]].name));
        ++answered;
        last_answered = i;
      } else {
        CHECK(results[i].error() == errc::cancelled);
        first_cancelled = std::min(first_cancelled, i);
      }
    }
    // Every export the pool got back is among the results; the hung one
    // was missing while later ones came in; most were never answered.
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(answered == stats->fsa_exports);
    CHECK(answered > 0);
    CHECK(first_cancelled < last_answered);
    CHECK(results.size() - answered > results.size() / 2);
    rt.shutdown();
  }
  check_nothing_left(fds);
}
