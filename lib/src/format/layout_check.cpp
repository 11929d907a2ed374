// Consistency checks of the layout and precision fields (layout_check.hpp).
#include "format/layout_check.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bcsr24::detail {

namespace {

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

std::string row_order_problem(const Bcsr24Matrix& a) {
  if (a.row_order.empty()) return {};
  if (a.row_order.size() != at(std::int64_t{a.tile_rows} * kTileRows))
    return "row_order has " + std::to_string(a.row_order.size()) + " entries; expected 0 or 16 per tile row (" +
           std::to_string(std::int64_t{a.tile_rows} * kTileRows) + ")";
  std::vector<std::int32_t> stored_at(at(a.rows), -1);
  for (std::size_t i = 0; i < a.row_order.size(); ++i) {
    const std::int32_t v = a.row_order[i];
    if (v < -1 || v >= a.rows)
      return "row_order: entry " + std::to_string(i) + " is " + std::to_string(v) + ", outside [-1, " +
             std::to_string(a.rows) + ")";
    if (i >= at(a.rows)) {
      if (v != -1)
        return "row_order: stored row " + std::to_string(i) + " is a padding row (rows = " + std::to_string(a.rows) +
               ") but maps to original row " + std::to_string(v) + "; expected -1";
      continue;
    }
    if (v == -1)
      return "row_order: stored row " + std::to_string(i) + " lies inside the matrix (rows = " +
             std::to_string(a.rows) + ") but is marked as padding (-1)";
    if (stored_at[at(v)] >= 0)
      return "row_order: original row " + std::to_string(v) + " appears twice (stored rows " +
             std::to_string(stored_at[at(v)]) + " and " + std::to_string(i) + "): not a permutation";
    stored_at[at(v)] = static_cast<std::int32_t>(i);
  }
  // rows entries in [0, rows) without a duplicate: every original row appears exactly once.
  return {};
}

std::string b_rows_problem(const Bcsr24Matrix& a, const TileList& list, const char* name) {
  const std::size_t slots = at(list.tiles()) * kTileCols;
  if (!list.b_rows.empty() && list.b_rows.size() != slots)
    return std::string("the ") + name + " list has " + std::to_string(list.b_rows.size()) +
           " b_rows entries; expected 0 or 32 per tile (" + std::to_string(slots) + ")";
  if (a.gathered() && list.tiles() > 0 && list.b_rows.empty())
    return std::string("the ") + name + " list has no b_rows while the other list gathers its B rows";
  for (std::size_t k = 0; k < list.b_rows.size(); ++k) {
    const std::int32_t v = list.b_rows[k];
    if (v < -1 || v >= a.cols)
      return std::string(name) + " list: b_rows entry " + std::to_string(k) + " (tile " + std::to_string(k / kTileCols) +
             ", column " + std::to_string(k % kTileCols) + ") is " + std::to_string(v) + ", outside [-1, " +
             std::to_string(a.cols) + ")";
  }
  return {};
}

/// values_lo of a split list matches values; other precisions have none.
std::string values_lo_problem(const Bcsr24Matrix& a, const TileList& list, const char* name) {
  const std::size_t expected = a.precision == Precision::split ? list.values.size() : 0;
  if (list.values_lo.size() == expected) return {};
  return std::string("the ") + name + " list has " + std::to_string(list.values_lo.size()) +
         " low parts (values_lo); expected " + std::to_string(expected) + " for precision " +
         precision_name(a.precision);
}

std::string precision_problem(const Bcsr24Matrix& a) {
  if (a.precision != Precision::fp16 && a.precision != Precision::bf16 && a.precision != Precision::split)
    return "precision " + std::to_string(static_cast<int>(a.precision)) + " is not fp16, bf16 or split";
  if (!a.row_exponent.empty() && a.row_exponent.size() != at(a.rows))
    return "row_exponent has " + std::to_string(a.row_exponent.size()) + " entries; expected 0 or one per row (" +
           std::to_string(a.rows) + ")";
  std::string problem = values_lo_problem(a, a.sparse24, "2:4");
  if (problem.empty()) problem = values_lo_problem(a, a.dense, "dense");
  return problem;
}

}  // namespace

std::string layout_problem(const Bcsr24Matrix& a) {
  std::string problem = row_order_problem(a);
  if (problem.empty()) problem = b_rows_problem(a, a.sparse24, "2:4");
  if (problem.empty()) problem = b_rows_problem(a, a.dense, "dense");
  if (problem.empty()) problem = precision_problem(a);
  return problem;
}

}  // namespace bcsr24::detail
