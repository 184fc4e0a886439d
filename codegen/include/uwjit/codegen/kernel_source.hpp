// KernelSource: a kernel's text with placeholder names, plus the slot tables it expects.
#pragma once

#include <uwjit/codegen/kernel_abi.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
  std::vector<std::string> params; ///< run-time parameters (args->params), never in the text

  friend bool operator==(const SlotTables&, const SlotTables&) = default;
};

/// Sets args.abi_version and the lengths of its tables (n_state_in ... n_params) from `slots`:
/// what a caller that launches a kernel itself (a GPU launch) sets before the call, as
/// engine::Kernel's call operator does for host kernels.
void set_table_lengths(uwjit_kernel_args& args, const SlotTables& slots) noexcept;

/// Where a run of the body's lines came from: lines [first, first + count) of the body (counted
/// from 1, as diagnostics count them in kernel.cpp) are lines [source_first, ...) of `section`,
/// a text the node wrote ("kernel" for KernelWriter::body(), "kernel helpers" for helpers()).
struct LineSpan {
  int first = 1;
  int count = 0;
  std::string section;
  int source_first = 1;
  friend bool operator==(const LineSpan&, const LineSpan&) = default;
};

/// How the body's lines map to the texts a node wrote. Carried beside the canonical text, never
/// in it: it changes no key. Empty for kernels written by hand (their lines are their own).
struct LineMap {
  std::vector<LineSpan> spans;

  /// The span holding body line `line`, or nullptr (a line the writer generated).
  [[nodiscard]] const LineSpan* find(int line) const noexcept;
  [[nodiscard]] bool empty() const noexcept { return spans.empty(); }
  friend bool operator==(const LineMap&, const LineMap&) = default;
};

/// The version of the canonical form, part of every key's salt: 1, the body as written; 2, the
/// body without its layout (lines indented anew by brace depth, trailing blanks and blank lines
/// dropped; literals untouched), so that reformatting a kernel changes no key.
inline constexpr int k_canonical_version = 2;

/// The placeholders codegen writes instead of generated names. The key is computed over text that
/// holds them; the real names are substituted only afterwards.
inline constexpr std::string_view k_entry_placeholder = "__UWJIT_ENTRY__";
inline constexpr std::string_view k_module_placeholder = "__UWJIT_MODULE__";

/// The name of the in-memory buffer the body is compiled as; diagnostics say kernel.cpp:LINE:COL
/// with lines counted in the body.
inline constexpr std::string_view k_buffer_name = "kernel.cpp";

/// Floating-point contraction (a*b+c into one fused multiply-add), as Clang's -ffp-contract:
/// off, on (within one expression; Clang's default) or fast (across statements too).
enum class FpContract { off, on, fast };
enum class FastMath { no, yes };

/// How a kernel asks to be compiled, over the engine's CompileOptions: each set field replaces
/// the engine's value, and the defines are added to the engine's (a kernel's define replaces an
/// engine define of the same name). The effective options are part of the cache key's salt (its
/// "opt" and "flags" components), so two kernels that differ only in options have two keys.
struct KernelOptions {
  std::optional<int> opt_level;          ///< 0..3, like -O0..-O3
  std::optional<FpContract> fp_contract; ///< -ffp-contract=off|on|fast
  std::optional<FastMath> fast_math;     ///< -ffast-math
  /// Preprocessor defines, "NAME" or "NAME=VALUE" (-DNAME=VALUE); NAME a C identifier, VALUE
  /// printable ASCII without spaces, quotes, backslashes or '|'; each NAME at most once.
  std::vector<std::string> defines;

  [[nodiscard]] bool empty() const noexcept {
    return !opt_level && !fp_contract && !fast_math && defines.empty();
  }
  friend bool operator==(const KernelOptions&, const KernelOptions&) = default;
};

/// Throws Error(usage) naming `owner` and the field unless `options` is valid (above).
void validate(const KernelOptions& options, std::string_view owner);

/// "off", "on" or "fast".
[[nodiscard]] const char* to_string(FpContract mode) noexcept;

/// Parses "off", "on" or "fast"; nullopt otherwise.
[[nodiscard]] std::optional<FpContract> parse_fp_contract(std::string_view text) noexcept;

/// The define's name: "A" for "A" and "A=1".
[[nodiscard]] std::string_view define_name(std::string_view define) noexcept;

