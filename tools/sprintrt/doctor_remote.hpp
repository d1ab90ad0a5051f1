#pragma once

/// @file
/// `sprintrt doctor`'s check of the remote pools (`remote`) of the options:
/// one step after another, as a trainer's remote worker takes them, without
/// its retries (which would hide the first failure).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sprintrt/options.hpp"

namespace sprintrt::cli {

/// The segment `doctor --segment` computes: uniform posteriors [frames, dim].
struct doctor_segment {
  std::string name;
  size_t frames = 0;
  size_t dim = 0;
};

/// What went wrong at a remote pool: the step ("remote") and the diagnosis.
struct remote_failure {
  std::string step;
  std::string what;
};

/// Checks each remote pool of `opts` in turn: connects (over TLS with
/// `remoteTls`), checks that a sprintrt remote pool of this version is
/// published there, does the handshake (interface version and the options
/// key, which names every shared option that differs), and with `segment`
/// computes it there. Says each step, timed, through `say`, and appends one
/// object per pool to `summary` (a JSON array). Returns the first failure,
/// naming the pool and the cause; nothing if every pool passed.
std::optional<remote_failure> check_remote_pools(const sprint_options& opts,
                                                 const std::optional<doctor_segment>& segment,
                                                 const std::function<void(const std::string&)>& say,
                                                 nlohmann::json& summary);

} // namespace sprintrt::cli
