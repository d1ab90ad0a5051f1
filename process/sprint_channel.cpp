#include "process/sprint_channel.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/shared_region.hpp"
#include "config/wire_format.hpp"
#include "process/channel_writer.hpp"
#include "process/child_reaper.hpp"
#include "process/child_spawn.hpp"
#include "process/io_thread.hpp"
#include "process/output_tail.hpp"
#include "process/reply_reader.hpp"
#include "sprintrt/logging.hpp"

extern char** environ;

namespace sprintrt::process {

namespace asio = boost::asio;
using descriptor = asio::posix::stream_descriptor;

// -- the channel, on the io thread ------------------------------------------------

namespace {

/// The failure of a channel whose handling of the child's messages threw.
caf::error message_handling_failed(const std::exception& e) {
  return make_error(errc::io_error,
                    std::string{"handling the child's messages failed: "} + e.what());
}

} // namespace

/// The channel: the child's lifetime, its two pipes and its output. All
/// state lives here and is touched only on the io thread, except the writer
/// and the reader's hand-overs, which `send` and `recycle` use from their
/// callers' threads (each guards itself). Pending Asio operations hold a
/// shared_ptr to it, so it outlives every handler. Its Asio objects
/// (descriptors, timer) exist only between `start` and `finish`, so a
/// finished channel may outlive the io thread.
///
/// Ending: the reaper reports the child's exit. Reads may still be pending
/// then, and Asio may already have read bytes for them (into the reader's
/// prepared space) without having run their handlers yet. So the reads are
/// cancelled, their handlers commit what they got, and only when no read is
/// pending does `finish` drain the rest of the pipes and make the report:
/// a message the child wrote just before exiting is never lost.
struct sprint_channel::impl : std::enable_shared_from_this<impl> {
  impl(io_thread& io_thread, sprint_options options, std::string child_name,
       channel_events callbacks, std::shared_ptr<const shared_region> region)
      : io(io_thread), opts(std::move(options)), name(std::move(child_name)),
        events(std::move(callbacks)), shared_memory(std::move(region)),
        reader(config::wire_framing(opts.framing)), tail(name, opts.child_output) {}

  /// Passes each message the reader completes on to `events.message`.
  const reply_reader::message_handler report_message = [this](protocol::byte_buffer message) {
    if (events.message)
      events.message(std::move(message));
  };

  io_thread& io;
  sprint_options opts;
  std::string name;
  channel_events events;
  /// The region offered to the child, held until it is started.
  std::shared_ptr<const shared_region> shared_memory;
  channel_writer writer;
  reply_reader reader;
  output_tail tail;
  std::optional<asio::steady_timer> timer;
  std::optional<descriptor> from_child;
  std::optional<descriptor> output;
  std::array<char, 4096> output_chunk;
  pid_t pid = -1;
  bool reading_messages = false;
  bool reading_output = false;
  /// `stop` was called.
  bool stopping = false;
  /// The wait status once the child was reaped (`not_reaped` once it was
  /// given up on).
  std::optional<int> reaped;
  /// SIGKILL was sent (the give-up timer runs).
  bool killed = false;
  /// The down report was made; nothing else happens.
  bool finished = false;
  caf::error cause;
  /// Why the child is killed if it lingers after closing its message pipe
  /// cleanly; no cause when it exits by itself in time, so that its end
  /// reads the same whichever of the end of the pipe and the exit is seen
  /// first (a batch groups its failures by cause).
  caf::error lingered;

  void start() {
    // stop() may have begun between open() and now; its reaper no longer
    // listens, so a child started now would never be reaped.
    if (io.stopped()) {
      cause = make_error(errc::cancelled, "the io thread is stopping: no new children");
      finish(-1);
      return;
    }
    // The file of `childOutput` {"file": DIR}: opened here (once per child,
    // a short wait at most); its writes go to the writer thread.
    if (auto err = tail.open()) {
      cause = make_error(errc::spawn_failed, error_message(err));
      finish(-1);
      return;
    }
    // Spawning here, on the io thread, is what makes PR_SET_PDEATHSIG
    // (child_spawn.hpp) mean "the trainer ended": the kernel sends it when
    // the spawning thread ends, and the io thread ends only after
    // `io_thread::stop` has ended and reaped every child.
    auto child = spawn_sprint_child(opts, environ, shared_memory ? shared_memory->fd() : -1);
    shared_memory.reset();
    if (!child) {
      cause = std::move(child.error());
      finish(-1);
      return;
    }
    pid = child->pid;
    timer.emplace(io.context());
    writer.open(io.context(), child->to_child.release());
    from_child.emplace(io.context(), child->from_child.release());
    if (child->output) // none when the child writes to our stdout itself
      output.emplace(io.context(), child->output.release());
    logger().debug("[{}] started pid {}", name, pid);
    if (events.started)
      events.started(pid, child->argv);
    read_messages();
    read_output();
    pump_writes();
    io.reaper().watch(pid, [self = shared_from_this()](int status) { self->on_reaped(status); });
  }

