// The files of childOutput {"file": DIR}: writes are queued and never wait
// for the disk; beyond the queue's budget output is dropped, and the file
// says how much.

#include "process/output_file.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "process/temp_directory.hpp"

using sprintrt::process::output_file;

TEST_CASE("a stalled file never blocks a write; what does not fit is dropped and counted") {
  using namespace std::chrono_literals;
  auto dir = sprintrt::process::temp_directory::make("sprintrt-output-file");
  REQUIRE(dir);
  // A FIFO nobody reads yet stands for a disk that does not keep up.
  const auto path = dir->path() + "/stalled.log";
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(reader >= 0);
  auto file = output_file::open(path);
  REQUIRE(file);
  const std::string chunk(1 << 20, 'x');
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i)
    file->write(chunk);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK_FALSE(sprintrt::process::flush_output_files(100ms));
  // The disk catches up.
  std::string got;
  std::thread drain{[&] {
    char buffer[65536];
    for (;;) {
      const ssize_t n = ::read(reader, buffer, sizeof buffer);
      if (n > 0) {
        got.append(buffer, static_cast<size_t>(n));
        if (got.size() >= 4 && got.compare(got.size() - 4, 4, "end\n") == 0)
          return;
      } else {
        pollfd p{reader, POLLIN, 0};
        ::poll(&p, 1, 100);
      }
    }
  }};
  REQUIRE(sprintrt::process::flush_output_files(20s));
  file->write("end\n");
  REQUIRE(sprintrt::process::flush_output_files(20s));
  drain.join();
  ::close(reader);
  const size_t kept = output_file::queue_budget;
  const std::string note = "\n[sprintrt: " + std::to_string(20 * chunk.size() - kept) +
                           " bytes of this output were dropped: the file could not keep up]\n";
  REQUIRE(got.size() == kept + note.size() + 4);
  CHECK(got.find_first_not_of('x') == kept);
  CHECK(got.substr(kept) == note + "end\n");
}
