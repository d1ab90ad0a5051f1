// How a Sprint child is started: exactly fds 0-4, stdin from /dev/null,
// stdout and stderr into one captured pipe, the argument list of docs/protocol.md
// section 1, the environment changes of the options, default signals; and
// nothing of the parent's leaks into the child or stays open in the parent.

#include "process/child_spawn.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <sstream>

#include "process/io_thread.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"

extern char** environ;

using namespace sprintrt;

namespace {

/// Reads everything from a non-blocking fd until EOF.
std::string read_all(int fd) {
  std::string text;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      text.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return text;
    } else if (errno == EAGAIN) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 1000);
    } else if (errno != EINTR) {
      return text;
    }
  }
}

struct probe_report {
  std::vector<std::string> args;
  std::map<int, std::string> fds;
  std::map<std::string, std::string> env;
  std::string sigpipe;
  /// /proc's SigBlk and SigIgn: hex masks of blocked and ignored signals.
  std::string blocked, ignored;
};

probe_report parse_report(const std::string& text) {
  probe_report report;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line)) {
    auto space = line.find(' ');
    auto kind = line.substr(0, space);
    auto rest = line.substr(space + 1);
    if (kind == "ARG") {
      report.args.push_back(rest);
    } else if (kind == "FD") {
      auto sep = rest.find(' ');
      report.fds[std::stoi(rest.substr(0, sep))] = rest.substr(sep + 1);
    } else if (kind == "ENV") {
      auto eq = rest.find('=');
      report.env[rest.substr(0, eq == std::string::npos ? rest.find(' ') : eq)] =
          eq == std::string::npos ? "<unset>" : rest.substr(eq + 1);
    } else if (kind == "SIGPIPE") {
      report.sigpipe = rest;
    } else if (kind == "SigBlk") {
      report.blocked = rest;
    } else if (kind == "SigIgn") {
      report.ignored = rest;
    }
  }
  return report;
}

sprint_options probe_options() {
  sprint_options opts;
  opts.sprint_exec_path = SPRINTRT_FD_PROBE_PATH;
  opts.pymod_path = "/opt/returnn";
  opts.sprint_config = {{{word_piece::literal, "--*.corpus="}, {word_piece::variable, "PROBE_DIR"}},
                        {{word_piece::literal, "second arg"}}};
  opts.env.set = {{"SPRINTRT_PROBE_VARS", "PROBE_DIR,PROBE_SET,HOME_OF_PROBE"},
                  {"PROBE_DIR", "/data/x"},
                  {"PROBE_SET", "yes"}};
  opts.env.unset = {"HOME_OF_PROBE"};
  return opts;
}

} // namespace

TEST_CASE("a child gets exactly fds 0-4, the protocol's argv and the options' environment") {
  test::fd_snapshot fds;
  ::setenv("HOME_OF_PROBE", "should be removed", 1);
  // A descriptor the parent opened without close-on-exec must not leak.
  int careless = ::open("/dev/null", O_RDONLY);
  REQUIRE(careless >= 0);
  {
    process::io_thread io; // ignores SIGPIPE in the parent, as in production
    auto child = process::spawn_sprint_child(probe_options(), environ);
    REQUIRE(child);
    CHECK(child->pid > 0);
    auto report = parse_report(read_all(child->from_child.get()));
    auto output = read_all(child->output.get());
    int status = 0;
    REQUIRE(::waitpid(child->pid, &status, 0) == child->pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(output.empty());

    std::vector<std::string> expected_args{
        SPRINTRT_FD_PROBE_PATH,
        "--*.python-control-enabled=true",
        "--*.pymod-path=/opt/returnn",
        "--*.pymod-name=returnn.sprint.control",
        "--*.pymod-config=c2p_fd:3,p2c_fd:4,minPythonControlVersion:2",
        "--*.python-segment-order=true",
        "--*.python-segment-order-pymod-path=/opt/returnn",
        "--*.python-segment-order-pymod-name=returnn.sprint.control",
        "--*.python-segment-order-config=c2p_fd:3,p2c_fd:4,minPythonControlVersion:2",
        "--*.python-segment-order-allow-copy=false",
        "--*.corpus=/data/x",
        "second arg",
    };
    CHECK(report.args == expected_args);
    CHECK(child->argv == expected_args);
    // Exactly five descriptors: stdin from /dev/null, stdout and stderr into
    // the same pipe, the two protocol pipes at 3 and 4.
    REQUIRE(report.fds.size() == 5);
    CHECK(report.fds[0] == "/dev/null");
    CHECK(report.fds[1].rfind("pipe:", 0) == 0);
    CHECK(report.fds[2] == report.fds[1]);
    CHECK(report.fds[3].rfind("pipe:", 0) == 0);
    CHECK(report.fds[4].rfind("pipe:", 0) == 0);
    CHECK(report.fds[3] != report.fds[4]);
    CHECK(report.env["PROBE_DIR"] == "/data/x");
    CHECK(report.env["PROBE_SET"] == "yes");
    CHECK(report.env["HOME_OF_PROBE"] == "<unset>");
    CHECK(report.sigpipe == "default");
    CHECK(report.blocked == "0000000000000000");
    CHECK(report.ignored == "0000000000000000");
    // The parent's ends are non-blocking.
    CHECK((::fcntl(child->to_child.get(), F_GETFL) & O_NONBLOCK) != 0);
    CHECK((::fcntl(child->from_child.get(), F_GETFL) & O_NONBLOCK) != 0);
  }
  ::close(careless);
  ::unsetenv("HOME_OF_PROBE");
  auto leaked = fds.leaked_fds();
  INFO(test::describe_fds(leaked));
  CHECK(leaked.empty());
  CHECK(test::child_processes().empty());
}

TEST_CASE("a missing or non-executable program is an error before anything is spawned") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto opts = probe_options();
  opts.sprint_exec_path = dir.path() + "/missing";
  auto missing = process::spawn_sprint_child(opts, environ);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == errc::spawn_failed);
  CHECK_THAT(render(missing.error()), Catch::Contains("/missing' does not exist"));
  opts.sprint_exec_path = dir.path();
  CHECK_THAT(render(process::spawn_sprint_child(opts, environ).error()),
             Catch::Contains("is not a regular file"));
  auto plain = dir.path() + "/plain";
  ::close(::open(plain.c_str(), O_CREAT | O_WRONLY, 0644));
  opts.sprint_exec_path = plain;
  CHECK_THAT(render(process::spawn_sprint_child(opts, environ).error()),
             Catch::Contains("is not executable"));
  CHECK(fds.leaked_fds().empty());
  CHECK(test::child_processes().empty());
}

