// Remote pools: `sprintrt serve` processes on 127.0.0.1 serving a local
// trainer through CAF's middleman. Results equal a local run bit for bit
// (batches, automata, the scheduler); a server killed mid-batch costs
// nothing but time; wrong ports and other options are clear errors; and no
// process, child or descriptor is left.

#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <memory>
#include <regex>
#include <thread>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/seqtrain_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/integration/seqtrain_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"
#include "tools/sprintrt/npy_file.hpp"

extern char** environ;

using namespace sprintrt;
using namespace std::chrono_literals;

namespace {

constexpr size_t dim = 5;

/// Starts `sprintrt` with `args` in the background (its stderr into
/// `dir/NAME.err`); returns its pid.
pid_t spawn_cli(const test::temp_dir& dir, const std::vector<std::string>& args,
                const std::string& name) {
  auto cli = test::start_cli(dir.path(), args, name);
  REQUIRE(cli.pid > 0);
  return cli.pid;
}

/// Returns the contents of the file at `path` ("" if there is none).
std::string slurp(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, {}};
}

/// A `sprintrt serve` process on 127.0.0.1 and a free port, for `opts`;
/// stopped with SIGTERM (or killed) and reaped at the end.
class serve_process {
public:
  /// `sprintrt serve` of `opts` on `port` (0: a free one), its files
  /// named after `name` in `dir`.
  serve_process(const test::temp_dir& dir, const std::string& name, const sprint_options& opts,
                const std::vector<std::string>& extra_args = {}, uint16_t port = 0) {
    auto config = dir.path() + "/" + name + ".json";
    std::ofstream{config} << to_json_string(opts);
    auto port_file = dir.path() + "/" + name + ".port";
    // Its log goes to a file of its own, for a failing test to show.
    log_ = dir.path() + "/" + name + ".err";
    std::vector<std::string> args{"--log-level",        "info",        "serve",
                                  "--config",           config,        "--port",
                                  std::to_string(port), "--port-file", port_file};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    pid_ = spawn_cli(dir, args, name);
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in{port_file};
      if (in >> port_)
        return;
      std::this_thread::sleep_for(10ms);
    }
    FAIL("sprintrt serve did not start listening within 20 s");
  }

  ~serve_process() {
    if (pid_ > 0)
      stop(SIGTERM);
  }

  /// Returns the endpoint to name in `remote`.
  remote_endpoint endpoint() const { return {"127.0.0.1", port_}; }

  pid_t pid() const { return pid_; }

  /// Returns what it logged so far.
  std::string log() const { return slurp(log_); }

  /// Sends `signal` and reaps it (SIGKILL after 20 s); returns its wait status.
  int stop(int signal) {
    ::kill(pid_, signal);
    int status = 0;
    for (int i = 0; i < 2000; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(10ms);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string log_;
};

/// How many processes mention `text` in their command line (the servers'
/// sprint-sim children name the test's corpus).
size_t processes_mentioning(const std::string& text) {
  size_t count = 0;
  DIR* proc = ::opendir("/proc");
  while (auto* entry = ::readdir(proc)) {
    std::ifstream in{std::string{"/proc/"} + entry->d_name + "/cmdline"};
    std::string cmdline{std::istreambuf_iterator<char>{in}, {}};
    if (cmdline.find(text) != std::string::npos)
      ++count;
  }
  ::closedir(proc);
  return count;
}

/// Waits until no process mentions `text` (at most 10 s); returns whether.
bool all_gone(const std::string& text) {
  for (int i = 0; i < 1000; ++i) {
    if (processes_mentioning(text) == 0)
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

/// A [T, B, D] batch of `count` segments from `first`, lengths 3 + (i % 7).
batch make_batch(const std::vector<test::test_segment>& segments, size_t first, size_t count) {
  return test::make_batch(segments, first, count, dim, 3, 7, 300);
}

/// Waits until `pool` computed `count` segments (at most 2.5 s): a batch
/// under way is mid-batch then.
void wait_for_segments(const pool_client& pool, uint64_t count) {
  for (int i = 0; i < 500; ++i) {
    auto stats = pool.stats();
    if (stats && stats->segments >= count)
      return;
    std::this_thread::sleep_for(5ms);
  }
}

/// Checks that two batch results are equal bit for bit.
void check_identical(const batch_result& got, const batch_result& want) {
  CHECK(got.loss == want.loss);
  REQUIRE(got.error_signal.shape() == want.error_signal.shape());
  CHECK(std::equal(got.error_signal.data(), got.error_signal.data() + got.error_signal.size(),
                   want.error_signal.data()));
}

/// Checks that the batch `running` completed with `want`'s results bit for
/// bit although `pool`'s worker 0 failed requests of it.
void check_completed_after_failures(std::future<caf::expected<batch_result>>& running,
                                    const batch_result& want, const pool_client& pool) {
  auto got = running.get();
  REQUIRE(got);
  check_identical(*got, want);
  auto stats = pool.stats();
  REQUIRE(stats);
  CHECK(stats->workers.at(0).requests_failed >= 1);
}

/// `opts` with `count` local Sprint children.
sprint_options with_instances(sprint_options opts, size_t count) {
  opts.num_instances = count;
  return opts;
}

/// The options of the trainer: `local` children and the given remote pools.
sprint_options trainer_options(const sprint_options& base, std::vector<remote_endpoint> remote,
                               size_t local) {
  auto opts = with_instances(base, local);
  opts.remote = std::move(remote);
  return opts;
}

} // namespace

TEST_CASE("two serve processes and a local child give a local run's results bit for bit") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 24, dim);
  auto base = test::sim_options(test::corpus_path(dir));
  {
    auto served = with_instances(base, 2);
    serve_process a{dir, "a", served}, b{dir, "b", served};
    sprint_runtime rt;
    pool_client local{rt, with_instances(base, 2)};
    auto opts = trainer_options(base, {a.endpoint(), b.endpoint()}, 1);
    pool_client mixed{rt, opts};

    SECTION("batches") {
      for (size_t first : {0, 8, 16}) {
        auto want = local.compute(make_batch(segments, first, 8));
        REQUIRE(want);
        auto got = mixed.compute(make_batch(segments, first, 8));
        REQUIRE(got);
        check_identical(*got, *want);
      }
      auto stats = mixed.stats();
      REQUIRE(stats);
      CHECK(stats->capacity == 3);
      REQUIRE(stats->workers.size() == 3);
      // Every worker took part: the local child and both remote pools.
      for (const auto& worker : stats->workers)
        CHECK(worker.requests_served > 0);
    }
    SECTION("automata") {
      std::vector<std::string> tags;
      for (const auto& segment : segments)
        tags.push_back(segment.name);
      auto want = local.automata(tags);
      REQUIRE(want);
      auto got = mixed.automata(tags);
      REQUIRE(got);
      CHECK(got->edges == want->edges);
      CHECK(got->weights == want->weights);
      CHECK(got->start_end_states == want->start_end_states);
    }
    SECTION("FSA queries") {
      std::vector<fsa_query> queries;
      for (const auto& segment : segments)
        queries.push_back({fsa_source::segment_name, segment.name});
      queries.push_back({fsa_source::orthography, "3 1 2"});
      queries.push_back({fsa_source::segment_name, "corpus/rec/unknown"});
      auto want = local.fsas(queries);
      auto got = mixed.fsas(queries);
      REQUIRE(got.size() == queries.size());
      for (size_t i = 0; i + 1 < queries.size(); ++i) {
        INFO("query " << i);
        REQUIRE(want[i]);
        REQUIRE(got[i]);
        CHECK(got[i]->num_states == want[i]->num_states);
        CHECK(got[i]->edges == want[i]->edges);
        CHECK(got[i]->weights == want[i]->weights);
      }
      REQUIRE_FALSE(got.back());
      CHECK(got.back().error() == errc::unknown_segment);
      CHECK_THAT(render(got.back().error()), Catch::Contains("segment 'corpus/rec/unknown'"));
      // The orthography crossed the network as one.
      const auto& by_orthography = got[queries.size() - 2];
      REQUIRE(by_orthography);
      CHECK(by_orthography->num_states == 2 * 3 + 2);
    }
    SECTION("unknown segments and partial batches through remote pools only") {
      // No local child: every segment crosses the network.
      pool_client remote_only{rt, trainer_options(base, {a.endpoint(), b.endpoint()}, 0)};
      auto full = make_batch(segments, 0, 4);
      full.tags[2] = "corpus/rec/unknown";
      auto strict = remote_only.compute(full);
      REQUIRE_FALSE(strict);
      CHECK(strict.error() == errc::unknown_segment);
      auto unknown =
          remote_only.ask<get_loss_command>({"corpus/rec/unknown", matrix_slice::dense(3, dim),
                                             matrix_slice::dense(3, dim), nullptr});
      REQUIRE_FALSE(unknown);
      CHECK(unknown.error() == errc::unknown_segment);
      full.partial = true;
      auto got = remote_only.compute(full);
      REQUIRE(got);
      auto want = local.compute(make_batch(segments, 0, 4));
      REQUIRE(want);
      for (size_t i : {0, 1, 3})
        CHECK(got->loss[i] == want->loss[i]);
      CHECK(std::isnan(got->loss[2]));
      REQUIRE(got->failures.size() == 1);
      CHECK(got->failures[0].index == 2);
      CHECK(got->failures[0].error == errc::unknown_segment);
      CHECK_THAT(render(got->failures[0].error),
                 Catch::Contains("unknown segment 'corpus/rec/unknown'"));
    }
    SECTION("the sequence-training scheduler") {
      seqtrain_client sched{rt, rt.pool(opts), {16, 3, false}};
      test::check_epoch_equals_pool(sched, local, segments, 4, dim);
    }
    rt.shutdown();
    CHECK(WIFEXITED(a.stop(SIGTERM)));
    CHECK(WIFEXITED(b.stop(SIGTERM)));
  }
  CHECK(all_gone(test::corpus_path(dir)));
  test::check_nothing_left(fds);
}

