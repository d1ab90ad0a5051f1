#include "tests/integration/cli_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace sprintrt::test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The parent pid and state of `pid` from /proc/PID/stat.
std::optional<std::pair<pid_t, char>> stat_of(pid_t pid) {
  std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
  std::string line;
  if (!std::getline(stat, line))
    return std::nullopt;
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return std::nullopt;
  std::istringstream rest{line.substr(close + 2)};
  char state = '?';
  pid_t ppid = -1;
  rest >> state >> ppid;
  return std::make_pair(ppid, state);
}

} // namespace

command_result run_program(const std::string& dir, const std::string& program,
                           const std::string& args) {
  auto out = dir + "/cli.out";
  auto err = dir + "/cli.err";
  auto command = program + " " + args + " >" + out + " 2>" + err;
  int raw = std::system(command.c_str());
  command_result result;
  result.out = slurp(out);
  result.err = slurp(err);
  result.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

command_result run_cli(const std::string& dir, const std::string& args) {
  return run_program(dir, SPRINTRT_CLI_PATH, args);
}

background_cli start_cli(const std::string& dir, const std::vector<std::string>& args,
                         const std::string& name) {
  background_cli cli;
  cli.out_path = dir + "/" + name + ".out";
  cli.err_path = dir + "/" + name + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, cli.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, cli.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> words{SPRINTRT_CLI_PATH};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  if (::posix_spawn(&cli.pid, SPRINTRT_CLI_PATH, &actions, nullptr, argv.data(), environ) != 0)
    cli.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return cli;
}

std::optional<command_result> wait_cli(const background_cli& cli,
                                       std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(cli.pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  if (done != cli.pid) {
    ::kill(cli.pid, SIGKILL);
    ::waitpid(cli.pid, &status, 0);
    return std::nullopt;
  }
  command_result result;
  result.out = slurp(cli.out_path);
  result.err = slurp(cli.err_path);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr)
    return children;
  while (auto* entry = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0')
      continue;
    auto stat = stat_of(static_cast<pid_t>(pid));
    if (stat && stat->first == parent)
      children.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  return children;
}

bool process_alive(pid_t pid) {
  auto stat = stat_of(pid);
  return stat && stat->second != 'Z' && stat->second != 'X';
}

} // namespace sprintrt::test
