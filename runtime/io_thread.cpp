#include "runtime/io_thread.hpp"

#include <signal.h>

#include <future>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "runtime/child_reaper.hpp"

namespace sprintrt::runtime {

namespace asio = boost::asio;

struct io_thread::impl {
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  child_reaper reaper{io};
  std::thread thread;
  bool stopped = false;

  /// On the io thread: once no child is left or `deadline` passed, kills the
  /// rest and lets the io_context run out of work.
  void finish_when_reaped(std::chrono::steady_clock::time_point deadline,
                          std::shared_ptr<asio::steady_timer> timer) {
    if (reaper.watched() == 0 || std::chrono::steady_clock::now() >= deadline) {
      reaper.kill_all();
      guard.reset();
      // Outstanding operations of channels still open (reads on pipes whose
      // children are gone) would keep run() going: stop explicitly.
      io.stop();
      return;
    }
    timer->expires_after(std::chrono::milliseconds{5});
    timer->async_wait([this, deadline, timer](const boost::system::error_code&) {
      finish_when_reaped(deadline, timer);
    });
  }
};

io_thread::io_thread() : impl_(std::make_unique<impl>()) {
  ::signal(SIGPIPE, SIG_IGN);
  impl_->thread = std::thread{[this] { impl_->io.run(); }};
}

io_thread::~io_thread() {
  stop();
}

asio::io_context& io_thread::context() noexcept {
  return impl_->io;
}

child_reaper& io_thread::reaper() noexcept {
  return impl_->reaper;
}

void io_thread::post(std::function<void()> fn) {
  asio::post(impl_->io, std::move(fn));
}

bool io_thread::running_in_this_thread() const noexcept {
  return impl_->thread.get_id() == std::this_thread::get_id();
}

void io_thread::stop(std::chrono::milliseconds grace) {
  if (impl_->stopped)
    return;
  impl_->stopped = true;
  auto deadline = std::chrono::steady_clock::now() + grace;
  auto timer = std::make_shared<asio::steady_timer>(impl_->io);
  asio::post(impl_->io, [this, deadline, timer] { impl_->finish_when_reaped(deadline, timer); });
  impl_->thread.join();
}

} // namespace sprintrt::runtime
