// The programs' command-line conventions: exit codes, one-line error messages, the main() every program runs
// through, and the option groups that choose how A is stored and how automatic plans are chosen.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bcsr24/operator_options.hpp"
#include "bcsr24/spmm_plan.hpp"

// CLI11 by declaration only: its header costs ~4 s of compile time in every file that includes it, so only the
// files that add or read options include <CLI/CLI.hpp> (cli_options.hpp for add_checked).
namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace bcsr24::apps {

/// Exit status of every program: 0 success, 1 runtime error (bad file, CUDA, a failed check), 2 bad command line.
/// Programs may add codes above 2 for their own outcomes (bcsr24_solve: 3 = not converged).
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsage = 2;

/// A command line that parsed but makes no sense: exit status 2, like CLI11's own parse errors.
class UsageError : public std::runtime_error {
 public:
  /// @param hint add " (see --help)" to the message (off where help would not help, e.g. a missing build option)
  explicit UsageError(const std::string& what, bool hint = true) : std::runtime_error(what), hint_(hint) {}
  bool hint() const noexcept { return hint_; }

 private:
  bool hint_;
};

/// Prints "<program>: error: <message><suffix>" as one line on stderr (newlines inside the message become
/// spaces, so every error is one line) and returns `code`.
int report_error(const std::string& program, const std::string& message, const std::string& suffix, int code);

/// The whole of a program's main(): `setup` adds the options to `app`, the command line is parsed, then `body`
/// runs and its value is the exit status. --help prints the help and returns 0; a CLI11 parse error or a
/// UsageError (from setup or body) returns 2 with the message; any other exception (bcsr24::Error and its
/// kinds, std::exception) returns 1 with its message. Only this function turns exceptions into exit codes.
int run_main(CLI::App& app, int argc, char** argv, const std::function<void(CLI::App&)>& setup,
             const std::function<int()>& body);

/// The non-empty comma-separated items of a list option's text ("8,32,,128" -> "8", "32", "128").
std::vector<std::string> split_list(const std::string& text);
/// The same items as integers (as std::stoi reads them: an item that is not a number throws
/// std::invalid_argument, which run_main reports).
std::vector<std::int32_t> parse_int_list(const std::string& text);

/// Help texts of the distributed options, in each program's words.
struct DistributionHelp {
  const char* gpus;
  const char* mpi;
  const char* partition;
};

/// --gpus P, --mpi (which excludes --gpus) and --partition automatic|contiguous|metis (its default shown): how a
/// program spreads its work over GPUs. Returns the --gpus option, for the program's own checks.
CLI::Option* add_distribution_options(CLI::App& app, int& gpus, bool& mpi, std::string& partition,
                                      const DistributionHelp& help);

/// --precision, --scaling, --layout and --reorder, as text until to_operator_options() maps them (so that
/// CLI11 checks the names and --help lists them).
struct StorageOptions {
  std::string precision = "fp16";
  std::string scaling = "row";
  std::string layout = "auto";
  std::string reorder = "auto";

  /// Adds the four options; `with_scaling` false leaves --scaling out.
  void add_to(CLI::App& app, bool with_scaling = true);
  OperatorOptions to_operator_options() const;
};

/// --tuning and --tuning-budget: how automatic plans are chosen (PlanOptions::tuning, tuning_budget_ms), as text
/// and milliseconds until apply() maps them.
struct TuningOptions {
  std::string tuning = "measure";
  double budget_ms = 0.0;  ///< 0: the library's default budget

  void add_to(CLI::App& app);
  /// @throw UsageError for a budget with --tuning model (nothing is measured)
  void validate() const;
  /// Sets `options.tuning` and `options.tuning_budget_ms`.
  void apply(PlanOptions& options) const;
};

}  // namespace bcsr24::apps
