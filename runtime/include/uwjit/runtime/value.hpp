// Value and Params: a node's parameters and the bare scalars of its static data.
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace uwjit::runtime {

/// A bare value: a 64-bit integer, a double, a string, or a tuple of values. Immutable in use;
/// copies are independent. Thread-safe to share.
class Value {
public:
  using Tuple = std::vector<Value>;

  /// Any integer type but bool, held as a 64-bit integer.
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Value(T value) : m_value(static_cast<std::int64_t>(value)) {}
  Value(double value) : m_value(value) {}
  Value(std::string value) : m_value(std::move(value)) {}
  Value(const char* value) : m_value(std::string(value)) {}
  Value(Tuple value) : m_value(std::move(value)) {}
  Value(bool) = delete; ///< say 0 or 1: a bool would silently become an integer

  [[nodiscard]] bool is_int() const noexcept { return m_value.index() == 0; }
  [[nodiscard]] bool is_double() const noexcept { return m_value.index() == 1; }
  [[nodiscard]] bool is_string() const noexcept { return m_value.index() == 2; }
  [[nodiscard]] bool is_tuple() const noexcept { return m_value.index() == 3; }

  /// The held value; throw Error(usage) naming the held type if it is another.
  [[nodiscard]] std::int64_t as_int() const;
  [[nodiscard]] double as_double() const; ///< an integer is converted exactly when it can be
  [[nodiscard]] const std::string& as_string() const;
  [[nodiscard]] const Tuple& as_tuple() const;

  /// "int", "double", "string" or "tuple".
  [[nodiscard]] std::string_view type_name() const noexcept;

  /// The deepest nesting of tuples a param may have: a checkpoint reads values back up to it, so
  /// Params::set refuses deeper ones.
  static constexpr int max_depth = 16;
  /// How deeply tuples nest in it: 0 for a number or string, 1 for a tuple of them.
  [[nodiscard]] int depth() const noexcept;

  /// For people: 42, 0.1 (shortest exact), "text", (1, 2.5).
  [[nodiscard]] std::string text() const;

  [[nodiscard]] const std::variant<std::int64_t, double, std::string, Tuple>&
  variant() const noexcept {
    return m_value;
  }

  /// Exact equality (doubles compare by value, so 0.0 == -0.0 and NaN != NaN).
  friend bool operator==(const Value&, const Value&) = default;

private:
  std::variant<std::int64_t, double, std::string, Tuple> m_value;
};

/// A node's params (node params): everything needed to rebuild the node, and so its static data,
/// after a checkpoint; set with `--set` by the driver. Not a kernel's run-time params
/// (codegen::KernelWriter::param), which a node derives from these. Keys are kept sorted, so
/// iteration is deterministic. Not thread-safe to modify; thread-safe to read.
class Params {
public:
  Params() = default;
  /// Each value as set() takes it (Error(usage) as there).
  Params(std::initializer_list<std::pair<const std::string, Value>> values) {
    for (const auto& [key, value] : values) {
      set(key, value);
    }
  }

  /// Sets `key` (any non-empty string) to `value`; throws Error(usage) for an empty key or a value
  /// nested deeper than Value::max_depth.
  Params& set(std::string key, Value value);

  /// Sets an existing `key` from text, in the type it already has (an integer, a double or a
  /// string; tuples cannot be set from text). Throws Error(usage) naming the key: an unknown key
  /// (with the known ones), text that is not a number of the right type.
  void set_from_text(std::string_view key, std::string_view text);

  [[nodiscard]] bool contains(std::string_view key) const;
  /// The value of `key`; Error(usage) "param "key" is missing" if absent.
  [[nodiscard]] const Value& at(std::string_view key) const;
  /// Typed getters: Error(usage) naming the key when absent or of another type.
  [[nodiscard]] std::int64_t get_int(std::string_view key) const;
  [[nodiscard]] double get_double(std::string_view key) const;
  [[nodiscard]] const std::string& get_string(std::string_view key) const;

  [[nodiscard]] const std::map<std::string, Value, std::less<>>& values() const noexcept {
    return m_values;
  }
  [[nodiscard]] bool empty() const noexcept { return m_values.empty(); }
  friend bool operator==(const Params&, const Params&) = default;

private:
  std::map<std::string, Value, std::less<>> m_values;
};

} // namespace uwjit::runtime