TEST_CASE("a serve process killed mid-batch: the batch completes exactly elsewhere") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 32, dim);
  auto base = test::sim_options(test::corpus_path(dir));
  {
    // Slow servers (20 ms a segment), so that the kill comes mid-batch.
    auto slow = with_instances(test::sim_options(test::corpus_path(dir), {"delay-ms=20"}), 2);
    serve_process doomed{dir, "doomed", slow}, survivor{dir, "survivor", slow};
    sprint_runtime rt;
    pool_client local{rt, with_instances(base, 2)};
    // The trainer's options must equal the servers' (delay included).
    pool_client remote_only{rt, trainer_options(slow, {doomed.endpoint(), survivor.endpoint()}, 0)};
    auto want = local.compute(make_batch(segments, 0, 32));
    REQUIRE(want);
    auto running = std::async(std::launch::async,
                              [&] { return remote_only.compute(make_batch(segments, 0, 32)); });
    // Kill it once some segments are done, well before all are.
    wait_for_segments(remote_only, 4);
    doomed.stop(SIGKILL);
    // The kill came mid-batch: what the doomed server held was sent elsewhere.
    check_completed_after_failures(running, *want, remote_only);
    // The next batch goes to the survivor alone, still exact.
    auto again = remote_only.compute(make_batch(segments, 0, 32));
    REQUIRE(again);
    check_identical(*again, *want);
    rt.shutdown();
  }
  CHECK(all_gone(test::corpus_path(dir)));
  test::check_nothing_left(fds);
}

