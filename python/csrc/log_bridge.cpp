#include "log_bridge.hpp"
#include "sprintrt/logging.hpp"

#include <spdlog/details/registry.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace sprintrt::python {

namespace py = pybind11;

namespace {

/// Python `logging`'s number for an spdlog level (trace below DEBUG, with no
/// name of its own in `logging`).
int logging_level(spdlog::level::level_enum level) {
  switch (level) {
  case spdlog::level::trace:
    return 5;
  case spdlog::level::debug:
    return 10;
  case spdlog::level::info:
    return 20;
  case spdlog::level::warn:
    return 30;
  case spdlog::level::err:
    return 40;
  default:
    return 50;
  }
}

/// One record on its way to Python's `logging`.
struct log_record {
  /// The Python logger's name ("sprintrt" or below it).
  std::string logger;
  /// `logging`'s level number.
  int level;
  /// The message, without spdlog's time and level.
  std::string text;
};

/// The Python logger for a record of the spdlog logger `name`: the same name
/// when it is "sprintrt" or below it, else a child of "sprintrt".
std::string python_logger(spdlog::string_view_t name) {
  std::string result{name.data(), name.size()};
  if (result.empty())
    return "sprintrt";
  if (result == "sprintrt" || result.rfind("sprintrt.", 0) == 0)
    return result;
  return "sprintrt." + result;
}

/// The records between the loggers (any thread) and the Python thread that
/// delivers them. Its mutex is only ever held for a few instructions and
/// never while waiting for anything else (the GIL included).
class log_queue {
public:
  /// Queues `record`, dropping the oldest one if the queue is full; once
  /// closed, writes it to stderr instead.
  void push(log_record record) {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      if (!closed_) {
        if (records_.size() >= log_queue_capacity) {
          records_.pop_front();
          ++dropped_;
        }
        records_.push_back(std::move(record));
        available_.notify_one();
        return;
      }
    }
    std::fprintf(stderr, "%s: %s\n", record.logger.c_str(), record.text.c_str());
  }

  /// Waits until records are queued or the queue is closed; returns whether
  /// it is still open. Called without the GIL.
  bool wait() {
    std::unique_lock<std::mutex> lock{mutex_};
    available_.wait(lock, [this] { return closed_ || !records_.empty(); });
    return !closed_;
  }

  /// Takes every queued record, oldest first, preceded by a warning that
  /// counts the records dropped since the last take, if any were.
  std::vector<log_record> take() {
    std::deque<log_record> taken;
    size_t dropped = 0;
    {
      std::lock_guard<std::mutex> guard{mutex_};
      taken.swap(records_);
      std::swap(dropped, dropped_);
    }
    std::vector<log_record> result;
    result.reserve(taken.size() + 1);
    if (dropped > 0)
      result.push_back({"sprintrt", 30,
                        std::to_string(dropped) +
                            " log record(s) dropped: the queue for "
                            "Python's logging was full (" +
                            std::to_string(log_queue_capacity) +
                            " records) because Python did not take them fast enough"});
    std::move(taken.begin(), taken.end(), std::back_inserter(result));
    return result;
  }

  /// Wakes the waiting thread for good; later records go to stderr.
  void close() {
    std::lock_guard<std::mutex> guard{mutex_};
    closed_ = true;
    available_.notify_all();
  }

  /// Takes the queue's lock before a fork (see `lock_logging_for_fork`).
  void lock_for_fork() { mutex_.lock(); }

  /// Releases it in the parent after the fork.
  void unlock_after_fork() { mutex_.unlock(); }

  /// In the forked child, with the lock taken before the fork: drops the
  /// parent's records (the parent delivers them), makes a new condition
  /// variable and releases the lock.
  void reset_in_child() {
    records_.clear();
    dropped_ = 0;
    // The parent's delivering thread may have been waiting on the old one:
    // glibc would wait for that waiter, which the child does not have, to
    // notify or destroy it. So its storage is reused without destroying it.
    new (&available_) std::condition_variable;
    mutex_.unlock();
  }

private:
  std::mutex mutex_;
  std::condition_variable available_;
  std::deque<log_record> records_;
  size_t dropped_ = 0;
  bool closed_ = false;
};

/// Never destroyed: loggers on other threads may log during static
/// destruction.
log_queue& queue() {
  static auto* instance = new log_queue;
  return *instance;
}

/// The sink of both loggers: formats nothing but the payload (Python's
/// handlers format), and only queues.
class queue_sink final : public spdlog::sinks::sink {
public:
  void log(const spdlog::details::log_msg& msg) override {
    queue().push({python_logger(msg.logger_name), logging_level(msg.level),
                  std::string{msg.payload.data(), msg.payload.size()}});
  }

