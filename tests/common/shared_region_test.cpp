#include "common/shared_region.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>

using sprintrt::errc;
using sprintrt::shared_region;

namespace {

shared_region make_region(size_t bytes) {
  auto region = shared_region::create("shared_region_test");
  REQUIRE(region);
  REQUIRE_FALSE(region->grow(bytes));
  return std::move(*region);
}

/// The other side of a region: what a child gets, from a duplicate of the
/// parent's descriptor.
shared_region attach_copy(const shared_region& region) {
  auto other = shared_region::attach(::dup(region.fd()));
  REQUIRE(other);
  return std::move(*other);
}

errc code_of(const caf::error& err) {
  return static_cast<errc>(err.code());
}

} // namespace

TEST_CASE("a region grows in whole pages, zeroed, and both sides see each other's writes") {
  auto region = make_region(10'000);
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  CHECK(region.size() == (10'000 + page - 1) / page * page);
  auto child = attach_copy(region);
  CHECK(child.size() == region.size());

  auto parent_bytes = region.view(0, region.size(), 64);
  REQUIRE(parent_bytes);
  for (size_t i = 0; i < region.size(); ++i)
    REQUIRE((*parent_bytes)[i] == std::byte{0});
  float x = 2.5f;
  std::memcpy(*parent_bytes + 128, &x, sizeof x);

  auto child_bytes = child.view(128, sizeof(float), alignof(float));
  REQUIRE(child_bytes);
  float y = 0;
  std::memcpy(&y, *child_bytes, sizeof y);
  CHECK(y == 2.5f);
  y = -1.0f;
  std::memcpy(*child_bytes, &y, sizeof y);
  std::memcpy(&x, *parent_bytes + 128, sizeof x);
  CHECK(x == -1.0f);
}

TEST_CASE("the child's side follows the parent's growth, keeping what was written") {
  auto region = make_region(4096);
  auto child = attach_copy(region);
  const size_t old_size = region.size();
  auto first = region.view(0, 4, 4);
  REQUIRE(first);
  (*first)[0] = std::byte{7};
  REQUIRE_FALSE(region.grow(4 * old_size));
  auto last = region.view(region.size() - 4, 4, 4);
  REQUIRE(last);
  (*last)[3] = std::byte{9};

  auto seen = child.view(region.size() - 4, 4, 4);
  REQUIRE(seen);
  CHECK((*seen)[3] == std::byte{9});
  CHECK(child.size() == region.size());
  auto kept = child.view(0, 1, 1);
  REQUIRE(kept);
  CHECK((*kept)[0] == std::byte{7});
}

TEST_CASE("a range outside the region, wrapping around or misaligned is refused, naming it") {
  auto region = make_region(8192);
  const uint64_t size = region.size();
  CHECK(region.view(size, 0, 4));
  CHECK(region.view(size - 8, 8, 4));
  for (auto [offset, length] : {std::pair<uint64_t, uint64_t>{size - 4, 8},
                                {size + 4, 0},
                                {std::numeric_limits<uint64_t>::max() - 3, 8},
                                {4, std::numeric_limits<uint64_t>::max() - 3}}) {
    auto bytes = region.view(offset, length, 4);
    REQUIRE_FALSE(bytes);
    CHECK(code_of(bytes.error()) == errc::invalid_message);
    CHECK_THAT(sprintrt::error_message(bytes.error()),
               Catch::Contains("at offset " + std::to_string(offset)) &&
                   Catch::Contains("outside the region of " + std::to_string(size) + " bytes"));
  }
  auto misaligned = region.view(6, 4, 4);
  REQUIRE_FALSE(misaligned);
  CHECK_THAT(sprintrt::error_message(misaligned.error()), Catch::Contains("not aligned to 4"));
}

TEST_CASE("nobody can shrink a region or seal it against growing") {
  auto region = make_region(3 * 4096);
  auto child = attach_copy(region);
  // What a hostile child would try: make the parent's mapping point past
  // the end of the file, or stop the parent from growing it.
  errno = 0;
  CHECK(::ftruncate(child.fd(), 4096) == -1);
  CHECK(errno == EPERM);
  CHECK(::fcntl(child.fd(), F_ADD_SEALS, F_SEAL_GROW) == -1);
  CHECK(::ftruncate(region.fd(), 0) == -1);
  struct stat info {};
  REQUIRE(::fstat(region.fd(), &info) == 0);
  CHECK(static_cast<size_t>(info.st_size) == region.size());
  REQUIRE_FALSE(region.grow(6 * 4096));
  CHECK(region.size() == 6 * 4096);
}

TEST_CASE("the parent's side never follows a file the child grew") {
  auto region = make_region(4096);
  auto child = attach_copy(region);
  REQUIRE(::ftruncate(child.fd(), 1 << 20) == 0);
  auto beyond = region.view(8192, 4, 4);
  REQUIRE_FALSE(beyond);
  CHECK(code_of(beyond.error()) == errc::invalid_message);
  CHECK(region.size() == 4096);
  // Only the creator grows a region, and a child that grew the file cannot
  // stop it (truncating to less than the child made it would be a shrink).
  CHECK(child.grow(1 << 21));
  REQUIRE_FALSE(region.grow(8192));
  CHECK(region.size() == 8192);
  CHECK(region.view(4096, 4096, 4));
}

TEST_CASE("attaching refuses a descriptor that is no sealed memory file") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  auto from_pipe = shared_region::attach(pipe_fds[0]);
  REQUIRE_FALSE(from_pipe);
  CHECK(code_of(from_pipe.error()) == errc::io_error);
  CHECK_THAT(sprintrt::error_message(from_pipe.error()),
             Catch::Contains("descriptor " + std::to_string(pipe_fds[0])));
  ::close(pipe_fds[1]); // pipe_fds[0] was taken over and closed

  const int unsealed = ::memfd_create("unsealed", MFD_CLOEXEC);
  REQUIRE(unsealed >= 0);
  auto from_unsealed = shared_region::attach(unsealed);
  REQUIRE_FALSE(from_unsealed);
  CHECK_THAT(sprintrt::error_message(from_unsealed.error()), Catch::Contains("may shrink"));
}
