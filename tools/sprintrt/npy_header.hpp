#pragma once

/// @file
/// The header of an .npy file: the Python dict literal NumPy writes, e.g.
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`, parsed
/// strictly (not as general Python), and its dtype string.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/dtype.hpp"

namespace sprintrt::cli {

/// The three entries of an npy header.
struct npy_header {
  std::string descr;
  bool fortran_order = false;
  std::vector<size_t> shape;
};

/// Parses a header: exactly the keys 'descr' (a string), 'fortran_order'
/// (True or False) and 'shape' (a tuple of non-negative ints), strings in
/// single or double quotes without escapes, optional trailing commas, white
/// space between tokens. On failure returns false and says why in `error`.
bool parse_npy_header(std::string_view text, npy_header& out, std::string& error);

/// Maps a descr such as "<f4" to its dtype; nothing, with the reason in
/// `error`, for unsupported, big-endian or inconsistent ones.
std::optional<protocol::dtype> npy_descr_type(const std::string& descr, std::string& error);

/// Renders bytes for a message: printable ASCII as is, anything else as \xHH.
std::string escape_for_message(std::string_view bytes);

} // namespace sprintrt::cli
