// The option helpers that need CLI11's definitions (cli.hpp declares CLI11's types only).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli.hpp"

namespace bcsr24::apps {

/// Adds an option whose --help shows its default and whose value `check` validates: the form most options of the
/// programs take.
template <class T>
CLI::Option* add_checked(CLI::App& app, const std::string& name, T& value, const std::string& help,
                         const CLI::Validator& check) {
  return app.add_option(name, value, help)->capture_default_str()->check(check);
}

}  // namespace bcsr24::apps