  // -- writing ----------------------------------------------------------------------

  /// Writes the queued messages, one after another.
  void pump_writes() {
    writer.pump([self = shared_from_this()](const boost::system::error_code& ec,
                                            protocol::byte_buffer done) {
      if (ec) {
        self->fail(make_error(errc::child_failed, "writing to the child failed: " + ec.message()));
        return;
      }
      if (self->events.sent)
        self->events.sent(std::move(done));
      self->pump_writes();
    });
  }

  // -- reading ----------------------------------------------------------------------

  void read_messages() {
    if (!from_child || reaped)
      return;
    auto room = reader.prepare(64 * 1024);
    reading_messages = true;
    from_child->async_read_some(
        asio::buffer(room.data(), room.size()),
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          self->reading_messages = false;
          if (self->finished)
            return;
          try {
            // Bytes read count even if the read was cancelled afterwards.
            bool intact = n == 0 || self->received(n);
            if (ec == asio::error::eof)
              self->on_end_of_messages();
            else if (ec && ec != asio::error::operation_aborted)
              self->fail(
                  make_error(errc::child_failed, "reading from the child failed: " + ec.message()));
            else if (intact && !ec)
              self->read_messages();
          } catch (const std::exception& e) {
            // Out of memory, or a bug: this child's stream can no longer be
            // trusted; its requests are charged through its down report.
            self->fail(message_handling_failed(e));
          }
          self->finish_if_done();
        });
  }

  /// Commits `n` bytes received in place; false after a framing error.
  bool received(size_t n) { return accepted(reader.commit(n, report_message)); }

  /// Fails the channel if the stream broke the framing (it cannot be trusted
  /// after); the messages completed before the broken part were reported.
  bool accepted(caf::error framing_error) {
    if (framing_error) {
      fail(
          make_error(errc::child_failed, "the child broke the protocol: " + render(framing_error)));
      return false;
    }
    return true;
  }

  void on_end_of_messages() {
    from_child.reset();
    if (stopping || reaped)
      return;
    if (reader.partial_bytes() > 0) {
      if (!cause)
        cause = make_error(errc::child_failed,
                           "the child closed its pipe in the middle of a message (" +
                               std::to_string(reader.partial_bytes()) + " bytes received)");
    } else {
      lingered = make_error(errc::child_failed, "the child closed its pipe");
    }
    // Usually the child is exiting; give it the grace period to do so, so its
    // own exit status shows up in the report rather than our SIGKILL.
    kill_after(opts.exit_grace);
  }

