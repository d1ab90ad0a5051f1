// `sprintrt pickle-dump`: decodes every message of a file of captured pipe
// traffic and prints one typed JSON value per line (the form of the golden
// vectors). A debugging tool for users who capture what flows between
// RETURNN and RASR, and the way to see what our own encoder writes.
// `--summary` prints each array as its dtype, shape, minimum and maximum
// instead of every element (a batch's posteriors are megabytes of JSON).

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/value_json.hpp"

namespace sprintrt::cli {

namespace {

struct pickle_dump_options {
  std::string file;
  std::string framing = "length_prefixed";
  size_t max_message_size = protocol::default_max_message_size;
  bool summary = false;
};

using json = nlohmann::json;

/// The smallest and largest element of `a` as `T`, NaNs counted apart.
template <class T>
json array_range(const protocol::ndarray& a) {
  size_t n = a.num_elements();
  size_t nans = 0;
  bool any = false;
  T lo{}, hi{};
  for (size_t i = 0; i < n; ++i) {
    T x = protocol::element<T>(a, i);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) {
        ++nans;
        continue;
      }
    }
    if (!any || x < lo)
      lo = x;
    if (!any || x > hi)
      hi = x;
    any = true;
  }
  json range = json::object();
  if (any) {
    if constexpr (std::is_floating_point_v<T>) {
      range["min"] = cli::float_to_json(lo);
      range["max"] = cli::float_to_json(hi);
    } else {
      range["min"] = lo;
      range["max"] = hi;
    }
  }
  if (nans > 0)
    range["nan_count"] = nans;
  return range;
}

/// The typed JSON form of `x` (tools/sprintrt/value_json.hpp), but every array as
/// {"ndarray_summary": {"dtype", "shape", "min", "max"}} (min and max absent
/// for an empty array; "nan_count" when there are NaNs, which min and max
/// leave out).
json summary_json(const protocol::value& x) {
  using kind = protocol::value::kind;
  switch (x.type()) {
  case kind::tuple:
  case kind::list: {
    json items = json::array();
    for (const auto& item : x.as_items())
      items.push_back(summary_json(item));
    return {{x.is(kind::tuple) ? "tuple" : "list", std::move(items)}};
  }
  case kind::dict: {
    json pairs = json::array();
    for (const auto& [k, v] : x.as_dict())
      pairs.push_back(json::array({summary_json(k), summary_json(v)}));
    return {{"dict", std::move(pairs)}};
  }
  case kind::ndarray: {
    const auto& a = x.as_ndarray();
    using protocol::dtype;
    json range = a.type == dtype::float32   ? array_range<float>(a)
                 : a.type == dtype::float64 ? array_range<double>(a)
                 : a.type == dtype::int32   ? array_range<int32_t>(a)
                 : a.type == dtype::uint32  ? array_range<uint32_t>(a)
                 : a.type == dtype::int64   ? array_range<int64_t>(a)
                                            : array_range<uint8_t>(a);
    json body{{"dtype", protocol::to_string(a.type)}, {"shape", a.shape}};
    body.update(range);
    return {{"ndarray_summary", std::move(body)}};
  }
  default:
    return cli::to_json(x);
  }
}

/// Prints one decoded message; returns false (after reporting) on an error.
bool print_message(const pickle_dump_options& opts, size_t index,
                   const protocol::byte_buffer& msg) {
  auto x = protocol::read_pickle(msg.bytes());
  if (!x) {
    std::cerr << "sprintrt pickle-dump: " << opts.file << ": message " << index << ": "
              << render(x.error()) << "\n";
    return false;
  }
  auto j = opts.summary ? summary_json(*x) : cli::to_json(*x);
  std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return true;
}

int run(const pickle_dump_options& opts) {
  auto f = protocol::parse_framing(opts.framing);
  std::istream* in = &std::cin;
  std::ifstream file;
  if (opts.file != "-") {
    errno = 0;
    file.open(opts.file, std::ios::binary);
    if (!file) {
      std::cerr << "sprintrt pickle-dump: cannot open " << opts.file << ": "
                << (errno != 0 ? std::strerror(errno) : "unknown reason") << "\n";
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
  cmd->add_flag("--summary", opts->summary,
                "Print each array's dtype, shape, min and max instead of its elements");
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

} // namespace sprintrt::cli
