// KernelSource: a kernel's text with placeholder names, plus the slot tables it expects.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::codegen {

/// The names of a kernel's buffers and values, in the order of the ABI's tables. The manifest of
/// a cache entry stores them; an entry whose slots differ from a request's is a miss.
struct SlotTables {
  std::vector<std::string> state_in;
  std::vector<std::string> state_out;
  std::vector<std::string> statics;
  std::vector<std::string> extents;
  std::vector<std::string> integrals;

  friend bool operator==(const SlotTables&, const SlotTables&) = default;
};

/// The placeholders codegen writes instead of generated names. The key is computed over text that
/// holds them; the real names are substituted only afterwards.
inline constexpr std::string_view k_entry_placeholder = "__UWJIT_ENTRY__";
inline constexpr std::string_view k_module_placeholder = "__UWJIT_MODULE__";

/// The name of the in-memory buffer the body is compiled as; diagnostics say kernel.cpp:LINE:COL
/// with lines counted in the body.
inline constexpr std::string_view k_buffer_name = "kernel.cpp";

/// One kernel: a body (C++ without standard headers) that defines
/// `extern "C" int ENTRY(const uwjit_kernel_args* args)`, where ENTRY is either the placeholder
/// `__UWJIT_ENTRY__` (generated kernels) or a fixed name (kernels written by hand). Immutable;
/// thread-safe to share.
class KernelSource {
public:
  /// A generated kernel whose body uses the placeholders. `origin` names the node that emitted
  /// it. Throws Error(usage) if the body lacks the entry placeholder.
  static KernelSource generated(std::string origin, std::string body, SlotTables slots);

  /// A hand-written kernel whose entry has the fixed name `entry` (origin "source").
  /// Throws Error(usage) if `entry` is not a C identifier.
  static KernelSource from_text(std::string body, std::string entry, SlotTables slots = {});

  /// The text the key is computed over: the ABI header, the math prelude, a line marker, the
  /// body. Deterministic: the same body gives the same text in every process.
  [[nodiscard]] const std::string& canonical() const noexcept { return m_canonical; }

  /// canonical() with the placeholders replaced by real names: what is compiled.
  [[nodiscard]] std::string instantiate(std::string_view entry_symbol,
                                        std::string_view module_name) const;

  /// The entry's symbol for the given key: the fixed name, or "uwjit_<key>" for generated
  /// kernels (so one key gives one symbol, and one object, in every process).
  [[nodiscard]] std::string entry_symbol(std::string_view key_hex) const;

  [[nodiscard]] const std::string& origin() const noexcept { return m_origin; }
  [[nodiscard]] const std::string& body() const noexcept { return m_body; }
  [[nodiscard]] const SlotTables& slots() const noexcept { return m_slots; }

private:
  KernelSource(std::string origin, std::string body, std::optional<std::string> fixed_entry,
               SlotTables slots);
  std::string m_origin;
  std::string m_body;
  std::optional<std::string> m_fixed_entry;
  SlotTables m_slots;
  std::string m_canonical;
};

/// The kernel ABI header's text (kernel_abi.h, the first text of every kernel).
[[nodiscard]] std::string_view kernel_abi_text() noexcept;

/// The math prelude's text (namespace uwm: sqrt, exp, log, pow, fabs, fmin, fmax, floor, tanh).
[[nodiscard]] std::string_view kernel_prelude_text() noexcept;

/// Replaces every occurrence of `from` in `text` by `to`.
[[nodiscard]] std::string replace_all(std::string_view text, std::string_view from,
                                      std::string_view to);

} // namespace uwjit::codegen
