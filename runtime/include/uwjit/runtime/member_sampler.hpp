// Member samplers: where an ensemble's members come from (a grid or list of values of the node
// params it varies, a seeded random design, or the host's own callable), one member at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

/// The values one node param takes in a grid: `count` values evenly spaced from `low` to `high`
/// inclusive (count 1: `low` alone), e.g. contrast=1:4:4 is 1, 2, 3, 4.
struct ParamRange {
  std::string name;
  double low = 0;
  double high = 0;
  std::int64_t count = 1;
  /// The range's values, the first exactly `low` and the last exactly `high`.
  [[nodiscard]] std::vector<double> values() const;
  /// The value at `index` (0 to count - 1) of values(), computed alone: a grid never holds a
  /// range's values, so a COUNT of 10^9 costs no memory.
  [[nodiscard]] double value(std::int64_t index) const;
  /// Parses "NAME=LOW:HIGH:COUNT", "NAME=VALUE" (one value) or "NAME=LOW:HIGH" (a range without
  /// a count, count 0: what a RandomSampler draws from; a GridSampler refuses it); Error(usage)
  /// naming what is wrong: no "=", a name that is not an identifier, numbers that do not parse
  /// or are not finite, a count below 1, LOW > HIGH, or LOW != HIGH with a count of 1.
  [[nodiscard]] static ParamRange parse(std::string_view text);
};

/// Supplies the members of an ensemble, in order: each member is the values of the node params
/// that names() lists, which an ensemble sets over its base params. Used by one thread.
class MemberSampler {
public:
  virtual ~MemberSampler() = default;
  /// The node params each member sets, in the order of next()'s values.
  [[nodiscard]] virtual const std::vector<std::string>& names() const = 0;
  /// The next member's values, or nullopt once the sampler is exhausted (and from then on).
  virtual std::optional<std::vector<double>> next() = 0;
  /// How many members the sampler gives in all, when it knows (nullopt: a callable's).
  [[nodiscard]] virtual std::optional<std::int64_t> size() const = 0;
  /// How many members next() has given so far.
  [[nodiscard]] virtual std::int64_t position() const = 0;
};

/// Every combination of the ranges' values, the last range varying fastest.
class GridSampler final : public MemberSampler {
public:
  /// Error(usage) for no ranges, a name given twice, a range without a count, or more
  /// combinations than an int64 counts (the product of the counts is checked, never wrapped).
  explicit GridSampler(std::vector<ParamRange> ranges);
  [[nodiscard]] const std::vector<std::string>& names() const override { return m_names; }
  std::optional<std::vector<double>> next() override;
  [[nodiscard]] std::optional<std::int64_t> size() const override { return m_size; }
  [[nodiscard]] std::int64_t position() const override { return m_position; }

private:
  std::vector<std::string> m_names;
  std::vector<ParamRange> m_ranges;
  std::int64_t m_size = 0;
  std::int64_t m_position = 0;
};

/// The given rows of values, in order.
class ListSampler final : public MemberSampler {
public:
  /// Error(usage) for no names, a name given twice, or a row whose length is not names' count.
  ListSampler(std::vector<std::string> names, std::vector<std::vector<double>> rows);
  [[nodiscard]] const std::vector<std::string>& names() const override { return m_names; }
  std::optional<std::vector<double>> next() override;
  [[nodiscard]] std::optional<std::int64_t> size() const override {
    return static_cast<std::int64_t>(m_rows.size());
  }
  [[nodiscard]] std::int64_t position() const override { return m_position; }

private:
  std::vector<std::string> m_names;
  std::vector<std::vector<double>> m_rows;
  std::int64_t m_position = 0;
};

/// `count` members, each range's value drawn uniformly in [low, high) from a 64-bit Mersenne
/// twister seeded with `seed` (the same seed gives the same members on every machine: the draw
/// maps the generator's top 53 bits itself). A range's count is not used.
class RandomSampler final : public MemberSampler {
public:
  RandomSampler(std::vector<ParamRange> ranges, std::int64_t count, std::uint64_t seed);
  ~RandomSampler() override;
  [[nodiscard]] const std::vector<std::string>& names() const override { return m_names; }
  std::optional<std::vector<double>> next() override;
  [[nodiscard]] std::optional<std::int64_t> size() const override { return m_count; }
  [[nodiscard]] std::int64_t position() const override { return m_position; }

private:
  struct Generator;
  std::vector<std::string> m_names;
  std::vector<ParamRange> m_ranges;
  std::int64_t m_count;
  std::int64_t m_position = 0;
  std::unique_ptr<Generator> m_generator;
};

/// The host's own: `next` gives each member's values (names' count of them) until it returns
/// nullopt. Error(usage) from next() for a row of the wrong length.
class CallableSampler final : public MemberSampler {
public:
  CallableSampler(std::vector<std::string> names,
                  std::function<std::optional<std::vector<double>>()> next,
                  std::optional<std::int64_t> size = std::nullopt);
  [[nodiscard]] const std::vector<std::string>& names() const override { return m_names; }
  std::optional<std::vector<double>> next() override;
  [[nodiscard]] std::optional<std::int64_t> size() const override { return m_size; }
  [[nodiscard]] std::int64_t position() const override { return m_position; }

private:
  std::vector<std::string> m_names;
  std::function<std::optional<std::vector<double>>()> m_next;
  std::optional<std::int64_t> m_size;
  std::int64_t m_position = 0;
  bool m_done = false;
};

} // namespace uwjit::runtime
