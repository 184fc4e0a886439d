// The tokens of a cell's text that matter to its structure: what the cell-form checks (jumps that
// leave the cell, accessor reaches) read instead of parsing C++.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace uwjit::codegen::detail {

/// One token: an identifier or keyword, a number, or a single punctuation character.
struct Token {
  std::string_view text;
  std::size_t line = 0;   ///< 1-based, in the text
  std::size_t column = 0; ///< 1-based
  std::size_t offset = 0; ///< in the text
};

/// A text's tokens. Comments, string and character literals and preprocessor lines are dropped.
struct Tokens {
  std::vector<Token> tokens;
  bool preprocessor = false; ///< the text has a preprocessor line (#if 0 ... may hide code)
};

/// Splits `text` into tokens (a number keeps its '.', digit separators and exponent sign).
/// Thread-safe.
[[nodiscard]] Tokens tokens_of(std::string_view text);

/// Whether `token` is an identifier or keyword (not a number, not punctuation).
[[nodiscard]] bool is_word(std::string_view token) noexcept;

} // namespace uwjit::codegen::detail
