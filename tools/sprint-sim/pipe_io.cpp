#include "tools/sprint-sim/pipe_io.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace sprintrt::sim_tool {

namespace {

caf::error system_error(const std::string& what, int fd) {
  return make_error(errc::io_error,
                    what + " on fd " + std::to_string(fd) + ": " + std::strerror(errno));
}

} // namespace

caf::error prepare_pipe_end(int fd, pipe_direction direction, const char* what) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags == -1)
    return make_error(errc::io_error,
                      std::string{what} + " " + std::to_string(fd) +
                          " is not an open file descriptor: " + std::strerror(errno));
  const int mode = flags & O_ACCMODE;
  const bool usable =
      mode == O_RDWR || mode == (direction == pipe_direction::read ? O_RDONLY : O_WRONLY);
  if (!usable)
    return make_error(errc::io_error,
                      std::string{what} + " " + std::to_string(fd) + " is not open for " +
                          (direction == pipe_direction::read ? "reading" : "writing"));
  if ((flags & O_NONBLOCK) != 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1)
    return system_error(std::string{"cannot make "} + what + " blocking", fd);
  return {};
}

caf::expected<size_t> read_some(int fd, mutable_byte_span room) {
  for (;;) {
    const ssize_t n = ::read(fd, room.data(), room.size());
    if (n >= 0)
      return static_cast<size_t>(n);
    if (errno != EINTR)
      return system_error("read", fd);
  }
}

caf::error write_all(int fd, byte_span bytes) {
  const std::byte* next = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, next, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return system_error("write", fd);
    }
    next += n;
    left -= static_cast<size_t>(n);
  }
  return {};
}

void sleep_until_killed() {
  for (;;)
    ::pause();
}

} // namespace sprintrt::sim_tool
