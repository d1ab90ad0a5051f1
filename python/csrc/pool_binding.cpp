#include "pool_binding.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <type_traits>

#include "binding_support.hpp"
#include "process_runtime.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::python {

// Every command the workers serve has its Python call here: `compute`
// (get_loss_command) and `export_fsas` (export_fsa_command). A new command
// stops the build here until it has one (docs/contributing.md, "A new
// Sprint command").
static_assert(
    std::is_same_v<sprint_commands, sprint_command_list<get_loss_command, export_fsa_command>>,
    "a command of sprint_commands has no Python call in pool_binding.cpp");

namespace {

/// The facade of the runtime's pool for `opts`, or of a new pool of
/// in-process simulated workers; raises `sprintrt.Error` if those workers
/// cannot be made from `opts`.
std::shared_ptr<const pool_client> make_client(const sprint_options& opts, bool in_process) {
  if (!in_process)
    return std::make_shared<const pool_client>(process_runtime(opts, "a new pool"), opts);
  // Checked (and the corpus read) before a runtime is made for it.
  auto source = sim_worker_source(opts);
  if (!source)
    raise(source.error());
  auto& rt = process_runtime(opts, "a new pool");
  return std::make_shared<const pool_client>(rt, rt.pool(std::move(*source), "in-process"));
}

} // namespace

pool::pool(const std::string& options_json, bool in_process)
    : opts_(parse_options_json(options_json)), in_process_(in_process),
      client_(make_client(opts_, in_process)) {}

void pool::abandon() {
  if (in_process_)
    keep_forever(std::move(client_));
  else
    detach();
}

std::shared_ptr<const pool_client> pool::client() const {
  if (!client_)
    raise_shut_down("this pool");
  return client_;
}

py::tuple pool::compute(const py::array& log_posteriors, const py::array& seq_lengths,
                        std::vector<std::string> tags, bool partial) {
  auto b = batch_of(log_posteriors, seq_lengths, std::move(tags), input::borrowed);
  b.partial = partial;
  // Moved out: a concurrent call on another thread cannot get it too.
  b.reuse_error_signal = std::move(last_error_signal_);
  auto result = call_without_gil(
      client_, "this pool",
      [b = std::move(b)](const pool_client& facade, const stop_token& stop) mutable {
        return facade.compute(std::move(b), stop);
      });
  if (!result)
    raise(result.error());
  auto loss = to_numpy(result->loss);
  last_error_signal_ = result->error_signal;
  auto error_signal = to_numpy(std::move(result->error_signal));
  if (!partial)
    return py::make_tuple(loss, error_signal);
  auto batch_size = result->loss.size();
  py::array_t<bool> ok(static_cast<py::ssize_t>(batch_size));
  std::fill(ok.mutable_data(), ok.mutable_data() + batch_size, true);
  py::list errors;
  for (size_t b = 0; b < batch_size; ++b)
    errors.append(py::none());
  for (const auto& failure : result->failures) {
    ok.mutable_data()[failure.index] = false;
    auto error = error_object(failure.error);
    error.attr("index") = failure.index;
    error.attr("tag") = failure.tag;
    errors[failure.index] = error;
  }
  return py::make_tuple(loss, error_signal, ok, errors);
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

namespace {

/// A 1-D numpy array owning `values` (moved, not copied).
template <class T>
py::array_t<T> owning_numpy(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule owner{owned, [](void* p) { delete static_cast<std::vector<T>*>(p); }};
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), owner);
}

py::dict to_dict(const worker_stats& w) {
  py::dict d;
  d["requests_served"] = w.requests_served;
  d["requests_failed"] = w.requests_failed;
  d["busy_ns"] = w.busy_ns;
  d["restarts"] = w.restarts;
  d["pid"] = w.pid;
  d["shared_memory_requests"] = w.shared_memory_requests;
  return d;
}

