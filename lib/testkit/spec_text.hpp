// The generators' "ROWS[,key=value]..." spec strings (random graphs, structure classes): the comma-separated
// parts, the integers in them and the one error form, "<kind> '<text>': <why> (expected <grammar>)".
#pragma once

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bcsr24/error.hpp"

namespace bcsr24::detail {

class SpecText {
 public:
  /// `kind` names the spec in errors ("random graph spec"), `grammar` is what it should look like.
  SpecText(std::string kind, std::string text, std::string grammar)
      : kind_(std::move(kind)), text_(std::move(text)), grammar_(std::move(grammar)) {}

  const std::string& text() const { return text_; }

  InvalidArgument fail(const std::string& why) const {
    return InvalidArgument(kind_ + " '" + text_ + "': " + why + " (expected " + grammar_ + ")");
  }

  /// The parts between the commas from `start` on: two commas in a row, or one at either end, give an empty part.
  std::vector<std::string> parts(std::size_t start) const {
    std::vector<std::string> out;
    while (start <= text_.size()) {
      const std::size_t comma = text_.find(',', start);
      out.push_back(text_.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      start = comma == std::string::npos ? text_.size() + 1 : comma + 1;
    }
    return out;
  }

  /// A non-negative decimal integer of at most 18 digits; `name` says which in the error.
  std::int64_t integer(const std::string& value, const std::string& name) const {
    if (value.empty() || value.size() > 18 || !std::all_of(value.begin(), value.end(), ::isdigit))
      throw fail(name + " '" + value + "' is not a non-negative integer");
    return std::stoll(value);
  }

  /// The leading ROWS part: 1 .. 2^31 - 1.
  std::int32_t rows(const std::string& part) const {
    const std::int64_t rows = integer(part, "rows");
    if (rows < 1 || rows > INT32_MAX) throw fail("rows must be in 1 .. 2^31 - 1");
    return static_cast<std::int32_t>(rows);
  }

 private:
  std::string kind_, text_, grammar_;
};

}  // namespace bcsr24::detail
