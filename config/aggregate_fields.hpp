#pragma once

/// @file
/// The number of members of an aggregate, at compile time: lets a table that
/// declares something for every member of a struct check that it has as many
/// entries as the struct has members, so a member added without its entry
/// does not compile.

#include <cstddef>
#include <type_traits>
#include <utility>

namespace sprintrt::config {

namespace detail {

/// Converts to any type; only used unevaluated. Copy-initializing a member
/// from it considers only this conversion, never the member's constructors,
/// so it is never ambiguous.
struct any_member {
  template <class T>
  operator T() const noexcept;
};

template <class T, class Indices, class = void>
struct brace_initializable_from : std::false_type {};

template <class T, size_t... I>
struct brace_initializable_from<T, std::index_sequence<I...>,
                                std::void_t<decltype(T{(void(I), any_member{})...})>>
    : std::true_type {};

} // namespace detail

/// Returns how many members the aggregate `T` has: the most initializers
/// `T{...}` takes (none of its members may be an array, whose elements would
/// count one by one).
template <class T, size_t N = 0>
constexpr size_t aggregate_field_count() noexcept {
  static_assert(std::is_aggregate_v<T>);
  if constexpr (detail::brace_initializable_from<T, std::make_index_sequence<N + 1>>::value)
    return aggregate_field_count<T, N + 1>();
  else
    return N;
}

} // namespace sprintrt::config