/// `export_fsas`' items: (num_states, edges, weights) or a `sprintrt.Error`.
py::list fsa_items(std::vector<caf::expected<segment_fsa>> results) {
  py::list items;
  for (auto& result : results) {
    if (!result) {
      items.append(error_object(result.error()));
      continue;
    }
    items.append(py::make_tuple(result->num_states, owning_numpy(std::move(result->edges)),
                                owning_numpy(std::move(result->weights))));
  }
  return items;
}

} // namespace

py::list pool::export_fsas(std::vector<std::string> texts, bool by_orthography) {
  std::vector<fsa_query> queries;
  queries.reserve(texts.size());
  auto source = by_orthography ? fsa_source::orthography : fsa_source::segment_name;
  for (auto& text : texts)
    queries.push_back(fsa_query{source, std::move(text)});
  std::optional<std::vector<caf::expected<segment_fsa>>> returned;
  try {
    return fsa_items(call_without_gil(
        client_, "this pool",
        [&queries](const pool_client& facade, const stop_token& stop) {
          return facade.fsas(std::move(queries), stop);
        },
        &returned));
  } catch (py::error_already_set& e) {
    // Interrupted: the FSAs that arrived before go with the exception
    // (`exported_fsas`), the others are `cancelled` errors.
    if (returned)
      e.value().attr("exported_fsas") = fsa_items(std::move(*returned));
    throw;
  }
}

py::dict pool::stats() {
  auto result =
      call_without_gil(client_, "this pool",
                       [](const pool_client& facade, const stop_token&) { return facade.stats(); });
  if (!result)
    raise(result.error());
  py::dict d;
  d["capacity"] = result->capacity;
  d["batches"] = result->batches;
  d["segments"] = result->segments;
  d["failed_segments"] = result->failed_segments;
  d["skipped_segments"] = result->skipped_segments;
  d["automata"] = result->automata;
  d["fsa_exports"] = result->fsa_exports;
  py::list workers;
  for (const auto& w : result->workers)
    workers.append(to_dict(w));
  d["workers"] = workers;
  return d;
}

void bind_pool(py::module_& m) {
  py::class_<pool>(m, "Pool",
                   "A worker pool for one options value (JSON): Sprint children (and the "
                   "remote pools the options name), or with in_process=True in-process "
                   "simulated workers computing what sprint-sim would with those options.")
      .def(py::init<const std::string&, bool>(), py::arg("options_json"),
           py::arg("in_process") = false)
      .def("compute", &pool::compute, py::arg("log_posteriors"), py::arg("seq_lengths"),
           py::arg("tags"), py::arg("partial") = false,
           "(loss float32 [B], error_signal float32 [T, B, D]) of a time-major batch; with "
           "partial=True (loss, error_signal, ok bool [B], errors): a failed segment's loss NaN, "
           "its error signal zero, ok False and errors[b] a sprintrt.Error with index and tag "
           "(None where the segment succeeded), instead of one error for the batch.")
      .def("_time_facade", &pool::time_facade, py::arg("log_posteriors"), py::arg("seq_lengths"),
           py::arg("tags"), py::arg("repeats"),
           "Seconds per pool_client::compute of this batch, timed in C++ (for the benchmark).")
      .def("automata", &pool::automata, py::arg("tags"),
           "(edges uint32 [4, E], weights float32 [E], start_end_states uint32 [2, B]).")
      .def("export_fsas", &pool::export_fsas, py::arg("texts"), py::arg("by_orthography") = false,
           "One item per text: (num_states, edges uint32 [3*E]: all from, all to, all "
           "emissions, weights float32 [E]), or a sprintrt.Error instance (not raised) naming "
           "the segment (or orthography) and the cause. All are exported at once, spread over "
           "the workers, with the GIL released.")
      .def("stats", &pool::stats,
           "The pool's counters: capacity, batches, segments, failed_segments, skipped_segments, "
           "automata, "
           "fsa_exports, workers (requests_served, requests_failed, busy_ns, restarts, pid, "
           "shared_memory_requests).")
      .def_property_readonly("num_instances",
                             [](const pool& p) { return p.options().num_instances; })
      .def_property_readonly("in_process", &pool::in_process,
                             "Whether the workers are in-process simulated ones.");
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
