// `_sprintrt.Scheduler`, `SeqTrainPart`, `SeqTrainBatch` and
// `seqtrain_error_signal`: the sequence-training scheduler over the blocking
// facade `seqtrain_client`, one method per facade call. Counts are taken as
// signed integers so that a negative one is named (pybind11 would only say
// that no overload matched).

#include "seqtrain_binding.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include "binding_support.hpp"
#include "pool_binding.hpp"
#include "process_runtime.hpp"
#include "sprintrt/seqtrain_client.hpp"

namespace sprintrt::python {

namespace {

py::dict to_dict(const seqtrain_stats& s) {
  py::list timeline;
  for (const auto& x : s.timeline)
    timeline.append(py::dict(py::arg("seq_idx") = x.seq_idx, py::arg("lane") = x.lane,
                             py::arg("start_ns") = x.start_ns, py::arg("end_ns") = x.end_ns));
  return py::dict(
      py::arg("epoch") = s.epoch, py::arg("forward_queue") = s.forward_queue,
      py::arg("in_flight") = s.in_flight, py::arg("loss_data") = s.loss_data,
      py::arg("forwarded") = s.forwarded, py::arg("computed") = s.computed,
      py::arg("skipped") = s.skipped, py::arg("failed") = s.failed,
      py::arg("train_requests") = s.train_requests, py::arg("trainer_wait_ns") = s.trainer_wait_ns,
      py::arg("worker_busy_ns") = s.worker_busy_ns, py::arg("elapsed_ns") = s.elapsed_ns,
      py::arg("seqs_per_second") = s.seqs_per_second, py::arg("timeline") = timeline);
}

/// The value of `result`, or `sprintrt.Error`.
template <class T>
T value_of(caf::expected<T> result) {
  if (!result)
    raise(result.error());
  return std::move(*result);
}

/// One scheduler over one pool; the Python object keeps its pool alive.
class scheduler : public runtime_user {
public:
  scheduler(const pool& p, int64_t forward_seq_delay, int64_t max_in_flight, bool record_timeline)
      : client_(std::make_shared<seqtrain_client>(
            process_runtime(p.options(), "a new scheduler"), p.actor(),
            seqtrain_options{non_negative(forward_seq_delay, "forward_seq_delay"),
                             non_negative(max_in_flight, "max_in_flight"), record_timeline})) {}

  /// Drops the facade, which stops the scheduler (at shutdown).
  void detach() override { client_.reset(); }

  /// Keeps the facade forever: its handle is the scheduler actor's only
  /// reference, and releasing it in a forked child would run CAF's cleanup
  /// of an actor whose runtime has no threads there.
  void abandon() override { keep_forever(std::move(client_)); }

  void start_epoch(int64_t epoch) {
    auto number = non_negative(epoch, "epoch");
    if (auto err =
            call([&](seqtrain_client& c, const stop_token&) { return c.start_epoch(number); }))
      raise(err);
  }

  py::dict finish_epoch() {
    return to_dict(
        value_of(call([](seqtrain_client& c, const stop_token&) { return c.finish_epoch(); })));
  }

  bool have_space(int64_t num_seqs) {
    auto count = non_negative(num_seqs, "num_seqs");
    return value_of(
        call([&](seqtrain_client& c, const stop_token&) { return c.have_space(count); }));
  }

  // Copied, not borrowed: the scheduler keeps the sequences after the call
  // returns, and a trainer may reuse its array for the next forward pass.
  void forward(const py::array& seq_indices, const py::array& log_posteriors,
               const py::array& seq_lengths, std::vector<std::string> tags) {
    forward_sequences sequences;
    sequences.data = batch_of(log_posteriors, seq_lengths, std::move(tags), input::copied);
    for (int64_t index : integers_1d(seq_indices, "seq_indices", "batch"))
      sequences.seq_indices.push_back(non_negative(index, "seq_indices"));
    if (auto err = call(
            [&](seqtrain_client& c, const stop_token&) { return c.forward(std::move(sequences)); }))
      raise(err);
  }

  py::tuple train(std::vector<seqtrain_batch> batches) {
    auto result = value_of(call([&](seqtrain_client& c, const stop_token& stop) {
      return c.train(std::move(batches), stop);
    }));
    return py::make_tuple(to_numpy(result.loss), to_numpy(std::move(result.hat_y)));
  }

  py::dict stats() {
    return to_dict(value_of(call([](seqtrain_client& c, const stop_token&) { return c.stats(); })));
  }

private:
  /// `f(facade)` through `call_without_gil`; `train` also gets the stop
  /// (the other calls return at once).
  template <class F>
  std::invoke_result_t<F, seqtrain_client&, const stop_token&> call(F&& f) {
    return call_without_gil(client_, "this scheduler", std::forward<F>(f));
  }

