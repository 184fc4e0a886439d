// StopRule: when an ensemble's members stop, parsed from "steps:N", "change:INTEGRAL<TOL",
// "below:INTEGRAL<TOL" and "every:K".
#include <uwjit/runtime/ensemble.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <charconv>
#include <cmath>

namespace uwjit::runtime {

namespace {

constexpr std::string_view k_rules =
    "steps:N (the step cap), change:INTEGRAL<TOLERANCE (converged when the integral's relative "
    "change over a step is below TOLERANCE), below:INTEGRAL<TOLERANCE (converged when the "
    "integral's magnitude is below TOLERANCE, e.g. a residual the node sums or a maximum it "
    "takes), every:K (check "
    "every K steps)";

[[noreturn]] void bad_rule(std::string_view rule, std::string_view why) {
  throw Error(ErrorKind::usage, format("stop rule \"{}\": {}; rules are {}", rule, why, k_rules));
}

std::int64_t whole(std::string_view rule, std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
    bad_rule(rule, format("\"{}\" is not a whole number", text));
  }
  if (value < 1) {
    bad_rule(rule, format("{} is below 1", value));
  }
  return value;
}

} // namespace

StopRule StopRule::parse(const std::vector<std::string>& rules) {
  StopRule rule;
  bool capped = false;
  for (const auto& given : rules) {
    std::size_t from = 0;
    while (from <= given.size()) {
      const auto comma = given.find(',', from);
      const std::string_view one = std::string_view(given).substr(
          from, comma == std::string::npos ? std::string::npos : comma - from);
      from = comma == std::string::npos ? given.size() + 1 : comma + 1;
      const auto colon = one.find(':');
      if (colon == std::string_view::npos) {
        bad_rule(one, "no \":\"");
      }
      const std::string_view kind = one.substr(0, colon);
      const std::string_view rest = one.substr(colon + 1);
      if (kind == "steps") {
        rule.max_steps = whole(one, rest);
        capped = true;
      } else if (kind == "every") {
        rule.every = whole(one, rest);
      } else if (kind == "change" || kind == "below") {
        const auto less = rest.find('<');
        if (less == std::string_view::npos) {
          bad_rule(one, "no \"<\" between the integral and the tolerance");
        }
        Change change{std::string(rest.substr(0, less)), 0.0, kind == "below"};
        if (!is_identifier(change.integral)) {
          bad_rule(one, format("\"{}\" is not an integral's name", change.integral));
        }
        const std::string_view number = rest.substr(less + 1);
        const auto [end, ec] =
            std::from_chars(number.data(), number.data() + number.size(), change.tolerance);
        if (number.empty() || ec != std::errc{} || end != number.data() + number.size() ||
            !std::isfinite(change.tolerance) || change.tolerance <= 0) {
          bad_rule(one, format("the tolerance \"{}\" is not a number > 0", number));
        }
        rule.changes.push_back(std::move(change));
      } else {
        bad_rule(one, format("unknown rule \"{}\"", kind));
      }
    }
  }
  if (!capped) {
    throw Error(ErrorKind::usage,
                format("stop rules \"{}\": no step cap (steps:N), so a member that never "
                       "converges would never end; add one, e.g. steps:10000",
                       join(rules, ",")));
  }
  return rule;
}

std::string StopRule::text() const {
  std::vector<std::string> parts;
  for (const auto& c : changes) {
    parts.push_back(
        format("{}:{}<{}", c.below ? "below" : "change", c.integral, general(c.tolerance)));
  }
  parts.push_back(format("steps:{}", max_steps));
  if (every != 1) {
    parts.push_back(format("every:{}", every));
  }
  return join(parts, ",");
}

} // namespace uwjit::runtime
