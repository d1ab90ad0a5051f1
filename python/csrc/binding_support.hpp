#pragma once

/// @file
/// What the bindings of `_sprintrt` share: errors on their way to Python,
/// numpy arrays in and out of tensors, and the release of Python objects
/// that C++ held. (The runtime's lifetime: process_runtime.hpp.)

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/tensor.hpp"

namespace sprintrt::python {

namespace py = pybind11;

/// A sprintrt error on its way to Python as `sprintrt.Error`.
struct error_exception {
  /// The errc's name, e.g. "invalid_input" ("unknown_error" outside
  /// sprintrt's category).
  std::string code;
  /// The C++ message, as `render` gives it.
  std::string message;
};

/// Throws `err` as `sprintrt.Error`.
[[noreturn]] void raise(const caf::error& err);

/// The name of `err`'s errc, e.g. "invalid_input" ("unknown_error" outside
/// sprintrt's category).
std::string code_name(const caf::error& err);

/// `err` as a `sprintrt.Error` instance (not raised), for calls that return
/// one error per item.
py::object error_object(const caf::error& err);

/// Registers `sprintrt.Error` in `m` and the translation of
/// `error_exception` to it.
void bind_errors(py::module_& m);

/// Returns `options_json` parsed, or throws `sprintrt.Error`.
sprint_options parse_options_json(const std::string& options_json);

/// Releases the Python objects whose last C++ user has gone (see
/// `borrow_float32`). Called with the GIL held: before and after every call
/// that waits for the runtime (`call_without_gil`), and at shutdown.
void release_deferred_objects();

/// Takes the lock of the objects queued for release, so that no actor
/// thread holds it at a fork (for `pthread_atfork`'s prepare handler).
void lock_release_queue_for_fork() noexcept;

/// Releases it after the fork, in the parent and in the child.
void unlock_release_queue_after_fork() noexcept;

/// `array` as a float32 tensor of the same shape. An aligned C-contiguous
/// float32 array is borrowed, not copied: the tensor reads numpy's memory
/// and keeps the array alive until C++ is done with it, which may be after
/// the call that lent it (a segment that timed out is still being written
/// to its child). Any other array (another dtype, strided, misaligned) is
/// first converted into a new C-contiguous one, which is borrowed the same
/// way. The tensor must only be read. Throws `TypeError` naming `name` if
/// `array` cannot be converted to float32.
tensor borrow_float32(const py::array& array, const char* name);

/// `array` as a float32 tensor of the same shape that shares no memory with
/// it (for data C++ keeps after the call returns, which the caller may then
/// change): a copy, or the converted array if it had to be converted.
tensor copy_float32(const py::array& array, const char* name);

/// How a batch's log-posteriors reach C++.
enum class input {
  /// Read in place (`borrow_float32`), for a call that returns when C++ is
  /// done with them.
  borrowed,
  /// Copied (`copy_float32`), for data C++ keeps after the call returns.
  copied,
};

/// The batch of the arguments (log-posteriors [T, B, D], seq_lengths [B],
/// tags); throws `ValueError`/`TypeError` naming a malformed argument.
batch batch_of(const py::array& log_posteriors, const py::array& seq_lengths,
               std::vector<std::string> tags, input how);

/// A numpy array over a tensor's storage, without a copy: the array keeps
/// the storage alive.
py::array_t<float> to_numpy(tensor t);

/// A new 1-D numpy array of `values`.
py::array_t<float> to_numpy(const std::vector<float>& values);

/// The values of the 1-D integer array `array`; throws `ValueError` or
/// `TypeError` naming the argument `name` and its axis `axis`.
std::vector<int64_t> integers_1d(const py::array& array, const char* name, const char* axis);

/// `value` as unsigned; throws `ValueError` naming the argument `name` if it
/// is negative.
uint64_t non_negative(int64_t value, const char* name);

/// Throws `ValueError` unless `array` has `rank` dimensions, naming the
/// argument `name` and its `axes`, e.g. "time, batch, dim".
void require_rank(const py::array& array, py::ssize_t rank, const char* name, const char* axes);

} // namespace sprintrt::python