TEST_CASE("a remote-only pool rides out its server's restart, and fails after remoteWait when "
          "it stays down") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 32, dim);
  auto base = test::sim_options(test::corpus_path(dir));
  {
    auto slow = with_instances(test::sim_options(test::corpus_path(dir), {"delay-ms=20"}), 2);
    sprint_runtime rt;
    pool_client local{rt, with_instances(base, 2)};
    auto want = local.compute(make_batch(segments, 0, 32));
    REQUIRE(want);

    SECTION("restarted on the same port mid-batch: the batch completes, bit for bit") {
      auto server = std::make_unique<serve_process>(dir, "first", slow);
      auto port = server->endpoint().port;
      pool_client remote_only{rt, trainer_options(slow, {server->endpoint()}, 0)};
      auto running = std::async(std::launch::async,
                                [&] { return remote_only.compute(make_batch(segments, 0, 32)); });
      wait_for_segments(remote_only, 4);
      server->stop(SIGKILL);
      // Down long enough for the pool to find every worker gone.
      std::this_thread::sleep_for(400ms);
      CHECK(running.wait_for(0s) == std::future_status::timeout);
      server =
          std::make_unique<serve_process>(dir, "second", slow, std::vector<std::string>{}, port);
      check_completed_after_failures(running, *want, remote_only);
      auto stats = remote_only.stats();
      REQUIRE(stats);
      CHECK(stats->workers.at(0).restarts >= 1);
    }
    SECTION("a server that stays down fails the batch after remoteWait, naming it") {
      auto gone = std::make_unique<serve_process>(dir, "gone", slow);
      auto endpoint = gone->endpoint();
      auto opts = trainer_options(slow, {endpoint}, 0);
      opts.remote_wait = 1s;
      pool_client remote_only{rt, opts};
      // Connected once, then gone for good.
      REQUIRE(remote_only.compute(make_batch(segments, 0, 2)));
      gone->stop(SIGKILL);
      std::this_thread::sleep_for(100ms);
      auto started = std::chrono::steady_clock::now();
      auto result = remote_only.compute(make_batch(segments, 0, 4));
      auto waited = std::chrono::steady_clock::now() - started;
      REQUIRE_FALSE(result);
      CHECK(result.error() == errc::worker_unavailable);
      auto text = render(result.error());
      INFO(text);
      CHECK(text.find("waited 1000 ms for one to come back: remoteWait") != std::string::npos);
      CHECK(text.find("127.0.0.1:" + std::to_string(endpoint.port)) != std::string::npos);
      CHECK(waited >= 1s);
      CHECK(waited < 10s);
    }
    rt.shutdown();
  }
  CHECK(all_gone(test::corpus_path(dir)));
  test::check_nothing_left(fds);
}