  std::shared_ptr<seqtrain_client> client_;
};

py::array_t<float> error_signal(const py::array& log_posteriors, const py::array& hat_y,
                                const py::array& seq_lengths) {
  require_rank(log_posteriors, 3, "log_posteriors", "time, batch, dim");
  require_rank(hat_y, 3, "hat_y", "time, batch, dim");
  auto lengths = integers_1d(seq_lengths, "seq_lengths", "batch");
  caf::expected<tensor> result = tensor{};
  {
    // Borrowed only for this call: released below, not at some later one.
    auto lp = borrow_float32(log_posteriors, "log_posteriors");
    auto target = borrow_float32(hat_y, "hat_y");
    result = seqtrain_error_signal(lp, target, lengths);
  }
  release_deferred_objects();
  return to_numpy(value_of(std::move(result)));
}

} // namespace

void bind_seqtrain(py::module_& m) {
  py::class_<seqtrain_part>(m, "SeqTrainPart",
                            "Frames [seq_start_frame, seq_end_frame) of sequence seq_idx, in "
                            "column batch_slice of a training batch from row batch_frame_offset.")
      .def(py::init([](int64_t seq_idx, int64_t batch_slice, int64_t batch_frame_offset,
                       int64_t seq_start_frame, int64_t seq_end_frame) {
             return seqtrain_part{non_negative(seq_idx, "seq_idx"),
                                  non_negative(batch_slice, "batch_slice"),
                                  non_negative(batch_frame_offset, "batch_frame_offset"),
                                  non_negative(seq_start_frame, "seq_start_frame"),
                                  non_negative(seq_end_frame, "seq_end_frame")};
           }),
           py::arg("seq_idx"), py::arg("batch_slice"), py::arg("batch_frame_offset"),
           py::arg("seq_start_frame"), py::arg("seq_end_frame"))
      // Values, made whole by the constructor: a part inside a batch is a
      // copy, which a setter would change in vain.
      .def_readonly("seq_idx", &seqtrain_part::seq_idx)
      .def_readonly("batch_slice", &seqtrain_part::batch_slice)
      .def_readonly("batch_frame_offset", &seqtrain_part::batch_frame_offset)
      .def_readonly("seq_start_frame", &seqtrain_part::seq_start_frame)
      .def_readonly("seq_end_frame", &seqtrain_part::seq_end_frame);
  py::class_<seqtrain_batch>(m, "SeqTrainBatch",
                             "A training batch of num_frames x num_slices and the parts in it.")
      .def(py::init([](int64_t num_frames, int64_t num_slices, std::vector<seqtrain_part> parts) {
             return seqtrain_batch{non_negative(num_frames, "num_frames"),
                                   non_negative(num_slices, "num_slices"), std::move(parts)};
           }),
           py::arg("num_frames"), py::arg("num_slices"), py::arg("parts"))
      // A value too: `parts` is a tuple, since a list would invite
      // `parts.append`, which would change a copy.
      .def_readonly("num_frames", &seqtrain_batch::num_frames)
      .def_readonly("num_slices", &seqtrain_batch::num_slices)
      .def_property_readonly("parts",
                             [](const seqtrain_batch& b) { return py::tuple(py::cast(b.parts)); });
  py::class_<scheduler>(m, "Scheduler", "A sequence-training scheduler over a Pool.")
      .def(py::init<const pool&, int64_t, int64_t, bool>(), py::arg("pool"),
           py::arg("forward_seq_delay"), py::arg("max_in_flight"), py::arg("record_timeline"),
           py::keep_alive<1, 2>())
      .def("start_epoch", &scheduler::start_epoch, py::arg("epoch"))
      .def("finish_epoch", &scheduler::finish_epoch)
      .def("have_space", &scheduler::have_space, py::arg("num_seqs"))
      .def("forward", &scheduler::forward, py::arg("seq_indices"), py::arg("log_posteriors"),
           py::arg("seq_lengths"), py::arg("tags"))
      .def("train", &scheduler::train, py::arg("batches"))
      .def("stats", &scheduler::stats);
  m.def("seqtrain_error_signal", &error_signal, py::arg("log_posteriors"), py::arg("hat_y"),
        py::arg("seq_lengths"),
        "exp(log_posteriors) - hat_y in frames t < seq_lengths[b] of column b, zero elsewhere.");
}

} // namespace sprintrt::python
