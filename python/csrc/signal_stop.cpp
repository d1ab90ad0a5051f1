#include "signal_stop.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

/// Returns whether this is Python's main thread (where signal handlers
/// run). With the GIL held.
bool on_main_thread() {
  static const auto main_ident =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  return PyThread_get_thread_ident() == main_ident;
}

/// Set while this thread runs Python's signal handlers for a waiting call.
/// A handler that calls sprintrt again waits without polling: handlers
/// must not run inside handlers.
thread_local bool running_handlers = false;

} // namespace

signal_stop::signal_stop() {
  if (running_handlers || !on_main_thread())
    return;
  // Runs on the waiting thread without the GIL; the handlers run with it.
  stop_source source{[raised = raised_] {
    py::gil_scoped_acquire gil;
    running_handlers = true;
    int status = PyErr_CheckSignals();
    running_handlers = false;
    if (status == 0)
      return false;
    PyErr_Fetch(&raised->type, &raised->value, &raised->traceback);
    return true;
  }};
  token_ = source.get_token();
}

signal_stop::~signal_stop() {
  Py_XDECREF(raised_->type);
  Py_XDECREF(raised_->value);
  Py_XDECREF(raised_->traceback);
}

void signal_stop::raise_if_interrupted() {
  if (!raised_->type)
    return;
  PyErr_Restore(raised_->type, raised_->value, raised_->traceback);
  *raised_ = {};
  throw py::error_already_set();
}

} // namespace sprintrt::python
