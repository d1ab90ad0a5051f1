#include "tools/sprintrt/npy_file.hpp"

#include "tools/sprintrt/npy_header.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <string_view>

#include "process/unique_fd.hpp"

namespace sprintrt::cli {

using protocol::dtype;

namespace {

constexpr std::string_view magic = "\x93NUMPY";
/// The magic string and the two version bytes.
constexpr size_t magic_and_version = 8;
/// NumPy aligns the data of the files it writes to this many bytes.
constexpr size_t array_align = 64;
/// NumPy's spare header space for the digits of the first dimension.
constexpr size_t growth_axis_max_digits = 21;
/// The longest header excerpt quoted in an error message.
constexpr size_t max_quoted = 200;

caf::error npy_error(const std::string& path, errc code, const std::string& what) {
  return make_error(code, "npy file '" + path + "': " + what);
}

/// The size in bytes of an array of `type` and `shape` (0 if any extent is
/// 0), or nothing if it does not fit in a size_t.
std::optional<size_t> byte_count(span<const size_t> shape, dtype type) {
  size_t n = protocol::item_size(type);
  for (size_t extent : shape)
    if (extent == 0)
      return 0;
  for (size_t extent : shape) {
    if (n > SIZE_MAX / extent)
      return std::nullopt;
    n *= extent;
  }
  return n;
}

/// "shape (3, 4) float32", the way messages name an array.
std::string describe(span<const size_t> shape, dtype type) {
  return "shape " + npy_shape_string(shape) + " " + protocol::to_string(type);
}

// -- reading ----------------------------------------------------------------------

/// Reads up to `size` bytes at `offset`, retrying after signals and partial
/// reads. Returns the number read (less only at the end of the file), or -1
/// with `errno` set.
ssize_t read_at(int fd, void* buffer, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, static_cast<char*>(buffer) + done, size - done,
                        static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

/// An open npy file whose header has been checked against its size.
struct npy_layout {
  process::unique_fd fd;
  dtype type = dtype::float32;
  std::vector<size_t> shape;
  uint64_t data_offset = 0;
  size_t data_bytes = 0;
};

caf::expected<npy_layout> open_npy(const std::string& path) {
  npy_layout layout;
  layout.fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!layout.fd)
    return npy_error(path, errc::io_error, std::string{"cannot open: "} + std::strerror(errno));
  struct stat info {};
  if (::fstat(layout.fd.get(), &info) != 0)
    return npy_error(path, errc::io_error, std::string{"cannot stat: "} + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return npy_error(path, errc::io_error, "not a regular file");
  const auto file_size = static_cast<uint64_t>(info.st_size);
  auto read_error = [&] {
    return npy_error(path, errc::io_error, std::string{"cannot read: "} + std::strerror(errno));
  };
  auto invalid = [&](const std::string& what) {
    return npy_error(path, errc::invalid_input, what);
  };
  // The magic string, the version and the header length (no more than fstat
  // counted, so that a file growing meanwhile cannot confuse the checks).
  unsigned char prefix[magic_and_version + 4] = {};
  ssize_t got = read_at(layout.fd.get(), prefix, std::min<uint64_t>(sizeof(prefix), file_size), 0);
  if (got < 0)
    return read_error();
  std::string_view start{reinterpret_cast<const char*>(prefix),
                         std::min(static_cast<size_t>(got), magic.size())};
  if (start != magic) {
    if (got == 0)
      return invalid("not an npy file: it is empty");
    return invalid("not an npy file: it starts with \"" + escape_for_message(start) +
                   "\", not \"\\x93NUMPY\"" +
                   (start.substr(0, 2) == "PK" ? " (a zip archive such as an .npz file?)" : ""));
  }
  if (static_cast<size_t>(got) < magic_and_version)
    return invalid("header truncated: the file ends inside the version number");
  const unsigned major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return invalid("unsupported npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  const size_t length_size = major == 1 ? 2 : 4;
  const size_t header_offset = magic_and_version + length_size;
  if (static_cast<size_t>(got) < header_offset)
    return invalid("header truncated: the file ends inside the header length");
  uint64_t header_length = 0;
  for (size_t i = 0; i < length_size; ++i)
    header_length |= uint64_t{prefix[magic_and_version + i]} << (8 * i);
  if (header_length > file_size - header_offset)
    return invalid("header truncated: its length is " + std::to_string(header_length) +
                   " bytes, but only " + std::to_string(file_size - header_offset) +
                   " bytes follow the length field");
  std::string header(header_length, '\0');
  got = read_at(layout.fd.get(), header.data(), header.size(), header_offset);
  if (got < 0)
    return read_error();
  if (static_cast<size_t>(got) < header.size())
    return invalid("header truncated: the file shrank while being read");
  // The header as text: its dict, padding and final newline.
  npy_header fields;
  std::string parse_error;
  if (!parse_npy_header(header, fields, parse_error)) {
    auto text = std::string_view{header}.substr(0, header.find_last_not_of(" \n") + 1);
    auto quoted =
        escape_for_message(text.substr(0, max_quoted)) + (text.size() > max_quoted ? "..." : "");
    return invalid("header is not parseable: " + parse_error + " in header \"" + quoted + "\"");
  }
  if (fields.fortran_order)
    return invalid("Fortran-order arrays are not supported; save with numpy.ascontiguousarray");
  std::string error;
  auto type = npy_descr_type(fields.descr, error);
  if (!type)
    return invalid(error);
  layout.type = *type;
  layout.shape = std::move(fields.shape);
  layout.data_offset = header_offset + header_length;
  auto bytes = byte_count(layout.shape, layout.type);
  if (!bytes)
    return invalid(describe(layout.shape, layout.type) + " is too large: its size in bytes " +
                   "does not fit in 64 bits");
  layout.data_bytes = *bytes;
  const uint64_t available = file_size - layout.data_offset;
  if (available != layout.data_bytes)
    return invalid(std::string{available < layout.data_bytes ? "data truncated" : "trailing data"} +
                   ": expected " + std::to_string(layout.data_bytes) + " bytes of data for " +
                   describe(layout.shape, layout.type) + ", file has " + std::to_string(available) +
                   (available > layout.data_bytes ? " (is the shape in the header wrong?)" : ""));
  return layout;
}

/// Reads the data of `layout` into `buffer`, which holds `layout.data_bytes`.
caf::error read_data(const std::string& path, const npy_layout& layout, void* buffer) {
  ssize_t got = read_at(layout.fd.get(), buffer, layout.data_bytes, layout.data_offset);
  if (got < 0)
    return npy_error(path, errc::io_error, std::string{"cannot read: "} + std::strerror(errno));
  if (static_cast<size_t>(got) < layout.data_bytes)
    return npy_error(path, errc::invalid_input,
                     "data truncated: the file shrank while being read (got " +
                         std::to_string(got) + " of " + std::to_string(layout.data_bytes) +
                         " bytes of data)");
  return {};
}

// -- writing ----------------------------------------------------------------------

/// Returns the header `numpy.save` writes for an array of `type` and `shape`,
/// or nothing if even version 2.0 cannot hold it.
std::optional<std::string> make_header(dtype type, span<const size_t> shape) {
  std::string dict = std::string{"{'descr': '"} + (protocol::item_size(type) == 1 ? '|' : '<') +
                     protocol::type_code(type) +
                     "', 'fortran_order': False, 'shape': " + npy_shape_string(shape) + ", }";
  if (!shape.empty())
    dict.append(growth_axis_max_digits - std::to_string(shape[0]).size(), ' ');
  const size_t text_size = dict.size() + 1; // with the final newline
  for (unsigned char major : {1, 2}) {
    const size_t prefix = magic_and_version + (major == 1 ? 2 : 4);
    const size_t padding = array_align - (prefix + text_size) % array_align;
    const uint64_t length = text_size + padding;
    if (length > (major == 1 ? 0xffffu : 0xffffffffu))
      continue;
    std::string header{magic};
    header += static_cast<char>(major);
    header += '\0';
    for (size_t i = 0; i < prefix - magic_and_version; ++i)
      header += static_cast<char>((length >> (8 * i)) & 0xff);
    return header + dict + std::string(padding, ' ') + '\n';
  }
  return std::nullopt;
}

/// Writes all of `size` bytes, retrying after signals and partial writes.
bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Numbers the temporary files of this process.
std::atomic<uint64_t> temp_counter{0};

} // namespace

size_t npy_array::num_elements() const noexcept {
  size_t n = 1;
  for (size_t extent : shape)
    n *= extent;
  return n;
}

std::string npy_shape_string(span<const size_t> shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

caf::expected<npy_array> read_npy(const std::string& path) {
  auto layout = open_npy(path);
  if (!layout)
    return layout.error();
  npy_array array;
  array.type = layout->type;
  array.shape = std::move(layout->shape);
  array.data.resize(layout->data_bytes);
  if (auto err = read_data(path, *layout, array.data.data()))
    return err;
  return array;
}

template <class T>
caf::expected<npy_typed_array<T>> read_npy_exact(const std::string& path) {
  auto layout = open_npy(path);
  if (!layout)
    return layout.error();
  constexpr dtype expected = protocol::dtype_of<T>();
  if (layout->type != expected)
    return npy_error(path, errc::invalid_input,
                     std::string{"has dtype "} + protocol::to_string(layout->type) + ", expected " +
                         protocol::to_string(expected));
  npy_typed_array<T> array;
  array.values.resize(layout->data_bytes / sizeof(T));
  if (auto err = read_data(path, *layout, array.values.data()))
    return err;
  array.shape = std::move(layout->shape);
  return array;
}

template caf::expected<npy_typed_array<float>> read_npy_exact(const std::string&);
template caf::expected<npy_typed_array<double>> read_npy_exact(const std::string&);
template caf::expected<npy_typed_array<int32_t>> read_npy_exact(const std::string&);
template caf::expected<npy_typed_array<uint32_t>> read_npy_exact(const std::string&);
template caf::expected<npy_typed_array<int64_t>> read_npy_exact(const std::string&);
template caf::expected<npy_typed_array<uint8_t>> read_npy_exact(const std::string&);

caf::error write_npy(const std::string& path, dtype type, span<const size_t> shape,
                     byte_span data) {
  auto bytes = byte_count(shape, type);
  if (!bytes)
    return npy_error(path, errc::invalid_input,
                     "cannot write " + describe(shape, type) + ": its size overflows 64 bits");
  if (data.size() != *bytes)
    return npy_error(path, errc::invalid_input,
                     "cannot write " + describe(shape, type) + ": it needs " +
                         std::to_string(*bytes) + " bytes of data, got " +
                         std::to_string(data.size()));
  auto header = make_header(type, shape);
  if (!header)
    return npy_error(path, errc::invalid_input,
                     "cannot write a shape of " + std::to_string(shape.size()) +
                         " dimensions: the header would exceed 4 GiB");
  std::string temp;
  process::unique_fd fd;
  for (int attempt = 0; !fd && attempt < 100; ++attempt) {
    temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temp_counter++);
    fd.reset(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (!fd && errno != EEXIST)
      break;
  }
  if (!fd)
    return npy_error(path, errc::io_error,
                     "cannot create the temporary file '" + temp + "': " + std::strerror(errno));
  auto fail = [&](const char* what) {
    auto err = npy_error(path, errc::io_error, what + std::string{": "} + std::strerror(errno));
    fd.reset();
    ::unlink(temp.c_str());
    return err;
  };
  if (!write_all(fd.get(), header->data(), header->size()) ||
      !write_all(fd.get(), data.data(), data.size()))
    return fail("cannot write");
  if (::fsync(fd.get()) != 0)
    return fail("cannot flush to disk");
  if (::close(fd.release()) != 0)
    return fail("cannot close");
  if (::rename(temp.c_str(), path.c_str()) != 0)
    return fail(("cannot rename '" + temp + "' to it").c_str());
  return {};
}

caf::expected<dtype> read_npy_dtype(const std::string& path) {
  auto layout = open_npy(path);
  if (!layout)
    return std::move(layout.error());
  return layout->type;
}

caf::error write_npy(const std::string& path, const npy_array& array) {
  return write_npy(path, array.type, array.shape, byte_span{array.data});
}

namespace detail {

caf::error check_npy_conversion(const npy_array& array, bool to_floating, size_t to_size,
                                const std::string& to_name) {
  const char* from = protocol::to_string(array.type);
  auto bytes = byte_count(array.shape, array.type);
  if (!bytes || array.data.size() != *bytes)
    return make_error(errc::invalid_input, "the " + std::string{from} + " array of shape " +
                                               npy_shape_string(array.shape) + " has " +
                                               std::to_string(array.data.size()) +
                                               " bytes of data, which does not match its shape");
  const bool from_floating = protocol::is_floating(array.type);
  if (from_floating != to_floating)
    return make_error(errc::invalid_input,
                      "the " + std::string{from} + " array cannot be read as " + to_name +
                          " values: no conversion between integers and floating point is done");
  if (from_floating && protocol::item_size(array.type) > to_size)
    return make_error(errc::invalid_input, "the " + std::string{from} +
                                               " array cannot be read as " + to_name +
                                               " values: that would round them");
  return {};
}

caf::error npy_value_out_of_range(const npy_array& array, size_t index,
                                  const std::string& to_name) {
  const std::byte* p = array.data.data() + index * protocol::item_size(array.type);
  auto text = [p](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return std::to_string(+x); // + promotes uint8_t to a number
  };
  std::string value = array.type == dtype::int32    ? text(int32_t{})
                      : array.type == dtype::uint32 ? text(uint32_t{})
                      : array.type == dtype::int64  ? text(int64_t{})
                                                    : text(uint8_t{});
  return make_error(errc::invalid_input, "element " + std::to_string(index) + " of the " +
                                             protocol::to_string(array.type) + " array is " +
                                             value + ", which does not fit in " + to_name);
}

} // namespace detail

} // namespace sprintrt::cli