TEST_CASE("a child starts with no signal ignored or blocked, whatever its parent set") {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction usr1_before {};
  REQUIRE(::sigaction(SIGUSR1, &ignore, &usr1_before) == 0);
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigset_t mask_before;
  REQUIRE(::pthread_sigmask(SIG_BLOCK, &usr2, &mask_before) == 0);
  auto child = process::spawn_sprint_child(probe_options(), environ);
  ::pthread_sigmask(SIG_SETMASK, &mask_before, nullptr);
  ::sigaction(SIGUSR1, &usr1_before, nullptr);
  REQUIRE(child);
  auto report = parse_report(read_all(child->from_child.get()));
  int status = 0;
  REQUIRE(::waitpid(child->pid, &status, 0) == child->pid);
  CHECK(report.blocked == "0000000000000000");
  CHECK(report.ignored == "0000000000000000");
}

TEST_CASE("with childOutput inherit a child writes to its parent's own stdout and stderr, "
          "ignoring SIGTTOU") {
  test::fd_snapshot fds;
  auto opts = probe_options();
  opts.child_output = {child_output_mode::inherit, ""};
  {
    auto child = process::spawn_sprint_child(opts, environ);
    REQUIRE(child);
    CHECK_FALSE(child->output);
    auto report = parse_report(read_all(child->from_child.get()));
    int status = 0;
    REQUIRE(::waitpid(child->pid, &status, 0) == child->pid);
    const auto own = [](int fd) {
      char target[512] = {};
      auto link = "/proc/self/fd/" + std::to_string(fd);
      CHECK(::readlink(link.c_str(), target, sizeof(target) - 1) > 0);
      return std::string{target};
    };
    REQUIRE(report.fds.size() == 5);
    CHECK(report.fds[0] == "/dev/null");
    CHECK(report.fds[1] == own(1));
    CHECK(report.fds[2] == own(2));
    // Only SIGTTOU (22, bit 21): in a process group of its own, a write to
    // a terminal with `tostop` set must not stop it.
    CHECK(report.ignored == "0000000000200000");
    CHECK(report.blocked == "0000000000000000");
  }
  CHECK(fds.leaked_fds().empty());
  CHECK(test::child_processes().empty());
}

TEST_CASE("a program the kernel cannot execute is an error with the OS reason, and reaped") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto opts = probe_options();
  opts.sprint_exec_path = dir.path() + "/not-a-program";
  {
    std::ofstream script{opts.sprint_exec_path};
    script << "no #! line and no ELF header\n";
  }
  ::chmod(opts.sprint_exec_path.c_str(), 0755);
  auto child = process::spawn_sprint_child(opts, environ);
  REQUIRE_FALSE(child);
  CHECK(child.error() == errc::spawn_failed);
  CHECK(error_message(child.error()) ==
        "cannot start '" + opts.sprint_exec_path + "': Exec format error");
  CHECK(fds.leaked_fds().empty());
  CHECK(test::child_processes().empty());
}
