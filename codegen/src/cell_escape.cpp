#include "cell_escape.hpp"

#include "cell_tokens.hpp"

#include <cctype>
#include <string>
#include <vector>

namespace uwjit::codegen::detail {

namespace {

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
  return Reader(tokens_of(text).tokens).statements();
}

} // namespace uwjit::codegen::detail
