#include "protocol/pickle_value.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace sprintrt::protocol {

// -- bytes_ref ------------------------------------------------------------------

bytes_ref bytes_ref::shared(byte_span bytes, std::shared_ptr<const void> owner) noexcept {
  bytes_ref result = unowned(bytes);
  result.owner_ = std::move(owner);
  return result;
}

bytes_ref bytes_ref::unowned(byte_span bytes) noexcept {
  bytes_ref result;
  result.data_ = bytes.data();
  result.size_ = bytes.size();
  return result;
}

bytes_ref bytes_ref::own(std::vector<std::byte> bytes) {
  bytes_ref result;
  auto owner = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  result.data_ = owner->data();
  result.size_ = owner->size();
  result.owner_ = std::move(owner);
  return result;
}

bytes_ref bytes_ref::copy_of(std::string_view text) {
  const auto* first = reinterpret_cast<const std::byte*>(text.data());
  return own(std::vector<std::byte>(first, first + text.size()));
}

std::string bytes_ref::to_string() const {
  return std::string(reinterpret_cast<const char*>(data_), size_);
}

bool operator==(const bytes_ref& x, const bytes_ref& y) noexcept {
  return x.size_ == y.size_ && (x.size_ == 0 || std::memcmp(x.data_, y.data_, x.size_) == 0);
}

// -- ndarray and numpy_scalar ---------------------------------------------------

size_t ndarray::num_elements() const noexcept {
  size_t n = 1;
  for (auto extent : shape)
    n *= extent;
  return n;
}

numpy_scalar numpy_scalar::of_float(dtype type, double x) noexcept {
  numpy_scalar result;
  result.type = type;
  if (type == dtype::float32) {
    auto f = static_cast<float>(x);
    std::memcpy(result.raw.data(), &f, sizeof(f));
  } else {
    std::memcpy(result.raw.data(), &x, sizeof(x));
  }
  return result;
}

numpy_scalar numpy_scalar::of_int(dtype type, int64_t x) noexcept {
  numpy_scalar result;
  result.type = type;
  // Little-endian host: the low item_size bytes of x are the truncated value.
  std::memcpy(result.raw.data(), &x, item_size(type));
  return result;
}

double numpy_scalar::to_double() const noexcept {
  switch (type) {
  case dtype::float32: {
    float f;
    std::memcpy(&f, raw.data(), sizeof(f));
    return f;
  }
  case dtype::float64: {
    double d;
    std::memcpy(&d, raw.data(), sizeof(d));
    return d;
  }
  default:
    return static_cast<double>(to_int());
  }
}

int64_t numpy_scalar::to_int() const noexcept {
  switch (type) {
  case dtype::int32: {
    int32_t x;
    std::memcpy(&x, raw.data(), sizeof(x));
    return x;
  }
  case dtype::uint32: {
    uint32_t x;
    std::memcpy(&x, raw.data(), sizeof(x));
    return x;
  }
  case dtype::int64: {
    int64_t x;
    std::memcpy(&x, raw.data(), sizeof(x));
    return x;
  }
  case dtype::uint8:
    return std::to_integer<int64_t>(raw[0]);
  default:
    return 0;
  }
}

const char* to_string(callable fn) noexcept {
  switch (fn) {
  case callable::make_ndarray:
    return "make_numpy_ndarray_fromstring";
  case callable::numpy_scalar:
    return "numpy.core.multiarray.scalar";
  case callable::numpy_dtype:
    return "numpy.dtype";
  case callable::codecs_encode:
    return "_codecs.encode";
  case callable::builtin_bytes:
    return "builtins.bytes";
  }
  return "?";
}

// -- value ----------------------------------------------------------------------

namespace {

/// a + b, saturating at SIZE_MAX.
size_t saturating_add(size_t a, size_t b) noexcept {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

} // namespace

/// What every container's node keeps besides its items.
struct value::container_node {
  /// 1 + the deepest item's depth (an upper bound after dict replacements).
  size_t depth = 1;
  /// The size of the tree this container denotes, counting shared values
  /// once per place (saturating).
  size_t tree_size = 1;
  /// Set once the container is inside another one (or is a tuple): it never
  /// changes again, which keeps values acyclic.
  bool nested = false;

