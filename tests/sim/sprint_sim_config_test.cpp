#include "sim/sprint_sim_config.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using namespace sprintrt::sim;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

using args = std::vector<std::string>;

/// The arguments RETURNN's SprintSubprocessInstance builds (docs/protocol.md
/// section 1), for fds 7 (c2p) and 4 (p2c).
args returnn_args(bool segment_order) {
  const std::string config = "c2p_fd:7,p2c_fd:4,minPythonControlVersion:2";
  args result{
      "--*.python-control-enabled=true",
      "--*.pymod-path=/opt/returnn",
      "--*.pymod-name=returnn.sprint.control",
      "--*.pymod-config=" + config,
  };
  if (segment_order)
    result.insert(result.end(), {
                                    "--*.python-segment-order=true",
                                    "--*.python-segment-order-pymod-path=/opt/returnn",
                                    "--*.python-segment-order-pymod-name=returnn.sprint.control",
                                    "--*.python-segment-order-config=" + config,
                                    "--*.python-segment-order-allow-copy=false",
                                });
  return result;
}

/// The minimal valid arguments plus `extra`.
args minimal(std::initializer_list<std::string> extra = {}) {
  args result{"--*.python-control-enabled=true", "--*.pymod-config=c2p_fd:7,p2c_fd:4",
              "--*.corpus=corpus.txt"};
  result.insert(result.end(), extra);
  return result;
}

