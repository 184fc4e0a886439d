#include "cell_escape.hpp"

#include <cctype>
#include <string>
#include <vector>

namespace uwjit::codegen::detail {

namespace {

struct Token {
  std::string_view text;
  std::size_t line;
  std::size_t column;
};

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The text's tokens that matter to its statement structure: identifiers and keywords, numbers,
// and single punctuation characters. Comments, literals and preprocessor lines are dropped.
std::vector<Token> tokens_of(std::string_view text) {
  std::vector<Token> out;
  std::size_t line = 1;
  std::size_t line_start = 0;
  bool line_has_token = false;
  std::size_t i = 0;
  const auto advance_to = [&](std::size_t end) {
    for (; i < end && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
        line_has_token = false;
      }
    }
  };
  while (i < text.size()) {
    const char c = text[i];
    const std::string_view rest = text.substr(i);
    if (c == '\n' || std::isspace(static_cast<unsigned char>(c)) != 0) {
      advance_to(i + 1);
    } else if (rest.starts_with("//")) {
      const auto end = text.find('\n', i);
      advance_to(end == std::string_view::npos ? text.size() : end);
    } else if (rest.starts_with("/*")) {
      const auto end = text.find("*/", i + 2);
      advance_to(end == std::string_view::npos ? text.size() : end + 2);
    } else if (c == '#' && !line_has_token) {
      // A preprocessor line, with its continuations.
      std::size_t end = i;
      while (end < text.size() && text[end] != '\n') {
        end += text[end] == '\\' && end + 1 < text.size() ? 2 : 1;
      }
      advance_to(end);
    } else if (c == 'R' && rest.starts_with("R\"")) {
      // A raw string: R"delimiter( ... )delimiter"
      const auto open = text.find('(', i);
      const std::string close =
          ")" + std::string(text.substr(i + 2, open == std::string_view::npos ? 0 : open - i - 2)) +
          "\"";
      const auto end =
          open == std::string_view::npos ? std::string_view::npos : text.find(close, open);
      advance_to(end == std::string_view::npos ? text.size() : end + close.size());
    } else if (c == '"' || c == '\'') {
      std::size_t end = i + 1;
      while (end < text.size() && text[end] != c && text[end] != '\n') {
        end += text[end] == '\\' ? 2 : 1;
      }
      advance_to(end + 1);
    } else if (identifier_char(c)) {
      std::size_t end = i;
      // A number may carry '.', digit separators and exponent signs; an identifier may not.
      const bool number = std::isdigit(static_cast<unsigned char>(c)) != 0;
      while (end < text.size() &&
             (identifier_char(text[end]) ||
              (number && (text[end] == '.' || text[end] == '\'' ||
                          ((text[end] == '+' || text[end] == '-') &&
                           (text[end - 1] == 'e' || text[end - 1] == 'E' || text[end - 1] == 'p' ||
                            text[end - 1] == 'P')))))) {
        ++end;
      }
      out.push_back({text.substr(i, end - i), line, i - line_start + 1});
      line_has_token = true;
      advance_to(end);
    } else {
      out.push_back({text.substr(i, 1), line, i - line_start + 1});
      line_has_token = true;
      advance_to(i + 1);
    }
  }
  return out;
}

// What a statement may leave: the innermost loop and switch of the text around it.
struct Context {
  bool in_loop = false;   // continue is the text's own
  bool in_switch = false; // break is the text's own (with in_loop)
};

// A recursive reading of the statements, enough to tell which loop a break belongs to.
class Reader {
public:
  explicit Reader(std::vector<Token> tokens) : m_tokens(std::move(tokens)) {}

  std::optional<CellEscape> statements() {
    while (!done()) {
      if (is("}")) {
        ++m_at; // unbalanced: the compiler will say so
        continue;
      }
      statement({});
    }
    return m_found;
  }

private:
  [[nodiscard]] bool done() const { return m_at >= m_tokens.size() || m_found.has_value(); }
  [[nodiscard]] bool is(std::string_view text) const {
    return m_at < m_tokens.size() && m_tokens[m_at].text == text;
  }

  // Skips a balanced group that starts at an opening bracket (its contents are an expression:
  // conditions, initialisers, lambda bodies, class bodies).
  void skip_group() {
    int depth = 0;
    do {
      const std::string_view t = m_tokens[m_at].text;
      depth += (t == "(" || t == "[" || t == "{") ? 1 : (t == ")" || t == "]" || t == "}") ? -1 : 0;
      ++m_at;
    } while (depth > 0 && m_at < m_tokens.size());
  }

  void skip_parenthesised() {
    if (is("(")) {
      skip_group();
    }
  }

  void check(const Token& token, Context context) {
    const std::string_view t = token.text;
    const bool leaves = t == "return" || t == "goto" || t == "co_return" ||
                        (t == "continue" && !context.in_loop) ||
                        (t == "break" && !context.in_loop && !context.in_switch);
    if (leaves && !m_found) {
      m_found = CellEscape{t == "co_return" ? "return" : t, token.line, token.column};
    }
  }

  void statement(Context context) {
    if (done()) {
      return;
    }
    const std::string_view t = m_tokens[m_at].text;
    if (t == "{") {
      ++m_at;
      while (!done() && !is("}")) {
        statement(context);
      }
      ++m_at;
    } else if (t == "for" || t == "while") {
      ++m_at;
      skip_parenthesised();
      statement({.in_loop = true, .in_switch = false});
    } else if (t == "do") {
      ++m_at;
      statement({.in_loop = true, .in_switch = false});
      if (is("while")) {
        ++m_at;
        skip_parenthesised();
      }
      if (is(";")) {
        ++m_at;
      }
    } else if (t == "switch") {
      ++m_at;
      skip_parenthesised();
      statement({.in_loop = context.in_loop, .in_switch = true});
    } else if (t == "if") {
      ++m_at;
      if (is("constexpr") || is("!")) {
        ++m_at;
      }
      skip_parenthesised();
      statement(context);
      if (is("else")) {
        ++m_at;
        statement(context);
      }
    } else if (t == "try") {
      ++m_at;
      statement(context);
      while (is("catch")) {
        ++m_at;
        skip_parenthesised();
        statement(context);
      }
    } else {
      expression_statement(context);
    }
  }

  // Up to its ';' (or the '}' that ends the block): jumps at its top level are checked (after a
  // label or a case), what lies in brackets is an expression of its own.
  void expression_statement(Context context) {
    while (!done() && !is(";") && !is("}")) {
      const std::string_view t = m_tokens[m_at].text;
      if (t == "(" || t == "[" || t == "{") {
        skip_group();
        continue;
      }
      if (t == "for" || t == "while" || t == "do" || t == "switch" || t == "if" || t == "try") {
        statement(context); // after a label
        return;
      }
      check(m_tokens[m_at], context);
      ++m_at;
    }
    if (is(";")) {
      ++m_at;
    }
  }

  std::vector<Token> m_tokens;
  std::size_t m_at = 0;
  std::optional<CellEscape> m_found;
};

} // namespace

std::optional<CellEscape> find_cell_escape(std::string_view text) {
  return Reader(tokens_of(text)).statements();
}

} // namespace uwjit::codegen::detail
