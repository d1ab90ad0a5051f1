#include "binding_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace sprintrt::python {

namespace {

// --- Python objects held by C++ ------------------------------------------------
//
// A borrowed array must stay alive while any worker may read it, and the last
// reader may be an actor thread, long after the call that lent it returned
// (a segment that timed out is still being written to its child). That
// thread must not take the GIL: it would wait for Python, and a Python thread
// waiting for the actor system would never give it back. So the last owner
// only queues the object, and Python threads release the queue when they
// next call in, holding the GIL anyway.

std::mutex release_mutex;

/// Never destroyed: an actor thread may still queue into it at exit.
std::vector<PyObject*>& release_queue() {
  static auto* queue = new std::vector<PyObject*>;
  return *queue;
}

/// An owner for `object`: the last copy queues it for release.
std::shared_ptr<const void> hold_until_released(py::object object) {
  PyObject* held = object.release().ptr();
  return std::shared_ptr<const void>(held, [](PyObject* p) {
    std::lock_guard<std::mutex> guard{release_mutex};
    try {
      release_queue().push_back(p);
    } catch (const std::bad_alloc&) {
      // Out of memory in a destructor: leak the object rather than end the
      // process (or touch it without the GIL).
    }
  });
}

using float32_array = py::array_t<float, py::array::c_style | py::array::forcecast>;

/// `array` as an aligned C-contiguous float32 array: itself if it is one,
/// else a converted copy.
float32_array as_float32(const py::array& array, const char* name) {
  auto values = float32_array::ensure(array);
  if (!values)
    throw py::type_error(std::string{name} + " must be a float array, got dtype " +
                         py::str(array.dtype()).cast<std::string>());
  // numpy marks a buffer at an odd offset unaligned; a float* must not be.
  if (reinterpret_cast<uintptr_t>(values.data()) % alignof(float) != 0) {
    float32_array aligned{std::vector<py::ssize_t>(values.shape(), values.shape() + values.ndim())};
    std::memcpy(aligned.mutable_data(), values.data(), values.nbytes());
    return aligned;
  }
  return values;
}

std::vector<size_t> shape_of(const py::array& array) {
  return {array.shape(), array.shape() + array.ndim()};
}

/// A tensor over `values`' memory, which it keeps alive. numpy's memory is
/// only read (a read-only array is fine): the error signal always goes into
/// storage of its own.
tensor borrow(float32_array values) {
  auto* data = const_cast<float*>(values.data());
  auto count = static_cast<size_t>(values.size());
  auto shape = shape_of(values);
  auto storage = std::make_shared<float_buffer>(data, count, hold_until_released(values));
  return *tensor::from_storage(std::move(storage), std::move(shape));
}

/// `sprintrt.Error`, once `bind_errors` made it (module state: the type
/// lives as long as the module).
PyObject* error_type = nullptr;

/// A `sprintrt.Error` of `code` and `message`.
py::object error_of(const std::string& code, const std::string& message) {
  py::object err = py::reinterpret_borrow<py::object>(error_type)(message);
  err.attr("code") = code;
  return err;
}

} // namespace

[[noreturn]] void raise(const caf::error& err) {
  throw error_exception{code_name(err), render(err)};
}

std::string code_name(const caf::error& err) {
  return err.category() == error_category ? to_string(static_cast<errc>(err.code()))
                                          : std::string{"unknown_error"};
}

py::object error_object(const caf::error& err) {
  return error_of(code_name(err), render(err));
}

void bind_errors(py::module_& m) {
  static py::exception<error_exception> type(m, "Error", PyExc_RuntimeError);
  error_type = type.ptr();
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown)
        std::rethrow_exception(thrown);
    } catch (const error_exception& e) {
      PyErr_SetObject(error_type, error_of(e.code, e.message).ptr());
    }
  });
}

sprint_options parse_options_json(const std::string& options_json) {
  auto opts = parse_options(options_json);
  if (!opts)
    raise(opts.error());
  return std::move(*opts);
}

void release_deferred_objects() {
  std::vector<PyObject*> released;
  {
    std::lock_guard<std::mutex> guard{release_mutex};
    released.swap(release_queue());
  }
  // Outside the lock: a decref may run arbitrary Python code.
  for (PyObject* p : released)
    Py_DECREF(p);
}

void lock_release_queue_for_fork() noexcept {
  release_mutex.lock();
}

void unlock_release_queue_after_fork() noexcept {
  // In the child as in the parent: the forking thread took it, and the
  // objects queued are the child's copies, released with its next call.
  release_mutex.unlock();
}

tensor borrow_float32(const py::array& array, const char* name) {
  return borrow(as_float32(array, name));
}

tensor copy_float32(const py::array& array, const char* name) {
  auto values = as_float32(array, name);
  // A converted array is a copy already, which nobody else sees.
  if (!values.is(array))
    return borrow(std::move(values));
  auto result = tensor::zeros(shape_of(values));
  std::copy(values.data(), values.data() + values.size(), result.data());
  return result;
}

batch batch_of(const py::array& log_posteriors, const py::array& seq_lengths,
               std::vector<std::string> tags, input how) {
  require_rank(log_posteriors, 3, "log_posteriors", "time, batch, dim");
  batch b;
  b.seq_lengths = integers_1d(seq_lengths, "seq_lengths", "batch");
  b.log_posteriors = how == input::borrowed ? borrow_float32(log_posteriors, "log_posteriors")
                                            : copy_float32(log_posteriors, "log_posteriors");
  b.tags = std::move(tags);
  return b;
}

py::array_t<float> to_numpy(tensor t) {
  auto storage = std::make_unique<float_storage>(t.storage());
  float* data = (*storage)->data();
  py::capsule owner{storage.release(), [](void* p) { delete static_cast<float_storage*>(p); }};
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  return py::array_t<float>(shape, data, owner);
}

std::vector<int64_t> integers_1d(const py::array& array, const char* name, const char* axis) {
  require_rank(array, 1, name, axis);
  // numpy makes an empty list float64: its dtype says nothing.
  char kind = array.dtype().kind();
  if (array.size() > 0 && kind != 'i' && kind != 'u')
    throw py::type_error(std::string{name} + " must be an integer array, got dtype " +
                         py::str(array.dtype()).cast<std::string>());
  auto values = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!values)
    throw py::type_error(std::string{name} + " must be an integer array");
  return {values.data(), values.data() + values.size()};
}

py::array_t<float> to_numpy(const std::vector<float>& values) {
  py::array_t<float> array(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), array.mutable_data());
  return array;
}

uint64_t non_negative(int64_t value, const char* name) {
  if (value < 0)
    throw py::value_error(std::string{name} + " must not be negative, got " +
                          std::to_string(value));
  return static_cast<uint64_t>(value);
}

void require_rank(const py::array& array, py::ssize_t rank, const char* name, const char* axes) {
  if (array.ndim() != rank)
    throw py::value_error(std::string{name} + " must be " + std::to_string(rank) + "-D (" + axes +
                          "), got " + std::to_string(array.ndim()) + "-D");
}

} // namespace sprintrt::python
