// Number formatting and wall-clock time of bcsr24_solve's reports (the option handling, the runs of both solvers
// and the GPU-against-CPU check print through these).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace bcsr24::solver {

/// "1.23e-08": `digits` after the point, scientific.
inline std::string sci(double v, int digits = 2) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*e", digits, v);
  return buffer;
}

/// "0.123": `digits` after the point.
inline std::string fixed(double v, int digits = 3) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace bcsr24::solver
