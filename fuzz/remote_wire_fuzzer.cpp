// libFuzzer target for what crosses the network to and from a remote pool
// (include/sprintrt/remote_interface.hpp, docs/remote-pools.md): bytes as
// CAF's network layer hands them to `caf::binary_deserializer`, read through
// the project's own inspect and load functions into the value a case
// (remote_wire_case.hpp) names, then used as the end that receives it uses
// it:
//   - a trainer's segment at the server: `remote_wire<get_loss_command>::to_local`,
//     the pool's check of the job, and the answer made of it (`to_reply`),
//     which must cross back to the trainer bit for bit;
//   - a pool's loss at the trainer: `from_remote` into a job of the case's
//     shape;
//   - a pool's automaton at the trainer, which must serialize again to the
//     same value;
//   - a trainer's automaton query at the server: the pool's check;
//   - a trainer's handshake at the server: `check_handshake` of its interface
//     version and options key against the server's own key.
// Besides memory errors, a check fails (fuzz_check.hpp) on a value that
// loaded but breaks what its loader promises (a shape that is not its
// element count), a job or an answer that disagrees with what was received,
// an error of another code than documented, a refused handshake that does
// not say why.
//
// Build: configure with clang and -DSPRINTRT_FUZZ=ON (see fuzz/README.md).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <nlohmann/json.hpp>

#include "actors/remote/remote_handshake.hpp"
#include "actors/worker/commands.hpp"
#include "fuzz/fuzz_check.hpp"
#include "fuzz/fuzz_input.hpp"
#include "fuzz/remote_wire_case.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/remote_interface.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using fuzz::require;

