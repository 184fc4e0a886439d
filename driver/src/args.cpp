#include <uwjit/driver/args.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <charconv>

namespace uwjit::driver {

ArgSpec::ArgSpec(std::string command, std::string summary)
    : m_command(std::move(command)), m_summary(std::move(summary)) {}

ArgSpec& ArgSpec::flag(std::string name, std::string help) {
  m_options.push_back({std::move(name), "", std::move(help), "", false});
  return *this;
}

ArgSpec& ArgSpec::option(std::string name, std::string metavar, std::string help,
                         std::string fallback) {
  m_options.push_back(
      {std::move(name), std::move(metavar), std::move(help), std::move(fallback), true});
  return *this;
}

ArgSpec& ArgSpec::positional(std::string name, std::string help, bool required) {
  m_positionals.push_back({std::move(name), std::move(help), required});
  return *this;
}

ArgSpec& ArgSpec::program(std::string name) {
  m_program = std::move(name);
  return *this;
}

void ArgSpec::fail(const std::string& message) const {
  throw UsageError(m_command.empty() ? message : format("{}: {}", m_command, message), usage_line(),
                   m_command);
}

ArgSpec& ArgSpec::epilog(std::string text) {
  m_epilog = std::move(text);
  return *this;
}

std::string ArgSpec::usage_line() const {
  std::string line = "usage: " + m_program + (m_command.empty() ? "" : " " + m_command);
  for (const auto& opt : m_options) {
    line += " [" + opt.name + (opt.takes_value ? " " + opt.metavar : "") + "]";
  }
  for (const auto& pos : m_positionals) {
    line += pos.required ? " " + pos.name : " [" + pos.name + "]";
  }
  return line;
}

std::string ArgSpec::help() const {
  std::string text = usage_line() + "\n\n" + m_summary + "\n";
  if (!m_positionals.empty()) {
    text += "\narguments:\n";
    for (const auto& pos : m_positionals) {
      std::string left = pos.name;
      left.resize(std::max<std::size_t>(left.size() + 1, 22), ' ');
      text += "  " + left + pos.help + "\n";
    }
  }
  text += "\noptions:\n";
  for (const auto& opt : m_options) {
    std::string left = opt.name + (opt.takes_value ? " " + opt.metavar : "");
    if (left.size() < 22) {
      left.resize(22, ' ');
    } else {
      left += "\n                        ";
    }
    text += "  " + left + opt.help;
    if (!opt.fallback.empty()) {
      text += " (default: " + opt.fallback + ")";
    }
    text += "\n";
  }
  text += "  --help                show this help\n";
  if (!m_epilog.empty()) {
    text += "\n" + m_epilog + "\n";
  }
  return text;
}

Args Args::parse(const ArgSpec& spec, const std::vector<std::string>& argv) {
  Args args;
  for (const auto& opt : spec.options()) {
    if (opt.takes_value && !opt.fallback.empty()) {
      args.m_fallbacks[opt.name] = opt.fallback;
    }
  }
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.m_help = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      std::optional<std::string> inline_value;
      if (const auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
      const ArgSpec::Option* match = nullptr;
      for (const auto& opt : spec.options()) {
        if (opt.name == arg) {
          match = &opt;
        } else if (opt.takes_value && opt.name.size() == 2 && arg.rfind(opt.name, 0) == 0 &&
                   !inline_value) {
          // "-O2" as well as "-O 2"
          match = &opt;
          inline_value = arg.substr(2);
          arg = opt.name;
        }
      }
      if (match == nullptr) {
        std::vector<std::string> names = {"--help"};
        for (const auto& opt : spec.options()) {
          names.push_back(opt.name);
        }
        spec.fail(format("unknown option {}{}", arg, did_you_mean(arg, names)));
      }
      if (!match->takes_value) {
        if (inline_value) {
          spec.fail(format("{} takes no value", arg));
        }
        args.m_flags.insert(arg);
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= argv.size()) {
          spec.fail(format("{} needs a value ({})", arg, match->metavar));
        }
        inline_value = argv[++i];
      }
      args.m_values[arg] = *inline_value;
      args.m_all[arg].push_back(*inline_value);
      continue;
    }
    args.m_positional.push_back(arg);
  }
  if (args.m_help) {
    return args;
  }
  std::size_t required = 0;
  for (const auto& pos : spec.positionals()) {
    required += pos.required ? 1 : 0;
  }
  if (args.m_positional.size() < required) {
    spec.fail(format("missing argument {}", spec.positionals()[args.m_positional.size()].name));
  }
  if (args.m_positional.size() > spec.positionals().size()) {
    spec.fail(format("unexpected argument \"{}\"", args.m_positional[spec.positionals().size()]));
  }
  return args;
}

std::optional<std::string> Args::get(const std::string& option) const {
  if (const auto it = m_values.find(option); it != m_values.end()) {
    return it->second;
  }
  return std::nullopt;
}

std::vector<std::string> Args::all(const std::string& option) const {
  if (const auto it = m_all.find(option); it != m_all.end()) {
    return it->second;
  }
  return {};
}

std::string Args::value(const std::string& option) const {
  if (auto v = get(option)) {
    return *v;
  }
  const auto it = m_fallbacks.find(option);
  return it == m_fallbacks.end() ? std::string() : it->second;
}

namespace {

// "COMMAND: ", or "" for a program that is its own command.
std::string prefix(std::string_view command) {
  return command.empty() ? std::string() : format("{}: ", command);
}

} // namespace

std::vector<std::int64_t> parse_size(const std::string& text, std::string_view command) {
  std::vector<std::int64_t> dims;
  std::string_view rest = text;
  while (true) {
    const auto x = rest.find('x');
    const std::string_view part = rest.substr(0, x);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc{} || end != part.data() + part.size() || value < 1) {
      throw Error(ErrorKind::usage,
                  format("{}--size: expected N or NXxNYxNZ (positive integers), got \"{}\"",
                         prefix(command), text));
    }
    dims.push_back(value);
    if (x == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(x + 1);
  }
  if (dims.size() != 1 && dims.size() != 3) {
    throw Error(ErrorKind::usage, format("{}--size: expected N or NXxNYxNZ, got {} numbers",
                                         prefix(command), dims.size()));
  }
  return dims;
}

void apply_sets(runtime::Params& node_params, const std::vector<std::string>& assignments,
                std::string_view command) {
  for (const auto& assignment : assignments) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::usage,
                  format("{}--set: expected NAME=VALUE, got \"{}\"", prefix(command), assignment));
    }
    const std::string key = assignment.substr(0, eq);
    try {
      node_params.set_from_text(key, assignment.substr(eq + 1));
    } catch (const Error& error) {
      std::vector<std::string> keys;
      for (const auto& [name, value] : node_params.values()) {
        keys.push_back(name);
      }
      const bool known = std::find(keys.begin(), keys.end(), key) != keys.end();
      throw Error(ErrorKind::usage, format("{}--set {}: {}{}", prefix(command), assignment,
                                           error.what(), known ? "" : did_you_mean(key, keys)));
    }
  }
}

std::int64_t parse_count(std::string_view option, const std::string& text, std::int64_t min) {
  std::int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min) {
    throw Error(ErrorKind::usage,
                format("{}: expected a whole number >= {}, got \"{}\"", option, min, text));
  }
  return value;
}

} // namespace uwjit::driver
