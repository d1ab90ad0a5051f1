// A stand-in Sprint executable for tests of how children are started: it
// writes what it was given to descriptor 3 (where a Sprint child's c2p pipe
// is), one item per line, and exits 0:
//   ARG <argument>          for each argument
//   FD <number> <target>    for each open descriptor
//   ENV <name>=<value>      for each variable named in SPRINTRT_PROBE_VARS
//                           (comma-separated), or ENV <name> unset
//   SIGPIPE <default|ignored>
//   SigBlk <hex>, SigIgn <hex>  the blocked and ignored signals (/proc)
//
// With SPRINTRT_PROBE_SAY set it only prints "out: <value>" on stdout and
// "err: <value>" on stderr and exits with status SPRINTRT_PROBE_EXIT (0), for
// tests of where a child's output goes.

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (const char* say = std::getenv("SPRINTRT_PROBE_SAY")) {
    std::printf("out: %s\n", say);
    std::fflush(stdout);
    std::fprintf(stderr, "err: %s\n", say);
    const char* status = std::getenv("SPRINTRT_PROBE_EXIT");
    return status != nullptr ? std::atoi(status) : 0;
  }
  FILE* out = ::fdopen(3, "w");
  if (out == nullptr)
    return 10;
  for (int i = 0; i < argc; ++i)
    std::fprintf(out, "ARG %s\n", argv[i]);
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr)
    return 11;
  int own = ::dirfd(dir);
  while (auto* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.')
      continue;
    int fd = std::atoi(entry->d_name);
    if (fd == own)
      continue;
    char target[512] = {};
    auto link = std::string{"/proc/self/fd/"} + entry->d_name;
    ::readlink(link.c_str(), target, sizeof(target) - 1);
    std::fprintf(out, "FD %d %s\n", fd, target);
  }
  ::closedir(dir);
  if (const char* vars = std::getenv("SPRINTRT_PROBE_VARS")) {
    std::string list = vars;
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t comma = list.find(',', pos);
      auto name = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (const char* value = std::getenv(name.c_str()))
        std::fprintf(out, "ENV %s=%s\n", name.c_str(), value);
      else
        std::fprintf(out, "ENV %s unset\n", name.c_str());
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
  }
  struct sigaction action;
  ::sigaction(SIGPIPE, nullptr, &action);
  std::fprintf(out, "SIGPIPE %s\n", action.sa_handler == SIG_IGN ? "ignored" : "default");
  std::ifstream status{"/proc/self/status"};
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigBlk:", 0) == 0 || line.rfind("SigIgn:", 0) == 0)
      std::fprintf(out, "%s %s\n", line.substr(0, 6).c_str(),
                   line.substr(line.find_first_not_of(" \t", 7)).c_str());
  std::fclose(out);
  return 0;
}
