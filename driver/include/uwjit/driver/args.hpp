// The command line of uwjit's programs: a small parser (flags, options with values,
// positionals) that renders its own --help, and the grammar of node params on it (--size,
// --set). What run_main parses, and what the uwjit CLI's subcommands parse.
#pragma once

#include <uwjit/common/error.hpp>
#include <uwjit/runtime/value.hpp>

#include <cstdint>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::driver {

/// A misuse of the command line: a program's main prints the message, then the usage of the
/// command that was misused, and exits 2.
class UsageError : public Error {
public:
  UsageError(const std::string& message, std::string usage, std::string command)
      : Error(ErrorKind::usage, message), m_usage(std::move(usage)), m_command(std::move(command)) {
  }
  [[nodiscard]] const std::string& usage() const noexcept { return m_usage; }
  [[nodiscard]] const std::string& command() const noexcept { return m_command; }
  /// Throws UsageError "<command>: <message>" with this command's usage line.
  [[noreturn]] void fail(const std::string& message) const;

private:
  std::string m_usage;
  std::string m_command;
};

/// What one command accepts; renders its own --help text.
class ArgSpec {
public:
  /// `command`: the words after the program's name that run it (e.g. "run" for `uwjit run`), or
  /// "" for a program that is its own command; messages begin with it ("run: ...").
  ArgSpec(std::string command, std::string summary);
  /// The program's name in the usage line (default "uwjit").
  ArgSpec& program(std::string name);
  ArgSpec& flag(std::string name, std::string help);
  ArgSpec& option(std::string name, std::string metavar, std::string help,
                  std::string fallback = {});
  ArgSpec& positional(std::string name, std::string help, bool required = true);
  /// Free text printed after the options (examples, notes).
  ArgSpec& epilog(std::string text);

  [[nodiscard]] std::string help() const;
  [[nodiscard]] std::string usage_line() const;
  [[nodiscard]] const std::string& command() const noexcept { return m_command; }
  /// Throws UsageError "<command>: <message>" (or the message alone, without a command) with
  /// this command's usage line.
  [[noreturn]] void fail(const std::string& message) const;

  struct Option {
    std::string name, metavar, help, fallback;
    bool takes_value;
  };
  struct Positional {
    std::string name, help;
    bool required;
  };
  [[nodiscard]] const std::vector<Option>& options() const noexcept { return m_options; }
  [[nodiscard]] const std::vector<Positional>& positionals() const noexcept {
    return m_positionals;
  }

private:
  std::string m_program = "uwjit";
  std::string m_command, m_summary, m_epilog;
  std::vector<Option> m_options;
  std::vector<Positional> m_positionals;
};

/// Parsed arguments. parse() throws UsageError naming the offending argument.
class Args {
public:
  static Args parse(const ArgSpec& spec, const std::vector<std::string>& argv);
  [[nodiscard]] bool has(const std::string& flag) const { return m_flags.count(flag) != 0; }
  [[nodiscard]] std::optional<std::string> get(const std::string& option) const;
  [[nodiscard]] std::string value(const std::string& option) const; ///< or its fallback
  /// Every value given for a repeatable option, in order (get() returns the last).
  [[nodiscard]] std::vector<std::string> all(const std::string& option) const;
  [[nodiscard]] const std::vector<std::string>& positional() const noexcept { return m_positional; }
  [[nodiscard]] bool wants_help() const noexcept { return m_help; }

private:
  std::set<std::string> m_flags;
  std::map<std::string, std::string> m_values;
  std::map<std::string, std::vector<std::string>> m_all;
  std::map<std::string, std::string> m_fallbacks;
  std::vector<std::string> m_positional;
  bool m_help = false;
};

/// "N" or "NXxNYxNZ" (--size) as one or three positive integers. Throws Error(usage)
/// "COMMAND: --size: ..." ("--size: ..." without a command).
[[nodiscard]] std::vector<std::int64_t> parse_size(const std::string& text,
                                                   std::string_view command);

/// `node_params` with each "NAME=VALUE" of `assignments` (--set) set, each value read as the
/// type the param has. Throws Error(usage) "COMMAND: --set ...: ..." for a malformed assignment
/// or a value the param refuses (with "did you mean" for an unknown name).
void apply_sets(runtime::Params& node_params, const std::vector<std::string>& assignments,
                std::string_view command);

/// `text` (the value of `option`) as a whole number >= `min`. Throws Error(usage) "OPTION:
/// expected a whole number >= MIN, got "TEXT"".
[[nodiscard]] std::int64_t parse_count(std::string_view option, const std::string& text,
                                       std::int64_t min);

} // namespace uwjit::driver
