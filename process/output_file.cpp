#include "process/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "process/unique_fd.hpp"
#include "sprintrt/logging.hpp"

namespace sprintrt::process {

struct output_file::state {
  std::string path;
  unique_fd fd;
  /// Bytes dropped since the last accepted write (guarded by the writer's
  /// mutex).
  size_t dropped = 0;
  /// A write failed: the rest is not written (only the writer touches it).
  bool failed = false;
};

namespace {

/// The one writer thread and its queue. Made on first use and never
/// destroyed (a detached thread may still be writing at exit); the
/// `exit_flush` below gives queued bytes a moment to reach their files when
/// the process exits normally.
class writer {
public:
  writer() {
    std::thread{[this] { run(); }}.detach();
  }

  void push(const std::shared_ptr<output_file::state>& file, std::string_view bytes) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (queued_ + bytes.size() > output_file::queue_budget) {
      file->dropped += bytes.size();
      return;
    }
    std::string note;
    if (file->dropped > 0) {
      note = "\n[sprintrt: " + std::to_string(file->dropped) +
             " bytes of this output were dropped: the file could not keep up]\n";
      file->dropped = 0;
    }
    queued_ += note.size() + bytes.size();
    // Chunks of one file arrive in a row: one write for all of them.
    if (queue_.empty() || queue_.back().file != file)
      queue_.push_back({file, {}});
    queue_.back().bytes.append(note).append(bytes);
    wake_.notify_all();
  }

  bool flush(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> guard{mutex_};
    return drained_.wait_for(guard, limit, [this] { return queued_ == 0; });
  }

private:
  struct job {
    std::shared_ptr<output_file::state> file;
    std::string bytes;
  };

  void run() {
    std::unique_lock<std::mutex> guard{mutex_};
    for (;;) {
      wake_.wait(guard, [this] { return !queue_.empty(); });
      auto next = std::move(queue_.front());
      queue_.pop_front();
      guard.unlock();
      write_all(*next.file, next.bytes);
      // The last reference may be this one: the descriptor closes here, not
      // on the io thread.
      next.file.reset();
      guard.lock();
      queued_ -= next.bytes.size();
      if (queued_ == 0)
        drained_.notify_all();
    }
  }

  static void write_all(output_file::state& file, std::string_view bytes) {
    while (!file.failed && !bytes.empty()) {
      const ssize_t n = ::write(file.fd.get(), bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        file.failed = true;
        logger().error("childOutput: writing to '{}' failed ({}); the rest of this child's "
                       "output is not written there",
                       file.path, n < 0 ? std::strerror(errno) : "nothing written");
        return;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;
  std::deque<job> queue_;
  size_t queued_ = 0;
};

writer& the_writer() {
  static writer* instance = new writer;
  static struct exit_flush {
    ~exit_flush() { instance->flush(std::chrono::seconds{2}); }
  } at_exit;
  return *instance;
}

} // namespace

caf::expected<output_file> output_file::open(const std::string& path) {
  std::error_code ec;
  const auto dir = std::filesystem::path{path}.parent_path();
  if (!dir.empty())
    std::filesystem::create_directories(dir, ec);
  if (ec)
    return make_error(errc::io_error, "childOutput: cannot create the directory '" + dir.string() +
                                          "': " + ec.message());
  unique_fd fd{::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
  if (!fd)
    return make_error(errc::io_error,
                      "childOutput: cannot open '" + path + "': " + std::strerror(errno));
  auto s = std::make_shared<state>();
  s->path = path;
  s->fd = std::move(fd);
  the_writer();
  return output_file{std::move(s)};
}

void output_file::write(std::string_view bytes) {
  if (!bytes.empty())
    the_writer().push(state_, bytes);
}

const std::string& output_file::path() const {
  return state_->path;
}

bool flush_output_files(std::chrono::milliseconds limit) {
  return the_writer().flush(limit);
}

} // namespace sprintrt::process
