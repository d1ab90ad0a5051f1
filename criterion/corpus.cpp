#include "criterion/corpus.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <istream>
#include <sstream>

namespace sprintrt::criterion {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

bool only_white_space(std::string_view line) {
  return line.find_first_not_of(" \t\v\f") == std::string_view::npos;
}

} // namespace

std::string append_labels(std::string_view text, std::string_view owner,
                          std::vector<uint32_t>& out) {
  size_t label_number = 0;
  while (true) {
    while (!text.empty() && is_blank(text.front()))
      text.remove_prefix(1);
    if (text.empty())
      return {};
    size_t length = 0;
    while (length < text.size() && !is_blank(text[length]))
      ++length;
    const std::string_view token = text.substr(0, length);
    text.remove_prefix(length);
    ++label_number;
    uint32_t label = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), label);
    if (ec == std::errc::result_out_of_range)
      return "label number " + std::to_string(label_number) + " of " + std::string{owner} + " is " +
             std::string{token} + ", larger than 4294967295";
    if (ec != std::errc{} || end != token.data() + token.size())
      return "label number " + std::to_string(label_number) + " of " + std::string{owner} +
             " is '" + std::string{token} + "', not a non-negative integer";
    out.push_back(label);
  }
}

caf::expected<corpus> corpus::from_file(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return make_error(errc::io_error,
                      "cannot open corpus file '" + path + "': " + std::strerror(errno));
  return from_stream(in, path);
}

caf::expected<corpus> corpus::from_string(std::string_view text, std::string source) {
  std::istringstream in{std::string{text}};
  return from_stream(in, std::move(source));
}

caf::expected<corpus> corpus::from_stream(std::istream& in, std::string source) {
  corpus result;
  result.source_ = std::move(source);
  // The line each segment was defined on, for the duplicate message.
  std::vector<size_t> lines;
  std::string buffer;
  size_t line_number = 0;
  const auto fail = [&](const std::string& what) {
    return make_error(errc::invalid_input,
                      result.source_ + ":" + std::to_string(line_number) + ": " + what);
  };
  while (std::getline(in, buffer)) {
    ++line_number;
    std::string_view line{buffer};
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (only_white_space(line) || line.front() == '#')
      continue;
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      return fail("no TAB between the segment name and the labels (expected NAME<TAB>LABELS)");
    const std::string name{line.substr(0, tab)};
    if (name.empty())
      return fail("empty segment name before the TAB");
    if (name.find(' ') != std::string::npos)
      return fail("segment name '" + name +
                  "' contains a space (the name and the labels must be separated by a TAB)");
    if (auto known = result.index_.find(name); known != result.index_.end())
      return fail("duplicate segment '" + name + "', first defined on line " +
                  std::to_string(lines[known->second]));
    const size_t offset = result.labels_.size();
    if (auto problem =
            append_labels(line.substr(tab + 1), "segment '" + name + "'", result.labels_);
        !problem.empty())
      return fail(problem);
    result.index_.emplace(name, result.names_.size());
    result.names_.push_back(name);
    result.ranges_.push_back({offset, result.labels_.size() - offset});
    lines.push_back(line_number);
  }
  if (in.bad())
    return make_error(errc::io_error, "cannot read corpus '" + result.source_ + "' after line " +
                                          std::to_string(line_number));
  return result;
}

caf::expected<span<const uint32_t>> corpus::labels(std::string_view segment) const {
  const auto i = index_.find(segment);
  if (i == index_.end())
    return make_error(errc::unknown_segment, "unknown segment '" + std::string{segment} +
                                                 "': not in corpus '" + source_ + "' (" +
                                                 std::to_string(names_.size()) + " segments)");
  const auto& range = ranges_[i->second];
  return span<const uint32_t>{labels_.data() + range.offset, range.count};
}

bool corpus::contains(std::string_view segment) const {
  return index_.find(segment) != index_.end();
}

caf::error write_corpus_file(const std::string& path, span<const corpus_entry> entries) {
  const auto fail = [&] {
    return make_error(errc::io_error,
                      "cannot write corpus file '" + path + "': " + std::strerror(errno));
  };
  std::ofstream out{path};
  if (!out)
    return fail();
  for (const auto& entry : entries) {
    out << entry.name << '\t';
    for (size_t k = 0; k < entry.labels.size(); ++k)
      out << (k > 0 ? " " : "") << entry.labels[k];
    out << '\n';
  }
  if (!out.flush())
    return fail();
  return {};
}

} // namespace sprintrt::criterion
