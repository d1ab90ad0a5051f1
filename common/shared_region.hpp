#pragma once

/// @file
/// The shared-memory region between sprintrt and one of its own children
/// (docs/protocol.md section 7; why it is safe: docs/design.md, "Shared
/// memory").
///
/// The parent creates one region per child: an anonymous memory file
/// (`memfd_create`), never a name another process could open, passed to the
/// child at start as one more descriptor and gone when both have closed it.
/// It is sealed (`F_SEAL_SHRINK | F_SEAL_SEAL`): neither side can make it
/// smaller, so no mapping of it can ever point past its end (which would
/// raise SIGBUS on access), and the child cannot add seals that would stop
/// the parent from growing it. Only the parent grows it.
///
/// Neither side trusts a reference from the other: `view` checks that a
/// range lies inside the region, without overflow and at the alignment its
/// type needs, before a byte is touched. A child's side follows the
/// parent's growth by mapping the file again when a reference lies beyond
/// its mapping but inside the file.

#include <cstddef>
#include <cstdint>

#include "sprintrt/error.hpp"

namespace sprintrt {

/// A memory file mapped read-write into this process. Move-only; closes its
/// descriptor and unmaps on destruction.
class shared_region {
public:
  /// Creates an empty region (size 0), sealed against shrinking, its
  /// descriptor close-on-exec; `name` appears only in /proc (debugging).
  /// Errors: `io_error` naming the failing call.
  static caf::expected<shared_region> create(const char* name);

  /// Takes over `fd` (closed on failure too), a region the parent passed,
  /// and maps all of it (the child's side). Errors: `io_error` for a descriptor that is no sealed
  /// memory file (a wrong number in the config) or cannot be mapped.
  static caf::expected<shared_region> attach(int fd);

  shared_region(shared_region&& other) noexcept;
  shared_region& operator=(shared_region&& other) noexcept;
  shared_region(const shared_region&) = delete;
  shared_region& operator=(const shared_region&) = delete;
  ~shared_region();

  /// Returns the descriptor (owned by the region).
  int fd() const noexcept { return fd_; }

  /// Returns the mapped size in bytes.
  size_t size() const noexcept { return size_; }

  /// Grows the file and the mapping to at least `bytes` and faults the new
  /// pages in, so that the first request through them costs what later ones
  /// do. Never shrinks. Errors: `io_error` (no memory for the file: the
  /// region keeps its old size).
  caf::error grow(size_t bytes);

  /// Returns the `length` bytes at `offset` after checking that they lie in
  /// the region and that `offset` is a multiple of `alignment` (a power of
  /// two). On the child's side a range beyond the mapping but inside the
  /// file (the parent grew it) maps the file again first; the parent's side
  /// never follows the file (a child may grow it, but the parent's size is
  /// what the parent made). Errors:
  /// `invalid_message` naming the range, the region's size and what is
  /// wrong; `io_error` if mapping again failed.
  caf::expected<std::byte*> view(uint64_t offset, uint64_t length, size_t alignment);

private:
  shared_region(int fd, bool creator) noexcept : fd_(fd), creator_(creator) {}

  // Maps the file's current size again (the child's side of a growth).
  caf::error remap_to_file_size();

  void release() noexcept;

  int fd_ = -1;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  /// Made by `create`: grows by `grow` only.
  bool creator_ = false;
};

} // namespace sprintrt
