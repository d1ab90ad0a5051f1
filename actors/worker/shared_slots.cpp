#include "actors/worker/shared_slots.hpp"

#include <unistd.h>

#include <algorithm>

namespace sprintrt::detail {

shared_slots::shared_slots(shared_region region)
    : region_(std::make_shared<shared_region>(std::move(region))) {}

caf::expected<shared_slot> shared_slots::acquire(uint64_t bytes) {
  static const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t rounded = (bytes + page - 1) / page * page;
  uint64_t start = 0;
  auto pos = used_.begin();
  for (; pos != used_.end(); ++pos) {
    if (pos->offset - start >= rounded)
      break;
    start = pos->offset + pos->bytes;
  }
  if (auto err = region_->grow(start + rounded))
    return err;
  used_.insert(pos, span{start, rounded});
  return shared_slot{region_.get(), start};
}

void shared_slots::release(uint64_t offset) noexcept {
  auto pos =
      std::find_if(used_.begin(), used_.end(), [&](const span& x) { return x.offset == offset; });
  if (pos != used_.end())
    used_.erase(pos);
}

} // namespace sprintrt::detail
