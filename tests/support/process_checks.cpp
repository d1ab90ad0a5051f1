#include "tests/support/process_checks.hpp"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace sprintrt::test {

std::set<int> open_fds() {
  std::set<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr)
    return fds;
  int own = ::dirfd(dir);
  while (auto* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name == "." || name == "..")
      continue;
    int fd = std::stoi(name);
    if (fd != own)
      fds.insert(fd);
  }
  ::closedir(dir);
  return fds;
}

std::string describe_fds(const std::set<int>& fds) {
  std::string text;
  for (int fd : fds) {
    char target[256] = {};
    auto path = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
    text += std::to_string(fd) + " -> " + (n > 0 ? std::string(target, n) : "?") + "\n";
  }
  return text;
}

std::vector<child_info> child_processes() {
  std::vector<child_info> children;
  pid_t self = ::getpid();
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr)
    return children;
  while (auto* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream stat{"/proc/" + name + "/stat"};
    std::string line;
    if (!std::getline(stat, line))
      continue;
    // pid (comm) state ppid ...; comm may contain spaces and parentheses.
    auto open = line.find('(');
    auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos)
      continue;
    std::istringstream rest{line.substr(close + 2)};
    char state = '?';
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == self)
      children.push_back({std::stoi(name), state, line.substr(open + 1, close - open - 1)});
  }
  ::closedir(dir);
  return children;
}

std::set<int> fd_snapshot::leaked_fds() const {
  std::set<int> leaked;
  for (int fd : open_fds())
    if (before_.count(fd) == 0)
      leaked.insert(fd);
  return leaked;
}

} // namespace sprintrt::test