TEST_CASE("remote pools that cannot serve are clear errors naming the endpoint and why") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 4, dim);
  auto base = test::sim_options(test::corpus_path(dir));
  {
    auto served = with_instances(base, 1);
    serve_process server{dir, "server", served};
    sprint_runtime rt;

    SECTION("nothing listens on the port") {
      // A port just listened on, now closed.
      serve_process gone{dir, "gone", served};
      auto port = gone.endpoint().port;
      gone.stop(SIGTERM);
      // Away, not refused: the request waits remoteWait for it first.
      auto opts = trainer_options(base, {{"127.0.0.1", port}}, 0);
      opts.remote_wait = 200ms;
      pool_client pool{rt, opts};
      auto result = pool.compute(make_batch(segments, 0, 2));
      REQUIRE_FALSE(result);
      CHECK(result.error() == errc::worker_unavailable);
      auto text = render(result.error());
      INFO(text);
      CHECK(text.find("no worker can take it") != std::string::npos);
      CHECK(text.find("127.0.0.1:" + std::to_string(port) + ": cannot connect") !=
            std::string::npos);
    }
    SECTION("the server runs other Sprint options") {
      auto other = test::sim_options(test::corpus_path(dir), {"loss-type=numpy-float32"});
      pool_client pool{rt, trainer_options(other, {server.endpoint()}, 0)};
      auto result = pool.compute(make_batch(segments, 0, 2));
      REQUIRE_FALSE(result);
      auto text = render(result.error());
      INFO(text);
      CHECK(text.find("serves other Sprint options than the trainer's") != std::string::npos);
      CHECK(text.find("'sprintConfigStr'") != std::string::npos);
    }
    SECTION("a local child still serves while the remote pool is unreachable") {
      pool_client pool{rt, trainer_options(base, {{"127.0.0.1", 1}}, 1)};
      pool_client local{rt, base};
      auto want = local.compute(make_batch(segments, 0, 4));
      REQUIRE(want);
      auto got = pool.compute(make_batch(segments, 0, 4));
      REQUIRE(got);
      check_identical(*got, *want);
    }
    rt.shutdown();
  }
  CHECK(all_gone(test::corpus_path(dir)));
  test::check_nothing_left(fds);
}

