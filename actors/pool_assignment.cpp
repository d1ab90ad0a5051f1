#include "actors/pool_assignment.hpp"

#include <utility>

namespace sprintrt::detail {

assignment::assignment(std::shared_ptr<worker_load> load, size_t worker, int64_t frames)
    : load_(std::move(load)), worker_(worker), frames_(frames) {
  load_->frames += frames_;
  ++load_->requests;
}

assignment::assignment(assignment&& other) noexcept
    : load_(std::move(other.load_)), worker_(other.worker_), frames_(other.frames_) {
  // std::move of a shared_ptr leaves it empty: `other` counts nothing now.
}

assignment& assignment::operator=(assignment&& other) noexcept {
  if (this != &other) {
    release();
    load_ = std::move(other.load_);
    worker_ = other.worker_;
    frames_ = other.frames_;
  }
  return *this;
}

assignment::~assignment() {
  release();
}

void assignment::release() noexcept {
  if (!load_)
    return;
  load_->frames -= frames_;
  --load_->requests;
  load_.reset();
}

} // namespace sprintrt::detail
