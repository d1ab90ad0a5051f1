#pragma once

/// @file
/// The value model: what a pickle on a Sprint pipe can denote.
///
/// A `value` is a handle to a Python object, as in Python itself: copying a
/// value is O(1) and shares the object (strings, byte strings, arrays and
/// containers are reference-counted). This matters for the pickle reader,
/// where `GET` of a memoized object must not copy it (a hostile message could
/// otherwise multiply a large object by repeating a 2-byte opcode).
///
/// Sharing mutable containers admits cycles (`l.append(l)`), which would leak
/// and recurse forever. We rule them out structurally: a container that has
/// been nested into another one (or into a tuple) can no longer be mutated, and
/// a container cannot be nested into itself. Every pickle Python writes for a
/// non-recursive object obeys this (containers are completed before their parent
/// takes them), and together with a depth limit it bounds every recursion over
/// a value (comparison, rendering, destruction).
///
/// Bytes and array data may point into the message buffer they were decoded
/// from (zero copy for multi-megabyte arrays), sharing its ownership: see
/// `bytes_ref` and `read_pickle`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/span.hpp"
#include "protocol/dtype.hpp"

namespace sprintrt::protocol {

/// A read-only byte string: a view of bytes plus, usually, a share in
/// whatever owns them (its own vector, or the message buffer it was decoded
/// from), so the view stays valid for as long as the `bytes_ref` lives.
class bytes_ref {
public:
  /// An empty byte string.
  bytes_ref() noexcept = default;

  /// Takes ownership of `bytes`.
  static bytes_ref own(std::vector<std::byte> bytes);

  /// Copies `text` (one byte per char).
  static bytes_ref copy_of(std::string_view text);

  /// Refers to `bytes` inside an object kept alive by `owner`.
  static bytes_ref shared(byte_span bytes, std::shared_ptr<const void> owner) noexcept;

  /// Refers to `bytes` without owning them: the caller keeps them alive for
  /// as long as this `bytes_ref` and its copies are used. For handing data
  /// that is about to be written (encoded) to code that takes values.
  static bytes_ref unowned(byte_span bytes) noexcept;

  /// Returns the first byte's address.
  const std::byte* data() const noexcept { return data_; }

  /// Returns the number of bytes.
  size_t size() const noexcept { return size_; }

  /// Returns the bytes.
  byte_span bytes() const noexcept { return {data_, size_}; }

  /// Returns whether this holds a share in the bytes' owner.
  bool owned() const noexcept { return owner_ != nullptr; }

  /// Returns the bytes as a string (one char per byte).
  std::string to_string() const;

  /// Compares the bytes, not their ownership.
  friend bool operator==(const bytes_ref& x, const bytes_ref& y) noexcept;

private:
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;
};

/// An n-dimensional NumPy array in C order with little-endian elements, as
/// made by RETURNN's `make_numpy_ndarray_fromstring(bytes, dtype, shape)`.
struct ndarray {
  /// The element type.
  dtype type = dtype::float32;
  /// The extent of each dimension (empty for a 0-d array).
  std::vector<size_t> shape;
  /// Exactly `num_elements() * item_size(type)` bytes.
  bytes_ref data;

  /// Returns the product of the shape (1 for a 0-d array).
  size_t num_elements() const noexcept;
};

/// A NumPy scalar such as `numpy.float32(2.5)` or `numpy.int32(3)`.
struct numpy_scalar {
  /// The element type.
  dtype type = dtype::float64;
  /// The little-endian bytes of the value; the first `item_size(type)` count.
  std::array<std::byte, 8> raw{};

  /// Makes a scalar of a floating-point `type` (float32 rounds).
  static numpy_scalar of_float(dtype type, double x) noexcept;

  /// Makes a scalar of an integer `type` (truncating to its width).
  static numpy_scalar of_int(dtype type, int64_t x) noexcept;

  /// Returns the value as a double (exact for every type but large int64).
  double to_double() const noexcept;

  /// Returns the value of an integer type; 0 for floating types.
  int64_t to_int() const noexcept;
};

/// The whitelisted Python callables a pickle may name with GLOBAL (docs/protocol.md
/// section 3). Nothing else can be called.
enum class callable : uint8_t {
  /// `make_numpy_ndarray_fromstring(bytes, dtype_str, shape)`, under
  /// `returnn.util.task_system` or the legacy `TaskSystem`.
  make_ndarray,
  /// `numpy.core.multiarray.scalar(dtype, raw_bytes)` (or `numpy._core`).
  numpy_scalar,
  /// `numpy.dtype(code, align, copy)`.
  numpy_dtype,
  /// `_codecs.encode(text, "latin1")`: bytes at protocol 2.
  codecs_encode,
  /// `builtins.bytes()` (`__builtin__` at protocol 2): the empty byte string.
  builtin_bytes,
};

/// Returns the qualified Python name of `fn`, e.g. "_codecs.encode".
const char* to_string(callable fn) noexcept;

/// A `numpy.dtype` object under construction (REDUCE, then BUILD with its
/// state). Only the reader makes these; they are arguments of NumPy scalars.
struct dtype_object {
  dtype type = dtype::float64;
};

/// A handle to a Python object denoted by a pickle.
class value {
public:
  /// The Python type of a value. `global` and `numpy_dtype` are intermediate
  /// objects of the pickle machine: they appear only as call arguments.
  enum class kind : uint8_t {
    none,
    boolean,
    integer,
    floating,
    str,
    bytes,
    tuple,
    list,
    dict,
    ndarray,
    numpy_scalar,
    global,
    numpy_dtype,
  };

