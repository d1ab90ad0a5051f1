#include "config/control_module.hpp"

#include <atomic>

#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include "sprintrt/logging.hpp"

namespace sprintrt::config {

namespace {

constexpr std::string_view control_file = "sprintrt_control.py";

bool has_control_file(const std::string& dir) {
  struct stat info {};
  const auto path = dir + "/" + std::string{control_file};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

} // namespace

std::vector<std::string> control_module_candidates() {
  return {SPRINTRT_CONTROL_BUILD_DIR, SPRINTRT_CONTROL_INSTALL_DIR};
}

caf::expected<std::string> find_control_module_dir(const env_lookup& lookup) {
  const std::string variable{control_dir_variable};
  if (auto dir = lookup(variable); dir && !dir->empty()) {
    if (has_control_file(*dir))
      return *dir;
    return make_error(errc::spawn_failed,
                      variable + " is '" + *dir + "', which has no " + std::string{control_file});
  }
  const auto candidates = control_module_candidates();
  for (const auto& dir : candidates)
    if (has_control_file(dir))
      return dir;
  // Not an error: sprint-sim ignores the module, and a RASR child says it
  // cannot import it, which this warning explains.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    logger().warn("{} is in none of {}, {} (set {} to its directory): Sprint children get "
                  "--*.pymod-path= and must find module {} on their own sys.path",
                  control_file, candidates[0], candidates[1], variable, control_module_name);
  return std::string{};
}

caf::expected<pymod_choice> choose_pymod(const sprint_options& opts, const env_lookup& lookup) {
  if (opts.pymod_name.empty() && !opts.pymod_path.empty())
    return pymod_choice{opts.pymod_path, std::string{returnn_control_module_name}};
  const bool ours = opts.pymod_name.empty() || opts.pymod_name == control_module_name;
  if (!ours || !opts.pymod_path.empty())
    return pymod_choice{opts.pymod_path, opts.pymod_name};
  auto dir = find_control_module_dir(lookup);
  if (!dir)
    return std::move(dir.error());
  return pymod_choice{std::move(*dir), std::string{control_module_name}};
}

} // namespace sprintrt::config
