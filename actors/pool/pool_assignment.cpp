#include "actors/pool/pool_assignment.hpp"

#include <utility>

namespace sprintrt::detail {

double worker_load::frames_per_second() const noexcept {
  double seconds = std::chrono::duration<double>(busy).count();
  if (seconds < 0.01 || done_frames <= 0)
    return 0;
  return static_cast<double>(done_frames) / seconds;
}

assignment::assignment(std::shared_ptr<worker_load> load, size_t worker, int64_t frames)
    : load_(std::move(load)), worker_(worker), frames_(frames) {
  load_->frames += frames_;
  if (load_->requests++ == 0)
    load_->busy_since = std::chrono::steady_clock::now();
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
  uncount(true);
}

void assignment::withdraw() noexcept {
  uncount(false);
}

void assignment::uncount(bool done) noexcept {
  if (!load_)
    return;
  load_->frames -= frames_;
  if (done)
    load_->done_frames += frames_;
  // A busy period that ends with a withdrawal (an unavailable worker) does
  // not count: the time was spent failing, not computing, and would lower
  // the worker's measured speed for good.
  if (--load_->requests == 0 && done)
    load_->busy += std::chrono::steady_clock::now() - load_->busy_since;
  load_.reset();
}

} // namespace sprintrt::detail
