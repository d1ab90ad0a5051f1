#include "tests/support/golden_vectors.hpp"

#include "protocol/byte_buffer.hpp"
#include "protocol/framing.hpp"
#include "sim/fault_injection.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace sprintrt::test {

namespace {

const std::string vector_dir = std::string{SPRINTRT_TEST_DATA} + "/protocol-vectors";

} // namespace

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw std::runtime_error("cannot open " + path);
  std::vector<char> chars{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  std::vector<std::byte> result(chars.size());
  for (size_t i = 0; i < chars.size(); ++i)
    result[i] = static_cast<std::byte>(chars[i]);
  return result;
}

const std::vector<golden_vector>& golden_vectors() {
  static const std::vector<golden_vector> vectors = [] {
    std::ifstream in{vector_dir + "/vectors.json"};
    if (!in)
      throw std::runtime_error("cannot open " + vector_dir + "/vectors.json");
    auto index = nlohmann::json::parse(in);
    std::vector<golden_vector> result;
    for (const auto& [name, entry] : index.items()) {
      auto f = protocol::parse_framing(entry.at("framing").get<std::string>());
      if (!f)
        throw std::runtime_error("unknown framing in vector " + name);
      result.push_back({name, *f, read_file(vector_dir + "/" + name + ".bin"), entry.at("value")});
    }
    if (result.empty())
      throw std::runtime_error("vectors.json lists no vectors");
    return result;
  }();
  return vectors;
}

const golden_vector& golden(const std::string& name) {
  for (const auto& v : golden_vectors())
    if (v.name == name)
      return v;
  throw std::runtime_error("no golden vector " + name);
}

std::vector<std::byte> bytes(std::initializer_list<int> xs) {
  std::vector<std::byte> result;
  for (int x : xs)
    result.push_back(static_cast<std::byte>(x));
  return result;
}

std::vector<std::byte> bytes(std::string_view text) {
  std::vector<std::byte> result;
  for (char c : text)
    result.push_back(static_cast<std::byte>(c));
  return result;
}

std::vector<std::byte> concat(std::initializer_list<std::vector<std::byte>> parts) {
  std::vector<std::byte> result;
  for (const auto& part : parts)
    result.insert(result.end(), part.begin(), part.end());
  return result;
}

std::vector<std::byte> encode_bomb(size_t text_size, int calls) {
  protocol::byte_buffer out;
  sim::append_memo_bomb(out, protocol::framing::raw, text_size, static_cast<size_t>(calls));
  return {out.bytes().begin(), out.bytes().end()};
}

} // namespace sprintrt::test
