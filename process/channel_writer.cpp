#include "process/channel_writer.hpp"

#include <fcntl.h>

#include <boost/asio/write.hpp>

#include "process/pipe_write.hpp"

namespace sprintrt::process {

namespace {

/// Writes as much of `bytes` as the non-blocking pipe `fd` takes now;
/// returns how much (a failure such as EPIPE is left to the io thread's
/// write, which reports it).
size_t write_now(int fd, const protocol::byte_buffer& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write_without_sigpipe(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  return done;
}

} // namespace

void channel_writer::open(boost::asio::io_context& context, int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  std::lock_guard<std::mutex> guard{mutex_};
  pipe_.emplace(context, fd);
}

channel_writer::sent channel_writer::send(protocol::byte_buffer message) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (closed_)
    return {};
  size_t done = 0;
  if (queue_.empty() && !writing_ && pipe_) {
    done = write_now(pipe_->native_handle(), message);
    if (done == message.size())
      return {std::move(message), false};
  }
  if (queue_.empty())
    front_written_ = done;
  queue_.push_back(std::move(message));
  return {std::nullopt, true};
}

void channel_writer::enqueue(protocol::byte_buffer message) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (!closed_)
    queue_.push_back(std::move(message));
}

void channel_writer::pump(written_handler on_written) {
  std::unique_lock<std::mutex> guard{mutex_};
  if (writing_ || !pipe_)
    return;
  if (queue_.empty()) {
    if (close_when_drained_)
      pipe_.reset();
    return;
  }
  writing_ = true;
  // The front stays where it is while the lock is released: other threads
  // only append (a deque's push_back keeps references valid), and only the
  // io thread pops.
  auto& front = queue_.front();
  size_t offset = front_written_;
  guard.unlock();
  // Asio's default completion condition writes at most 64 KiB per call;
  // asking for everything lets one write fill the whole pipe buffer.
  auto everything = [](const boost::system::error_code& ec, size_t) -> size_t {
    return ec ? 0 : size_t{1} << 30;
  };
  boost::asio::async_write(
      *pipe_, boost::asio::buffer(front.data() + offset, front.size() - offset), everything,
      [this, on_written = std::move(on_written)](const boost::system::error_code& ec, size_t) {
        std::unique_lock<std::mutex> guard{mutex_};
        writing_ = false;
        if (closed_)
          return;
        auto done = std::move(queue_.front());
        queue_.pop_front();
        front_written_ = 0;
        guard.unlock();
        on_written(ec, std::move(done));
      });
}

void channel_writer::close() {
  std::lock_guard<std::mutex> guard{mutex_};
  closed_ = true;
  pipe_.reset();
  queue_.clear();
}

} // namespace sprintrt::process
