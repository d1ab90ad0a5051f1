#include "tools/bench/subprocess_json.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace sprintrt::bench {

program_output run_program(const std::vector<std::string>& argv) {
  if (argv.empty())
    throw std::runtime_error("run_program: no program");
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string{"pipe2: "} + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  // dup2 clears close-on-exec on fd 1; every other descriptor of ours is
  // close-on-exec.
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::vector<char*> args;
  for (const auto& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  program_output result;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    result.out.append(buffer, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

nlohmann::json json_of(const program_output& output, const std::string& what) {
  std::string text = output.out;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  const auto start = text.rfind('\n');
  const std::string last = start == std::string::npos ? text : text.substr(start + 1);
  if (output.status != 0)
    throw std::runtime_error(what + " failed (exit status " + std::to_string(output.status) +
                             "); its last line: " + last);
  auto document = nlohmann::json::parse(last, nullptr, false);
  if (document.is_discarded() || !document.is_object())
    throw std::runtime_error(what + " printed no JSON object on its last line: " + last);
  return document;
}

script_outcome run_script(const std::string& python, const std::string& needs,
                          const std::string& script, const std::vector<std::string>& args) {
  if (::access(python.c_str(), X_OK) != 0)
    return {"no " + needs + " (no " + python + ")", {}};
  std::vector<std::string> argv{python, script};
  argv.insert(argv.end(), args.begin(), args.end());
  auto document = json_of(run_program(argv), script);
  if (document.contains("skipped"))
    return {document.at("skipped").get<std::string>(), document};
  return {"", std::move(document)};
}

void replay_samples(benchmark::State& state, const nlohmann::json& samples, double unit) {
  if (samples.empty())
    throw std::runtime_error("the script reported no sample");
  size_t i = 0;
  for (auto _ : state)
    state.SetIterationTime(samples.at(i++ % samples.size()).get<double>() * unit);
}

} // namespace sprintrt::bench
