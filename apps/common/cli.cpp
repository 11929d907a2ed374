// The programs' command-line conventions (cli.hpp).
#include "cli.hpp"

#include <algorithm>
#include <exception>
#include <iostream>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>

namespace bcsr24::apps {

int report_error(const std::string& program, const std::string& message, const std::string& suffix, int code) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::cout.flush();  // what the program printed so far comes before the error
  std::cerr << program << ": error: " << line << suffix << "\n";
  return code;
}

int run_main(CLI::App& app, int argc, char** argv, const std::function<void(CLI::App&)>& setup,
             const std::function<int()>& body) {
  const std::string program = app.get_name();
  try {
    setup(app);
    app.parse(argc, argv);
  } catch (const CLI::Success& success) {  // --help: CLI11 prints the help text on stdout
    return app.exit(success);
  } catch (const CLI::Error& error) {
    return report_error(program, error.what(), " (see --help)", kExitUsage);
  } catch (const UsageError& error) {
    return report_error(program, error.what(), error.hint() ? " (see --help)" : "", kExitUsage);
  } catch (const std::exception& error) {  // e.g. a list of choices that could not be built
    return report_error(program, error.what(), "", kExitRuntimeError);
  }
  try {
    return body();
  } catch (const UsageError& error) {
    return report_error(program, error.what(), error.hint() ? " (see --help)" : "", kExitUsage);
  } catch (const std::exception& error) {  // bcsr24::Error (ParseError names file and line) and the rest
    return report_error(program, error.what(), "", kExitRuntimeError);
  }
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::int32_t> parse_int_list(const std::string& text) {
  std::vector<std::int32_t> out;
  for (const std::string& item : split_list(text)) out.push_back(std::stoi(item));
  return out;
}

CLI::Option* add_distribution_options(CLI::App& app, int& gpus, bool& mpi, std::string& partition,
                                      const DistributionHelp& help) {
  CLI::Option* gpus_option = app.add_option("--gpus", gpus, help.gpus);
  app.add_flag("--mpi", mpi, help.mpi)->excludes(gpus_option);
  app.add_option("--partition", partition, help.partition)
      ->check(CLI::IsMember({"automatic", "contiguous", "metis"}))
      ->capture_default_str();
  return gpus_option;
}

void StorageOptions::add_to(CLI::App& app, bool with_scaling) {
  struct Choice {
    const char* name;
    std::string StorageOptions::*value;
    std::vector<std::string> choices;
    const char* help;
  };
  const Choice options[] = {
      {"--scaling", &StorageOptions::scaling, {"row", "auto", "none"},
       "range handling: row = a power-of-two scale per row (an entry flushes only ~2^-40 below its row's largest); "
       "auto = one power-of-two scale for the whole matrix when values overflow or underflow; none = fail on values "
       "beyond the precision's range"},
      {"--precision", &StorageOptions::precision, {"fp16", "bf16", "split"},
       "how A is stored and multiplied: fp16 (B fp16); bf16 (B given as fp32, converted to bf16 while staged); split "
       "(A = hi + lo in fp16, B fp32 split the same way: about fp32 accuracy)"},
      {"--layout", &StorageOptions::layout, {"aligned", "condensed", "auto"},
       "Tile layout: aligned = 16x32 tiles on the matrix's own grid (the thesis's BCSR); condensed = each 16-row "
       "band's nonzero columns packed into as few tiles as possible, arranged for 2:4, B rows gathered by index; "
       "auto = whichever stores fewer bytes"},
      {"--reorder", &StorageOptions::reorder, {"none", "rcm", "auto"},
       "Row order before tiling: none = the file's; rcm = reverse Cuthill-McKee (with supervariables); auto = rcm "
       "when it stores clearly fewer tiles. B and C stay in the caller's order"},
  };
  for (const Choice& option : options)
    if (with_scaling || option.value != &StorageOptions::scaling)
      app.add_option(option.name, this->*option.value, option.help)
          ->capture_default_str()
          ->check(CLI::IsMember(option.choices));
}

OperatorOptions StorageOptions::to_operator_options() const {
  OperatorOptions options;
  options.precision = precision_from_name(precision);
  // The command line says "row" where the library's name is "per_row".
  options.scaling = scaling == "row" ? ScalingPolicy::per_row : scaling_policy_from_name(scaling);
  options.layout = layout_from_name(layout);
  options.reorder = reordering_from_name(reorder);
  return options;
}

void TuningOptions::add_to(CLI::App& app) {
  app.add_option("--tuning", tuning,
                 "How auto plans choose between their candidates (tiles, CSR, the hybrid, narrow vectors, band "
                 "groups): measure = the cost model's best few timed on the matrix, the fastest kept (the library's "
                 "default); model = the cost model's prediction alone, nothing timed")
      ->capture_default_str()
      ->check(CLI::IsMember(std::vector<std::string>{tuning_name(Tuning::measure), tuning_name(Tuning::model)}));
  app.add_option("--tuning-budget", budget_ms,
                 "Milliseconds a measured plan may spend choosing (PlanOptions::tuning_budget_ms); 0 = the library's "
                 "default: 10% of the matrix's conversion time, at least 20 ms and at most 1 s (docs/API.md, "
                 "\"Measured plans\")")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void TuningOptions::validate() const {
  if (budget_ms > 0.0 && tuning == tuning_name(Tuning::model))
    throw UsageError("--tuning-budget applies to --tuning measure; --tuning model times nothing");
}

void TuningOptions::apply(PlanOptions& options) const {
  options.tuning = tuning == tuning_name(Tuning::model) ? Tuning::model : Tuning::measure;
  options.tuning_budget_ms = budget_ms;
}

}  // namespace bcsr24::apps
