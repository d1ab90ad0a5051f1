#include "tools/sprintrt/progress_bar.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace sprintrt::cli {

progress_bar::progress_bar(std::string label, size_t total, std::string unit, size_t min_total)
    : label_(std::move(label)), total_(total), unit_(std::move(unit)),
      enabled_(::isatty(STDERR_FILENO) == 1 && total >= min_total) {}

progress_bar::~progress_bar() {
  end_line();
}

void progress_bar::end_line() {
  if (drawn_)
    std::fputc('\n', stderr);
  drawn_ = false;
  enabled_ = false;
}

void progress_bar::update(size_t done) {
  if (!enabled_)
    return;
  constexpr size_t width = 30;
  done = std::min(done, total_);
  size_t filled = total_ == 0 ? width : done * width / total_;
  std::string bar(filled, '#');
  bar.append(width - filled, '-');
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s [%s] %zu/%zu %s  %.1f s", label_.c_str(), bar.c_str(), done, total_,
               unit_.c_str(), seconds);
  std::fflush(stderr);
  drawn_ = true;
}

progress_poller::progress_poller(progress_bar& bar, std::function<size_t()> count) : bar_(bar) {
  if (!bar_.enabled())
    return;
  thread_ = std::thread{[this, count = std::move(count)] {
    while (!done_) {
      bar_.update(count());
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    }
  }};
}

progress_poller::~progress_poller() {
  done_ = true;
  if (thread_.joinable())
    thread_.join();
  bar_.finish();
  bar_.end_line();
}

} // namespace sprintrt::cli