/// One kernel: a body (C++ without standard headers) that defines
/// `extern "C" int ENTRY(const uwjit_kernel_args* args)`, where ENTRY is either the placeholder
/// `__UWJIT_ENTRY__` (generated kernels) or a fixed name (kernels written by hand). Immutable;
/// thread-safe to share.
class KernelSource {
public:
  /// A generated kernel whose body uses the placeholders. `origin` names the node that emitted
  /// it. Throws Error(usage) if the body lacks the entry placeholder.
  static KernelSource generated(std::string origin, std::string body, SlotTables slots);

  /// As above, with the map from the body's lines to the texts the node wrote (diagnostics
  /// then count lines in those texts). The map is not part of the canonical text or the key.
  static KernelSource generated(std::string origin, std::string body, SlotTables slots,
                                LineMap lines);

  /// A hand-written kernel whose entry has the fixed name `entry` (origin "source").
  /// Throws Error(usage) if `entry` is not a C identifier.
  static KernelSource from_text(std::string body, std::string entry, SlotTables slots = {});

  /// The text the key is computed over and compiled: the ABI header, the math prelude, a line
  /// marker, the body without its layout (k_canonical_version). Deterministic: the same body
  /// gives the same text in every process, and so does the same body indented otherwise.
  [[nodiscard]] const std::string& canonical() const noexcept { return m_canonical; }

  /// canonical() with the placeholders replaced by real names: what is compiled.
  [[nodiscard]] std::string instantiate(std::string_view entry_symbol,
                                        std::string_view module_name) const;

  /// The entry's symbol for the given key: the fixed name, or "uwjit_<key>" for generated
  /// kernels (so one key gives one symbol, and one object, in every process).
  [[nodiscard]] std::string entry_symbol(std::string_view key_hex) const;

  /// This source with `options` (replacing any it had); the canonical text and body stay the
  /// same, the key changes through the salt. Throws Error(usage) if the options are invalid.
  [[nodiscard]] KernelSource with_options(KernelOptions options) const;
  [[nodiscard]] const KernelOptions& options() const noexcept { return m_options; }

  [[nodiscard]] const std::string& origin() const noexcept { return m_origin; }
  /// The body as it was written, with its layout.
  [[nodiscard]] const std::string& body() const noexcept { return m_body; }

  /// A position in the compiled body (what a diagnostic of kernel.cpp counts: lines of the body
  /// in canonical(), from 1) as the same position in body(), as written. A line beyond the body
  /// is returned as it is.
  [[nodiscard]] std::pair<int, int> written_position(int line, int column) const noexcept;

  /// `diagnostics` (compiler output) with every "kernel.cpp:LINE:COL" position of the compiled
  /// body replaced by the position as written.
  [[nodiscard]] std::string written_positions(std::string_view diagnostics) const;
  [[nodiscard]] const SlotTables& slots() const noexcept { return m_slots; }
  /// The map from body lines to the node's own texts (empty for hand-written kernels).
  [[nodiscard]] const LineMap& line_map() const noexcept { return m_lines; }
  /// The line of canonical() (counted from 1) that holds the body's first line.
  [[nodiscard]] int body_first_line() const noexcept;

private:
  KernelSource(std::string origin, std::string body, std::optional<std::string> fixed_entry,
               SlotTables slots);
  std::string m_origin;
  std::string m_body;
  std::optional<std::string> m_fixed_entry;
  SlotTables m_slots;
  LineMap m_lines;
  std::vector<std::pair<int, int>> m_written; ///< per compiled line: its line, its column shift
  std::size_t m_compiled_body_size = 0;
  std::string m_canonical;
  KernelOptions m_options;
};

/// The kernel ABI header's text (kernel_abi.h, the first text of every kernel).
[[nodiscard]] std::string_view kernel_abi_text() noexcept;

/// The math prelude's text (namespace uwm: sqrt, cbrt, exp, log, pow, sin, cos, tan, asin, acos,
/// atan, atan2, sinh, cosh, tanh, hypot, fabs, copysign, fmin, fmax, fma, floor, ceil, round,
/// trunc, and min, max, abs, for double, float and integer arguments).
[[nodiscard]] std::string_view kernel_prelude_text() noexcept;

/// Replaces every occurrence of `from` in `text` by `to`.
[[nodiscard]] std::string replace_all(std::string_view text, std::string_view from,
                                      std::string_view to);

} // namespace uwjit::codegen
