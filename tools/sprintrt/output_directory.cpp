#include "tools/sprintrt/output_directory.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace sprintrt::cli {

caf::error make_output_directory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create directory '" + dir + "': " + ec.message());
  if (!fs::is_directory(dir, ec))
    return make_error(errc::io_error, "'" + dir + "' is not a directory");
  // Permissions alone do not tell (a read-only mount, ACLs, root): try.
  std::string probe = (fs::path{dir} / ".sprintrt-write-check-XXXXXX").string();
  std::vector<char> name(probe.begin(), probe.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0)
    return make_error(errc::io_error,
                      "cannot write in directory '" + dir + "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(name.data());
  return {};
}

} // namespace sprintrt::cli