TEST_CASE("a server that loses a trainer drops its work and serves the others on") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  constexpr size_t count = 40;
  auto segments = test::write_corpus(dir, count, dim);
  auto base = test::sim_options(test::corpus_path(dir));
  {
    // One worker at 50 ms a segment: trainer A's 40 segments take 2 s.
    auto slow = with_instances(test::sim_options(test::corpus_path(dir), {"delay-ms=50"}), 1);
    serve_process server{dir, "server", slow};
    auto trainer_a = trainer_options(slow, {server.endpoint()}, 0);
    std::ofstream{dir.path() + "/a.json"} << to_json_string(trainer_a);
    auto b = make_batch(segments, 0, count);
    size_t lp_shape[] = {b.log_posteriors.dim(0), count, dim};
    REQUIRE_FALSE(
        cli::write_npy<float>(dir.path() + "/lp.npy", lp_shape,
                              span<const float>{b.log_posteriors.data(), b.log_posteriors.size()}));
    size_t len_shape[] = {count};
    REQUIRE_FALSE(cli::write_npy<int64_t>(dir.path() + "/len.npy", len_shape, b.seq_lengths));
    {
      std::ofstream tags{dir.path() + "/tags.txt"};
      for (const auto& tag : b.tags)
        tags << tag << "\n";
    }
    pid_t a = spawn_cli(dir,
                        {"loss", "--config", dir.path() + "/a.json", "--log-posteriors",
                         dir.path() + "/lp.npy", "--seq-lengths", dir.path() + "/len.npy", "--tags",
                         dir.path() + "/tags.txt", "--loss-out", dir.path() + "/loss.npy",
                         "--error-signal-out", dir.path() + "/es.npy"},
                        "trainer-a");
    // Trainer A is mid-batch once the server has served it for a while.
    bool connected = false;
    for (int i = 0; i < 2000 && !connected; ++i) {
      connected = server.log().find("connected") != std::string::npos;
      std::this_thread::sleep_for(10ms);
    }
    REQUIRE(connected);
    // Well into its 2 s of work, even when everything runs slowly (sanitizers).
    std::this_thread::sleep_for(500ms);
    ::kill(a, SIGKILL);
    ::waitpid(a, nullptr, 0);
    bool dropped = false;
    for (int i = 0; i < 1000 && !dropped; ++i) {
      dropped = server.log().find("disconnected") != std::string::npos;
      std::this_thread::sleep_for(10ms);
    }
    INFO(server.log());
    REQUIRE(dropped);
    // It held up to four of A's segments (A's pool keeps four ahead per
    // remote worker): up to two at its pool (one worker), the rest queued.
    std::smatch counts;
    auto log = server.log();
    REQUIRE(std::regex_search(
        log, counts, std::regex{"(\\d+) queued segments dropped, (\\d+) in progress cancelled"}));
    auto queued = std::stoul(counts[1]), running = std::stoul(counts[2]);
    CHECK(running >= 1);
    CHECK(running <= 2);
    CHECK(queued + running <= 4);

    // Trainer B (this process) is served exactly by the same server.
    sprint_runtime rt;
    pool_client local{rt, base};
    pool_client remote_only{rt, trainer_options(slow, {server.endpoint()}, 0)};
    auto want = local.compute(make_batch(segments, 0, 4));
    REQUIRE(want);
    auto got = remote_only.compute(make_batch(segments, 0, 4));
    REQUIRE(got);
    check_identical(*got, *want);
    rt.shutdown();
    CHECK(WIFEXITED(server.stop(SIGTERM)));
  }
  CHECK(all_gone(test::corpus_path(dir)));
  test::check_nothing_left(fds);
}

namespace {

/// A test certificate file (tests/data/tls, made by its make.sh).
std::string tls_file(const std::string& name) {
  return std::string{SPRINTRT_TEST_DATA} + "/tls/" + name;
}

/// The TLS files of a trainer whose certificate `name` signed by `ca`.
tls_files trainer_tls(const std::string& name, const std::string& ca) {
  return {tls_file(name + ".pem"), tls_file(name + ".key"), tls_file(ca + ".pem")};
}

} // namespace

