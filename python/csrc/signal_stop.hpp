#pragma once

/// @file
/// Ctrl-C during a call that waits without the GIL. Python's C-level signal
/// handler only notes a signal; the Python-level handler (which raises
/// `KeyboardInterrupt`) runs when the main thread next calls
/// `PyErr_CheckSignals` with the GIL. A call that waits in C++ for a batch
/// would never do that, so a trainer could not be stopped until the batch
/// (up to `replyTimeout` per segment) ended. `signal_stop` gives the wait a
/// stop token whose poll hook, on the main thread, takes the GIL every
/// `stop_token::poll_interval` and runs the handlers: one that raised
/// requests the stop, the call is cancelled in the pool, and the exception
/// is raised once the call has returned.

#include <pybind11/pybind11.h>

#include <memory>

#include "sprintrt/stop_token.hpp"

namespace sprintrt::python {

/// The stop of one call from Python. Made with the GIL held, before the
/// call releases it; `token()` is polled while the GIL is released.
class signal_stop {
public:
  /// A stop for a call on the current thread: one that Python signals can
  /// request on the main thread; one that never stops elsewhere (Python
  /// runs signal handlers only on the main thread) or inside a signal
  /// handler that a waiting call runs.
  signal_stop();

  /// Drops an exception that was never raised (with the GIL held).
  ~signal_stop();

  signal_stop(const signal_stop&) = delete;
  signal_stop& operator=(const signal_stop&) = delete;

  /// Returns the token to give the call.
  stop_token token() const { return token_; }

  /// Whether a signal handler raised during the call (with the GIL held).
  bool interrupted() const { return raised_->type != nullptr; }

  /// Raises the exception a signal handler raised during the call, if one
  /// did (with the GIL held, after the call returned). The call's own result
  /// is dropped then: the interrupt wins, as it would in Python code.
  void raise_if_interrupted();

private:
  /// What a signal handler raised (`PyErr_Fetch`'s three references).
  struct raised {
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
  };

  std::shared_ptr<raised> raised_ = std::make_shared<raised>();
  stop_token token_;
};

} // namespace sprintrt::python
