// The one number format of the solvers' messages: "1.234e-08".
#pragma once

#include <cstdio>
#include <string>

namespace bcsr24::solver {

inline std::string sci(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", v);
  return text;
}

}  // namespace bcsr24::solver
