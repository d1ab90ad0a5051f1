// Sprint children end with their trainer, however it ends: a trainer process
// (sprintrt-dying-trainer) whose two children hang in a request is killed
// with SIGKILL or SIGTERM, and both children must be gone within 2 s; so are
// those of a `sprintrt serve` that is killed while they hang.
//
// The test makes itself a child subreaper for the time of a case, so the
// orphaned children become its own: it reaps them by pid and sees how they
// ended, and nothing is left to an init that might not reap (a zombie).

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/cli_support.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/integration/seqtrain_support.hpp"
#include "tests/support/process_checks.hpp"

extern char** environ;

using namespace sprintrt;
using namespace std::chrono_literals;

namespace {

/// Makes this process the reaper of its orphaned descendants while it lives.
struct subreaper {
  subreaper() { REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0); }
  ~subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }
  subreaper(const subreaper&) = delete;
  subreaper& operator=(const subreaper&) = delete;
};

/// Starts the dying trainer with its stdout into a pipe; returns its pid and
/// the pipe's read end.
std::pair<pid_t, int> start_trainer(const std::vector<std::string>& args) {
  int out[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_adddup2(&files, out[1], 1);
  std::vector<std::string> words{SPRINTRT_DYING_TRAINER_PATH};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  ::close(out[1]);
  REQUIRE(spawned == 0);
  return {pid, out[0]};
}

/// Reads the trainer's "PIDS a b" line (up to 30 s).
std::vector<pid_t> read_child_pids(int fd) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (text.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0)
      continue;
    char chunk[256];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0)
      break;
    text.append(chunk, static_cast<size_t>(n));
  }
  std::istringstream in{text};
  std::string word;
  std::vector<pid_t> pids;
  in >> word;
  INFO("the trainer said: " << text);
  REQUIRE(word == "PIDS");
  for (pid_t pid; in >> pid;)
    pids.push_back(pid);
  REQUIRE(pids.size() == 2);
  return pids;
}

/// How one orphaned child ended: reaped with `status` after `elapsed`, or not
/// within the limit (`reaped` false).
struct orphan_end {
  bool reaped = false;
  int status = 0;
  std::chrono::milliseconds elapsed{0};
};

/// Waits until `limit` after `since` for `pid` (re-parented to this
/// subreaper) to exit, and reaps it.
orphan_end reap_orphan(pid_t pid, std::chrono::steady_clock::time_point since,
                       std::chrono::milliseconds limit) {
  orphan_end end;
  while (std::chrono::steady_clock::now() < since + limit) {
    // ECHILD until the kernel has re-parented it to us, 0 while it runs.
    if (::waitpid(pid, &end.status, WNOHANG) == pid) {
      end.reaped = true;
      end.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - since);
      return end;
    }
    std::this_thread::sleep_for(5ms);
  }
  return end;
}

/// Checks that each of `children`, orphaned at `died`, is reaped within 2 s
/// (killed by SIGKILL within 1 s); kills and reaps any that is not.
void check_orphans_die(const std::vector<pid_t>& children,
                       std::chrono::steady_clock::time_point died) {
  for (pid_t child : children) {
    INFO("Sprint child pid " << child);
    auto end = reap_orphan(child, died, 2s);
    CHECK(end.reaped);
    if (!end.reaped) {
      // Leave nothing behind for the next test.
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
      continue;
    }
    CHECK(WIFSIGNALED(end.status));
    CHECK(WTERMSIG(end.status) == SIGKILL);
    CHECK(end.elapsed < 1s);
    struct stat info;
    CHECK(::stat(("/proc/" + std::to_string(child)).c_str(), &info) != 0);
  }
}

void check_children_die_with_trainer(int signal) {
  test::fd_snapshot fds;
  {
    subreaper reaper;
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, 5);
    auto [trainer, out] = start_trainer(
        {SPRINTRT_SPRINT_SIM_PATH, test::corpus_path(dir), segments[0].name, segments[1].name});
    auto children = read_child_pids(out);
    ::close(out);
    // Both hang in their request (the trainer's compute waits for them).
    std::this_thread::sleep_for(200ms);
    REQUIRE(::kill(trainer, signal) == 0);
    int status = 0;
    REQUIRE(::waitpid(trainer, &status, 0) == trainer);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    check_orphans_die(children, std::chrono::steady_clock::now());
  }
  CHECK(test::child_processes().empty());
  CHECK(fds.leaked_fds().empty());
}

} // namespace

TEST_CASE("Sprint children die within 1 s when their trainer is killed with SIGKILL") {
  check_children_die_with_trainer(SIGKILL);
}

TEST_CASE("Sprint children die within 1 s when their trainer is killed with SIGTERM") {
  check_children_die_with_trainer(SIGTERM);
}

TEST_CASE("the children of sprintrt serve die within 1 s when it is killed with SIGKILL") {
  test::fd_snapshot fds;
  {
    subreaper reaper;
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, 5);
    // Two served children that hang in their first request.
    auto served = test::sim_options(test::corpus_path(dir), {"fault=hang"});
    served.num_instances = 2;
    auto config = dir.path() + "/serve.json";
    std::ofstream{config} << to_json_string(served);
    auto port_file = dir.path() + "/serve.port";
    auto serve = test::start_cli(
        dir.path(), {"serve", "--config", config, "--port", "0", "--port-file", port_file});
    uint16_t port = 0;
    for (auto deadline = std::chrono::steady_clock::now() + 20s;
         port == 0 && std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(10ms))
      std::ifstream{port_file} >> port;
    REQUIRE(port != 0);
    sprint_runtime rt;
    auto opts = served;
    opts.num_instances = 0;
    opts.remote = {{"127.0.0.1", port}};
    opts.remote_wait = 100ms;
    pool_client client{rt, opts};
    // The batch fails once its remote pool is gone (and did not come back
    // within remoteWait).
    std::thread trainer{
        [&] { (void)client.compute(test::make_batch(segments, 0, 2, 5, 4, 1, 3)); }};
    std::vector<pid_t> children;
    for (auto deadline = std::chrono::steady_clock::now() + 20s;
         children.size() < 2 && std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(10ms))
      children = test::children_of(serve.pid);
    REQUIRE(children.size() == 2);
    std::this_thread::sleep_for(200ms); // both hang in their request
    REQUIRE(::kill(serve.pid, SIGKILL) == 0);
    REQUIRE(test::wait_cli(serve, 5s));
    check_orphans_die(children, std::chrono::steady_clock::now());
    trainer.join();
    rt.shutdown();
  }
  CHECK(test::child_processes().empty());
  CHECK(fds.leaked_fds().empty());
}
