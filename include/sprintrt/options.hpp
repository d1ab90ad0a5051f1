#pragma once

/// @file
/// The options of a Sprint worker pool: RETURNN's `sprint_opts`, as JSON.
///
/// RETURNN's keys keep their names and meaning; sprintrt adds its own. Each
/// option is declared once, in config/option_table.cpp (its key, member,
/// codec, help, whether it is required and whether it is local to a
/// machine); its default is its member's initializer below. The README's
/// table of options and `sprintrt doctor --list-options` are generated from
/// that table.
///
/// A string value `config:NAME` stands for the top-level key NAME of the same
/// JSON document (RETURNN's `config:` indirection); keys referenced that way
/// may appear in the document besides the options. Only top-level option
/// values are references, and a referenced value may not be one itself. Any
/// other unknown key (with a suggestion when one is close), a duplicate key,
/// and any value of the wrong type, is an `invalid_options` error naming the
/// key. `null` for an optional key means its default.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sprintrt/error.hpp"

namespace sprintrt {

/// Changes to the environment a Sprint child starts with (the original forced
/// its child's Theano onto the CPU; this is the generic form).
struct environment_changes {
  /// Variables to set (or overwrite).
  std::map<std::string, std::string> set;
  /// Variables to remove.
  std::vector<std::string> unset;

  friend bool operator==(const environment_changes& x, const environment_changes& y) {
    return x.set == y.set && x.unset == y.unset;
  }
};

/// A host and port where a remote worker pool (`sprintrt serve`) listens.
struct remote_endpoint {
  /// A host name or address (non-empty).
  std::string host;
  /// The TCP port, 1 to 65535.
  uint16_t port = 0;

  friend bool operator==(const remote_endpoint& x, const remote_endpoint& y) {
    return x.host == y.host && x.port == y.port;
  }
};

/// The PEM files of one end of a TLS connection between a trainer and its
/// remote pools (CAF 0.17's `caf::openssl`): both ends present a certificate
/// that a CA the other trusts signed (mutual TLS, TLS 1.2). All three set,
/// or none (no TLS).
struct tls_files {
  /// This end's certificate (chain).
  std::string certificate;
  /// Its private key (unencrypted).
  std::string key;
  /// The CA certificate(s) the other end's certificate must chain to.
  std::string ca;

  /// Returns whether no TLS is asked for.
  bool empty() const noexcept { return certificate.empty(); }

  friend bool operator==(const tls_files& x, const tls_files& y) {
    return x.certificate == y.certificate && x.key == y.key && x.ca == y.ca;
  }
  friend bool operator!=(const tls_files& x, const tls_files& y) { return !(x == y); }
};

/// A piece of one Sprint argument: literal text, or an environment variable
/// (`$VAR` or `${VAR}`) expanded when a child starts.
struct word_piece {
  /// What a piece is: text to keep as it is, or a variable to expand.
  enum kind_type : uint8_t { literal, variable };
  /// This piece's kind.
  kind_type kind = literal;
  /// The text, or the variable's name.
  std::string text;

  friend bool operator==(const word_piece& x, const word_piece& y) {
    return x.kind == y.kind && x.text == y.text;
  }
};

/// One Sprint argument after shell-like splitting: its pieces, concatenated.
/// Words are canonical (adjacent literals merged, no empty literal pieces), so
/// equal text gives equal words; the empty argument has no pieces.
using config_word = std::vector<word_piece>;

/// Where a Sprint child's own stdout and stderr go (`childOutput`).
struct child_output_mode {
  /// The destinations.
  enum kind_type : uint8_t {
    /// `"log"` (the default): each line logged at info, prefixed with the
    /// worker's name, through the spdlog logger `sprintrt.child` if one is
    /// registered, else the default logger.
    log,
    /// `"inherit"`: the child writes to the trainer's own stdout and stderr,
    /// as under RETURNN; nothing passes through sprintrt.
    inherit,
    /// `{"file": "DIR"}`: appended, unchanged, to `DIR/<worker name>.log`
    /// (DIR is created if missing).
    file,
  };
  /// This mode's destination.
  kind_type kind = log;
  /// The directory of `file`; empty otherwise.
  std::string directory;

