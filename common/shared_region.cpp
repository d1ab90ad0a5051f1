#include "common/shared_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace sprintrt {

namespace {

constexpr unsigned required_seals = F_SEAL_SHRINK | F_SEAL_SEAL;

caf::error system_error(const std::string& what) {
  return make_error(errc::io_error, "shared memory: " + what + ": " + std::strerror(errno));
}

size_t page_size() {
  static const size_t size = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

std::byte* map_file(int fd, size_t size) {
  // MAP_POPULATE: the pages are the parent's already; mapping them up
  // front spares the first request a page fault per 4 KiB.
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

/// Faults `[begin, begin + length)` in for writing: MADV_POPULATE_WRITE
/// (Linux 5.14), else one write per page.
void fault_in(std::byte* begin, size_t length) {
#ifdef MADV_POPULATE_WRITE
  if (::madvise(begin, length, MADV_POPULATE_WRITE) == 0)
    return;
#endif
  for (size_t i = 0; i < length; i += page_size())
    begin[i] = std::byte{0};
}

} // namespace

caf::expected<shared_region> shared_region::create(const char* name) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return system_error("memfd_create");
  if (::fcntl(fd, F_ADD_SEALS, required_seals) != 0) {
    auto err = system_error("sealing the region");
    ::close(fd);
    return err;
  }
  return shared_region{fd, true};
}

caf::expected<shared_region> shared_region::attach(int fd) {
  // Owned from here on: closed with `region` on every failure.
  shared_region region{fd, false};
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0)
    return system_error("descriptor " + std::to_string(fd) + " is no sealed memory file");
  if ((static_cast<unsigned>(seals) & F_SEAL_SHRINK) == 0)
    return make_error(errc::io_error, "shared memory: descriptor " + std::to_string(fd) +
                                          " may shrink (not sealed with F_SEAL_SHRINK)");
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
    return system_error("descriptor " + std::to_string(fd));
  if (auto err = region.remap_to_file_size())
    return err;
  return region;
}

shared_region::shared_region(shared_region&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)), creator_(other.creator_) {}

shared_region& shared_region::operator=(shared_region&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    creator_ = other.creator_;
  }
  return *this;
}

shared_region::~shared_region() {
  release();
}

void shared_region::release() noexcept {
  if (data_)
    ::munmap(data_, size_);
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  data_ = nullptr;
  size_ = 0;
}

caf::error shared_region::grow(size_t bytes) {
  if (!creator_)
    return make_error(errc::invalid_request, "shared memory: only its creator grows a region");
  if (bytes <= size_)
    return {};
  const size_t page = page_size();
  if (bytes > std::numeric_limits<size_t>::max() - page)
    return make_error(errc::io_error,
                      "shared memory: cannot grow to " + std::to_string(bytes) + " bytes");
  const size_t new_size = (bytes + page - 1) / page * page;
  // A child may have made the file larger already (it cannot make it
  // smaller): then the file covers the new size as it is, and truncating it
  // to less would be a shrink, which the seal refuses.
  struct stat info {};
  if (::fstat(fd_, &info) != 0)
    return system_error("fstat");
  if (static_cast<size_t>(info.st_size) < new_size &&
      ::ftruncate(fd_, static_cast<off_t>(new_size)) != 0)
    return system_error("growing to " + std::to_string(new_size) + " bytes");
  void* p = data_ ? ::mremap(data_, size_, new_size, MREMAP_MAYMOVE)
                  : ::mmap(nullptr, new_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED)
    return system_error("mapping " + std::to_string(new_size) + " bytes");
  data_ = static_cast<std::byte*>(p);
  fault_in(data_ + size_, new_size - size_);
  size_ = new_size;
  return {};
}

caf::error shared_region::remap_to_file_size() {
  struct stat info {};
  if (::fstat(fd_, &info) != 0)
    return system_error("fstat");
  const auto file_size = static_cast<size_t>(info.st_size);
  if (file_size == size_)
    return {};
  std::byte* mapped = nullptr;
  if (file_size > 0) {
    mapped = map_file(fd_, file_size);
    if (!mapped)
      return system_error("mapping " + std::to_string(file_size) + " bytes");
  }
  if (data_)
    ::munmap(data_, size_);
  data_ = mapped;
  size_ = file_size;
  return {};
}

caf::expected<std::byte*> shared_region::view(uint64_t offset, uint64_t length, size_t alignment) {
  auto describe = [&] {
    return "shared memory: " + std::to_string(length) + " bytes at offset " +
           std::to_string(offset);
  };
  if (alignment == 0 || offset % alignment != 0)
    return make_error(errc::invalid_message,
                      describe() + " are not aligned to " + std::to_string(alignment) + " bytes");
  // offset + length may not wrap around: compare against what is left.
  auto inside = [&] { return offset <= size_ && length <= size_ - offset; };
  if (!inside() && !creator_) {
    if (auto err = remap_to_file_size())
      return err;
  }
  if (!inside())
    return make_error(errc::invalid_message, describe() + " lie outside the region of " +
                                                 std::to_string(size_) + " bytes");
  return data_ + offset;
}

} // namespace sprintrt
