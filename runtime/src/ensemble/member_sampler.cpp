// The member samplers: grid, list, seeded random and the host's callable.
#include <uwjit/runtime/member_sampler.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <charconv>
#include <cmath>
#include <random>
#include <set>

namespace uwjit::runtime {

namespace {

[[noreturn]] void bad_range(std::string_view text, std::string_view why) {
  throw Error(ErrorKind::usage, format("vary \"{}\": {} (expected NAME=LOW:HIGH:COUNT, e.g. "
                                       "contrast=1:4:4, or NAME=VALUE)",
                                       text, why));
}

double number(std::string_view text, std::string_view part, std::string_view what) {
  double value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc{} || end != part.data() + part.size()) {
    bad_range(text, format("{} \"{}\" is not a number", what, part));
  }
  if (!std::isfinite(value)) {
    bad_range(text, format("{} {} is not finite", what, part));
  }
  return value;
}

void check_names(const std::vector<std::string>& names, std::string_view what) {
  if (names.empty()) {
    throw Error(ErrorKind::usage, format("{}: no params to vary", what));
  }
  std::set<std::string> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second) {
      throw Error(ErrorKind::usage, format("{}: param \"{}\" is varied twice", what, name));
    }
  }
}

} // namespace

double ParamRange::value(std::int64_t index) const {
  // Exact ends: low at 0 and high at count - 1, whatever the rounding in between.
  return index == count - 1 && count > 1
             ? high
             : low + (high - low) * static_cast<double>(index) /
                         static_cast<double>(std::max<std::int64_t>(count - 1, 1));
}

std::vector<double> ParamRange::values() const {
  std::vector<double> out;
  for (std::int64_t i = 0; i < count; ++i) {
    out.push_back(value(i));
  }
  return out;
}

ParamRange ParamRange::parse(std::string_view text) {
  const auto equals = text.find('=');
  if (equals == std::string_view::npos) {
    bad_range(text, "no \"=\"");
  }
  ParamRange range;
  range.name = std::string(text.substr(0, equals));
  if (!is_identifier(range.name)) {
    bad_range(text, format("\"{}\" is not a param name", range.name));
  }
  const std::string_view rest = text.substr(equals + 1);
  std::vector<std::string_view> parts;
  std::size_t from = 0;
  while (true) {
    const auto colon = rest.find(':', from);
    parts.push_back(rest.substr(from, colon == std::string_view::npos ? rest.npos : colon - from));
    if (colon == std::string_view::npos) {
      break;
    }
    from = colon + 1;
  }
  if (parts.size() == 1) {
    range.low = range.high = number(text, parts[0], "the value");
    return range;
  }
  if (parts.size() != 3 && parts.size() != 2) {
    bad_range(text, format("{} parts after \"=\"", parts.size()));
  }
  range.low = number(text, parts[0], "LOW");
  range.high = number(text, parts[1], "HIGH");
  if (range.low > range.high) {
    bad_range(text, format("LOW {} is above HIGH {}", general(range.low), general(range.high)));
  }
  if (parts.size() == 2) {
    range.count = 0; // a range without values of its own: what a random design draws from
    return range;
  }
  std::int64_t count = 0;
  const auto [end, ec] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), count);
  if (parts[2].empty() || ec != std::errc{} || end != parts[2].data() + parts[2].size()) {
    bad_range(text, format("COUNT \"{}\" is not a whole number", parts[2]));
  }
  if (count < 1) {
    bad_range(text, format("COUNT {} is an empty range: at least 1", count));
  }
  if (count == 1 && range.low != range.high) {
    bad_range(text,
              "a COUNT of 1 takes LOW alone: give LOW equal to HIGH, or a COUNT of 2 or more");
  }
  range.count = count;
  return range;
}

