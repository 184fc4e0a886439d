#include "node_args.hpp"
#include "text.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <charconv>

namespace uwjit::tools {

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
                  format("{}: --size: expected N or NXxNYxNZ (positive integers), got \"{}\"",
                         command, text));
    }
    dims.push_back(value);
    if (x == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(x + 1);
  }
  if (dims.size() != 1 && dims.size() != 3) {
    throw Error(ErrorKind::usage,
                format("{}: --size: expected N or NXxNYxNZ, got {} numbers", command, dims.size()));
  }
  return dims;
}

void apply_sets(runtime::Params& params, const std::vector<std::string>& assignments,
                std::string_view command) {
  for (const auto& assignment : assignments) {
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::usage,
                  format("{}: --set: expected NAME=VALUE, got \"{}\"", command, assignment));
    }
    const std::string key = assignment.substr(0, eq);
    try {
      params.set_from_text(key, assignment.substr(eq + 1));
    } catch (const Error& error) {
      std::vector<std::string> keys;
      for (const auto& [name, value] : params.values()) {
        keys.push_back(name);
      }
      const bool known = std::find(keys.begin(), keys.end(), key) != keys.end();
      throw Error(ErrorKind::usage, format("{}: --set {}: {}{}", command, assignment, error.what(),
                                           known ? "" : did_you_mean(key, keys)));
    }
  }
}

} // namespace uwjit::tools
