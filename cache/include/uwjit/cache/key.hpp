// Cache keys: SHA-256 of canonical kernel source and an ABI salt, first 16 lowercase hex digits.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uwjit::cache {

/// The version of the cache entry format (object, manifest, source); part of every salt.
inline constexpr int k_entry_format = 1;

/// The salt component that names a GPU target ("cuda:sm_90"). Host salts have none: their
/// triple, cpu and features name the host.
inline constexpr std::string_view k_target_component = "target";

/// The salt: every named fact, besides the source, that changes the compiled object, written as
/// "name=value|name=value|..." in a fixed order (uwjit, format, abi, llvm, triple, cpu, features,
/// opt, flags; a GPU target's salt goes on with target, ptx (the PTX ISA version) and libdevice
/// (the first 16 hex digits of its SHA-256, or "none")). Values must not contain '|'.
class Salt {
public:
  Salt() = default;
  /// Appends one component; throws Error(usage) if the name or value holds '|' or the name '='.
  Salt& add(std::string name, std::string value);
  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>&
  components() const noexcept {
    return m_components;
  }
  /// The value of component `name`, or nullopt.
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const;
  /// "name=value|name=value|...".
  [[nodiscard]] std::string text() const;
  /// Parses text(); nullopt when malformed.
  [[nodiscard]] static std::optional<Salt> parse(std::string_view text);
  friend bool operator==(const Salt&, const Salt&) = default;

private:
  std::vector<std::pair<std::string, std::string>> m_components;
};

/// The target a salt compiles for: its `target` component, or "host" when it has none.
[[nodiscard]] std::string target_of(const Salt& salt);

/// The target named by a salt's text (target_of(Salt::parse(text))); "host" when it names none
/// or does not parse. Thread-safe.
[[nodiscard]] std::string target_of(std::string_view salt_text);

/// One component in which two salts differ: in one of them only, or with two values.
struct SaltDifference {
  std::string name;
  std::optional<std::string> left;  ///< its value in the left salt, nullopt when absent there
  std::optional<std::string> right; ///< its value in the right salt, nullopt when absent there
};

/// The components in which `left` and `right` differ: left's components in its order, then
/// those only in right. Empty when both have the same components with the same values (their
/// texts may still differ in order). Thread-safe.
[[nodiscard]] std::vector<SaltDifference> differences(const Salt& left, const Salt& right);

/// A cache key: exactly 16 lowercase hex digits. Only valid keys exist, so a Key is always safe
/// to put in a file name.
class Key {
public:
  /// The key of `canonical_source` under `salt`: SHA-256(canonical + "\n---\n" + salt.text()),
  /// first 16 hex digits. Thread-safe.
  [[nodiscard]] static Key of(std::string_view canonical_source, const Salt& salt);
  /// `text` as a key, or nullopt unless it is 16 lowercase hex digits.
  [[nodiscard]] static std::optional<Key> parse(std::string_view text);
  [[nodiscard]] const std::string& hex() const noexcept { return m_hex; }
  friend auto operator<=>(const Key&, const Key&) = default;

private:
  explicit Key(std::string hex) : m_hex(std::move(hex)) {}
  std::string m_hex;
};

/// SHA-256 of `data` as 64 lowercase hex digits (OpenSSL EVP; the digest is fetched once per
/// process). Thread-safe.
[[nodiscard]] std::string sha256_hex(std::string_view data);

/// SHA-256 over several pieces, as if concatenated. Thread-safe.
[[nodiscard]] std::string sha256_hex(std::initializer_list<std::string_view> pieces);

} // namespace uwjit::cache
