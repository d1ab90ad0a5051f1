// `sprintrt record --dir D -- EXEC ARGS...`: a transparent wrapper that
// records a Sprint child's pipe traffic for `sprintrt pickle-dump`. Used as
// the program a pool starts (through a two-line script as `sprintExecPath`),
// it finds the child's pipes in the `--*.pymod-config` argument
// (c2p_fd:C,p2c_fd:P), puts two new pipes at those descriptor numbers, and
// execs EXEC with the unchanged arguments: the real child keeps this
// process's pid (so the parent's signals, pidfd and exit status are the real
// child's own) and finds its pipes where the arguments say. A relay process
// (double-forked, so that nobody needs to reap it) sits between the parent's
// pipes and the new ones and copies each direction on and into D/<pid>.p2c
// and D/<pid>.c2p, byte for byte as on the pipe. It ends when the child
// closes its end (the child exited), after copying everything.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/output_directory.hpp"

namespace sprintrt::cli {

namespace {

struct record_options {
  std::string dir;
  std::vector<std::string> command;
};

/// Exit status when EXEC cannot be run, as a shell's.
constexpr int cannot_exec_status = 127;

int fail(const std::string& what) {
  std::cerr << "sprintrt record: " << what << "\n";
  return 1;
}

/// The pipes of a Sprint child, from its `pymod-config` argument.
struct child_pipes {
  int c2p = -1;
  int p2c = -1;
};

/// Reads `c2p_fd:C,p2c_fd:P` from the first `--SELECTOR.pymod-config=`
/// argument (the PythonControl one; the segment-order config repeats it).
std::optional<child_pipes> find_pipes(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    auto eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
      continue;
    auto key = arg.substr(0, eq);
    if (key != "--pymod-config" &&
        (key.size() < 14 || key.substr(key.size() - 13) != ".pymod-config"))
      continue;
    child_pipes pipes;
    std::string items = arg.substr(eq + 1) + ",";
    for (size_t start = 0, comma; (comma = items.find(',', start)) != std::string::npos;
         start = comma + 1) {
      auto item = items.substr(start, comma - start);
      auto colon = item.find(':');
      if (colon == std::string::npos)
        continue;
      auto name = item.substr(0, colon);
      int* target = name == "c2p_fd" ? &pipes.c2p : name == "p2c_fd" ? &pipes.p2c : nullptr;
      if (target != nullptr)
        *target = std::atoi(item.c_str() + colon + 1);
    }
    if (pipes.c2p > 2 && pipes.p2c > 2 && pipes.c2p != pipes.p2c)
      return pipes;
    return std::nullopt;
  }
  return std::nullopt;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Copies `from` to `to` and into `record` until `from` ends; returns
/// whether it ended (false: a write failed). A failed recording write does
/// not stop the copy: the child must not notice.
bool copy(int from, int to, int record) {
  std::vector<char> buffer(1 << 16);
  bool recording = true;
  for (;;) {
    ssize_t n = ::read(from, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n == 0;
    if (recording)
      recording = write_all(record, buffer.data(), static_cast<size_t>(n));
    if (!write_all(to, buffer.data(), static_cast<size_t>(n)))
      return false;
  }
}

/// The relay: parent's p2c to the child (on a thread), the child's c2p to
/// the parent (here); ends when the child's c2p ends. Never returns.
[[noreturn]] void relay(child_pipes parent, int to_child, int from_child, int p2c_file,
                        int c2p_file) {
  std::signal(SIGPIPE, SIG_IGN);
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
  }
  std::thread requests{[&] {
    copy(parent.p2c, to_child, p2c_file);
    // The parent closed its end: so does the child's.
    ::close(to_child);
  }};
  requests.detach();
  copy(from_child, parent.c2p, c2p_file);
  ::close(p2c_file);
  ::close(c2p_file);
  ::_exit(0);
}

int run(const record_options& cli) {
  if (cli.command.empty())
    return fail("no program to run after --");
  auto pipes = find_pipes(cli.command);
  if (!pipes)
    return fail("no --*.pymod-config=c2p_fd:C,p2c_fd:P argument: record runs as the Sprint "
                "program of a pool (sprintExecPath), which passes it");
  for (int fd : {pipes->c2p, pipes->p2c})
    if (::fcntl(fd, F_GETFD) < 0)
      return fail("descriptor " + std::to_string(fd) +
                  " of --*.pymod-config is not open: " + std::strerror(errno));
  if (auto err = make_output_directory(cli.dir))
    return fail(render(err));
  auto base = cli.dir + "/" + std::to_string(::getpid());
  int files[2];
  const char* suffixes[2] = {".p2c", ".c2p"};
  for (int i = 0; i < 2; ++i) {
    auto path = base + suffixes[i];
    files[i] = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (files[i] < 0)
      return fail("cannot create " + path + ": " + std::strerror(errno));
  }
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
    return fail(std::string{"cannot make pipes: "} + std::strerror(errno));
  pid_t middle = ::fork();
  if (middle < 0)
    return fail(std::string{"cannot fork: "} + std::strerror(errno));
  if (middle == 0) {
    // The relay's parent ends at once, so init adopts (and reaps) the relay.
    if (::fork() == 0) {
      ::close(to_child[0]);
      ::close(from_child[1]);
      relay(*pipes, to_child[1], from_child[0], files[0], files[1]);
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  // This process becomes the child: the new pipes at the numbers its
  // arguments name (dup2 clears close-on-exec there), the rest closed on exec.
  if (::dup2(to_child[0], pipes->p2c) < 0 || ::dup2(from_child[1], pipes->c2p) < 0)
    return fail(std::string{"dup2: "} + std::strerror(errno));
  std::vector<char*> argv;
  for (const auto& arg : cli.command)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::cerr << "sprintrt record: cannot run " << cli.command[0] << ": " << std::strerror(errno)
            << "\n";
  return cannot_exec_status;
}

} // namespace

void add_record_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<record_options>();
  auto* cmd = app.add_subcommand(
      "record", "Run a Sprint program and record its pipe traffic (D/<pid>.p2c, D/<pid>.c2p) "
                "for pickle-dump; for use as sprintExecPath through a script");
  cmd->add_option("--dir", opts->dir, "Directory for the recordings (made if missing)")->required();
  cmd->add_option("command", opts->command, "-- EXEC ARGS...: the real Sprint program")->required();
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

} // namespace sprintrt::cli
