#include "pool_binding.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "binding_support.hpp"
#include "process_runtime.hpp"

namespace sprintrt::python {

pool::pool(const std::string& options_json)
    : opts_(parse_options_json(options_json)),
      client_(std::make_shared<const pool_client>(process_runtime(opts_, "a new pool"), opts_)) {}

std::shared_ptr<const pool_client> pool::client() const {
  if (!client_)
    raise_shut_down("this pool");
  return client_;
}

py::tuple pool::compute(const py::array& log_posteriors, const py::array& seq_lengths,
                        std::vector<std::string> tags) {
  auto result = call_without_gil(
      client_, "this pool",
      [b = batch_of(log_posteriors, seq_lengths, std::move(tags), input::borrowed)](
          const pool_client& facade, const stop_token& stop) mutable {
        return facade.compute(std::move(b), stop);
      });
  if (!result)
    raise(result.error());
  return py::make_tuple(to_numpy(result->loss), to_numpy(std::move(result->error_signal)));
}

std::vector<double> pool::time_facade(const py::array& log_posteriors, const py::array& seq_lengths,
                                      std::vector<std::string> tags, size_t repeats) {
  std::vector<double> seconds;
  auto failed = call_without_gil(
      client_, "this pool",
      [&, b = batch_of(log_posteriors, seq_lengths, std::move(tags), input::borrowed)](
          const pool_client& facade, const stop_token& stop) mutable {
        // Dropped inside the call, so that the borrowed array is released
        // when the call returns.
        batch timed = std::move(b);
        for (size_t i = 0; i < repeats; ++i) {
          batch call = timed; // shares the tensor, as a C++ trainer's batch would
          auto start = std::chrono::steady_clock::now();
          auto result = facade.compute(std::move(call), stop);
          seconds.push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          if (!result)
            return std::move(result.error());
        }
        return caf::error{};
      });
  if (failed)
    raise(failed);
  return seconds;
}

py::tuple pool::automata(std::vector<std::string> tags) {
  auto batch_size = static_cast<py::ssize_t>(tags.size());
  auto result = call_without_gil(client_, "this pool",
                                 [&tags](const pool_client& facade, const stop_token& stop) {
                                   return facade.automata(std::move(tags), stop);
                                 });
  if (!result)
    raise(result.error());
  auto edges_count = static_cast<py::ssize_t>(result->num_edges());
  py::array_t<uint32_t> edges({py::ssize_t{4}, edges_count});
  std::copy(result->edges.begin(), result->edges.end(), edges.mutable_data());
  py::array_t<float> weights(edges_count);
  std::copy(result->weights.begin(), result->weights.end(), weights.mutable_data());
  py::array_t<uint32_t> start_end({py::ssize_t{2}, batch_size});
  std::copy(result->start_end_states.begin(), result->start_end_states.end(),
            start_end.mutable_data());
  return py::make_tuple(edges, weights, start_end);
}

void bind_pool(py::module_& m) {
  py::class_<pool>(m, "Pool", "A worker pool for one options value (JSON).")
      .def(py::init<const std::string&>(), py::arg("options_json"))
      .def("compute", &pool::compute, py::arg("log_posteriors"), py::arg("seq_lengths"),
           py::arg("tags"),
           "(loss float32 [B], error_signal float32 [T, B, D]) of a time-major batch.")
      .def("_time_facade", &pool::time_facade, py::arg("log_posteriors"), py::arg("seq_lengths"),
           py::arg("tags"), py::arg("repeats"),
           "Seconds per pool_client::compute of this batch, timed in C++ (for the benchmark).")
      .def("automata", &pool::automata, py::arg("tags"),
           "(edges uint32 [4, E], weights float32 [E], start_end_states uint32 [2, B]).")
      .def_property_readonly("num_instances",
                             [](const pool& p) { return p.options().num_instances; });
  m.def(
      "_log_posteriors_address",
      [](const py::array& array) {
        auto t = borrow_float32(array, "log_posteriors");
        return reinterpret_cast<uintptr_t>(t.data());
      },
      py::arg("array"),
      "The address of the float32 values `Pool.compute` reads for `array` (for tests: "
      "numpy's own for a C-contiguous float32 array).");
}

} // namespace sprintrt::python
