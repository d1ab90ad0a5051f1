#include "tools/bench/child_program.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tools/bench/bench_support.hpp"
#include "tools/bench/bench_world.hpp"

extern char** environ;

namespace sprintrt::bench {

namespace {

// A fresh pipe, both ends close-on-exec (a child gets only what is dup2'ed).
void open_pipe(int fds[2], int size) {
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string{"pipe2: "} + std::strerror(errno));
  if (size > 0)
    ::fcntl(fds[1], F_SETPIPE_SZ, size);
}

// An error whose message starts with "skipped: ", which figures.py and the
// smoke test read as a figure that cannot be measured here.
void skip(benchmark::State& state, const std::string& reason) {
  state.SkipWithError(("skipped: " + reason).c_str());
}

} // namespace

child_program spawn_program(const std::vector<std::string>& argv, bool piped_stdin, int pipe_size) {
  int in[2] = {-1, -1};
  int out[2];
  open_pipe(out, pipe_size);
  try {
    if (piped_stdin)
      open_pipe(in, pipe_size);
  } catch (...) {
    ::close(out[0]);
    ::close(out[1]);
    throw;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the targets; every other end closes at exec.
  if (piped_stdin)
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  else
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::vector<char*> args;
  for (const auto& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  child_program child{-1, in[1], out[0]};
  const int rc =
      ::posix_spawn(&child.pid, argv.at(0).c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  for (int fd : {in[0], out[1], rc != 0 ? in[1] : -1, rc != 0 ? out[0] : -1})
    if (fd >= 0)
      ::close(fd);
  if (rc != 0)
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return child;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

nlohmann::json run_json(const std::vector<std::string>& argv, const std::string& what) {
  const auto child = spawn_program(argv);
  std::string text;
  char buffer[65536];
  for (ssize_t n; (n = ::read(child.from_child, buffer, sizeof buffer)) != 0;)
    if (n > 0)
      text.append(buffer, static_cast<size_t>(n));
    else if (errno != EINTR)
      break;
  ::close(child.from_child);
  const int status = reap(child.pid);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  const std::string last = text.substr(text.rfind('\n') + 1);
  if (status != 0)
    throw std::runtime_error(what + " failed (exit status " + std::to_string(status) +
                             "); its last line: " + last);
  auto document = nlohmann::json::parse(last, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    throw std::runtime_error(what + " printed no JSON object on its last line: " + last);
  return document;
}

std::optional<nlohmann::json> run_script(benchmark::State& state, const std::string& needs,
                                         const std::string& script,
                                         const std::vector<std::string>& args) {
  const auto& s = world().settings();
  if (::access(s.python.c_str(), X_OK) != 0) {
    skip(state, "no " + needs + " (no " + s.python + ")");
    return {};
  }
  std::vector<std::string> argv{s.python, s.scripts + "/" + script};
  argv.insert(argv.end(), args.begin(), args.end());
  auto document = run_json(argv, s.scripts + "/" + script);
  if (document.contains("skipped")) {
    skip(state, document.at("skipped").get<std::string>());
    return {};
  }
  return document;
}

void replay_samples(benchmark::State& state, const nlohmann::json& samples, double unit) {
  if (samples.empty())
    throw std::runtime_error("the script reported no sample");
  size_t i = 0;
  for (auto _ : state)
    state.SetIterationTime(samples.at(i++ % samples.size()).get<double>() * unit);
}

} // namespace sprintrt::bench