  /// The items of a tuple or list.
  using items = std::vector<value>;

  /// The (key, value) pairs of a dict, in insertion order.
  using dict_items = std::vector<std::pair<value, value>>;

  /// The deepest nesting of containers a value may have. Sprint messages nest
  /// two levels (a tuple holding a shape tuple); the limit bounds recursion.
  static constexpr size_t max_depth = 64;

  /// Python's `None`.
  value() noexcept = default;

  // -- factories --------------------------------------------------------------

  /// Python's True or False.
  static value boolean(bool x);
  /// An int (sprintrt's ints are 64-bit).
  static value integer(int64_t x);
  /// A float.
  static value floating(double x);
  /// A str; `text` is UTF-8.
  static value str(std::string text);
  /// A bytes object.
  static value bytes(bytes_ref data);
  /// A tuple; nests (and thereby freezes) every container among `xs`.
  static value tuple(items xs);
  /// A list; nests every container among `xs`.
  static value list(items xs);
  /// A dict; nests every container among the values. Keys must be scalar
  /// keys (`is_scalar_key`; others are a programming error); a later pair
  /// replaces an earlier one with an equal key of the same kind (unlike
  /// Python, 1, 1.0 and True are different keys).
  static value dict(dict_items xs);
  /// A NumPy array.
  static value array(ndarray x);
  /// A NumPy scalar.
  static value scalar(numpy_scalar x);
  /// A whitelisted callable named by GLOBAL (pickle machine only).
  static value global(callable fn);
  /// A `numpy.dtype` under construction (pickle machine only).
  static value numpy_dtype(dtype_object x);

  // -- observers --------------------------------------------------------------

  /// Returns the Python type.
  kind type() const noexcept { return kind_; }

  /// Returns whether the value has type `k`.
  bool is(kind k) const noexcept { return kind_ == k; }

  /// Returns the nesting depth: 0 for scalars, 1 + the deepest item for containers.
  size_t depth() const noexcept;

  /// Returns the number of values in the tree, counting a shared value once
  /// for every place it appears (what a walk over the tree visits): 1 for
  /// scalars, 1 + the items' sizes for containers; saturates at SIZE_MAX.
  /// Sharing lets a short pickle denote an exponentially large tree; the
  /// reader bounds this to keep every walk (==, repr, JSON) linear.
  size_t tree_size() const noexcept;

  /// Returns whether the value may be a dict key: None, bool, int, float,
  /// str or bytes. (Sprint messages hold no dicts; allowing containers as
  /// keys would make key comparison as expensive as the trees.)
  bool is_scalar_key() const noexcept;

  // Accessors; each requires the matching kind.
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;
  const std::string& as_str() const;
  const bytes_ref& as_bytes() const;
  /// The items of a tuple or a list.
  const items& as_items() const;
  const dict_items& as_dict() const;
  const ndarray& as_ndarray() const;
  const numpy_scalar& as_numpy_scalar() const;
  callable as_global() const;
  const dtype_object& as_numpy_dtype() const;

  // -- builder operations (the pickle machine's mutations) --------------------

  /// Appends `x` to this list. Returns false, changing nothing, if this list is
  /// nested in another container (frozen) or `x` is this list.
  [[nodiscard]] bool append(value x);

  /// Adds or replaces `key` in this dict, with the same rules as `append`;
  /// `key` must be a scalar key (`is_scalar_key`), else false. Looking the
  /// key up costs O(its length), not O(number of keys).
  [[nodiscard]] bool set_item(value key, value x);

  /// Structural identity: same kinds, same contents; floats compare by bits
  /// (so NaN equals NaN and 0.0 differs from -0.0).
  friend bool operator==(const value& x, const value& y);
  friend bool operator!=(const value& x, const value& y) { return !(x == y); }

private:
  struct container_node;
  struct items_node;
  struct dict_node;

  using payload =
      std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>,
                   bytes_ref, std::shared_ptr<items_node>, std::shared_ptr<dict_node>,
                   std::shared_ptr<const ndarray>, numpy_scalar, callable, dtype_object>;

  value(kind k, payload p) noexcept : kind_(k), payload_(std::move(p)) {}

  /// Marks a container as nested in another one; no-op for other kinds.
  void mark_nested() const noexcept;

  /// A string identifying a scalar key's kind and contents (for the index).
  std::string key_fingerprint() const;

  /// Returns a container's shared node (its identity too), else null.
  container_node* container() const noexcept;

  kind kind_ = kind::none;
  payload payload_;
};

/// Returns Python's name of `k`, e.g. "tuple", "numpy.ndarray".
const char* to_string(value::kind k) noexcept;

} // namespace sprintrt::protocol
