#include "actors/remote/remote_handshake.hpp"

#include <nlohmann/json.hpp>

#include "config/option_table.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/remote_interface.hpp"

namespace sprintrt::detail {

namespace {

/// Cuts a value's JSON short for an error message.
std::string shortened(const nlohmann::json& value) {
  auto text = value.dump();
  return text.size() > 200 ? text.substr(0, 200) + "..." : text;
}

} // namespace

std::string remote_options_key(const sprint_options& opts) {
  return config::options_json(opts, config::option_selection::shared).dump();
}

caf::error check_handshake(const std::string& server, const std::string& interface,
                           const std::string& trainer_key, const std::string& server_key) {
  if (interface != remote_interface_version) {
    auto theirs = interface.size() > 200 ? interface.substr(0, 200) + "..." : interface;
    return make_error(errc::invalid_options, server + " speaks '" + remote_interface_version +
                                                 "', the trainer '" + theirs +
                                                 "': run the same sprintrt release on both ends");
  }
  auto trainer = nlohmann::json::parse(trainer_key, nullptr, false);
  auto own = nlohmann::json::parse(server_key);
  // Equal options, however the trainer's text writes them.
  if (trainer == own)
    return {};
  if (!trainer.is_object())
    return make_error(errc::invalid_options,
                      server + ": the trainer's options are not a JSON object");
  std::string differences;
  for (const auto& [key, value] : own.items()) {
    auto theirs = trainer.find(key);
    if (theirs == trainer.end())
      differences += "\n  '" + key + "': the trainer has none, the server " + shortened(value);
    else if (*theirs != value)
      differences += "\n  '" + key + "': the trainer " + shortened(*theirs) + ", the server " +
                     shortened(value);
  }
  for (const auto& [key, value] : trainer.items())
    if (!own.contains(key))
      differences += "\n  '" + key + "': the trainer " + shortened(value) + ", the server has none";
  return make_error(errc::invalid_options,
                    server + " serves other Sprint options than the trainer's:" + differences);
}

} // namespace sprintrt::detail
