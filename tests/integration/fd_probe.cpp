// A stand-in Sprint executable for tests of how children are started: it
// writes what it was given to descriptor 3 (where a Sprint child's c2p pipe
// is), one item per line, and exits 0:
//   ARG <argument>          for each argument
//   FD <number> <target>    for each open descriptor
//   ENV <name>=<value>      for each variable named in SPRINTRT_PROBE_VARS
//                           (comma-separated), or ENV <name> unset
//   SIGPIPE <default|ignored>

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
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
  std::fclose(out);
  return 0;
}
