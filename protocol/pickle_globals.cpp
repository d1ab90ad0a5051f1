#include "protocol/pickle_globals.hpp"
#include "protocol/pickle_repr.hpp"

#include <cstring>
#include <string>

#include "protocol/utf8.hpp"

namespace sprintrt::protocol {

namespace {

caf::error fail(std::string what) {
  return make_error(errc::protocol_error, std::move(what));
}

/// make_numpy_ndarray_fromstring(data, dtype_name, shape): a zero-copy view.
caf::expected<value> make_ndarray(const value& data, const value& type_name, const value& shape) {
  if (!data.is(value::kind::bytes) || !type_name.is(value::kind::str) ||
      !shape.is(value::kind::tuple))
    return fail("make_numpy_ndarray_fromstring expects (bytes, str, tuple), got (" +
                std::string{to_string(data.type())} + ", " + to_string(type_name.type()) + ", " +
                to_string(shape.type()) + ")");
  auto type = parse_dtype(type_name.as_str());
  if (!type)
    return fail("unsupported dtype '" + type_name.as_str() + "'");
  ndarray result;
  result.type = *type;
  // Multiply with an overflow check against the bytes actually present.
  size_t limit = data.as_bytes().size() / item_size(*type);
  size_t elements = 1;
  for (const auto& extent : shape.as_items()) {
    if (!extent.is(value::kind::integer) || extent.as_int() < 0)
      return fail("array shape " + repr(shape) + " is not a tuple of non-negative ints");
    auto n = static_cast<uint64_t>(extent.as_int());
    if (n != 0 && elements > limit / n)
      elements = limit + 1; // more than the data can hold; reported below
    else
      elements *= n;
    result.shape.push_back(static_cast<size_t>(n));
  }
  if (elements > limit || elements * item_size(*type) != data.as_bytes().size())
    return fail("array of shape " + repr(shape) + " and dtype " + to_string(*type) +
                " does not match its " + std::to_string(data.as_bytes().size()) + " data bytes");
  result.data = data.as_bytes();
  return value::array(std::move(result));
}

} // namespace

std::optional<callable> resolve_global(std::string_view module, std::string_view name) {
  if (name == "make_numpy_ndarray_fromstring" &&
      (module == default_array_module || module == legacy_array_module))
    return callable::make_ndarray;
  if (name == "scalar" && (module == "numpy.core.multiarray" || module == "numpy._core.multiarray"))
    return callable::numpy_scalar;
  if (name == "dtype" && module == "numpy")
    return callable::numpy_dtype;
  if (name == "encode" && module == "_codecs")
    return callable::codecs_encode;
  // Python 3 writes b"" at protocol 2 as a call of bytes() without arguments.
  if (name == "bytes" && (module == "__builtin__" || module == "builtins"))
    return callable::builtin_bytes;
  return std::nullopt;
}

caf::expected<value> call_global(callable fn, const value::items& args) {
  auto arity = [&](size_t n) -> caf::error {
    if (args.size() != n)
      return fail(std::string{to_string(fn)} + " takes " + std::to_string(n) + " arguments, got " +
                  std::to_string(args.size()));
    return {};
  };
  switch (fn) {
  case callable::make_ndarray: {
    if (auto err = arity(3))
      return err;
    return make_ndarray(args[0], args[1], args[2]);
  }
  case callable::numpy_dtype: {
    // numpy.dtype(code, align, copy); only the code matters.
    if (auto err = arity(3))
      return err;
    if (!args[0].is(value::kind::str))
      return fail("numpy.dtype expects a type code string, got " + repr(args[0]));
    auto type = parse_dtype(args[0].as_str());
    if (!type)
      return fail("unsupported dtype '" + args[0].as_str() + "'");
    return value::numpy_dtype(dtype_object{*type});
  }
  case callable::numpy_scalar: {
    if (auto err = arity(2))
      return err;
    if (!args[0].is(value::kind::numpy_dtype) || !args[1].is(value::kind::bytes))
      return fail("numpy scalar expects (dtype, bytes), got " + repr(value::tuple(args)));
    auto type = args[0].as_numpy_dtype().type;
    const auto& raw = args[1].as_bytes();
    if (raw.size() != item_size(type))
      return fail("numpy." + std::string{to_string(type)} + " scalar needs " +
                  std::to_string(item_size(type)) + " bytes, got " + std::to_string(raw.size()));
    numpy_scalar s;
    s.type = type;
    std::memcpy(s.raw.data(), raw.data(), raw.size());
    return value::scalar(s);
  }
  case callable::codecs_encode: {
    if (auto err = arity(2))
      return err;
    if (!args[0].is(value::kind::str) || !args[1].is(value::kind::str))
      return fail("_codecs.encode expects (str, str), got " + repr(value::tuple(args)));
    const auto& encoding = args[1].as_str();
    if (encoding != "latin1" && encoding != "latin-1")
      return fail("_codecs.encode with encoding '" + encoding + "' (only latin1 is allowed)");
    auto bytes = utf8_to_latin1(args[0].as_str());
    if (!bytes)
      return fail("_codecs.encode: text has characters outside latin-1");
    return value::bytes(bytes_ref::own(std::move(*bytes)));
  }
  case callable::builtin_bytes: {
    if (auto err = arity(0))
      return err;
    return value::bytes(bytes_ref{});
  }
  }
  return fail("unreachable callable");
}

/// BUILD on a numpy.dtype: the state tuple's second item is the byte order.
caf::error build_numpy_dtype(const value& state) {
  if (!state.is(value::kind::tuple) || state.as_items().size() < 2 ||
      !state.as_items()[1].is(value::kind::str))
    return fail("numpy.dtype state must be a tuple with a byte order, got " + repr(state));
  const auto& order = state.as_items()[1].as_str();
  if (order != "<" && order != "|" && order != "=")
    return fail("numpy.dtype with byte order '" + order + "' (only little-endian is supported)");
  return {};
}

} // namespace sprintrt::protocol
