// Writes the seeds of remote_wire_fuzzer into the directory named by its
// argument: values of the remote interface serialized with
// `caf::binary_serializer`, as CAF's network layer sends them (and as
// tests/actors/remote/ writes them), each behind the case that reads it
// (remote_wire_case.hpp).

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <caf/binary_serializer.hpp>

#include "actors/remote/remote_handshake.hpp"
#include "fuzz/remote_wire_case.hpp"
#include "fuzz/seeds/seed_writer.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/remote_interface.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using fuzz::remote_message;
using fuzz::remote_wire_case;

namespace {

/// Returns the bytes of `xs` as CAF's network layer writes them.
template <class... Ts>
std::string serialized(Ts&... xs) {
  std::vector<char> buffer;
  caf::binary_serializer sink{nullptr, buffer};
  if (auto err = sink(xs...)) {
    std::fprintf(stderr, "remote_wire_seeds: %s\n", render(err).c_str());
    std::exit(1);
  }
  return {buffer.begin(), buffer.end()};
}

/// A `rows` x `cols` matrix holding 0.5, 1.5, ... and one +inf.
float_rows matrix(uint64_t rows, uint64_t cols) {
  float_rows x{rows, cols, make_float_storage(rows * cols)};
  for (size_t i = 0; i < rows * cols; ++i)
    x.values->data()[i] = static_cast<float>(i) + 0.5f;
  x.values->data()[0] = std::numeric_limits<float>::infinity();
  return x;
}

/// Returns the options key of the options `json`, or ends the program.
std::string key_of(std::string_view json) {
  auto opts = parse_options(json);
  if (!opts) {
    std::fprintf(stderr, "remote_wire_seeds: %s\n", render(opts.error()).c_str());
    std::exit(1);
  }
  return remote_options_key(*opts);
}

} // namespace

int main(int argc, char** argv) {
  fuzz::seed_writer seeds{argc, argv};
  const remote_wire_case segment{remote_message::segment};
  remote_segment named{"corpus/rec1/seg-7", matrix(3, 4)};
  seeds.write("segment-3x4", segment.header() + serialized(named));
  remote_segment empty{"corpus/rec1/seg-8", float_rows{0, 5, nullptr}};
  seeds.write("segment-without-frames", segment.header() + serialized(empty));

  const remote_wire_case loss{remote_message::loss, 3, 4};
  remote_loss answered{2.5, matrix(3, 4)};
  seeds.write("loss-3x4", loss.header() + serialized(answered));
  remote_loss skipped{std::numeric_limits<double>::infinity(),
                      float_rows{3, 4, make_float_storage(12)}};
  seeds.write("loss-skipped-3x4", loss.header() + serialized(skipped));
  remote_wire_case closed{remote_message::loss, 2, 3, true};
  remote_loss late{1.0, matrix(2, 3)};
  seeds.write("loss-2x3-caller-gone", closed.header() + serialized(late));
  remote_loss wrong{1.0, matrix(4, 3)};
  seeds.write("loss-4x3-for-3x4", loss.header() + serialized(wrong));

  const remote_wire_case fsa{remote_message::fsa};
  remote_fsa automaton{segment_fsa{3,
                                   {0, 0, 1, 0, 1, 2, 7, 7, 4294967295u},
                                   {0.5f, std::numeric_limits<float>::infinity(), -1.0f}}};
  seeds.write("fsa-3-edges", fsa.header() + serialized(automaton));
  remote_fsa single{segment_fsa{1, {}, {}}};
  seeds.write("fsa-no-edges", fsa.header() + serialized(single));

  const remote_wire_case query{remote_message::fsa_query};
  fsa_query by_name{fsa_source::segment_name, "corpus/rec1/seg-7"};
  seeds.write("fsa-query-segment", query.header() + serialized(by_name));
  fsa_query by_orthography{fsa_source::orthography, "3 17 5"};
  seeds.write("fsa-query-orthography", query.header() + serialized(by_orthography));

  const remote_wire_case hello{remote_message::hello};
  std::string version = remote_interface_version;
  std::string key = key_of(fuzz::server_options_json);
  seeds.write("hello-accepted", hello.header() + serialized(version, key));
  std::string other_key =
      key_of(R"({"sprintExecPath": "/opt/rasr2/nn-trainer", "framing": "raw"})");
  seeds.write("hello-other-options", hello.header() + serialized(version, other_key));
  std::string old_version = "sprintrt remote pools v1 (float32 little-endian)";
  seeds.write("hello-other-version", hello.header() + serialized(old_version, key));
  std::string not_json = "[1, 2]";
  seeds.write("hello-key-no-object", hello.header() + serialized(version, not_json));
  std::printf("remote_wire_seeds: %d seeds\n", seeds.written());
  return 0;
}
