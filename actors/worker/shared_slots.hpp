#pragma once

/// @file
/// The parent's side of one child's shared region (docs/protocol.md section
/// 7): the region and the slots of the loss requests in flight through it.
/// A slot holds a request's posteriors, which the child overwrites with the
/// error signal; it is free again once the reply was copied out. Internal to
/// the actors library.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/shared_region.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

/// Where one request's arrays are in its child's region.
struct shared_slot {
  shared_region* region = nullptr;
  uint64_t offset = 0;
};

/// A region with first-fit slots. The region grows when no gap between the
/// slots in use fits a new one; with at most two slots in use its size stays
/// below three of the largest requests.
class shared_slots {
public:
  /// Slots in `region`, which grows as they need.
  explicit shared_slots(shared_region region);

  /// Returns the region (shared with the channel that passes it to the
  /// child).
  const std::shared_ptr<shared_region>& region() const noexcept { return region_; }

  /// Returns a free slot of `bytes`, page-aligned: the first gap between the
  /// slots in use that fits, else after the last one, growing the region.
  /// Errors: the region's `io_error` when it cannot grow.
  caf::expected<shared_slot> acquire(uint64_t bytes);

  /// Frees the slot at `offset`; no-op for an offset that is not in use.
  void release(uint64_t offset) noexcept;

  /// Returns how many slots are in use.
  size_t in_use() const noexcept { return used_.size(); }

private:
  struct span {
    uint64_t offset;
    uint64_t bytes;
  };

  std::shared_ptr<shared_region> region_;
  /// The slots in use, by offset.
  std::vector<span> used_;
};

} // namespace sprintrt::detail
