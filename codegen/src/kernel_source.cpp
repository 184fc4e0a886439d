#include <uwjit/codegen/kernel_source.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include "embedded_text.hpp"
#include "layout.hpp"

#include <algorithm>
#include <cctype>

namespace uwjit::codegen {

std::string_view kernel_abi_text() noexcept {
  return detail::k_kernel_abi_text;
}

std::string_view kernel_prelude_text() noexcept {
  return detail::k_kernel_prelude_text;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (true) {
    const auto hit = from.empty() ? std::string_view::npos : text.find(from, pos);
    if (hit == std::string_view::npos) {
      out.append(text.substr(pos));
      return out;
    }
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
}

namespace {
void append_table(std::string& text, std::string_view table,
                  const std::vector<std::string>& names) {
  text += ' ';
  text += table;
  text += "=[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += i == 0 ? "" : ",";
    text += names[i];
  }
  text += ']';
}

// The slot tables are written into the text as a comment, so that they are covered by the key:
// one key, one set of slot names. Line markers keep the diagnostics of the body in the body's
// own line numbers, and those of the prelude out of kernel.cpp.
std::string make_canonical(const std::string& body, const SlotTables& slots) {
  std::string text;
  text.reserve(kernel_abi_text().size() + kernel_prelude_text().size() + body.size() + 256);
  text += "#line 1 \"uwjit_kernel_abi.h\"\n";
  text += kernel_abi_text();
  text += "#line 1 \"uwjit_kernel_prelude.h\"\n";
  text += kernel_prelude_text();
  text += "// uwjit slots:";
  append_table(text, "state_in", slots.state_in);
  append_table(text, "state_out", slots.state_out);
  append_table(text, "statics", slots.statics);
  append_table(text, "extents", slots.extents);
  append_table(text, "integrals", slots.integrals);
  append_table(text, "params", slots.params);
  text += '\n';
  text += "#line 1 \"";
  text += k_buffer_name;
  text += "\"\n";
  text += body; // normalised: every line ends in '\n'
  return text;
}
} // namespace

KernelSource::KernelSource(std::string origin, std::string body,
                           std::optional<std::string> fixed_entry, SlotTables slots)
    : m_origin(std::move(origin)), m_body(std::move(body)), m_fixed_entry(std::move(fixed_entry)),
      m_slots(std::move(slots)) {
  detail::NormalisedText compiled = detail::normalise_layout(m_body);
  m_written.reserve(compiled.places.size());
  for (const auto& place : compiled.places) {
    m_written.emplace_back(place.line, place.indent);
  }
  m_compiled_body_size = compiled.text.size();
  m_canonical = make_canonical(compiled.text, m_slots);
  for (const auto* table : {&m_slots.state_in, &m_slots.state_out, &m_slots.statics,
                            &m_slots.extents, &m_slots.integrals, &m_slots.params}) {
    for (const auto& name : *table) {
      if (!is_identifier(name)) {
        throw Error(ErrorKind::usage,
                    format("kernel source of \"{}\": slot name \"{}\" is not a C identifier",
                           m_origin, printable(name)));
      }
    }
  }
}

KernelSource KernelSource::with_options(KernelOptions options) const {
  validate(options, format("kernel source of \"{}\"", m_origin));
  KernelSource copy = *this;
  copy.m_options = std::move(options);
  return copy;
}

const char* to_string(FpContract mode) noexcept {
  switch (mode) {
  case FpContract::off:
    return "off";
  case FpContract::on:
    return "on";
  case FpContract::fast:
    return "fast";
  }
  return "?";
}

std::optional<FpContract> parse_fp_contract(std::string_view text) noexcept {
  for (const auto mode : {FpContract::off, FpContract::on, FpContract::fast}) {
    if (text == to_string(mode)) {
      return mode;
    }
  }
  return std::nullopt;
}

std::string_view define_name(std::string_view define) noexcept {
  return define.substr(0, define.find('='));
}

void validate(const KernelOptions& options, std::string_view owner) {
  if (options.opt_level && (*options.opt_level < 0 || *options.opt_level > 3)) {
    throw Error(ErrorKind::usage, format("{}: optimisation level {}: expected 0, 1, 2 or 3", owner,
                                         *options.opt_level));
  }
  std::vector<std::string_view> names;
  for (const auto& define : options.defines) {
    const auto name = define_name(define);
    if (!is_identifier(name)) {
      throw Error(ErrorKind::usage,
                  format("{}: define \"{}\": expected NAME or NAME=VALUE with NAME a C identifier",
                         owner, printable(define)));
    }
    const auto value = std::string_view(define).substr(name.size());
    for (const char c : value.empty() ? value : value.substr(1)) {
      if (c <= ' ' || c > '~' || c == '"' || c == '\'' || c == '\\' || c == '|') {
        throw Error(ErrorKind::usage,
                    format("{}: define \"{}\": the value may hold printable ASCII without "
                           "spaces, quotes, backslashes or '|'",
                           owner, define));
      }
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw Error(ErrorKind::usage, format("{}: define {} given twice", owner, name));
    }
    names.push_back(name);
  }
}

KernelSource KernelSource::generated(std::string origin, std::string body, SlotTables slots) {
  if (body.find(k_entry_placeholder) == std::string::npos) {
    throw Error(ErrorKind::usage, format("kernel source of \"{}\": the body does not define the "
                                         "entry placeholder {}",
                                         origin, k_entry_placeholder));
  }
  return KernelSource(std::move(origin), std::move(body), std::nullopt, std::move(slots));
}

KernelSource KernelSource::generated(std::string origin, std::string body, SlotTables slots,
                                     LineMap lines) {
  KernelSource source = generated(std::move(origin), std::move(body), std::move(slots));
  source.m_lines = std::move(lines);
  return source;
}

const LineSpan* LineMap::find(int line) const noexcept {
  for (const LineSpan& span : spans) {
    if (line >= span.first && line < span.first + span.count) {
      return &span;
    }
  }
  return nullptr;
}

std::pair<int, int> KernelSource::written_position(int line, int column) const noexcept {
  if (line < 1 || line > static_cast<int>(m_written.size())) {
    return {line, column};
  }
  const auto& [written, shift] = m_written[static_cast<std::size_t>(line - 1)];
  return {written, column > 0 ? std::max(1, column + shift) : column};
}

namespace {
// Reads digits at `p` (at most 9), advancing it; false when there are none.
bool read_number(std::string_view text, std::size_t& p, int& value) {
  const std::size_t start = p;
  value = 0;
  while (p < text.size() && p - start < 9 && std::isdigit(static_cast<unsigned char>(text[p]))) {
    value = value * 10 + (text[p] - '0');
    ++p;
  }
  return p > start;
}

} // namespace

std::string KernelSource::written_positions(std::string_view diagnostics) const {
  // Each "kernel.cpp:LINE:COL" takes the written line and column; the source excerpt the
  // compiler quotes after it ("  LINE | text", then "     | ^") shows the line as written.
  const std::string marker = std::string(k_buffer_name) + ":";
  std::string out;
  int quoted = 0; // the compiled line the last diagnostic named, whose excerpt may follow
  std::string_view written_text;   // that line as written
  std::size_t written_indent = 0;  // its leading blanks as written
  std::size_t compiled_indent = 0; // and as compiled
  bool excerpt = false;
  std::size_t at = 0;
  while (at < diagnostics.size()) {
    const auto end = diagnostics.find('\n', at);
    const std::string_view line =
        diagnostics.substr(at, end == std::string_view::npos ? diagnostics.size() - at : end - at);
    at = end == std::string_view::npos ? diagnostics.size() : end + 1;
    const std::string_view newline = end == std::string_view::npos ? "" : "\n";

    // An excerpt of the last named line ("  LINE | text"), or a line under it ("     | ^~").
    const auto bar = line.find(" | ");
    const bool gutter =
        bar != std::string_view::npos && line.find_first_not_of(" 0123456789") == bar + 1;
    if (gutter && quoted > 0) {
      std::size_t p = line.find_first_not_of(' ');
      int number = 0;
      const auto indent_of = [](std::string_view text) {
        const auto first = text.find_first_not_of(" \t");
        return first == std::string_view::npos ? text.size() : first;
      };
      const int written_line = written_position(quoted, 1).first;
      std::string label = std::to_string(written_line);
      label = std::string(bar > label.size() ? bar - label.size() : 0, ' ') + label;
      if (read_number(line, p, number) && p == bar && number == quoted) {
        // Shown as written when the compiler quoted the line as it is (it escapes bytes that
        // are not printable, and those stay as it quoted them).
        written_text = line_of(m_body, written_line);
        written_indent = indent_of(written_text);
        const std::string_view compiled = line.substr(bar + 3);
        compiled_indent = indent_of(compiled);
        excerpt = compiled.substr(compiled_indent) == written_text.substr(written_indent);
        out += format("{} | {}{}", label, excerpt ? written_text : compiled, newline);
        continue;
      }
      if (excerpt && p == bar + 1) {
        // The marks stand under the compiled text: under the written one, they move with it.
        const std::string_view marks = line.substr(bar + 3);
        const std::size_t drop = std::min(compiled_indent, indent_of(marks));
        out += format("{} | {}{}{}", std::string(label.size(), ' '),
                      written_text.substr(0, written_indent), marks.substr(drop), newline);
        continue;
      }
    }
    quoted = 0;
    excerpt = false;

    // A diagnostic's position.
    std::size_t done = 0;
    std::string rewritten;
    for (auto hit = line.find(marker); hit != std::string_view::npos;
         hit = line.find(marker, done)) {
      std::size_t p = hit + marker.size();
      int number = 0;
      int column = 0;
      const bool position = read_number(line, p, number) && p < line.size() && line[p] == ':' &&
                            (++p, read_number(line, p, column));
      rewritten.append(line.substr(done, hit - done));
      if (position) {
        const auto [written_line, written_column] = written_position(number, column);
        rewritten += format("{}{}:{}", marker, written_line, written_column);
        quoted = number;
      } else {
        rewritten.append(line.substr(hit, p - hit));
      }
      done = p;
    }
    rewritten.append(line.substr(done));
    out += rewritten;
    out += newline;
  }
  return out;
}

int KernelSource::body_first_line() const noexcept {
  // The compiled body follows the canonical text's last line marker.
  const std::size_t prefix = m_canonical.size() - m_compiled_body_size;
  return 1 + static_cast<int>(std::count(m_canonical.begin(),
                                         m_canonical.begin() + static_cast<std::ptrdiff_t>(prefix),
                                         '\n'));
}

KernelSource KernelSource::from_text(std::string body, std::string entry, SlotTables slots) {
  if (!is_identifier(entry)) {
    throw Error(ErrorKind::usage,
                format("kernel entry \"{}\": expected a C identifier (letters, digits, _)", entry));
  }
  return KernelSource("source", std::move(body), std::move(entry), std::move(slots));
}

std::string KernelSource::instantiate(std::string_view entry_symbol,
                                      std::string_view module_name) const {
  return replace_all(replace_all(m_canonical, k_entry_placeholder, entry_symbol),
                     k_module_placeholder, module_name);
}

std::string KernelSource::entry_symbol(std::string_view key_hex) const {
  if (m_fixed_entry) {
    return *m_fixed_entry;
  }
  return "uwjit_" + std::string(key_hex);
}

void set_table_lengths(uwjit_kernel_args& args, const SlotTables& slots) noexcept {
  args.abi_version = UWJIT_KERNEL_ABI_VERSION;
  args.n_state_in = static_cast<int>(slots.state_in.size());
  args.n_state_out = static_cast<int>(slots.state_out.size());
  args.n_statics = static_cast<int>(slots.statics.size());
  args.n_extents = static_cast<int>(slots.extents.size());
  args.n_integrals = static_cast<int>(slots.integrals.size());
  args.n_params = static_cast<int>(slots.params.size());
}

} // namespace uwjit::codegen
