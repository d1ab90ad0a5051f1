// _sprintrt: the C++ half of the Python module `sprintrt` (the package in
// python/sprintrt wraps it in RETURNN's names). One runtime per process,
// made with the first pool; pools are `pool_client`s, schedulers
// `seqtrain_client`s; numpy arrays in and out; the GIL is released while
// C++ waits.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "at_fork.hpp"
#include "binding_support.hpp"
#include "config/child_environment.hpp"
#include "config/sprint_args.hpp"
#include "denominator_binding.hpp"
#include "fsa_loss_binding.hpp"
#include "log_bridge.hpp"
#include "numerator_binding.hpp"
#include "pool_binding.hpp"
#include "process_runtime.hpp"
#include "seqtrain_binding.hpp"
#include "sequence_loss_binding.hpp"
#include "sprintrt/version.hpp"

extern char** environ;

PYBIND11_MODULE(_sprintrt, m) {
  namespace py = pybind11;
  using namespace sprintrt::python;
  m.doc() = "sprintrt's C++ half; use the package `sprintrt`";
  m.attr("version") = sprintrt::version;
  bind_errors(m);
  m.def(
      "canonical_options",
      [](const std::string& json) { return sprintrt::to_json_string(parse_options_json(json)); },
      "The canonical JSON of options given as JSON (equal options, equal text).");
  m.def(
      "sprint_arguments",
      [](const std::string& json) {
        auto opts = parse_options_json(json);
        auto lookup = sprintrt::config::environment_lookup(
            sprintrt::config::child_environment(opts.env, environ));
        auto words = sprintrt::config::expand_sprint_config(opts, lookup);
        if (!words)
          raise(words.error());
        return std::move(*words);
      },
      "The Sprint arguments of `sprintConfigStr` as a child started now would get them "
      "(sprintrt's rules: variables expanded anywhere in an argument from this process's "
      "environment changed by `env`); an unset variable raises `Error` naming it.");
  install_log_bridge();
  install_fork_handlers();
  bind_logging(m);
  m.def("shutdown", &shutdown_process_runtime,
        "Stops every pool, scheduler and child of this process (at interpreter exit).");
  bind_pool(m);
  bind_seqtrain(m);
  bind_fsa_loss(m);
  bind_sequence_loss(m);
  bind_denominators(m);
  bind_numerators(m);
}
