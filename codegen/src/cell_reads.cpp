#include "cell_reads.hpp"

#include "cell_tokens.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

namespace uwjit::codegen::detail {

namespace {

// Words after which a cell index is read, not declared: `return i`, `case i:`, ...
constexpr std::array<std::string_view, 12> k_expression_words = {
    "return", "case",   "else",   "do",      "throw",    "sizeof",
    "new",    "delete", "typeid", "alignof", "co_yield", "co_return"};

// Words that make a call depend on the cell: what follows them may not run for every cell.
constexpr std::array<std::string_view, 10> k_branch_words = {
    "if", "switch", "case", "for", "while", "do", "goto", "and", "or", "default"};

// Larger offsets are not judged (no halo comes near them; the sums below stay exact).
constexpr std::int64_t k_largest_offset = std::int64_t{1} << 40;

bool adjacent(const Token& a, const Token& b) {
  return b.offset == a.offset + a.text.size();
}

// A decimal integer literal without a sign (suffixes u, l allowed); nullopt for anything else,
// octal and hexadecimal included.
std::optional<std::int64_t> integer_literal(std::string_view t) {
  std::size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits])) != 0) {
    ++digits;
  }
  if (digits == 0 || digits > 12 || (digits > 1 && t[0] == '0') || t.size() - digits > 3) {
    return std::nullopt;
  }
  for (std::size_t k = digits; k < t.size(); ++k) {
    if (t[k] != 'u' && t[k] != 'U' && t[k] != 'l' && t[k] != 'L') {
      return std::nullopt;
    }
  }
  std::int64_t value = 0;
  for (std::size_t k = 0; k < digits; ++k) {
    value = value * 10 + (t[k] - '0');
  }
  return value;
}

// An index expression as a sum: coefficient * index + constant, read from sums and differences
// of one cell index, integer literals and parentheses (i - 1, 1 + i, (i + 2) - 1, -1 + i).
struct Linear {
  std::optional<std::string_view> index;
  std::int64_t coefficient = 0;
  std::int64_t constant = 0;
};

class LinearReader {
public:
  LinearReader(const std::vector<Token>& tokens, std::size_t begin, std::size_t end,
               const std::vector<std::string>& indices)
      : m_tokens(tokens), m_at(begin), m_end(end), m_indices(indices) {}

  std::optional<Linear> read() {
    if (!sum(1) || m_at != m_end) {
      return std::nullopt;
    }
    return m_linear;
  }

private:
  [[nodiscard]] bool is(std::string_view text) const {
    return m_at < m_end && m_tokens[m_at].text == text;
  }

  bool sum(std::int64_t sign) {
    if (!term(sign)) {
      return false;
    }
    while (is("+") || is("-")) {
      const std::int64_t next = is("-") ? -sign : sign;
      ++m_at;
      if (!term(next)) {
        return false;
      }
    }
    return true;
  }

  bool term(std::int64_t sign) {
    while (is("+") || is("-")) {
      sign = is("-") ? -sign : sign;
      ++m_at;
    }
    if (m_at >= m_end) {
      return false;
    }
    if (is("(")) {
      ++m_at;
      if (!sum(sign) || !is(")")) {
        return false;
      }
      ++m_at;
      return true;
    }
    const std::string_view t = m_tokens[m_at++].text;
    if (const auto value = integer_literal(t)) {
      m_linear.constant += sign * *value;
      return m_linear.constant > -k_largest_offset && m_linear.constant < k_largest_offset;
    }
    if (std::find(m_indices.begin(), m_indices.end(), t) == m_indices.end() ||
        (m_linear.index && *m_linear.index != t)) {
      return false;
    }
    m_linear.index = t;
    m_linear.coefficient += sign;
    return true;
  }

  const std::vector<Token>& m_tokens;
  std::size_t m_at;
  std::size_t m_end;
  const std::vector<std::string>& m_indices;
  Linear m_linear;
};

// Whether the index at `k` is declared or assigned there (the text then has its own `i`).
bool rebinds(const std::vector<Token>& tokens, std::size_t k) {
  const auto text = [&](std::size_t n) -> std::string_view {
    return n < tokens.size() ? tokens[n].text : std::string_view();
  };
  if (k > 0 && is_word(text(k - 1)) &&
      std::find(k_expression_words.begin(), k_expression_words.end(), text(k - 1)) ==
          k_expression_words.end()) {
    return true; // `uw_i64 i`, `auto i`, a lambda's parameter
  }
  const auto joined = [&](std::size_t a, std::size_t b) {
    return b < tokens.size() && adjacent(tokens[a], tokens[b]);
  };
  // i = ..., but not i == ...
  if (text(k + 1) == "=" && !(text(k + 2) == "=" && joined(k + 1, k + 2))) {
    return true;
  }
  // i += ..., i <<= ...
  const std::string_view op = text(k + 1);
  if (op.size() == 1 && std::string_view("+-*/%&|^").find(op[0]) != std::string_view::npos &&
      text(k + 2) == "=" && joined(k + 1, k + 2)) {
    return true;
  }
  if ((op == "<" || op == ">") && text(k + 2) == op && text(k + 3) == "=" && joined(k + 1, k + 2) &&
      joined(k + 2, k + 3)) {
    return true;
  }
  // i++, ++i
  if ((op == "+" || op == "-") && text(k + 2) == op && joined(k, k + 1) && joined(k + 1, k + 2)) {
    return true;
  }
  return k >= 2 && (text(k - 1) == "+" || text(k - 1) == "-") && text(k - 2) == text(k - 1) &&
         joined(k - 2, k - 1) && joined(k - 1, k);
}

