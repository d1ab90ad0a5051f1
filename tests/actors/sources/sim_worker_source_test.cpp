// sim_worker_source: the options a user would pass to run sprint-sim as the
// Sprint executable, turned into in-process workers: variables expanded like
// a child's, every bad parameter named, and remote pools beside them.

#include "sprintrt/sim_worker.hpp"

#include <catch2/catch.hpp>

#include <string>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"rec/a", {1, 2}}, {"rec/b", {3}}}};
}

/// The error `sim_worker_source` gives for `opts`.
caf::error error_of(const sprint_options& opts) {
  auto source = sim_worker_source(opts);
  REQUIRE_FALSE(source);
  return source.error();
}

/// Options without the corpus parameter.
sprint_options options_without_corpus(const std::string& params) {
  sprint_options opts = make_corpus().options();
  opts.sprint_config.clear();
  auto words = config::split_shell_words(params);
  REQUIRE(words);
  opts.sprint_config = std::move(*words);
  return opts;
}

} // namespace

TEST_CASE("sim_worker_source expands variables like a child and names bad parameters") {
  auto fx = make_corpus();
  auto opts = options_without_corpus("--*.corpus=${SIM_CORPUS} --*.topology=ctc");
  opts.env.set["SIM_CORPUS"] = fx.path();
  opts.num_instances = 3;
  auto source = sim_worker_source(opts);
  REQUIRE(source);
  CHECK(source->capacity == 3);
  CHECK_FALSE(source->unavailable);
  CHECK(contains(source->description, fx.path()));

  auto unset = error_of(options_without_corpus("--*.corpus=${SIM_CORPUS_UNSET}"));
  CHECK(contains(error_message(unset), "SIM_CORPUS_UNSET"));
  auto missing = error_of(options_without_corpus("--*.topology=ctc"));
  CHECK(missing == errc::invalid_options);
  CHECK(contains(error_message(missing), "--*.corpus=FILE is required"));
  for (auto fault : {"fault=crash", "fault-after=2", "crash-segment=rec/a", "delay-ms=5"}) {
    INFO(fault);
    auto refused = error_of(fx.options(std::string{"--*."} + fault));
    CHECK(refused == errc::invalid_options);
    CHECK(contains(error_message(refused), fault));
    CHECK(contains(error_message(refused), "sim_worker_behavior"));
  }
  auto bad_value = error_of(fx.options("--*.topology=dag"));
  CHECK(contains(error_message(bad_value), "--*.topology=dag"));
  auto no_file = error_of(options_without_corpus("--*.corpus=/nonexistent/corpus.txt"));
  CHECK(no_file == errc::io_error);
  auto version = fx.options();
  version.min_python_control_version = 6;
  CHECK(error_message(error_of(version)) ==
        "in-process sprint-sim workers: minPythonControlVersion 6 is higher than sprint-sim's "
        "PythonControl version 5");
}

TEST_CASE("a sim worker source says what it simulates and takes the options' limits") {
  auto fx = make_corpus();
  auto ctc = fx.options("--*.topology=ctc", 2);
  ctc.max_retries = 4;
  auto source = sim_worker_source(ctc);
  REQUIRE(source);
  CHECK(source->description == "in-process sprint-sim workers on " + fx.path() + " (ctc)");
  CHECK(source->capacity == 2);
  CHECK(source->max_resends == 4);
  auto zero = sim_worker_source(fx.options("--*.topology=hmm --*.criterion=zero"));
  REQUIRE(zero);
  CHECK(zero->description ==
        "in-process sprint-sim workers on " + fx.path() + " (hmm, criterion zero)");
}

TEST_CASE("remote pools in the options come after the simulated workers") {
  auto fx = make_corpus();
  auto opts = fx.options("--*.topology=ctc", 2);
  opts.remote = {{"127.0.0.1", 7001}, {"127.0.0.1", 7002}};
  auto source = sim_worker_source(opts);
  REQUIRE(source);
  CHECK(source->capacity == 4);
  CHECK(source->description == "in-process sprint-sim workers on " + fx.path() +
                                   " (ctc) and remote pools at 127.0.0.1:7001, 127.0.0.1:7002");
  REQUIRE(source->slot_state);
  // The simulated workers are always there, one request at a time each.
  for (size_t slot : {0, 1}) {
    CHECK(source->slot_state(slot).unavailable.empty());
    CHECK(source->slot_state(slot).parallelism == 1);
  }
}

TEST_CASE("options without sprintExecPath run in-process workers; a child pool refuses them") {
  auto fx = make_corpus();
  auto opts = parse_options(R"({"numInstances": 2, "sprintConfigStr": "--*.corpus=)" + fx.path() +
                            R"( --*.topology=ctc"})");
  REQUIRE(opts);
  CHECK(opts->sprint_exec_path.empty());
  sprint_runtime rt;
  pool_client simulated{rt, test::sim_corpus::pool(rt, *opts)};
  auto result = simulated.compute(test::random_batch({"rec/a", "rec/b"}, {4, 3}, 4, 5, 1));
  REQUIRE(result);
  CHECK(result->loss.size() == 2);
  // Children need the program: every request fails, naming the option.
  pool_client children{rt, *opts};
  auto refused = children.compute(test::random_batch({"rec/a"}, {4}, 4, 5, 1));
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == errc::invalid_options);
  CHECK(contains(error_message(refused.error()),
                 "option 'sprintExecPath' is required to start Sprint children (numInstances 2)"));
}
