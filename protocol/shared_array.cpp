#include "protocol/shared_array.hpp"

#include <string>

#include "protocol/pickle_repr.hpp"

namespace sprintrt::protocol {

void write_shared_array(pickle_writer& writer, const shared_array& array) {
  writer.begin_tuple(4);
  writer.str(shared_memory_tag);
  writer.integer(static_cast<int64_t>(array.offset));
  writer.str(shared_array_dtype);
  writer.begin_tuple(2);
  writer.integer(static_cast<int64_t>(array.rows));
  writer.integer(static_cast<int64_t>(array.cols));
  writer.end_tuple(2);
  writer.end_tuple(4);
}

bool is_shared_array(const value& x) noexcept {
  if (!x.is(value::kind::tuple) || x.as_items().empty())
    return false;
  const auto& tag = x.as_items()[0];
  return tag.is(value::kind::str) && tag.as_str() == shared_memory_tag;
}

caf::expected<shared_array> read_shared_array(const value& x, std::string_view what, size_t rows,
                                              size_t cols) {
  auto invalid = [&](const std::string& problem) {
    return make_error(errc::invalid_message,
                      std::string{what} + ": " + problem + ", got " + repr(x));
  };
  if (!is_shared_array(x) || x.as_items().size() != 4)
    return invalid("a shared-memory reference must be ('sprintrt_shm', offset, 'float32', "
                   "(rows, cols))");
  const auto& xs = x.as_items();
  if (!xs[1].is(value::kind::integer) || xs[1].as_int() < 0)
    return invalid("the offset must be an int >= 0");
  if (!xs[2].is(value::kind::str) || xs[2].as_str() != shared_array_dtype)
    return invalid("the dtype must be 'float32'");
  const auto& shape = xs[3];
  if (!shape.is(value::kind::tuple) || shape.as_items().size() != 2 ||
      !shape.as_items()[0].is(value::kind::integer) ||
      !shape.as_items()[1].is(value::kind::integer) || shape.as_items()[0].as_int() <= 0 ||
      shape.as_items()[1].as_int() <= 0)
    return invalid("the shape must be two positive ints");
  const auto r = static_cast<uint64_t>(shape.as_items()[0].as_int());
  const auto c = static_cast<uint64_t>(shape.as_items()[1].as_int());
  // Both below 2^31 keeps rows * cols * 4 below 2^64; any real segment is.
  constexpr uint64_t most = uint64_t{1} << 31;
  if (r >= most || c >= most || r * c >= (uint64_t{1} << 60))
    return invalid("the array is too large");
  if ((rows != 0 && r != rows) || (cols != 0 && c != cols))
    return invalid("the shape must be (" + (rows != 0 ? std::to_string(rows) : "T") + ", " +
                   (cols != 0 ? std::to_string(cols) : "D") + ")");
  return shared_array{static_cast<uint64_t>(xs[1].as_int()), static_cast<size_t>(r),
                      static_cast<size_t>(c)};
}

} // namespace sprintrt::protocol
