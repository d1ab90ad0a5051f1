#pragma once

/// @file
/// Where the seed generators put their inputs: one file per seed in the
/// directory named on their command line.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "protocol/byte_buffer.hpp"

namespace sprintrt::fuzz {

/// Writes seeds as files into one directory (which must exist).
class seed_writer {
public:
  /// Writes into the directory `argv[1]`; ends the program with a usage
  /// message unless there is exactly that one argument.
  seed_writer(int argc, char** argv) {
    if (argc != 2) {
      std::fprintf(stderr, "usage: %s DIRECTORY\n", argc > 0 ? argv[0] : "seeds");
      std::exit(2);
    }
    directory_ = argv[1];
  }

  /// Writes `bytes` as the seed `name`; ends the program if it cannot.
  void write(const std::string& name, const std::string& bytes) {
    const auto path = directory_ + "/" + name;
    std::ofstream out{path, std::ios::binary};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write the seed %s\n", path.c_str());
      std::exit(1);
    }
    ++written_;
  }

  /// Writes `header` followed by `message` as the seed `name`.
  void write(const std::string& name, const std::string& header,
             const protocol::byte_buffer& message) {
    const auto bytes = message.bytes();
    write(name, header + std::string{reinterpret_cast<const char*>(bytes.data()), bytes.size()});
  }

  /// Returns how many seeds were written.
  int written() const noexcept { return written_; }

private:
  std::string directory_;
  int written_ = 0;
};

} // namespace sprintrt::fuzz
