// `sprintrt pickle-dump`: decodes every message of a file of captured pipe
// traffic and prints one typed JSON value per line (the form of the golden
// vectors). A debugging tool for users who capture what flows between
// RETURNN and RASR, and the way to see what our own encoder writes.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/value_json.hpp"
#include "tools/sprintrt/commands.hpp"

namespace sprintrt::cli {

namespace {

struct pickle_dump_options {
  std::string file;
  std::string framing = "length_prefixed";
  size_t max_message_size = protocol::default_max_message_size;
};

/// Prints one decoded message; returns false (after reporting) on an error.
bool print_message(const pickle_dump_options& opts, size_t index,
                   const protocol::byte_buffer& msg) {
  auto x = protocol::read_pickle(msg.bytes());
  if (!x) {
    std::cerr << "sprintrt pickle-dump: " << opts.file << ": message " << index << ": "
              << render(x.error()) << "\n";
    return false;
  }
  std::cout << protocol::to_json(*x).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
            << "\n";
  return true;
}

int run(const pickle_dump_options& opts) {
  auto f = protocol::parse_framing(opts.framing);
  std::istream* in = &std::cin;
  std::ifstream file;
  if (opts.file != "-") {
    file.open(opts.file, std::ios::binary);
    if (!file) {
      std::cerr << "sprintrt pickle-dump: cannot open " << opts.file << "\n";
      return 1;
    }
    in = &file;
  }
  protocol::frame_decoder decoder{*f, opts.max_message_size};
  size_t index = 0;
  size_t offset = 0;
  while (*in) {
    auto room = decoder.prepare(1 << 16);
    in->read(reinterpret_cast<char*>(room.data()), static_cast<std::streamsize>(room.size()));
    auto n = static_cast<size_t>(in->gcount());
    if (auto err = decoder.commit(n)) {
      std::cerr << "sprintrt pickle-dump: " << opts.file << ": message " << index
                << " (within bytes " << offset << ".." << offset + n << "): " << render(err)
                << "\n";
      if (index == 0)
        std::cerr << "(if this is legacy traffic without length prefixes, try --framing "
                  << (*f == protocol::framing::raw ? "length_prefixed" : "raw") << ")\n";
      return 1;
    }
    offset += n;
    while (auto msg = decoder.next()) {
      if (!print_message(opts, index++, *msg))
        return 1;
      decoder.recycle(std::move(*msg));
    }
  }
  if (decoder.partial_bytes() > 0) {
    std::cerr << "sprintrt pickle-dump: " << opts.file << ": ends in the middle of message "
              << index << " (" << decoder.partial_bytes() << " bytes of it)\n";
    return 1;
  }
  return 0;
}

} // namespace

void add_pickle_dump_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<pickle_dump_options>();
  auto* cmd = app.add_subcommand(
      "pickle-dump",
      "Decode captured Sprint pipe traffic and print one typed JSON value per message");
  cmd->add_option("file", opts->file, "File of messages as written on the pipe ('-' for stdin)")
      ->required();
  cmd->add_option("--framing", opts->framing, "How messages are delimited")
      ->check(CLI::IsMember({"length_prefixed", "raw"}))
      ->capture_default_str();
  cmd->add_option("--max-message-size", opts->max_message_size,
                  "Larger messages are an error (bytes)")
      ->capture_default_str();
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

} // namespace sprintrt::cli
