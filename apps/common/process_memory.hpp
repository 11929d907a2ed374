// Resident memory of this process from /proc/self/status (Linux), for the programs that report what a step
// added to it: the conversion (bench_convert) and spmm_run's check.
#pragma once

#include <cstring>
#include <fstream>
#include <string>

namespace bcsr24::apps {

/// A "VmRSS" (resident now) or "VmHWM" (peak resident) line of /proc/self/status in bytes; 0 where unavailable.
inline double proc_status_bytes(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key, 0) == 0 && line.size() > std::strlen(key) + 1)
      return std::stod(line.substr(std::strlen(key) + 1)) * 1024.0;  // "VmHWM:   123456 kB"
  return 0.0;
}

/// Restarts the kernel's peak count (VmHWM) from the current resident size, so that the next VmHWM is the peak
/// of what follows. Returns false where the kernel does not allow it (then VmHWM is the peak since the start).
inline bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear.flush());
}

}  // namespace bcsr24::apps