  void read_output() {
    if (!output || reaped)
      return;
    reading_output = true;
    output->async_read_some(
        asio::buffer(output_chunk),
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          self->reading_output = false;
          if (self->finished)
            return;
          self->tail.append({self->output_chunk.data(), n});
          if (!ec)
            self->read_output(); // else EOF, cancelled or closed
          self->finish_if_done();
        });
  }

  // -- ending -----------------------------------------------------------------------

  void fail(caf::error err) {
    if (finished)
      return;
    if (!cause)
      cause = std::move(err);
    kill_now();
  }

  /// Sends SIGKILL, and gives up on the child if it has not exited
  /// `kill_wait` later: the down report then follows without it, so that no
  /// request waits for a child stuck in the kernel (it is still reaped
  /// whenever it exits; see `on_reaped`).
  void kill_now() {
    if (finished || reaped || pid < 0)
      return;
    if (!cause && lingered)
      cause = std::move(lingered);
    io.reaper().kill(pid);
    if (killed || !timer)
      return;
    killed = true;
    timer->expires_after(kill_wait);
    timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec && !self->finished && !self->reaped)
        self->give_up();
    });
  }

  void give_up() {
    logger().error("[{}] pid {} did not exit within {} ms of SIGKILL (stuck in the kernel?): "
                   "giving up on it; it is reaped when it exits",
                   name, pid, kill_wait.count());
    if (!cause)
      cause = make_error(errc::child_failed, "the child could not be killed");
    io.reaper().abandon(pid);
    on_reaped(not_reaped);
  }

  void kill_after(std::chrono::milliseconds delay) {
    // Once killed, the timer waits to give up on the child: re-arming it
    // would cancel that wait, and a child stuck in the kernel would never
    // be reported down.
    if (!timer || killed)
      return;
    timer->expires_after(delay);
    timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec)
        self->kill_now();
    });
  }

  void stop(std::chrono::milliseconds grace, protocol::byte_buffer exit_message) {
    if (finished || stopping)
      return;
    stopping = true;
    writer.enqueue(std::move(exit_message));
    writer.close_when_drained();
    pump_writes();
    if (pid >= 0)
      kill_after(grace);
  }

  /// The child was reaped: stop reading, then finish once pending reads
  /// have handed over what they already got.
  void on_reaped(int wait_status) {
    if (reaped) {
      // Given up on after SIGKILL (see `kill_now`); now it exited at last,
      // or the shutdown gave up on it too.
      if (wait_status != not_reaped)
        logger().info("[{}] pid {}, given up on, has exited and was reaped", name, pid);
      return;
    }
    reaped = wait_status;
    if (timer)
      timer->cancel();
    if (reading_messages && from_child)
      from_child->cancel();
    if (reading_output && output)
      output->cancel();
    finish_if_done();
  }

  void finish_if_done() {
    if (reaped && !reading_messages && !reading_output)
      finish(*reaped);
  }

  /// Reads whatever is left in a non-blocking pipe of a dead child: at
  /// most 64 MiB (more than the pipe holds), in case a grandchild that
  /// inherited the pipe keeps writing.
  template <class OnBytes>
  static void drain(std::optional<descriptor>& fd, OnBytes&& on_bytes) {
    if (!fd)
      return;
    std::array<char, 65536> chunk;
    for (size_t total = 0; total < (size_t{64} << 20); total += chunk.size()) {
      ssize_t n = ::read(fd->native_handle(), chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0 || !on_bytes(chunk.data(), static_cast<size_t>(n)))
        return;
    }
  }

  /// The child is gone (or never started) and no read is pending: report
  /// what is left, release every Asio object, and make the one down report.
  void finish(int wait_status) {
    if (finished)
      return;
    // The child's last messages and output may still sit in the pipes.
    try {
      drain(from_child, [this](const char* bytes, size_t n) {
        return accepted(
            reader.feed({reinterpret_cast<const std::byte*>(bytes), n}, report_message));
      });
    } catch (const std::exception& e) {
      // As in the read handler; and the down report must still be made.
      if (!cause)
        cause = message_handling_failed(e);
    }
    drain(output, [this](const char* bytes, size_t n) {
      tail.append({bytes, n});
      return true;
    });
    tail.flush();
    finished = true;
    timer.reset();
    writer.close();
    from_child.reset();
    output.reset();
    child_down report{std::move(cause), pid, wait_status, tail.text()};
    if (pid >= 0)
      logger().debug("[{}] pid {} {}", name, pid, report.describe());
    if (events.down)
      events.down(std::move(report));
  }
};

// -- the handle -------------------------------------------------------------------

sprint_channel sprint_channel::open(io_thread& io, sprint_options opts, std::string name,
                                    channel_events events,
                                    std::shared_ptr<const shared_region> shared_memory) {
  auto p = std::make_shared<impl>(io, std::move(opts), std::move(name), std::move(events),
                                  std::move(shared_memory));
  if (io.stopped()) {
    // Nothing would ever run on the io thread: report at once, from here.
    p->cause = make_error(errc::cancelled, "the io thread is stopped: no new children");
    p->finish(-1);
  } else {
    asio::post(io.context(), [p] { p->start(); });
  }
  return sprint_channel{std::move(p)};
}

std::optional<protocol::byte_buffer> sprint_channel::send(protocol::byte_buffer message,
                                                          size_t max_reply_size) const {
  // The limit first: the reply may be read as soon as the request is written.
  impl_->reader.expect(max_reply_size);
  auto outcome = impl_->writer.send(std::move(message));
  if (outcome.queued)
    asio::post(impl_->io.context(), [p = impl_] {
      if (!p->finished)
        p->pump_writes();
    });
  return std::move(outcome.written);
}

void sprint_channel::recycle(protocol::byte_buffer buffer) const {
  impl_->reader.recycle(std::move(buffer));
}

void sprint_channel::kill(caf::error cause) const {
  asio::post(impl_->io.context(),
             [p = impl_, c = std::move(cause)]() mutable { p->fail(std::move(c)); });
}

void sprint_channel::stop(std::chrono::milliseconds grace,
                          protocol::byte_buffer exit_message) const {
  asio::post(impl_->io.context(), [p = impl_, grace, m = std::move(exit_message)]() mutable {
    p->stop(grace, std::move(m));
  });
}

} // namespace sprintrt::process