  friend bool operator==(const child_output_mode& x, const child_output_mode& y) {
    return x.kind == y.kind && x.directory == y.directory;
  }
};

/// How messages are delimited on the pipes (see docs/protocol.md section 2).
enum class pipe_framing : uint8_t {
  /// An int32 length, then the pickle (current RETURNN).
  length_prefixed,
  /// Pickles back to back (RETURNN before 2023).
  raw,
};

/// What happens to a Sprint child computing a request whose caller cancelled
/// it. Keeping it, the child finishes what was written to it (the request
/// and up to three behind it) and the replies are dropped; killing it, the
/// next request waits for a new child's start-up. Either way a child that
/// misses its `replyTimeout` is killed.
enum class cancel_policy : uint8_t {
  /// `"auto"` (the default): whichever this child is expected to make
  /// cheaper: finishing what it holds (its mean time per request so far, at
  /// least the time the current one has taken) against its own measured
  /// start-up.
  automatic,
  /// `"keep"`: always let the child finish.
  keep,
  /// `"kill"`: always kill it at once.
  kill,
};

/// Whether large arrays travel through a shared-memory region between
/// sprintrt and its own children (docs/protocol.md section 7).
enum class shared_memory_mode : uint8_t {
  /// `"auto"` (the default): offered to children that run sprintrt's own
  /// module (`sprintrt_control`, `sprint-sim`); used for loss requests of
  /// at least `sharedMemoryThreshold` bytes once the child accepted it.
  automatic,
  /// `"off"`: everything through the pipes.
  off,
};

/// Validated options of one worker pool. Two equal values select the same
/// pool (the original's singleton per `sprint_opts`). What each option means:
/// the README's table of options, or `sprintrt doctor --list-options`.
struct sprint_options {
  /// `sprintExecPath`: empty when not given, which only a pool that starts
  /// Sprint children refuses (`invalid_options`).
  std::string sprint_exec_path;
  /// `sprintConfigStr`, as words: a word's variables are expanded when a
  /// child starts, each word to exactly one argument.
  std::vector<config_word> sprint_config;
  /// `minPythonControlVersion`.
  int min_python_control_version = 2;
  /// `sprintControlConfig`: the values as the pymod config string has them
  /// (Python's `%s`: true -> "True", 1e-05).
  std::map<std::string, std::string> sprint_control_config;
  /// `usePythonSegmentOrder`.
  bool use_python_segment_order = true;
  /// `numInstances`: the most children a pool runs.
  size_t num_instances = 1;
  /// `pymodPath`; "" when not given.
  std::string pymod_path;
  /// `pymodName`; "" when not given (see config/control_module.hpp).
  std::string pymod_name;
  /// `framing`.
  pipe_framing framing = pipe_framing::length_prefixed;
  /// `arrayGlobalModule`.
  std::string array_global_module = "returnn.util.task_system";
  /// `initTimeout`. The timeouts are numbers of seconds > 0 and at most 1e9,
  /// fractions allowed, kept in milliseconds rounded up (0.0001 s is 1 ms).
  std::chrono::milliseconds init_timeout{60'000};
  /// `replyTimeout`.
  std::chrono::milliseconds reply_timeout{600'000};
  /// `exitGrace`.
  std::chrono::milliseconds exit_grace{5'000};
  /// `maxRetries`.
  size_t max_retries = 2;
  /// `onCancel`.
  cancel_policy on_cancel = cancel_policy::automatic;
  /// `env`: names are non-empty without '='; a name may not be both set and
  /// unset; `unset` is kept sorted and without repetitions.
  environment_changes env;
  /// `remoteWait`: how long a request waits for a remote pool to come back
  /// (a server that restarts, a connection that drops) when no worker at all
  /// can take it, before it fails naming the servers it waited for.
  std::chrono::milliseconds remote_wait{60'000};
  /// `remote`; empty for local children only.
  std::vector<remote_endpoint> remote;
  /// `remoteTls`. CAF 0.17 sets TLS up once per process, so the runtime must
  /// be made with the same files (`runtime_settings_for(opts)`).
  tls_files remote_tls;
  /// `childOutput` (see `child_output_mode`).
  child_output_mode child_output;
  /// `sharedMemory`.
  shared_memory_mode shared_memory = shared_memory_mode::automatic;
  /// `sharedMemoryThreshold`: a loss request whose posteriors have at least
  /// this many bytes goes through the shared region (the default: below it
  /// both ways cost the same, BENCHMARKS.md "Large segments").
  size_t shared_memory_threshold = size_t{64} << 10;

  friend bool operator==(const sprint_options& x, const sprint_options& y);
  friend bool operator!=(const sprint_options& x, const sprint_options& y) { return !(x == y); }
};

/// Parses options from the text of a JSON document (see the file comment).
caf::expected<sprint_options> parse_options(std::string_view json_text);

/// Reads and parses a JSON options file; errors name the file.
caf::expected<sprint_options> load_options(const std::string& path);

/// Renders options as canonical JSON (sorted keys, every option present,
/// `config:` references resolved, `sprintConfigStr` as a list of words in the
/// list form, timeouts as seconds): equal options give equal strings, so this
/// keys registries and prints in diagnostics; `parse_options` reads it back
/// to equal options.
std::string to_json_string(const sprint_options& opts);

} // namespace sprintrt
