// One table of (value, name) pairs per enum, and the two look-ups every enum's names need: so that each spelling
// is written once (option_names.cpp, precision.cpp, device/kernel_names.cpp,
// distributed/row_order.cpp, and the solvers' inner_matrix.cpp and spd_solver.cpp).
#pragma once

#include <cstddef>
#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24::detail {

template <class Enum>
struct Named {
  Enum value;
  const char* name;
};

/// The name of `value`, or `unknown` for a value the table lacks (an enum cast from an out-of-range integer).
template <class Enum, std::size_t N>
constexpr const char* name_in(const Named<Enum> (&table)[N], Enum value, const char* unknown = "?") noexcept {
  for (const Named<Enum>& entry : table)
    if (entry.value == value) return entry.name;
  return unknown;
}

/// The value called `name`.
/// @throw InvalidArgument "unknown <what> '<name>' (expected a, b or c)", naming the table's entries in order.
template <class Enum, std::size_t N>
Enum value_in(const Named<Enum> (&table)[N], const std::string& name, const char* what) {
  for (const Named<Enum>& entry : table)
    if (name == entry.name) return entry.value;
  std::string expected;
  for (std::size_t i = 0; i < N; ++i) expected += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + table[i].name;
  throw InvalidArgument("unknown " + std::string(what) + " '" + name + "' (expected " + expected + ")");
}

}  // namespace bcsr24::detail
