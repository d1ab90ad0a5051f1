#include "protocol/pickle_writer.hpp"

#include <cstring>
#include <limits>
#include <string>

#include "protocol/pickle_opcodes.hpp"

namespace sprintrt::protocol {

void pickle_writer::raw_le(uint64_t x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out_.push_back(static_cast<std::byte>((x >> (8 * i)) & 0xff));
}

void pickle_writer::begin() {
  opcode(op::proto);
  opcode(3);
}

void pickle_writer::end() {
  opcode(op::stop);
}

void pickle_writer::none() {
  opcode(op::none);
}

void pickle_writer::boolean(bool x) {
  opcode(x ? op::newtrue : op::newfalse);
}

void pickle_writer::integer(int64_t x) {
  if (x >= 0 && x <= 0xff) {
    opcode(op::binint1);
    raw_le(static_cast<uint64_t>(x), 1);
  } else if (x >= 0 && x <= 0xffff) {
    opcode(op::binint2);
    raw_le(static_cast<uint64_t>(x), 2);
  } else if (x >= std::numeric_limits<int32_t>::min() && x <= std::numeric_limits<int32_t>::max()) {
    opcode(op::binint);
    raw_le(static_cast<uint32_t>(static_cast<int32_t>(x)), 4);
  } else {
    // LONG1 with the fewest two's complement bytes that keep the sign:
    // 5 to 8 bytes here, since everything shorter fit BININT.
    size_t n = 8;
    while (n > 5) {
      int64_t shortened = static_cast<int64_t>(static_cast<uint64_t>(x) << (64 - 8 * (n - 1))) >>
                          (64 - 8 * (n - 1));
      if (shortened != x)
        break;
      --n;
    }
    opcode(op::long1);
    raw_le(n, 1);
    raw_le(static_cast<uint64_t>(x), n);
  }
}

void pickle_writer::floating(double x) {
  // BINFLOAT is a big-endian IEEE 754 double.
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  opcode(op::binfloat);
  for (int shift = 56; shift >= 0; shift -= 8)
    out_.push_back(static_cast<std::byte>((bits >> shift) & 0xff));
}

void pickle_writer::str(std::string_view text) {
  opcode(op::binunicode);
  raw_le(text.size(), 4);
  out_.append(text.data(), text.size());
}

void pickle_writer::bytes_header(size_t size) {
  if (size <= std::numeric_limits<uint32_t>::max()) {
    opcode(op::binbytes);
    raw_le(size, 4);
  } else {
    opcode(op::binbytes8);
    raw_le(size, 8);
  }
}

void pickle_writer::bytes(byte_span data) {
  bytes_header(data.size());
  out_.append(data);
}

void pickle_writer::begin_tuple(size_t n) {
  if (n > 3)
    opcode(op::mark);
}

void pickle_writer::end_tuple(size_t n) {
  switch (n) {
  case 0:
    opcode(op::empty_tuple);
    break;
  case 1:
    opcode(op::tuple1);
    break;
  case 2:
    opcode(op::tuple2);
    break;
  case 3:
    opcode(op::tuple3);
    break;
  default:
    opcode(op::tuple);
  }
}

void pickle_writer::begin_list() {
  opcode(op::empty_list);
  opcode(op::mark);
}

void pickle_writer::end_list() {
  opcode(op::appends);
}

void pickle_writer::begin_dict() {
  opcode(op::empty_dict);
  opcode(op::mark);
}

void pickle_writer::end_dict() {
  opcode(op::setitems);
}

void pickle_writer::global(std::string_view module, std::string_view name) {
  opcode(op::global);
  out_.append(module.data(), module.size());
  out_.push_back(std::byte{'\n'});
  out_.append(name.data(), name.size());
  out_.push_back(std::byte{'\n'});
}

void pickle_writer::ndarray(std::string_view module, dtype type, span<const size_t> shape,
                            const strided_bytes& data) {
  global(module, "make_numpy_ndarray_fromstring");
  // The argument tuple (bytes, dtype_name, shape), with the data copied in
  // row by row right behind the BINBYTES header.
  size_t size = data.size();
  bytes_header(size);
  out_.reserve_extra(size);
  if (data.stride == data.row_bytes) {
    out_.append(data.first, size);
  } else {
    for (size_t r = 0; r < data.rows; ++r)
      out_.append(data.first + r * data.stride, data.row_bytes);
  }
  str(to_string(type));
  begin_tuple(shape.size());
  for (auto extent : shape)
    integer(static_cast<int64_t>(extent));
  end_tuple(shape.size());
  end_tuple(3);
  opcode(op::reduce);
}

void pickle_writer::numpy_scalar(const protocol::numpy_scalar& x) {
  // numpy.core.multiarray.scalar(dtype, raw), where dtype is
  // numpy.dtype(code, False, True) with the state (3, order, None, None,
  // None, -1, -1, 0), exactly as NumPy's own __reduce__ writes it.
  global("numpy.core.multiarray", "scalar");
  global("numpy", "dtype");
  str(type_code(x.type));
  boolean(false);
  boolean(true);
  end_tuple(3);
  opcode(op::reduce);
  begin_tuple(8);
  integer(3);
  str(item_size(x.type) == 1 ? "|" : "<");
  none();
  none();
  none();
  integer(-1);
  integer(-1);
  integer(0);
  end_tuple(8);
  opcode(op::build);
  bytes({x.raw.data(), item_size(x.type)});
  end_tuple(2);
  opcode(op::reduce);
}

caf::error write_value(pickle_writer& writer, const value& x, std::string_view array_module) {
  if (x.depth() > value::max_depth)
    return make_error(errc::invalid_message, "cannot pickle containers nested deeper than " +
                                                 std::to_string(value::max_depth));
  using kind = value::kind;
  switch (x.type()) {
  case kind::none:
    writer.none();
    return {};
  case kind::boolean:
    writer.boolean(x.as_bool());
    return {};
  case kind::integer:
    writer.integer(x.as_int());
    return {};
  case kind::floating:
    writer.floating(x.as_float());
    return {};
  case kind::str:
    writer.str(x.as_str());
    return {};
  case kind::bytes:
    writer.bytes(x.as_bytes().bytes());
    return {};
  case kind::tuple: {
    const auto& xs = x.as_items();
    writer.begin_tuple(xs.size());
    for (const auto& item : xs)
      if (auto err = write_value(writer, item, array_module))
        return err;
    writer.end_tuple(xs.size());
    return {};
  }
  case kind::list: {
    writer.begin_list();
    for (const auto& item : x.as_items())
      if (auto err = write_value(writer, item, array_module))
        return err;
    writer.end_list();
    return {};
  }
  case kind::dict: {
    writer.begin_dict();
    for (const auto& [k, v] : x.as_dict()) {
      if (auto err = write_value(writer, k, array_module))
        return err;
      if (auto err = write_value(writer, v, array_module))
        return err;
    }
    writer.end_dict();
    return {};
  }
  case kind::ndarray: {
    const auto& a = x.as_ndarray();
    writer.ndarray(array_module, a.type, a.shape, strided_bytes::contiguous(a.data.bytes()));
    return {};
  }
  case kind::numpy_scalar:
    writer.numpy_scalar(x.as_numpy_scalar());
    return {};
  case kind::global:
  case kind::numpy_dtype:
    break;
  }
  return make_error(errc::invalid_message,
                    "cannot pickle a " + std::string{to_string(x.type())} + " by itself");
}

caf::error write_pickle(byte_buffer& out, const value& x, std::string_view array_module) {
  size_t start = out.size();
  pickle_writer writer{out};
  writer.begin();
  if (auto err = write_value(writer, x, array_module)) {
    out.set_size(start);
    return err;
  }
  writer.end();
  return {};
}

} // namespace sprintrt::protocol