GridSampler::GridSampler(std::vector<ParamRange> ranges) {
  m_size = 1;
  for (const auto& r : ranges) {
    if (r.count < 1) {
      throw Error(ErrorKind::usage,
                  format("vary \"{}={}:{}\": a grid needs a COUNT ({}=LOW:HIGH:COUNT); LOW:HIGH "
                         "alone is a range to draw from (--random)",
                         r.name, general(r.low), general(r.high), r.name));
    }
    m_names.push_back(r.name);
  }
  check_names(m_names, "grid sampler");
  for (const auto& r : ranges) {
    if (__builtin_mul_overflow(m_size, r.count, &m_size)) {
      std::vector<std::string> counts;
      for (const auto& each : ranges) {
        counts.push_back(std::to_string(each.count));
      }
      throw Error(ErrorKind::usage,
                  format("grid sampler: {} members ({}) are more than a count of members holds "
                         "(2^63 - 1): vary fewer params or give each fewer values",
                         join(counts, " x "), join(m_names, " x ")));
    }
  }
  m_ranges = std::move(ranges);
}

std::optional<std::vector<double>> GridSampler::next() {
  if (m_position >= m_size) {
    return std::nullopt;
  }
  std::vector<double> values(m_ranges.size());
  std::int64_t rest = m_position;
  for (std::size_t r = m_ranges.size(); r-- > 0;) {
    const std::int64_t n = m_ranges[r].count;
    values[r] = m_ranges[r].value(rest % n);
    rest /= n;
  }
  ++m_position;
  return values;
}

ListSampler::ListSampler(std::vector<std::string> names, std::vector<std::vector<double>> rows)
    : m_names(std::move(names)), m_rows(std::move(rows)) {
  check_names(m_names, "list sampler");
  for (std::size_t r = 0; r < m_rows.size(); ++r) {
    if (m_rows[r].size() != m_names.size()) {
      throw Error(ErrorKind::usage, format("list sampler: row {} has {} values for {} params", r,
                                           m_rows[r].size(), m_names.size()));
    }
  }
}

std::optional<std::vector<double>> ListSampler::next() {
  if (m_position >= static_cast<std::int64_t>(m_rows.size())) {
    return std::nullopt;
  }
  return m_rows[static_cast<std::size_t>(m_position++)];
}

struct RandomSampler::Generator {
  std::mt19937_64 engine;
};

RandomSampler::RandomSampler(std::vector<ParamRange> ranges, std::int64_t count, std::uint64_t seed)
    : m_ranges(std::move(ranges)), m_count(count),
      m_generator(std::make_unique<Generator>(Generator{std::mt19937_64(seed)})) {
  for (const auto& r : m_ranges) {
    m_names.push_back(r.name);
  }
  check_names(m_names, "random sampler");
  if (count < 0) {
    throw Error(ErrorKind::usage, format("random sampler: {} members", count));
  }
}

RandomSampler::~RandomSampler() = default;

std::optional<std::vector<double>> RandomSampler::next() {
  if (m_position >= m_count) {
    return std::nullopt;
  }
  std::vector<double> values;
  for (const auto& r : m_ranges) {
    // The top 53 bits as a fraction in [0, 1): the same on every standard library.
    const double u = static_cast<double>(m_generator->engine() >> 11) * 0x1.0p-53;
    const double v = r.low + (r.high - r.low) * u;
    values.push_back(v < r.high || r.low == r.high ? v : r.low);
  }
  ++m_position;
  return values;
}

CallableSampler::CallableSampler(std::vector<std::string> names,
                                 std::function<std::optional<std::vector<double>>()> next,
                                 std::optional<std::int64_t> size)
    : m_names(std::move(names)), m_next(std::move(next)), m_size(size) {
  check_names(m_names, "sampler");
  if (!m_next) {
    throw Error(ErrorKind::usage, "sampler: no callable");
  }
}

std::optional<std::vector<double>> CallableSampler::next() {
  if (m_done) {
    return std::nullopt;
  }
  auto values = m_next();
  if (!values) {
    m_done = true;
    return std::nullopt;
  }
  if (values->size() != m_names.size()) {
    throw Error(ErrorKind::usage,
                format("sampler: member {} has {} values for {} params ({})", m_position,
                       values->size(), m_names.size(), join(m_names, ", ")));
  }
  ++m_position;
  return values;
}

} // namespace uwjit::runtime
