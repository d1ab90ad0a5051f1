#pragma once

/// @file
/// `_sprintrt.Pool`: one worker pool for one options value, over the
/// blocking facade `pool_client`: Sprint children (the runtime's pool for
/// those options, with any remote pools they name), or in-process
/// simulated workers computing what sprint-sim would (`sim_worker_source`).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "process_runtime.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/tensor.hpp"

namespace sprintrt::python {

namespace py = pybind11;

/// One worker pool for one options value (the process's runtime keeps the
/// pool; this is a client of it).
class pool : public runtime_user {
public:
  /// The pool for `options_json` (sprintrt's options as JSON): the
  /// runtime's pool of Sprint children for those options, or, if
  /// `in_process`, a new pool of its own whose workers are in-process
  /// simulated ones (`sim_worker_source(opts)`; its errors, e.g. a
  /// sprint-sim fault injection parameter, raise `sprintrt.Error`).
  pool(const std::string& options_json, bool in_process);

  /// (loss float32 [B], error signal float32 [T, B, D]) of a time-major
  /// batch; C-contiguous float32 log-posteriors are read in place. The
  /// error signal is written into the previous call's when that has the
  /// same shape and nothing else holds it any more (no array or tensor of
  /// the caller's): a loop that drops each result allocates no new output
  /// (a fresh large one costs its page faults). With
  /// `partial` (see `batch::partial`), (loss, error signal, ok bool [B],
  /// errors): a failed segment's loss NaN and its error signal zero, ok
  /// False, and its item of the list `errors` a `sprintrt.Error` with
  /// `index` and `tag` (None for the segments that succeeded).
  py::tuple compute(const py::array& log_posteriors, const py::array& seq_lengths,
                    std::vector<std::string> tags, bool partial);

  /// The seconds each of `repeats` calls of `pool_client::compute` on this
  /// batch takes, timed in C++ with no Python in the loop (the baseline of
  /// the Python module's benchmark, scripts/bench/python_module.py).
  std::vector<double> time_facade(const py::array& log_posteriors, const py::array& seq_lengths,
                                  std::vector<std::string> tags, size_t repeats);

  /// (edges uint32 [4, E], weights float32 [E], start_end_states uint32
  /// [2, B]) of the segments `tags`.
  py::tuple automata(std::vector<std::string> tags);

  /// One item per text: (num_states, edges uint32 [3*E], weights float32
  /// [E]) or a `sprintrt.Error` instance naming the text and the cause. The
  /// texts are segment names, or orthographies if `by_orthography`; all are
  /// sent at once (the pool spreads them over its workers).
  py::list export_fsas(std::vector<std::string> texts, bool by_orthography);

  /// The pool's counters as a dict (`pool_stats`: capacity, batches,
  /// segments, failed_segments, skipped_segments, automata, fsa_exports, and
  /// workers: one dict
  /// of `worker_stats` each).
  py::dict stats();

  /// Returns the options the pool was made with.
  const sprint_options& options() const noexcept { return opts_; }

  /// Whether the workers are in-process simulated ones.
  bool in_process() const noexcept { return in_process_; }

  /// Returns the pool's actor (for schedulers over it), or throws
  /// `sprintrt.Error` after shutdown.
  worker_pool_actor actor() const { return client()->pool(); }

  /// Drops the facade (at shutdown).
  void detach() override { client_.reset(); }

  /// In a forked child: an in-process pool's facade holds the only handle
  /// of its pool actor (the runtime's registry keeps only pools made from
  /// options), so it is kept forever; a pool of children is detached.
  void abandon() override;

private:
  /// The facade, or throws `sprintrt.Error` after shutdown.
  std::shared_ptr<const pool_client> client() const;

  sprint_options opts_;
  bool in_process_;
  std::shared_ptr<const pool_client> client_;
  /// The last call's error signal, sharing its storage with the array
  /// handed out (`batch::reuse_error_signal` of the next call). Read and
  /// written with the GIL held.
  tensor last_error_signal_;
};

/// Registers `Pool` in `m`.
void bind_pool(py::module_& m);

} // namespace sprintrt::python
