#include "protocol/dtype.hpp"

#include <array>

namespace sprintrt::protocol {

namespace {

struct dtype_info {
  dtype type;
  const char* name;
  const char* code;
  size_t size;
  bool floating;
};

constexpr std::array<dtype_info, 6> dtypes{{
    {dtype::float32, "float32", "f4", 4, true},
    {dtype::float64, "float64", "f8", 8, true},
    {dtype::int32, "int32", "i4", 4, false},
    {dtype::uint32, "uint32", "u4", 4, false},
    {dtype::int64, "int64", "i8", 8, false},
    {dtype::uint8, "uint8", "u1", 1, false},
}};

// info() indexes the table by enum value: keep the table in enum order.
static_assert([] {
  for (size_t i = 0; i < dtypes.size(); ++i)
    if (static_cast<size_t>(dtypes[i].type) != i)
      return false;
  return true;
}());

const dtype_info& info(dtype type) noexcept {
  return dtypes[static_cast<size_t>(type)];
}

} // namespace

const char* to_string(dtype type) noexcept {
  return info(type).name;
}

const char* type_code(dtype type) noexcept {
  return info(type).code;
}

size_t item_size(dtype type) noexcept {
  return info(type).size;
}

bool is_floating(dtype type) noexcept {
  return info(type).floating;
}

std::optional<dtype> parse_dtype(std::string_view name) noexcept {
  // Byte order markers: '<' little, '=' native (little on every platform we
  // run on), '|' not applicable (one-byte types). '>' is deliberately absent.
  if (!name.empty() && (name.front() == '<' || name.front() == '=' || name.front() == '|'))
    name.remove_prefix(1);
  for (const auto& x : dtypes)
    if (name == x.name || name == x.code)
      return x.type;
  return std::nullopt;
}

} // namespace sprintrt::protocol