namespace {

/// What the trainer's error signal holds until an answer is written into it.
constexpr float unwritten = 1234.5f;

/// The server in the handshake's errors.
const std::string server_name = "gpu1:7000";

/// Reads `xs` from `bytes` as CAF's network layer does.
template <class... Ts>
caf::error load(byte_span bytes, Ts&... xs) {
  caf::binary_deserializer source{nullptr, reinterpret_cast<const char*>(bytes.data()),
                                  bytes.size()};
  return source(xs...);
}

/// Writes `x` as CAF's network layer does, then reads it back into `y`.
template <class T>
void cross(T& x, T& y) {
  std::vector<char> buffer;
  caf::binary_serializer sink{nullptr, buffer};
  require(!sink(x), "a value that loaded does not save again");
  auto bytes = byte_span{reinterpret_cast<const std::byte*>(buffer.data()), buffer.size()};
  require(!load(bytes, y), "a value that saved does not load again");
}

/// Whether `x` holds as many floats as its shape says (none when empty).
bool consistent(const float_rows& x) {
  const size_t count = x.values ? x.values->size() : 0;
  if (x.cols != 0 && x.rows > std::numeric_limits<size_t>::max() / x.cols)
    return false;
  return count == x.rows * x.cols;
}

/// Whether `slice` holds the floats of `rows`, bit for bit.
bool same_bits(const matrix_slice& slice, const float_rows& rows) {
  if (slice.rows != rows.rows || slice.cols != rows.cols || !rows.values)
    return false;
  for (size_t r = 0; r < slice.rows; ++r)
    if (std::memcmp(slice.row(r), rows.values->data() + r * rows.cols, rows.cols * sizeof(float)) !=
        0)
      return false;
  return true;
}

/// Whether two float vectors hold the same bits (NaN payloads included).
bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() &&
         (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

/// A trainer's loss job of `rows` x `cols`, its error signal unwritten.
segment_job trainer_job(size_t rows, size_t cols, bool gate_closed) {
  segment_job job{"seg", matrix_slice::dense(rows, cols), matrix_slice::dense(rows, cols),
                  std::make_shared<output_gate>()};
  std::fill_n(job.error_signal.row(0), rows * cols, unwritten);
  if (gate_closed)
    job.gate->close();
  return job;
}

/// Whether nothing was written into `job`'s error signal.
bool unwritten_output(const segment_job& job) {
  const auto& out = job.error_signal;
  return std::all_of(out.row(0), out.row(0) + out.rows * out.cols,
                     [](float x) { return x == unwritten; });
}

/// The trainer receives `answer` for `job`: written exactly when its shape
/// is the job's and the caller still waits.
void trainer_receives(remote_loss& answer, const segment_job& job) {
  const auto& signal = answer.error_signal;
  require(consistent(signal), "load_float_rows let a shape through that is not its floats'");
  const bool fits = signal.rows == job.error_signal.rows && signal.cols == job.error_signal.cols &&
                    signal.values != nullptr;
  const bool waiting = !job.gate->closed();
  auto loss = remote_wire<get_loss_command>::from_remote(answer, job);
  if (loss) {
    require(fits && waiting, "an answer written where it does not fit, or past a closed gate");
    require(same_bits(job.error_signal, signal) &&
                std::memcmp(&*loss, &answer.loss, sizeof(double)) == 0,
            "the trainer got other bits than the answer's");
    return;
  }
  require(unwritten_output(job), "a refused answer was written");
  require(loss.error() == (fits ? errc::cancelled : errc::invalid_message),
          "an answer refused with another code");
}

/// The server receives a trainer's segment: the job it computes on, and the
/// answer made of that job, which the trainer must receive bit for bit.
void server_receives(remote_segment& segment) {
  auto& in = segment.log_posteriors;
  require(consistent(in), "load_float_rows let a shape through that is not its floats'");
  const bool empty = in.rows == 0 || in.cols == 0 || !in.values;
  const auto received = in.values;
  const std::string name = segment.segment;
  auto job = remote_wire<get_loss_command>::to_local(segment);
  if (!job) {
    require(empty && job.error() == errc::invalid_input,
            "a segment with frames refused, or with another code");
    return;
  }
  require(!empty && job->log_posteriors.storage == received && job->log_posteriors.valid(),
          "the job does not compute on the received floats");
  require(job->error_signal.valid() && job->error_signal.rows == in.rows &&
              job->error_signal.cols == in.cols && job->gate && !job->gate->closed(),
          "the job has no room for its answer, or a closed gate");
  auto checked = command_entry<get_loss_command>::check(*job);
  require(name.empty() ? checked == errc::invalid_input : !checked,
          "the pool would refuse a valid job, or take one without a name");
  // A skipped segment's loss: what CAF's own float packing cannot send.
  auto answer =
      remote_wire<get_loss_command>::to_reply(std::numeric_limits<double>::infinity(), *job);
  remote_loss arrived;
  cross(answer, arrived);
  auto trainer = trainer_job(in.rows, in.cols, false);
  auto loss = remote_wire<get_loss_command>::from_remote(arrived, trainer);
  require(loss && std::isinf(*loss) && same_bits(trainer.error_signal, answer.error_signal),
          "the server's answer did not arrive bit for bit");
}

/// The trainer receives an automaton: it must cross again to the same value.
void trainer_receives(remote_fsa& answer) {
  require(answer.fsa.edges.size() == 3 * answer.fsa.weights.size(),
          "load_remote_fsa let a wrong edge count through");
  remote_fsa again;
  cross(answer, again);
  require(again.fsa.num_states == answer.fsa.num_states && again.fsa.edges == answer.fsa.edges &&
              same_bits(again.fsa.weights, answer.fsa.weights),
          "the automaton does not survive another crossing");
  auto fsa = remote_wire<export_fsa_command>::from_remote(answer, fsa_query{});
  require(fsa && fsa->num_edges() == again.fsa.num_edges(),
          "the trainer's automaton is not the one that arrived");
}

/// The server receives an automaton query: the pool takes it exactly when it
/// names a known source and a text.
void server_receives(fsa_query& query) {
  const bool known =
      query.source == fsa_source::segment_name || query.source == fsa_source::orthography;
  const bool valid = known && !query.text.empty();
  auto local = remote_wire<export_fsa_command>::to_local(query);
  require(static_cast<bool>(local), "a query did not pass through");
  auto checked = command_entry<export_fsa_command>::check(*local);
  require(valid ? !checked : checked == errc::invalid_input,
          "a valid query refused, or an invalid one taken");
  (void)command_entry<export_fsa_command>::subject(*local);
  (void)command_entry<export_fsa_command>::name(*local);
}

/// Returns the server's own options key.
const std::string& server_key() {
  static const std::string key = [] {
    auto opts = parse_options(fuzz::server_options_json);
    require(static_cast<bool>(opts), "the server's options do not read");
    return remote_options_key(*opts);
  }();
  return key;
}

/// The server checks a trainer's handshake: accepted exactly when both the
/// interface version and the options (as a JSON value) are its own; a refusal names what
/// differs.
void server_receives_hello(const std::string& interface, const std::string& trainer_key) {
  auto err = check_handshake(server_name, interface, trainer_key, server_key());
  // The same options: the server's key as a JSON value, however written.
  const bool same =
      interface == remote_interface_version &&
      nlohmann::json::parse(trainer_key, nullptr, false) == nlohmann::json::parse(server_key());
  require(same ? !err : err == errc::invalid_options,
          "the server's own options refused, or other ones accepted");
  if (!err || interface != remote_interface_version)
    return;
  const auto message = error_message(err);
  const bool not_an_object = message.find("are not a JSON object") != std::string::npos;
  require(not_an_object || message.find("\n  '") != std::string::npos,
          "other options refused without naming one that differs");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::fuzz_input in{data, size};
  const auto c = fuzz::remote_wire_case::read(in);
  const auto bytes = in.rest();
  switch (c.message) {
  case fuzz::remote_message::segment: {
    remote_segment segment;
    if (!load(bytes, segment))
      server_receives(segment);
    break;
  }
  case fuzz::remote_message::loss: {
    remote_loss answer;
    if (!load(bytes, answer))
      trainer_receives(answer, trainer_job(c.rows, c.cols, c.gate_closed));
    break;
  }
  case fuzz::remote_message::fsa: {
    remote_fsa answer;
    if (!load(bytes, answer))
      trainer_receives(answer);
    break;
  }
  case fuzz::remote_message::fsa_query: {
    fsa_query query;
    if (!load(bytes, query))
      server_receives(query);
    break;
  }
  case fuzz::remote_message::hello: {
    // The typed message's two strings, as the server's handler gets them.
    std::string interface;
    std::string trainer_key;
    if (!load(bytes, interface, trainer_key))
      server_receives_hello(interface, trainer_key);
    break;
  }
  }
  return 0;
}
