// Small helpers for the programs' text reports: wall-clock stopwatch, a progress line, printf-style number
// formatting, byte sizes, the median / min / max of timed runs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace bcsr24::bench {

/// Wall-clock seconds since construction (host work: reading, converting, building).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// One line of progress on stderr ("reading cant.mtx ... 1.23 s"). Callers enable it only on a terminal and
/// never with --json (and, in distributed runs, only on rank 0), so that piped and machine-read output stays clean.
class ProgressLine {
 public:
  ProgressLine(bool enabled, std::string label) : enabled_(enabled), label_(std::move(label)) {
    if (enabled_) {
      std::fprintf(stderr, "%s ...", label_.c_str());
      std::fflush(stderr);
    }
  }
  void percent(double fraction) {
    if (!enabled_) return;
    const int value = static_cast<int>(fraction * 100.0);
    if (value == last_percent_) return;
    last_percent_ = value;
    std::fprintf(stderr, "\r%s ... %3d%%", label_.c_str(), value);
    std::fflush(stderr);
  }
  /// Ends the line with the time taken; later calls print nothing.
  void done(double seconds) {
    if (enabled_) std::fprintf(stderr, "\r%s ... %.2f s    \n", label_.c_str(), seconds);
    enabled_ = false;
  }

 private:
  bool enabled_;
  std::string label_;
  int last_percent_ = -1;
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

/// Median, minimum and maximum of a set of timed runs, in milliseconds (all zero for no runs).
struct Timings {
  double median_ms = 0.0, min_ms = 0.0, max_ms = 0.0;
};
inline Timings summarize(std::vector<double> ms) {
  Timings t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const std::size_t count = ms.size();
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.median_ms = count % 2 ? ms[count / 2] : 0.5 * (ms[count / 2 - 1] + ms[count / 2]);
  return t;
}

}  // namespace bcsr24::bench