bool branches(const std::vector<Token>& tokens, std::size_t k) {
  const std::string_view t = tokens[k].text;
  if (t == "?" ||
      std::find(k_branch_words.begin(), k_branch_words.end(), t) != k_branch_words.end()) {
    return true;
  }
  const bool next = k + 1 < tokens.size();
  if ((t == "&" || t == "|") && next && tokens[k + 1].text == t &&
      adjacent(tokens[k], tokens[k + 1])) {
    return true; // && and ||
  }
  // A lambda: its body runs when (and if) it is called.
  return t == "]" && next && (tokens[k + 1].text == "(" || tokens[k + 1].text == "{");
}

// The text from `first` to `last` (tokens), blanks collapsed to one space.
std::string call_text(std::string_view text, const Token& first, const Token& last) {
  const std::string_view raw =
      text.substr(first.offset, last.offset + last.text.size() - first.offset);
  std::string out;
  bool blank = false;
  for (const char c : raw) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) {
      out += ' ';
    }
    blank = false;
    out += c;
  }
  return out;
}

} // namespace

CellReads judge_cell_reads(std::string_view text, const std::vector<std::string>& indices,
                           const std::vector<AccessorAxes>& accessors) {
  CellReads reads;
  const Tokens split = tokens_of(text);
  const std::vector<Token>& tokens = split.tokens;
  reads.conditional = split.preprocessor;
  bool rebound = false;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const std::string_view t = tokens[k].text;
    reads.conditional = reads.conditional || branches(tokens, k);
    if (std::find(indices.begin(), indices.end(), t) != indices.end()) {
      rebound = rebound || rebinds(tokens, k);
      continue;
    }
    if (!is_word(t)) {
      continue;
    }
    const auto found = std::find_if(accessors.begin(), accessors.end(),
                                    [&](const AccessorAxes& a) { return a.accessor == t; });
    if (found == accessors.end()) {
      continue;
    }
    // A member of the same name (p.u(...), p->u(...), ns::u(...)) is not the accessor.
    if (k > 0 && (tokens[k - 1].text == "." || tokens[k - 1].text == ":" ||
                  (tokens[k - 1].text == ">" && k > 1 && tokens[k - 2].text == "-"))) {
      continue;
    }
    const AccessorAxes& accessor = *found;
    if (k + 1 >= tokens.size() || tokens[k + 1].text != "(") {
      reads.judged = false; // passed on, or aliased: its calls are elsewhere
      continue;
    }
    // The arguments: split at the commas outside brackets, up to the matching ')'.
    std::vector<std::pair<std::size_t, std::size_t>> arguments;
    std::size_t begin = k + 2;
    std::size_t close = begin;
    int depth = 0;
    for (; close < tokens.size(); ++close) {
      const std::string_view c = tokens[close].text;
      if (c == "(" || c == "[" || c == "{") {
        ++depth;
      } else if ((c == ")" || c == "]" || c == "}") && depth > 0) {
        --depth;
      } else if (c == ")") {
        break;
      } else if (c == "," && depth == 0) {
        arguments.emplace_back(begin, close);
        begin = close + 1;
      }
    }
    if (close >= tokens.size()) {
      reads.judged = false; // unbalanced: the compiler will say so
      break;
    }
    if (close > k + 2) {
      arguments.emplace_back(begin, close);
    }
    if (arguments.size() != accessor.domain_axis.size()) {
      reads.judged = false;
      continue;
    }
    for (std::size_t d = 0; d < arguments.size(); ++d) {
      const int axis = accessor.domain_axis[d];
      if (axis < 0) {
        continue; // a component axis, or a static array's own: the node's business
      }
      const auto linear =
          LinearReader(tokens, arguments[d].first, arguments[d].second, indices).read();
      if (!linear || !linear->index || linear->coefficient != 1 ||
          *linear->index != indices[static_cast<std::size_t>(axis)]) {
        reads.judged = false;
        continue;
      }
      const std::int64_t offset = linear->constant;
      const bool beyond = accessor.writable
                              ? offset != 0
                              : (offset < -accessor.halo[d] || offset > accessor.halo[d]);
      if (beyond) {
        reads.beyond.push_back({static_cast<std::size_t>(found - accessors.begin()), d, offset,
                                call_text(text, tokens[k], tokens[close]), tokens[k].line,
                                tokens[k].column});
      }
    }
  }
  if (rebound) {
    reads.judged = false;
    reads.beyond.clear();
  }
  return reads;
}

} // namespace uwjit::codegen::detail
