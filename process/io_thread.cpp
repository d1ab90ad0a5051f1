#include "process/io_thread.hpp"

#include <atomic>
#include <future>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "process/child_reaper.hpp"
#include "process/pipe_write.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::process {

namespace asio = boost::asio;

struct io_thread::impl {
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  child_reaper reaper{io};
  std::thread thread;
  std::atomic<bool> stopped{false};
  /// Ready when `io.run()` returned.
  std::promise<void> ran_out;

  /// On the io thread: once no child is left or `deadline` passed, kills and
  /// reaps the rest, then lets the io_context run out of work, so that the
  /// channels' last handlers (which hand over what their reads got) still
  /// run. `stop` abandons what has not completed shortly after.
  void finish_when_reaped(std::chrono::steady_clock::time_point deadline,
                          std::shared_ptr<asio::steady_timer> timer) {
    if (reaper.watched() == 0 || std::chrono::steady_clock::now() >= deadline) {
      reaper.kill_all();
      guard.reset();
      return;
    }
    timer->expires_after(std::chrono::milliseconds{5});
    timer->async_wait([this, deadline, timer](const boost::system::error_code&) {
      finish_when_reaped(deadline, timer);
    });
  }
};

io_thread::io_thread() : impl_(std::make_unique<impl>()) {
  impl_->thread = std::thread{[this] {
    // The children's pipes are written here: a closed one must give EPIPE,
    // not kill the process (and the process's own SIGPIPE handling is left
    // alone; see pipe_write.hpp).
    block_sigpipe_in_this_thread();
    // A handler that throws (std::bad_alloc, a bug) must neither end the
    // process through std::terminate nor stop the io thread: it is logged
    // and the loop goes on with the next handler (Asio allows `run` to be
    // called again). A channel's own handlers turn what they throw into a
    // failure of that channel (see sprint_channel.cpp); this is the net
    // below them.
    for (;;) {
      try {
        impl_->io.run();
        break;
      } catch (const std::exception& e) {
        logger().error("io thread: a handler threw ({}); going on", e.what());
      } catch (...) {
        logger().error("io thread: a handler threw a non-standard exception; going on");
      }
    }
    impl_->ran_out.set_value();
  }};
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

bool io_thread::stopped() const noexcept {
  return impl_->stopped;
}

void io_thread::stop(std::chrono::milliseconds grace) {
  if (impl_->stopped.exchange(true))
    return;
  auto done = impl_->ran_out.get_future();
  auto deadline = std::chrono::steady_clock::now() + grace;
  auto timer = std::make_shared<asio::steady_timer>(impl_->io);
  asio::post(impl_->io, [this, deadline, timer] { impl_->finish_when_reaped(deadline, timer); });
  // Normally the loop runs out of work right after the last child is
  // reaped. An operation that never completes (a pipe held open by a
  // grandchild of a Sprint child) must not hang the caller.
  if (done.wait_for(grace + kill_wait + std::chrono::seconds{2}) == std::future_status::timeout)
    impl_->io.stop();
  impl_->thread.join();
}

} // namespace sprintrt::process
