#include "process/temp_directory.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sprintrt::process {

caf::expected<temp_directory> temp_directory::make(const std::string& prefix) {
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  if (ec)
    return make_error(errc::io_error, "no temporary directory: " + ec.message());
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return make_error(errc::io_error,
                      "cannot create a directory like " + pattern + ": " + std::strerror(errno));
  return temp_directory{std::move(pattern)};
}

temp_directory& temp_directory::operator=(temp_directory&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

temp_directory::~temp_directory() {
  remove();
}

void temp_directory::remove() noexcept {
  if (path_.empty())
    return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

} // namespace sprintrt::process
