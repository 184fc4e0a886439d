#include "cell_tokens.hpp"

#include <cctype>
#include <string>

namespace uwjit::codegen::detail {

namespace {

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

} // namespace

bool is_word(std::string_view token) noexcept {
  return !token.empty() && identifier_char(token[0]) &&
         std::isdigit(static_cast<unsigned char>(token[0])) == 0;
}

Tokens tokens_of(std::string_view text) {
  Tokens result;
  std::vector<Token>& out = result.tokens;
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
      result.preprocessor = true;
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
      out.push_back({text.substr(i, end - i), line, i - line_start + 1, i});
      line_has_token = true;
      advance_to(end);
    } else {
      out.push_back({text.substr(i, 1), line, i - line_start + 1, i});
      line_has_token = true;
      advance_to(i + 1);
    }
  }
  return result;
}

} // namespace uwjit::codegen::detail
