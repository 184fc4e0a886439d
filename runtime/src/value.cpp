#include <uwjit/runtime/value.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace uwjit::runtime {

namespace {
[[noreturn]] void wrong_type(std::string_view wanted, const Value& value) {
  throw Error(ErrorKind::usage,
              format("expected {}, got {} {}", wanted, value.type_name(), value.text()));
}

std::string double_text(double value) {
  std::array<char, 64> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string text(buffer.data(), end);
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) {
    text += ".0";
  }
  return text;
}
} // namespace

std::int64_t Value::as_int() const {
  if (const auto* v = std::get_if<std::int64_t>(&m_value)) {
    return *v;
  }
  wrong_type("an integer", *this);
}

double Value::as_double() const {
  if (const auto* v = std::get_if<double>(&m_value)) {
    return *v;
  }
  if (const auto* v = std::get_if<std::int64_t>(&m_value)) {
    const auto converted = static_cast<double>(*v);
    if (static_cast<std::int64_t>(converted) == *v) {
      return converted;
    }
  }
  wrong_type("a double", *this);
}

const std::string& Value::as_string() const {
  if (const auto* v = std::get_if<std::string>(&m_value)) {
    return *v;
  }
  wrong_type("a string", *this);
}

const Value::Tuple& Value::as_tuple() const {
  if (const auto* v = std::get_if<Tuple>(&m_value)) {
    return *v;
  }
  wrong_type("a tuple", *this);
}

std::string_view Value::type_name() const noexcept {
  constexpr std::array<std::string_view, 4> k_names = {"int", "double", "string", "tuple"};
  return k_names[m_value.index()];
}

int Value::depth() const noexcept {
  if (!is_tuple()) {
    return 0;
  }
  int deepest = 0;
  for (const Value& item : std::get<3>(m_value)) {
    deepest = std::max(deepest, item.depth());
  }
  return deepest + 1;
}

std::string Value::text() const {
  switch (m_value.index()) {
  case 0:
    return std::to_string(std::get<0>(m_value));
  case 1:
    return double_text(std::get<1>(m_value));
  case 2:
    return "\"" + std::get<2>(m_value) + "\"";
  default: {
    std::string out = "(";
    const auto& items = std::get<3>(m_value);
    for (std::size_t i = 0; i < items.size(); ++i) {
      out += i == 0 ? "" : ", ";
      out += items[i].text();
    }
    return out + ")";
  }
  }
}

Params& Params::set(std::string key, Value value) {
  if (key.empty()) {
    throw Error(ErrorKind::usage, "param with an empty name");
  }
  if (const int depth = value.depth(); depth > Value::max_depth) {
    throw Error(ErrorKind::usage, format("param \"{}\": tuples nested {} deep; at most {}", key,
                                         depth, Value::max_depth));
  }
  m_values.insert_or_assign(std::move(key), std::move(value));
  return *this;
}

bool Params::contains(std::string_view key) const {
  return m_values.find(key) != m_values.end();
}

const Value& Params::at(std::string_view key) const {
  const auto found = m_values.find(key);
  if (found == m_values.end()) {
    throw Error(ErrorKind::usage, format("param \"{}\" is missing", key));
  }
  return found->second;
}

namespace {
template <class Get> auto typed(const Params& params, std::string_view key, Get get) {
  const Value& value = params.at(key);
  try {
    return get(value);
  } catch (const Error& error) {
    throw Error(ErrorKind::usage, format("param \"{}\": {}", key, error.what()));
  }
}
} // namespace

std::int64_t Params::get_int(std::string_view key) const {
  return typed(*this, key, [](const Value& v) { return v.as_int(); });
}

double Params::get_double(std::string_view key) const {
  return typed(*this, key, [](const Value& v) { return v.as_double(); });
}

const std::string& Params::get_string(std::string_view key) const {
  const Value& value = at(key);
  if (!value.is_string()) {
    throw Error(ErrorKind::usage, format("param \"{}\": expected a string, got {} {}", key,
                                         value.type_name(), value.text()));
  }
  return value.as_string();
}

void Params::set_from_text(std::string_view key, std::string_view text) {
  const auto found = m_values.find(key);
  if (found == m_values.end()) {
    std::string known;
    for (const auto& [name, value] : m_values) {
      known += known.empty() ? "" : ", ";
      known += name;
    }
    throw Error(ErrorKind::usage, format("unknown param \"{}\" (known: {})", key, known));
  }
  Value& value = found->second;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (value.is_int()) {
    std::int64_t parsed = 0;
    const auto [end, ec] = std::from_chars(first, last, parsed);
    if (ec != std::errc{} || end != last) {
      throw Error(ErrorKind::usage,
                  format("param \"{}\": expected an integer, got \"{}\"", key, text));
    }
    value = Value(parsed);
  } else if (value.is_double()) {
    double parsed = 0;
    const auto [end, ec] = std::from_chars(first, last, parsed);
    if (ec != std::errc{} || end != last || !std::isfinite(parsed)) {
      throw Error(ErrorKind::usage,
                  format("param \"{}\": expected a finite number, got \"{}\"", key, text));
    }
    value = Value(parsed);
  } else if (value.is_string()) {
    value = Value(std::string(text));
  } else {
    throw Error(ErrorKind::usage,
                format("param \"{}\" is a tuple and cannot be set from text", key));
  }
}

} // namespace uwjit::runtime
