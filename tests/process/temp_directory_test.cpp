#include "process/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using sprintrt::process::temp_directory;
namespace fs = std::filesystem;

TEST_CASE("a temporary directory is created and removed with its contents") {
  std::string path;
  {
    auto dir = temp_directory::make("sprintrt-unit");
    REQUIRE(dir);
    path = dir->path();
    CHECK(fs::is_directory(path));
    CHECK(fs::path(path).filename().string().rfind("sprintrt-unit-", 0) == 0);
    fs::create_directory(path + "/sub");
    std::ofstream{path + "/sub/file"} << "x";
    // Moving hands over the directory; the moved-from object removes nothing.
    auto moved = std::move(*dir);
    CHECK(moved.path() == path);
    CHECK(dir->path().empty());
  }
  CHECK_FALSE(fs::exists(path));
}
