#pragma once

/// @file
/// The command line of `sprint-sim`, the simulated Sprint executable.
///
/// A parent starts Sprint with RASR-style arguments `--SELECTOR.NAME=VALUE`
/// (docs/protocol.md section 1). `sprint-sim` has no component hierarchy, so the
/// selector does not matter: the parameter name is the part of the key after
/// its last '.' (`--*.corpus=x`, `--corpus=x` and `--*.trainer.corpus=x` all
/// set `corpus`; a name never contains '.', and the value after the first
/// '=' may contain anything). When a parameter is given twice, the last one
/// wins, as in RASR.
///
/// The parameters, their defaults and what they mean are declared once, in
/// sim/sprint_sim_parameters.cpp; `sprint-sim --help` lists them.
///
/// Booleans are true/false, yes/no, on/off or 1/0 (any case). Any other
/// parameter is accepted with a warning (real Sprint configs pass many);
/// an argument that does not start with `--` or has no `=` is an error.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/common.h>

#include "criterion/hmm_topology.hpp"
#include "criterion/topology.hpp"
#include "sim/corpus_criterion.hpp"
#include "sim/fault_injection.hpp"
#include "sim/sprint_service.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::sim {

/// The PythonControl version `sprint-sim` claims to be (RASR's current one):
/// a parent asking for more with `minPythonControlVersion` is refused.
constexpr int python_control_version = 5;

/// The `pymod-config` string: how the parent's pipes reach the child.
struct python_control_config {
  /// `c2p_fd`: the child's end of the child-to-parent pipe (it writes).
  int c2p_fd = -1;
  /// `p2c_fd`: the child's end of the parent-to-child pipe (it reads).
  int p2c_fd = -1;
  /// `minPythonControlVersion`, when given.
  std::optional<int> min_version;
  /// `sprintrtSharedMemoryFd`: the shared region sprintrt offers, when
  /// given (docs/protocol.md section 7).
  std::optional<int> shared_memory_fd;
  /// Every other `key:value` item (e.g. EnableAutoNumpySharedMemPickling),
  /// accepted and ignored.
  std::map<std::string, std::string> extra;
};

/// Which topology builds the segments' FSAs.
enum class topology_kind : uint8_t { ctc, hmm };

/// Everything `sprint-sim` was told on its command line.
struct sprint_sim_config {
  /// `python-control-enabled`: the process requires it true.
  bool python_control_enabled = false;
  /// `pymod-config`.
  python_control_config python_control;
  /// `pymod-path` and `pymod-name` (what real RASR would load).
  std::string pymod_path;
  std::string pymod_name;
  /// `python-segment-order`.
  bool python_segment_order = false;
  /// `corpus`: the corpus file.
  std::string corpus_path;
  /// `criterion`.
  criterion_kind criterion = criterion_kind::full_sum;
  /// `am-scale`, `lm-scale`, `boost` (sequence-discriminative criteria).
  criterion::sequence_scales scales;
  /// `denominator`, `lm-order`, `lm-smoothing` (sequence-discriminative
  /// criteria).
  criterion::denominator_options denominator;
  /// `topology`.
  topology_kind topology = topology_kind::ctc;
  /// `blank-index` (CTC).
  uint32_t blank_index = 0;
  /// `hmm-*` (HMM).
  criterion::hmm_options hmm;
  /// `framing`, `array-module`, `loss-type`, `name`.
  service_options service;
  /// `log-level`.
  spdlog::level::level_enum log_level = spdlog::level::warn;
  /// `fault`, `fault-after`, `crash-segment`, `delay-ms`.
  fault_options faults;
  /// What to tell the user on stderr once logging is set up: unknown
  /// parameters, options that do not apply to the chosen topology.
  std::vector<std::string> warnings;
};

/// Who the parameters are for: the same `--*.NAME=VALUE` parameters configure
/// the `sprint-sim` process and in-process simulated workers.
enum class parameter_scope : uint8_t {
  /// The `sprint-sim` process: the pipe parameters are required (they name
  /// its pipes), faults are allowed.
  process,
  /// A simulated worker inside the parent: it has no pipes, so the pipe
  /// parameters are optional (checked and ignored when given), and the
  /// fault injection parameters (the table's `process_only` ones) are
  /// errors: in-process workers take their delays and failures from
  /// `sim_worker_behavior`.
  in_process,
};

/// Parses `sprint-sim`'s arguments, without the program name. Errors are
/// `invalid_options` and quote the offending argument.
caf::expected<sprint_sim_config> parse_sprint_sim_config(const std::vector<std::string>& args);

/// Parses the same arguments for `scope`; `parse_sprint_sim_config(args)` is
/// `parse_sim_parameters(args, parameter_scope::process)`.
caf::expected<sprint_sim_config> parse_sim_parameters(const std::vector<std::string>& args,
                                                      parameter_scope scope);

/// Parses a `pymod-config` value like RETURNN's SprintControl does: items
/// separated by ',', each `key:value` split at its first ':', empty items
/// skipped, the last of repeated keys wins. `c2p_fd` and `p2c_fd` are
/// required, distinct, non-negative; `minPythonControlVersion` must not
/// exceed `python_control_version`.
caf::expected<python_control_config> parse_python_control_config(std::string_view text);

/// Builds the topology `config` selects (the HMM's costs are checked here).
caf::expected<std::shared_ptr<const criterion::topology>>
make_topology(const sprint_sim_config& config);

/// Returns what loss requests compute under `config`: for a
/// sequence-discriminative criterion, its denominator over `segments` and
/// `automaton_topology` is read or estimated here (`denominator::make`'s
/// errors: the start fails).
caf::expected<criterion_spec> make_criterion_spec(const sprint_sim_config& config,
                                                  const criterion::corpus& segments,
                                                  const criterion::topology& automaton_topology);

} // namespace sprintrt::sim