  /// Counts `x` as one more item.
  void account(const value& x) noexcept {
    depth = std::max(depth, x.depth() + 1);
    tree_size = saturating_add(tree_size, x.tree_size());
  }
};

struct value::items_node : container_node {
  items xs;

  /// A node holding `xs`, each marked nested and counted.
  static std::shared_ptr<items_node> of(items xs) {
    auto node = std::make_shared<items_node>();
    for (const auto& x : xs) {
      x.mark_nested();
      node->account(x);
    }
    node->xs = std::move(xs);
    return node;
  }
};

struct value::dict_node : container_node {
  dict_items xs;
  /// Key fingerprint to position in `xs`.
  std::unordered_map<std::string, size_t> index;
};

value value::boolean(bool x) {
  return {kind::boolean, x};
}

value value::integer(int64_t x) {
  return {kind::integer, x};
}

value value::floating(double x) {
  return {kind::floating, x};
}

value value::str(std::string text) {
  return {kind::str, std::make_shared<const std::string>(std::move(text))};
}

value value::bytes(bytes_ref data) {
  return {kind::bytes, std::move(data)};
}

value value::tuple(items xs) {
  auto node = items_node::of(std::move(xs));
  // A tuple is immutable from birth.
  node->nested = true;
  return {kind::tuple, std::move(node)};
}

value value::list(items xs) {
  return {kind::list, items_node::of(std::move(xs))};
}

value value::dict(dict_items xs) {
  value result{kind::dict, std::make_shared<dict_node>()};
  for (auto& [k, v] : xs) {
    [[maybe_unused]] bool ok = result.set_item(std::move(k), std::move(v));
    assert(ok && "dict keys must be scalar keys");
  }
  return result;
}

value value::array(ndarray x) {
  return {kind::ndarray, std::make_shared<const ndarray>(std::move(x))};
}

value value::scalar(numpy_scalar x) {
  return {kind::numpy_scalar, x};
}

value value::global(callable fn) {
  return {kind::global, fn};
}

value value::numpy_dtype(dtype_object x) {
  return {kind::numpy_dtype, x};
}

size_t value::tree_size() const noexcept {
  auto node = container();
  return node ? node->tree_size : 1;
}

bool value::is_scalar_key() const noexcept {
  switch (kind_) {
  case kind::none:
  case kind::boolean:
  case kind::integer:
  case kind::floating:
  case kind::str:
  case kind::bytes:
    return true;
  default:
    return false;
  }
}

std::string value::key_fingerprint() const {
  std::string key(1, static_cast<char>(kind_));
  auto append_bits = [&](const auto& x) {
    key.append(reinterpret_cast<const char*>(&x), sizeof(x));
  };
  switch (kind_) {
  case kind::boolean:
    append_bits(as_bool());
    break;
  case kind::integer:
    append_bits(as_int());
    break;
  case kind::floating:
    append_bits(as_float());
    break;
  case kind::str:
    key += as_str();
    break;
  case kind::bytes:
    key += as_bytes().to_string();
    break;
  default:
    break;
  }
  return key;
}

size_t value::depth() const noexcept {
  auto node = container();
  return node ? node->depth : 0;
}

bool value::as_bool() const {
  return std::get<bool>(payload_);
}

int64_t value::as_int() const {
  return std::get<int64_t>(payload_);
}

double value::as_float() const {
  return std::get<double>(payload_);
}

const std::string& value::as_str() const {
  return *std::get<std::shared_ptr<const std::string>>(payload_);
}

const bytes_ref& value::as_bytes() const {
  return std::get<bytes_ref>(payload_);
}

const value::items& value::as_items() const {
  return std::get<std::shared_ptr<items_node>>(payload_)->xs;
}

const value::dict_items& value::as_dict() const {
  return std::get<std::shared_ptr<dict_node>>(payload_)->xs;
}

const ndarray& value::as_ndarray() const {
  return *std::get<std::shared_ptr<const ndarray>>(payload_);
}

const numpy_scalar& value::as_numpy_scalar() const {
  return std::get<numpy_scalar>(payload_);
}

callable value::as_global() const {
  return std::get<callable>(payload_);
}

const dtype_object& value::as_numpy_dtype() const {
  return std::get<dtype_object>(payload_);
}

void value::mark_nested() const noexcept {
  if (auto node = container())
    node->nested = true;
}

value::container_node* value::container() const noexcept {
  if (auto node = std::get_if<std::shared_ptr<items_node>>(&payload_))
    return node->get();
  if (auto node = std::get_if<std::shared_ptr<dict_node>>(&payload_))
    return node->get();
  return nullptr;
}

bool value::append(value x) {
  assert(kind_ == kind::list);
  auto& node = std::get<std::shared_ptr<items_node>>(payload_);
  if (node->nested || x.container() == node.get())
    return false;
  x.mark_nested();
  node->account(x);
  node->xs.push_back(std::move(x));
  return true;
}

bool value::set_item(value key, value x) {
  assert(kind_ == kind::dict);
  auto& node = std::get<std::shared_ptr<dict_node>>(payload_);
  if (node->nested || !key.is_scalar_key() || x.container() == node.get())
    return false;
  x.mark_nested();
  auto [slot, inserted] = node->index.emplace(key.key_fingerprint(), node->xs.size());
  if (inserted) {
    node->depth = std::max(node->depth, x.depth() + 1);
    node->tree_size = saturating_add(node->tree_size, saturating_add(1, x.tree_size()));
    node->xs.emplace_back(std::move(key), std::move(x));
  } else {
    // Replacing a value: the size is exact; the depth stays an upper bound
    // (the replaced value may have been the deepest), which errs safe.
    auto& old_value = node->xs[slot->second].second;
    node->tree_size = saturating_add(node->tree_size - old_value.tree_size(), x.tree_size());
    node->depth = std::max(node->depth, x.depth() + 1);
    old_value = std::move(x);
  }
  return true;
}

bool operator==(const value& x, const value& y) {
  if (x.kind_ != y.kind_)
    return false;
  switch (x.kind_) {
  case value::kind::none:
    return true;
  case value::kind::floating: {
    double a = x.as_float();
    double b = y.as_float();
    return std::memcmp(&a, &b, sizeof(double)) == 0;
  }
  case value::kind::str:
    return x.as_str() == y.as_str();
  case value::kind::tuple:
  case value::kind::list:
    return x.as_items() == y.as_items();
  case value::kind::dict:
    return x.as_dict() == y.as_dict();
  case value::kind::ndarray: {
    const auto& a = x.as_ndarray();
    const auto& b = y.as_ndarray();
    return a.type == b.type && a.shape == b.shape && a.data == b.data;
  }
  case value::kind::numpy_scalar: {
    const auto& a = x.as_numpy_scalar();
    const auto& b = y.as_numpy_scalar();
    return a.type == b.type && std::memcmp(a.raw.data(), b.raw.data(), item_size(a.type)) == 0;
  }
  case value::kind::numpy_dtype:
    return x.as_numpy_dtype().type == y.as_numpy_dtype().type;
  case value::kind::boolean:
    return x.as_bool() == y.as_bool();
  case value::kind::integer:
    return x.as_int() == y.as_int();
  case value::kind::bytes:
    return x.as_bytes() == y.as_bytes();
  case value::kind::global:
    return x.as_global() == y.as_global();
  }
  return false;
}

const char* to_string(value::kind k) noexcept {
  switch (k) {
  case value::kind::none:
    return "NoneType";
  case value::kind::boolean:
    return "bool";
  case value::kind::integer:
    return "int";
  case value::kind::floating:
    return "float";
  case value::kind::str:
    return "str";
  case value::kind::bytes:
    return "bytes";
  case value::kind::tuple:
    return "tuple";
  case value::kind::list:
    return "list";
  case value::kind::dict:
    return "dict";
  case value::kind::ndarray:
    return "numpy.ndarray";
  case value::kind::numpy_scalar:
    return "numpy scalar";
  case value::kind::global:
    return "global";
  case value::kind::numpy_dtype:
    return "numpy.dtype";
  }
  return "?";
}

} // namespace sprintrt::protocol
