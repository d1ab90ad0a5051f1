// _sprintrt: the C++ half of the Python module `sprintrt` (the package in
// python/sprintrt wraps it in RETURNN's names). One runtime per process,
// made with the first pool; pools are `pool_client`s; numpy arrays in and
// out; the GIL is released while a pool computes.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/version.hpp"

namespace py = pybind11;

namespace sprintrt::python {

namespace {

/// A sprintrt error on its way to Python as `sprintrt.Error`.
struct error_exception {
  std::string code;
  std::string message;
};

[[noreturn]] void raise(const caf::error& err) {
  auto code = err.category() == error_category ? to_string(static_cast<errc>(err.code()))
                                               : std::string{"unknown_error"};
  throw error_exception{code, render(err)};
}

/// The process's runtime, made with the first pool's settings (CAF sets TLS
/// up once per process) and shut down by `shutdown` (at interpreter exit).
class process_runtime {
public:
  static sprint_runtime& get(const sprint_options& opts) {
    std::lock_guard<std::mutex> guard{mutex()};
    auto& rt = instance();
    if (!rt)
      rt = std::make_unique<sprint_runtime>(runtime_settings_for(opts));
    return *rt;
  }

  static void shutdown() {
    std::unique_ptr<sprint_runtime> rt;
    {
      std::lock_guard<std::mutex> guard{mutex()};
      rt = std::move(instance());
    }
    if (rt) {
      py::gil_scoped_release unlocked;
      rt->shutdown();
    }
  }

private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::unique_ptr<sprint_runtime>& instance() {
    static std::unique_ptr<sprint_runtime> rt;
    return rt;
  }
};

sprint_options parse(const std::string& json) {
  auto opts = parse_options(json);
  if (!opts)
    raise(opts.error());
  return std::move(*opts);
}

/// A numpy array over a tensor's storage, without a copy: the array keeps
/// the storage alive.
py::array_t<float> to_numpy(tensor t) {
  auto storage = std::make_unique<float_storage>(t.storage());
  float* data = (*storage)->data();
  py::capsule owner{storage.release(), [](void* p) { delete static_cast<float_storage*>(p); }};
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  return py::array_t<float>(shape, data, owner);
}

/// One worker pool for one options value.
class pool {
public:
  explicit pool(const std::string& options_json)
      : opts_(parse(options_json)), client_(process_runtime::get(opts_), opts_) {}

  py::tuple compute(py::array log_posteriors, py::array seq_lengths,
                    const std::vector<std::string>& tags) {
    if (log_posteriors.ndim() != 3)
      throw py::value_error("log_posteriors must be 3-D (time, batch, dim), got " +
                            std::to_string(log_posteriors.ndim()) + "-D");
    if (seq_lengths.ndim() != 1)
      throw py::value_error("seq_lengths must be 1-D (batch), got " +
                            std::to_string(seq_lengths.ndim()) + "-D");
    auto lp = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(log_posteriors);
    auto lengths = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(seq_lengths);
    if (!lp)
      throw py::type_error("log_posteriors must be a float array");
    if (!lengths)
      throw py::type_error("seq_lengths must be an integer array");
    std::vector<size_t> shape{static_cast<size_t>(lp.shape(0)), static_cast<size_t>(lp.shape(1)),
                              static_cast<size_t>(lp.shape(2))};
    batch b;
    b.log_posteriors = tensor::zeros(shape);
    std::copy(lp.data(), lp.data() + lp.size(), b.log_posteriors.data());
    b.seq_lengths.assign(lengths.data(), lengths.data() + lengths.size());
    b.tags = tags;
    caf::expected<batch_result> result = make_error(errc::cancelled, "not computed");
    {
      py::gil_scoped_release unlocked;
      result = client_.compute(std::move(b));
    }
    if (!result)
      raise(result.error());
    py::array_t<float> loss(static_cast<py::ssize_t>(result->loss.size()));
    std::copy(result->loss.begin(), result->loss.end(), loss.mutable_data());
    return py::make_tuple(loss, to_numpy(std::move(result->error_signal)));
  }

  py::tuple automata(const std::vector<std::string>& tags) {
    caf::expected<batch_automata> result = make_error(errc::cancelled, "not computed");
    {
      py::gil_scoped_release unlocked;
      result = client_.automata(tags);
    }
    if (!result)
      raise(result.error());
    auto edges_count = static_cast<py::ssize_t>(result->num_edges());
    py::array_t<uint32_t> edges({py::ssize_t{4}, edges_count});
    std::copy(result->edges.begin(), result->edges.end(), edges.mutable_data());
    py::array_t<float> weights(edges_count);
    std::copy(result->weights.begin(), result->weights.end(), weights.mutable_data());
    auto batch_size = static_cast<py::ssize_t>(tags.size());
    py::array_t<uint32_t> start_end({py::ssize_t{2}, batch_size});
    std::copy(result->start_end_states.begin(), result->start_end_states.end(),
              start_end.mutable_data());
    return py::make_tuple(edges, weights, start_end);
  }

  const sprint_options& options() const { return opts_; }

private:
  sprint_options opts_;
  pool_client client_;
};

} // namespace

} // namespace sprintrt::python

PYBIND11_MODULE(_sprintrt, m) {
  using namespace sprintrt::python;
  m.doc() = "sprintrt's C++ half; use the package `sprintrt`";
  m.attr("version") = sprintrt::version;
  static py::exception<error_exception> error_type(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown)
        std::rethrow_exception(thrown);
    } catch (const error_exception& e) {
      py::object err = py::reinterpret_borrow<py::object>(error_type.ptr())(e.message);
      err.attr("code") = e.code;
      PyErr_SetObject(error_type.ptr(), err.ptr());
    }
  });
  m.def(
      "canonical_options",
      [](const std::string& json) { return sprintrt::to_json_string(parse(json)); },
      "The canonical JSON of options given as JSON (equal options, equal text).");
  m.def("shutdown", &process_runtime::shutdown,
        "Stops every pool and child of this process (at interpreter exit).");
  py::class_<pool>(m, "Pool", "A worker pool for one options value (JSON).")
      .def(py::init<const std::string&>(), py::arg("options_json"))
      .def("compute", &pool::compute, py::arg("log_posteriors"), py::arg("seq_lengths"),
           py::arg("tags"),
           "(loss float32 [B], error_signal float32 [T, B, D]) of a time-major batch.")
      .def("automata", &pool::automata, py::arg("tags"),
           "(edges uint32 [4, E], weights float32 [E], start_end_states uint32 [2, B]).")
      .def_property_readonly("num_instances",
                             [](const pool& p) { return p.options().num_instances; });
}