  void flush() override {
    // Nothing buffered here: the Python thread delivers.
  }

  void set_pattern(const std::string&) override {
    // The records carry the payload only.
  }

  void set_formatter(std::unique_ptr<spdlog::formatter>) override {
    // As set_pattern.
  }
};

/// `text` as a Python str, undecodable bytes replaced.
py::str decoded(const std::string& text) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
}

} // namespace

void install_log_bridge() {
  auto sink = std::make_shared<queue_sink>();
  auto main_logger = std::make_shared<spdlog::logger>("sprintrt", sink);
  auto child_logger = std::make_shared<spdlog::logger>("sprintrt.child", sink);
  for (auto* logger : {main_logger.get(), child_logger.get()})
    logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(main_logger);
  set_logger(main_logger);
  spdlog::drop("sprintrt.child");
  spdlog::register_logger(child_logger);
}

namespace {

// spdlog's registry takes its lock at each `spdlog::get` (the io thread
// looks its logger up per line of a child's output) and does not offer it.
// A lock held at a fork by a thread the child does not have would stay held
// there, and `spdlog::get` or `set_log_level` would hang; so the fork
// handlers take it too. It is private: reached through the one way C++
// allows, naming a private member in an explicit instantiation.
struct registry_lock {
  using type = std::mutex spdlog::details::registry::*;
  friend type member_of(registry_lock);
};

template <class Tag, typename Tag::type Member>
struct private_member {
  friend typename Tag::type member_of(Tag) { return Member; }
};

template struct private_member<registry_lock, &spdlog::details::registry::logger_map_mutex_>;

std::mutex& spdlog_registry_lock() {
  return spdlog::details::registry::instance().*member_of(registry_lock{});
}

} // namespace

void lock_logging_for_fork() noexcept {
  queue().lock_for_fork();
  spdlog_registry_lock().lock();
}

void unlock_logging_after_fork() noexcept {
  spdlog_registry_lock().unlock();
  queue().unlock_after_fork();
}

void reset_logging_in_child() noexcept {
  spdlog_registry_lock().unlock();
  queue().reset_in_child();
}

void bind_logging(py::module_& m) {
  m.def(
      "set_log_level",
      [](const std::string& level) {
        // spdlog reads unknown names as "off": check them here.
        static const std::vector<std::string> names{"trace", "debug", "info",     "warning",
                                                    "warn",  "error", "critical", "off"};
        if (std::find(names.begin(), names.end(), level) == names.end())
          throw py::value_error("level must be one of trace, debug, info, warning, warn, error, "
                                "critical, off; got '" +
                                level + "'");
        spdlog::set_level(spdlog::level::from_str(level == "warning" ? "warn" : level));
      },
      py::arg("level"),
      "Sets the level of sprintrt's spdlog loggers (records below it are never formatted nor "
      "handed to Python): info by default. The package's set_log_level also sets the "
      "`sprintrt` logger's level.");
  m.attr("_log_queue_capacity") = log_queue_capacity;
  m.def(
      "_wait_for_log_records",
      [] {
        // Not gil_scoped_release: its destructor would take the GIL back, and
        // a thread that takes it during finalization is ended by unwinding,
        // which must not pass a destructor.
        PyThreadState* state = PyEval_SaveThread();
        bool open = queue().wait();
        PyEval_RestoreThread(state);
        return open;
      },
      "Waits, without the GIL, until log records are queued; False once the queue is closed.");
  m.def(
      "_take_log_records",
      [] {
        py::list result;
        for (auto& record : queue().take())
          result.append(py::make_tuple(decoded(record.logger), record.level, decoded(record.text)));
        return result;
      },
      "Takes the queued log records, oldest first, as (logger name, logging level, text).");
  m.def(
      "_close_log_queue", [] { queue().close(); },
      "Wakes the delivering thread for good; records logged later go to stderr.");
  m.def(
      "_log",
      [](const std::string& logger, const std::string& level, const std::string& text) {
        auto target = spdlog::get(logger);
        if (!target)
          throw py::value_error("no spdlog logger '" + logger + "'");
        auto parsed = spdlog::level::from_str(level);
        if (parsed == spdlog::level::off && level != "off")
          throw py::value_error("no spdlog level '" + level + "'");
        target->log(parsed, text);
      },
      py::arg("logger"), py::arg("level"), py::arg("text"),
      "Logs `text` through the spdlog logger `logger` at `level` (spdlog's name), as the runtime "
      "does (for tests).");
}

} // namespace sprintrt::python