TEST_CASE("remote pools over TLS: exact results for a trusted trainer, clear refusals") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 8, dim);
  auto base = test::sim_options(test::corpus_path(dir));
  {
    auto served = with_instances(base, 2);
    serve_process server{dir,
                         "server",
                         served,
                         {"--tls-cert", tls_file("server.pem"), "--tls-key", tls_file("server.key"),
                          "--tls-ca", tls_file("ca.pem")}};
    auto opts = trainer_options(base, {server.endpoint()}, 0);
    auto endpoint = "127.0.0.1:" + std::to_string(server.endpoint().port);

    SECTION("a trainer whose certificate the server's CA signed") {
      opts.remote_tls = trainer_tls("trainer", "ca");
      sprint_runtime rt{runtime_settings_for(opts)};
      pool_client local{rt, base};
      pool_client remote_only{rt, opts};
      auto want = local.compute(make_batch(segments, 0, 8));
      REQUIRE(want);
      auto got = remote_only.compute(make_batch(segments, 0, 8));
      if (!got)
        FAIL(render(got.error()) << "\nserver:\n" << server.log());
      check_identical(*got, *want);
      rt.shutdown();
    }
    SECTION("a stranger: a certificate of another CA, which trusts only that CA") {
      opts.remote_tls = trainer_tls("stranger", "other-ca");
      // A refused TLS connection looks like a server that is away: the
      // request waits remoteWait for it first.
      opts.remote_wait = 200ms;
      sprint_runtime rt{runtime_settings_for(opts)};
      pool_client remote_only{rt, opts};
      auto result = remote_only.compute(make_batch(segments, 0, 2));
      REQUIRE_FALSE(result);
      auto text = render(result.error());
      INFO(text);
      CHECK(result.error() == errc::worker_unavailable);
      CHECK(text.find(endpoint + ": cannot connect over TLS") != std::string::npos);
      CHECK(text.find("does not trust the other's certificate") != std::string::npos);
      rt.shutdown();
    }
    SECTION("a trainer without TLS") {
      sprint_runtime rt;
      pool_client remote_only{rt, opts};
      auto result = remote_only.compute(make_batch(segments, 0, 2));
      REQUIRE_FALSE(result);
      auto text = render(result.error());
      INFO(text);
      CHECK(result.error() == errc::worker_unavailable);
      CHECK(text.find(endpoint + ": cannot connect: ") != std::string::npos);
      CHECK(text.find("it most likely expects TLS, which this end does not use") !=
            std::string::npos);
      rt.shutdown();
    }
    SECTION("options asking for TLS in a runtime made without it") {
      opts.remote_tls = trainer_tls("trainer", "ca");
      sprint_runtime rt;
      pool_client remote_only{rt, opts};
      auto result = remote_only.compute(make_batch(segments, 0, 2));
      REQUIRE_FALSE(result);
      auto text = render(result.error());
      INFO(text);
      CHECK(text.find("but the runtime was made with no TLS") != std::string::npos);
      rt.shutdown();
    }
    CHECK(WIFEXITED(server.stop(SIGTERM)));
  }
  CHECK(all_gone(test::corpus_path(dir)));
  test::check_nothing_left(fds);
}

TEST_CASE("sprintrt serve refuses an open address without TLS, and half a TLS set-up") {
  test::temp_dir dir;
  test::write_corpus(dir, 1, dim);
  auto opts = test::sim_options(test::corpus_path(dir));
  auto config = dir.path() + "/opts.json";
  std::ofstream{config} << to_json_string(opts);
  auto open = test::run_cli(dir.path(), "serve --config " + config + " --port 0 --bind 0.0.0.0");
  CHECK(open.status == 1);
  CHECK(open.err.find("--bind 0.0.0.0 would let other machines in without TLS") !=
        std::string::npos);
  auto half = test::run_cli(dir.path(), "serve --config " + config + " --port 0 --tls-cert " +
                                            tls_file("server.pem"));
  CHECK(half.status == 1);
  CHECK(half.err.find("TLS needs all of --tls-cert, --tls-key and --tls-ca") != std::string::npos);
  CHECK(test::child_processes().empty());
}

TEST_CASE("a stopped batch on a remote pool returns cancelled, and the next batch is exact") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 8, dim);
  auto base = test::sim_options(test::corpus_path(dir));
  {
    // Two served children of 300 ms per segment: 1.2 s for the batch.
    auto slow = test::sim_options(test::corpus_path(dir), {"delay-ms=300"});
    serve_process server{dir, "a", with_instances(slow, 2)};
    sprint_runtime rt;
    pool_client local{rt, with_instances(base, 1)};
    pool_client remote_only{rt, trainer_options(slow, {server.endpoint()}, 0)};
    stop_source stop;
    std::thread stopper{[&] {
      std::this_thread::sleep_for(std::chrono::milliseconds{400});
      stop.request_stop();
    }};
    auto stopped = remote_only.compute(make_batch(segments, 0, 8), stop.get_token());
    stopper.join();
    REQUIRE_FALSE(stopped);
    CHECK(stopped.error() == errc::cancelled);
    auto want = local.compute(make_batch(segments, 0, 2));
    REQUIRE(want);
    auto got = remote_only.compute(make_batch(segments, 0, 2));
    REQUIRE(got);
    check_identical(*got, *want);
    rt.shutdown();
  }
  check_nothing_left(fds);
}
