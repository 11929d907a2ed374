// Small helpers for the programs' text reports: wall-clock stopwatch, printf-style number formatting, byte sizes.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace bcsr24::bench {

/// Wall-clock seconds since construction (host work: reading, converting, building).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// One number through a printf pattern ("%.3f").
inline std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

/// "512 B", "1.5 KiB", "684.4 MiB".
inline std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return buffer;
}

}  // namespace bcsr24::bench