/// Parses `xs`, which must fail, and returns the error message.
std::string parse_error(const args& xs) {
  auto config = parse_sprint_sim_config(xs);
  REQUIRE_FALSE(config);
  CHECK(config.error() == errc::invalid_options);
  return error_message(config.error());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("sprint-sim accepts the arguments RETURNN passes to Sprint") {
  for (bool segment_order : {false, true}) {
    INFO("segment order: " << segment_order);
    auto xs = returnn_args(segment_order);
    xs.insert(xs.end(), {"--*.corpus=/data/corpus.txt", "--*.topology=hmm",
                         "--*.hmm-silence-index=0", "--*.log-channel.file=/dev/null"});
    const auto config = unwrap(parse_sprint_sim_config(xs));
    CHECK(config.python_control.c2p_fd == 7);
    CHECK(config.python_control.p2c_fd == 4);
    CHECK(config.python_control.min_version == 2);
    CHECK(config.python_control.extra.empty());
    CHECK(config.pymod_path == "/opt/returnn");
    CHECK(config.pymod_name == "returnn.sprint.control");
    CHECK(config.python_segment_order == segment_order);
    CHECK(config.corpus_path == "/data/corpus.txt");
    CHECK(config.topology == topology_kind::hmm);
    CHECK(config.hmm.silence_index == 0u);
    // The unknown RASR parameter is accepted with a warning, and nothing else warns.
    REQUIRE(config.warnings.size() == 1);
    CHECK(contains(config.warnings[0], "'--*.log-channel.file=/dev/null'"));
  }
}

TEST_CASE("sprint-sim's defaults") {
  const auto config = unwrap(parse_sprint_sim_config(minimal()));
  CHECK_FALSE(config.python_control.min_version);
  CHECK(config.topology == topology_kind::ctc);
  CHECK(config.criterion == criterion_kind::full_sum);
  CHECK(config.blank_index == 0);
  CHECK(config.hmm.loop_cost == hmm_options{}.loop_cost);
  CHECK_FALSE(config.hmm.silence_index);
  CHECK(config.service.wire.framing == sprintrt::protocol::framing::length_prefixed);
  CHECK(config.service.wire.array_module == "returnn.util.task_system");
  CHECK(config.service.loss_encoding == sprintrt::protocol::loss_encoding::python_float);
  CHECK(config.service.child_name == "sprint-sim");
  CHECK(config.log_level == spdlog::level::warn);
  CHECK(config.faults.kind == fault_kind::none);
  CHECK(config.faults.after == 0);
  CHECK_FALSE(config.faults.crash_segment);
  CHECK(config.faults.delay.count() == 0);
  CHECK(config.warnings.empty());
}

TEST_CASE("the selector before the parameter name does not matter, the last value wins") {
  for (const auto& arg : {"--corpus=a.txt", "--*.corpus=a.txt", "--*.trainer.corpus=a.txt",
                          "--neural-network-trainer.corpus=a.txt"}) {
    INFO(arg);
    auto xs = minimal({arg});
    CHECK(unwrap(parse_sprint_sim_config(xs)).corpus_path == "a.txt");
  }
  // The value may contain '=' and '.'.
  CHECK(unwrap(parse_sprint_sim_config(minimal({"--*.name=a=b.c"}))).service.child_name == "a=b.c");
  CHECK(unwrap(parse_sprint_sim_config(minimal({"--*.blank-index=3", "--*.blank-index=5"})))
            .blank_index == 5);
  // An RASR parameter whose last component is not ours is not ours.
  const auto config = unwrap(parse_sprint_sim_config(minimal({"--*.corpus.file=x.xml"})));
  CHECK(config.corpus_path == "corpus.txt");
  CHECK(config.warnings.size() == 1);
}

TEST_CASE("sprint-sim's own options") {
  const auto config = unwrap(parse_sprint_sim_config(minimal({
      "--*.topology=ctc",
      "--*.blank-index=9",
      "--*.framing=raw",
      "--*.array-module=TaskSystem",
      "--*.loss-type=numpy-float32",
      "--*.name=sim-7",
      "--*.log-level=debug",
      "--*.criterion=zero",
  })));
  CHECK(config.criterion == criterion_kind::zero);
  CHECK(config.blank_index == 9);
  CHECK(config.service.wire.framing == sprintrt::protocol::framing::raw);
  CHECK(config.service.wire.array_module == "TaskSystem");
  CHECK(config.service.loss_encoding == sprintrt::protocol::loss_encoding::numpy_float32);
  CHECK(config.service.child_name == "sim-7");
  CHECK(config.log_level == spdlog::level::debug);
  CHECK(config.warnings.empty());
}

TEST_CASE("the HMM options map onto hmm_options") {
  const auto config = unwrap(parse_sprint_sim_config(minimal({
      "--*.topology=hmm",
      "--*.hmm-loop-cost=0.25",
      "--*.hmm-forward-cost=1.5",
      "--*.hmm-silence-index=3",
      "--*.hmm-silence-loop-cost=0.125",
      "--*.hmm-silence-entry-cost=inf",
      "--*.hmm-silence-exit-cost=2",
  })));
  CHECK(config.hmm.loop_cost == 0.25f);
  CHECK(config.hmm.forward_cost == 1.5f);
  CHECK(config.hmm.silence_index == 3u);
  CHECK(config.hmm.silence_loop_cost == 0.125f);
  CHECK(std::isinf(config.hmm.silence_entry_cost));
  CHECK(config.hmm.silence_exit_cost == 2.0f);
  CHECK(config.warnings.empty());
  const auto topology = unwrap(make_topology(config));
  CHECK(topology->name() == "hmm");
  const auto none = unwrap(parse_sprint_sim_config(
      minimal({"--*.topology=hmm", "--*.hmm-silence-index=3", "--*.hmm-silence-index=none"})));
  CHECK_FALSE(none.hmm.silence_index);
}

TEST_CASE("options of the other topology are ignored with a warning") {
  const auto ctc = unwrap(parse_sprint_sim_config(
      minimal({"--*.hmm-loop-cost=1", "--*.hmm-loop-cost=2", "--*.hmm-silence-index=0"})));
  REQUIRE(ctc.warnings.size() == 2);
  CHECK(ctc.warnings[0] == "--*.hmm-loop-cost does not apply to topology=ctc: ignored");
  CHECK(ctc.warnings[1] == "--*.hmm-silence-index does not apply to topology=ctc: ignored");
  const auto hmm =
      unwrap(parse_sprint_sim_config(minimal({"--*.blank-index=2", "--*.topology=hmm"})));
  REQUIRE(hmm.warnings.size() == 1);
  CHECK(hmm.warnings[0] == "--*.blank-index does not apply to topology=hmm: ignored");
}

TEST_CASE("make_topology builds the chosen topology") {
  const auto ctc =
      unwrap(make_topology(unwrap(parse_sprint_sim_config(minimal({"--*.blank-index=3"})))));
  REQUIRE(ctc->name() == "ctc");
  CHECK(dynamic_cast<const ctc_topology&>(*ctc).blank_index() == 3);
  auto bad =
      unwrap(parse_sprint_sim_config(minimal({"--*.topology=hmm", "--*.hmm-loop-cost=nan"})));
  auto topology = make_topology(bad);
  REQUIRE_FALSE(topology);
  CHECK(topology.error() == errc::invalid_options);
}

TEST_CASE("the fault options") {
  const auto config = unwrap(parse_sprint_sim_config(minimal({
      "--*.fault=garbage",
      "--*.fault-after=3",
      "--*.crash-segment=corpus/rec/seg-2",
      "--*.delay-ms=250",
      "--*.init-delay-ms=120",
  })));
  CHECK(config.faults.kind == fault_kind::garbage);
  CHECK(config.faults.after == 3);
  CHECK(config.faults.crash_segment == std::string{"corpus/rec/seg-2"});
  CHECK(config.faults.delay.count() == 250);
  CHECK(config.faults.init_delay.count() == 120);
  for (auto kind : {"crash", "hang", "exit-at-start", "no-init-reply", "bad-version", "none"}) {
    INFO(kind);
    const auto x = unwrap(parse_sprint_sim_config(minimal({std::string{"--*.fault="} + kind})));
    CHECK(to_string(x.faults.kind) == std::string{kind});
  }
  // fault-after before fault is fine: the whole is checked at the end.
  CHECK(parse_sprint_sim_config(minimal({"--*.fault-after=1", "--*.fault=crash"})));
}

TEST_CASE("in-process parameters need no pipes and refuse the process faults") {
  const auto config = unwrap(
      parse_sim_parameters({"--*.corpus=c.txt", "--*.topology=hmm", "--*.loss-type=numpy-float32"},
                           parameter_scope::in_process));
  CHECK(config.corpus_path == "c.txt");
  CHECK(config.topology == topology_kind::hmm);
  CHECK(config.service.loss_encoding == sprintrt::protocol::loss_encoding::numpy_float32);
  // The pipe parameters are still checked when given.
  CHECK(parse_sim_parameters({"--*.corpus=c.txt", "--*.pymod-config=c2p_fd:1,p2c_fd:2"},
                             parameter_scope::in_process));
  CHECK_FALSE(parse_sim_parameters({"--*.corpus=c.txt", "--*.pymod-config=c2p_fd:1"},
                                   parameter_scope::in_process));
  auto missing = parse_sim_parameters({"--*.topology=ctc"}, parameter_scope::in_process);
  REQUIRE_FALSE(missing);
  CHECK(error_message(missing.error()) == "--*.corpus=FILE is required");
  for (auto fault : {"--*.fault=crash", "--*.fault-after=1", "--*.crash-segment=a",
                     "--*.delay-ms=0", "--*.init-delay-ms=0"}) {
    INFO(fault);
    auto refused = parse_sim_parameters({"--*.corpus=c.txt", fault}, parameter_scope::in_process);
    REQUIRE_FALSE(refused);
    CHECK(refused.error() == errc::invalid_options);
    CHECK(contains(error_message(refused.error()), fault));
    CHECK(contains(error_message(refused.error()), "sim_worker_behavior"));
  }
  // The process scope is parse_sprint_sim_config: the pipes are required.
  CHECK_FALSE(parse_sim_parameters({"--*.corpus=c.txt"}, parameter_scope::process));
}

TEST_CASE("pymod-config is parsed like SprintControl parses it") {
  const auto config = unwrap(parse_python_control_config(
      "c2p_fd:5,p2c_fd:6,minPythonControlVersion:5,EnableAutoNumpySharedMemPickling:True,,"
      "x:a:b"));
  CHECK(config.c2p_fd == 5);
  CHECK(config.p2c_fd == 6);
  CHECK(config.min_version == 5);
  CHECK(config.extra.at("EnableAutoNumpySharedMemPickling") == "True");
  CHECK(config.extra.at("x") == "a:b");
  // Python's int() allows white space; the last of repeated keys wins.
  const auto repeated = unwrap(parse_python_control_config("c2p_fd: 3 ,p2c_fd:4,c2p_fd:8"));
  CHECK(repeated.c2p_fd == 8);
  // The shared-memory flag is accepted, with a warning: arrays must be inline.
  const auto shm = unwrap(parse_sprint_sim_config(
      {"--*.python-control-enabled=true",
       "--*.pymod-config=c2p_fd:7,p2c_fd:4,EnableAutoNumpySharedMemPickling:True",
       "--*.corpus=c.txt"}));
  REQUIRE(shm.warnings.size() == 1);
  CHECK(contains(shm.warnings[0], "EnableAutoNumpySharedMemPickling"));
}

TEST_CASE("pymod-config errors") {
  auto error = [](const char* text) {
    auto config = parse_python_control_config(text);
    REQUIRE_FALSE(config);
    CHECK(config.error() == errc::invalid_options);
    return error_message(config.error());
  };
  CHECK(error("c2p_fd:5,p2c_fd:6,minPythonControlVersion:6") ==
        "minPythonControlVersion 6 is higher than this PythonControl's version 5");
  CHECK(error("p2c_fd:6") == "pymod-config lacks c2p_fd (the pipe the child writes)");
  CHECK(error("c2p_fd:6") == "pymod-config lacks p2c_fd (the pipe the child reads)");
  CHECK(error("") == "pymod-config lacks c2p_fd (the pipe the child writes)");
  CHECK(error("c2p_fd:x,p2c_fd:6") == "pymod-config c2p_fd 'x' is not an integer");
  CHECK(error("c2p_fd:5,p2c_fd:6,minPythonControlVersion:2.0") ==
        "pymod-config minPythonControlVersion '2.0' is not an integer");
  CHECK(error("c2p_fd:5,p2c_fd:99999999999") == "pymod-config p2c_fd '99999999999' is not an "
                                                "integer");
  CHECK(error("c2p_fd:-1,p2c_fd:6") ==
        "pymod-config file descriptors must not be negative, got c2p_fd -1 and p2c_fd 6");
  CHECK(error("c2p_fd:6,p2c_fd:6") == "pymod-config c2p_fd and p2c_fd are both 6");
  CHECK(error("c2p_fd:5,p2c_fd:6,verbose") == "pymod-config item 'verbose' is not key:value");
  // The shared region's descriptor: never a pipe's or a standard stream's
  // (attaching takes it over, and closes it if it is no region).
  CHECK(unwrap(parse_python_control_config("c2p_fd:3,p2c_fd:4,sprintrtSharedMemoryFd:5"))
            .shared_memory_fd == 5);
  CHECK(error("c2p_fd:3,p2c_fd:4,sprintrtSharedMemoryFd:3") ==
        "pymod-config sprintrtSharedMemoryFd 3 is a standard stream or one of the pipes");
  CHECK(error("c2p_fd:3,p2c_fd:4,sprintrtSharedMemoryFd:1") ==
        "pymod-config sprintrtSharedMemoryFd 1 is a standard stream or one of the pipes");
  CHECK(error("c2p_fd:3,p2c_fd:4,sprintrtSharedMemoryFd:-5") ==
        "pymod-config sprintrtSharedMemoryFd '-5' is not a descriptor number");
}

TEST_CASE("required parameters") {
  CHECK(contains(parse_error({"--*.pymod-config=c2p_fd:7,p2c_fd:4", "--*.corpus=c.txt"}),
                 "--*.python-control-enabled=true is required"));
  CHECK(contains(parse_error({"--*.python-control-enabled=false",
                              "--*.pymod-config=c2p_fd:7,p2c_fd:4", "--*.corpus=c.txt"}),
                 "--*.python-control-enabled=true is required"));
  CHECK(contains(parse_error({"--*.python-control-enabled=true", "--*.corpus=c.txt"}),
                 "--*.pymod-config=c2p_fd:C,p2c_fd:P,... is required"));
  CHECK(parse_error({"--*.python-control-enabled=true", "--*.pymod-config=c2p_fd:7,p2c_fd:4"}) ==
        "--*.corpus=FILE is required");
  // The pymod-config errors come with the argument.
  CHECK(parse_error(minimal({"--*.pymod-config=c2p_fd:7,p2c_fd:4,minPythonControlVersion:9"})) ==
        "argument '--*.pymod-config=c2p_fd:7,p2c_fd:4,minPythonControlVersion:9': "
        "minPythonControlVersion 9 is higher than this PythonControl's version 5");
}

TEST_CASE("malformed arguments") {
  CHECK(parse_error(minimal({"corpus.txt"})) ==
        "argument 'corpus.txt': expected RASR style --SELECTOR.NAME=VALUE");
  CHECK(parse_error(minimal({"-x=1"})) ==
        "argument '-x=1': expected RASR style --SELECTOR.NAME=VALUE");
  CHECK(parse_error(minimal({"--help"})) ==
        "argument '--help': expected RASR style --SELECTOR.NAME=VALUE");
  CHECK(parse_error(minimal({"--*.=1"})) == "argument '--*.=1': the parameter name is empty");
  CHECK(parse_error(minimal({"--=1"})) == "argument '--=1': the parameter name is empty");
}

TEST_CASE("bad option values name the argument and what was expected") {
  struct bad_case {
    const char* arg;
    const char* expected;
  };
  const bad_case cases[] = {
      {"--*.python-control-enabled=maybe", "expected true or false"},
      {"--*.python-segment-order=2", "expected true or false"},
      {"--*.python-segment-order-allow-copy=", "expected true or false"},
      {"--*.corpus=", "expected a file name"},
      {"--*.topology=rnnt", "expected ctc or hmm"},
      {"--*.criterion=sum", "expected full-sum, zero, mmi, bmmi or smbr"},
      {"--*.criterion=Zero", "expected full-sum, zero, mmi, bmmi or smbr"},
      {"--*.criterion=", "expected full-sum, zero, mmi, bmmi or smbr"},
      {"--*.blank-index=-1", "expected a column index (0 to 2^32-1)"},
      {"--*.blank-index=4294967296", "expected a column index (0 to 2^32-1)"},
      {"--*.blank-index=1x", "expected a column index (0 to 2^32-1)"},
      {"--*.hmm-silence-index=a", "expected a column index (0 to 2^32-1) or none"},
      {"--*.hmm-loop-cost=cheap", "expected a cost in -log space (a number, or inf)"},
      {"--*.hmm-forward-cost=", "expected a cost in -log space (a number, or inf)"},
      {"--*.framing=lines", "expected length_prefixed or raw"},
      {"--*.array-module=", "expected a Python module name such as returnn.util.task_system"},
      {"--*.array-module=a\nb", "expected a Python module name such as returnn.util.task_system"},
      {"--*.array-module=.x", "expected a Python module name such as returnn.util.task_system"},
      {"--*.loss-type=double", "expected float or numpy-float32"},
      {"--*.name=", "expected a non-empty UTF-8 name"},
      {"--*.name=\xff", "expected a non-empty UTF-8 name"},
      {"--*.log-level=loud", "expected trace, debug, info, warn, error, critical or off"},
      {"--*.fault=explode", "expected none, crash, hang, garbage, exit-at-start, no-init-reply, "
                            "bad-version, oversized-prefix, wrong-shape, random, bomb, "
                            "shm-outside, shm-scribble, shm-shrink or shm-claim"},
      {"--*.fault-after=-1", "expected a number of requests"},
      {"--*.fault-rate=1.5", "expected a probability from 0 to 1"},
      {"--*.fault-rate=often", "expected a probability from 0 to 1"},
      {"--*.fault-seed=-3", "expected a seed (0 to 2^64-1)"},
      {"--*.crash-segment=", "expected a segment name"},
      {"--*.delay-ms=3600001", "expected milliseconds from 0 to 3600000"},
      {"--*.delay-ms=fast", "expected milliseconds from 0 to 3600000"},
  };
  for (const auto& c : cases) {
    INFO(c.arg);
    CHECK(parse_error(minimal({c.arg})) == "argument '" + std::string{c.arg} + "': " + c.expected);
  }
}

TEST_CASE("fault-after applies to the counting faults only") {
  CHECK(parse_error(minimal({"--*.fault-after=2"})) ==
        "--*.fault-after applies to fault=crash, hang, garbage, oversized-prefix, wrong-shape, "
        "bomb or shm-outside only, not to fault=none");
  CHECK(parse_error(minimal({"--*.fault=exit-at-start", "--*.fault-after=2"})) ==
        "--*.fault-after applies to fault=crash, hang, garbage, oversized-prefix, wrong-shape, "
        "bomb or shm-outside only, not to fault=exit-at-start");
  CHECK(unwrap(parse_sprint_sim_config(minimal({"--*.fault=bomb", "--*.fault-after=3"})))
            .faults.after == 3);
  CHECK(
      unwrap(parse_sprint_sim_config(minimal({"--*.fault=oversized-prefix", "--*.fault-after=2"})))
          .faults.after == 2);
}

TEST_CASE("the criterion option selects full-sum or zero, in a process and in-process alike") {
  CHECK(unwrap(parse_sprint_sim_config(minimal({"--*.criterion=zero", "--*.criterion=full-sum"})))
            .criterion == criterion_kind::full_sum);
  const args in_process{"--*.corpus=c.txt", "--*.trainer.criterion=zero"};
  CHECK(unwrap(parse_sim_parameters(in_process, parameter_scope::in_process)).criterion ==
        criterion_kind::zero);
  CHECK(to_string(criterion_kind::zero) == "zero");
  CHECK(to_string(criterion_kind::full_sum) == "full-sum");
  CHECK(parse_criterion_kind("full-sum") == criterion_kind::full_sum);
  CHECK_FALSE(parse_criterion_kind("full_sum"));
}

TEST_CASE("the sequence-discriminative criteria take their denominator and scales") {
  const auto config = unwrap(parse_sprint_sim_config(minimal({
      "--*.criterion=bmmi",
      "--*.denominator=label-lm",
      "--*.lm-order=3",
      "--*.lm-smoothing=0.25",
      "--*.am-scale=0.5",
      "--*.lm-scale=2",
      "--*.boost=0.1",
  })));
  CHECK(config.criterion == criterion_kind::bmmi);
  CHECK(config.denominator.is_label_lm());
  CHECK(config.denominator.lm.order == 3);
  CHECK(config.denominator.lm.smoothing == 0.25);
  CHECK(config.scales.am == 0.5);
  CHECK(config.scales.lm == 2);
  CHECK(config.scales.boost == 0.1);
  const auto smbr =
      unwrap(parse_sprint_sim_config(minimal({"--*.criterion=smbr", "--*.denominator=den.txt"})));
  CHECK(smbr.denominator.source == "den.txt");
  CHECK_FALSE(smbr.denominator.is_label_lm());
  CHECK(smbr.scales.am == 1);
  CHECK(smbr.scales.lm == 1);
  for (auto kind : {criterion_kind::mmi, criterion_kind::bmmi, criterion_kind::smbr})
    CHECK(parse_criterion_kind(to_string(kind)) == kind);
}

TEST_CASE("sequence-discriminative parameters out of place or range are refused, named") {
  CHECK(parse_error(minimal({"--*.criterion=mmi"})) ==
        "--*.criterion=mmi needs --*.denominator=FILE|label-lm (the competing hypotheses)");
  CHECK(parse_error(minimal({"--*.denominator=den.txt"})) ==
        "--*.denominator applies to criterion mmi, bmmi or smbr, not to --*.criterion=full-sum");
  CHECK(parse_error(minimal({"--*.criterion=zero", "--*.am-scale=2"})) ==
        "--*.am-scale applies to criterion mmi, bmmi or smbr, not to --*.criterion=zero");
  CHECK(parse_error(minimal({"--*.criterion=mmi", "--*.denominator=d", "--*.boost=0"})) ==
        "--*.boost applies to criterion bmmi only, not to --*.criterion=mmi");
  CHECK(parse_error(minimal({"--*.criterion=smbr", "--*.denominator=d", "--*.lm-order=2"})) ==
        "--*.lm-order applies to --*.denominator=label-lm, not to a denominator file");
  CHECK(parse_error(minimal({"--*.criterion=mmi", "--*.denominator=label-lm", "--*.lm-order=4"})) ==
        "argument '--*.lm-order=4': expected 1, 2 or 3");
  CHECK(parse_error(minimal({"--*.criterion=mmi", "--*.denominator=d", "--*.am-scale=0"})) ==
        "argument '--*.am-scale=0': expected a finite number > 0");
  CHECK(parse_error(minimal({"--*.criterion=mmi", "--*.denominator=d", "--*.lm-scale=-1"})) ==
        "argument '--*.lm-scale=-1': expected a finite number >= 0");
  CHECK(parse_error(minimal({"--*.criterion=bmmi", "--*.denominator=d", "--*.boost=nan"})) ==
        "argument '--*.boost=nan': expected a finite number >= 0");
  CHECK(parse_error(minimal({"--*.criterion=mmi", "--*.denominator="})) ==
        "argument '--*.denominator=': expected a file name or label-lm");
}

TEST_CASE("make_criterion_spec reads the denominator the configuration names") {
  const auto segments = unwrap(corpus::from_string("a\t1 2\n"));
  const ctc_topology ctc{0};
  auto config = unwrap(parse_sprint_sim_config(
      minimal({"--*.criterion=mmi", "--*.denominator=label-lm", "--*.lm-scale=0.5"})));
  const auto spec = unwrap(make_criterion_spec(config, segments, ctc));
  CHECK(spec.kind == criterion_kind::mmi);
  REQUIRE(spec.competitors);
  CHECK(spec.competitors->description() == "label 2-gram over 2 labels (add-1 smoothing)");
  CHECK(spec.scales.lm == 0.5);
  config.denominator.source = "/nonexistent/den.txt";
  auto missing = make_criterion_spec(config, segments, ctc);
  REQUIRE_FALSE(missing);
  CHECK(error_message(missing.error()) == "cannot open denominator file '/nonexistent/den.txt'");
  config = unwrap(parse_sprint_sim_config(minimal()));
  CHECK_FALSE(unwrap(make_criterion_spec(config, segments, ctc)).competitors);
}
