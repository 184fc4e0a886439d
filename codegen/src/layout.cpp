#include "layout.hpp"

#include <cctype>

namespace uwjit::codegen::detail {

namespace {

enum class State { code, block_comment, string, character, raw };

bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\f' || c == '\v';
}

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Whether the quote at `at` opens a raw string: R" with R the end of an encoding prefix
// (R, LR, uR, UR, u8R) that starts a token.
bool opens_raw(std::string_view line, std::size_t at) {
  if (at == 0 || line[at - 1] != 'R') {
    return false;
  }
  std::size_t start = at - 1;
  while (start > 0 && word_char(line[start - 1])) {
    --start;
  }
  const std::string_view prefix = line.substr(start, at - start);
  return prefix == "R" || prefix == "LR" || prefix == "uR" || prefix == "UR" || prefix == "u8R";
}

// Whether the quote at `at` is a digit separator (1'000'000) rather than a character literal:
// it follows a digit or letter of a number, that is of a token that starts with a digit.
bool digit_separator(std::string_view line, std::size_t at) {
  if (at == 0 || !word_char(line[at - 1])) {
    return false;
  }
  std::size_t start = at - 1;
  while (start > 0 &&
         (word_char(line[start - 1]) || line[start - 1] == '\'' || line[start - 1] == '.')) {
    --start;
  }
  return std::isdigit(static_cast<unsigned char>(line[start])) != 0;
}

// Carries the lexical state over one line; `delimiter` is a raw string's, `depth` counts the
// braces of code open.
void scan(std::string_view line, State& state, std::string& delimiter, int& depth) {
  std::size_t i = 0;
  while (i < line.size()) {
    switch (state) {
    case State::code: {
      const char c = line[i];
      if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') {
        return; // a line comment: the rest of the line
      }
      if (c == '/' && i + 1 < line.size() && line[i + 1] == '*') {
        state = State::block_comment;
        i += 2;
      } else if (c == '"' && opens_raw(line, i)) {
        const auto open = line.find('(', i + 1);
        if (open == std::string_view::npos) {
          return; // not a valid raw string: the compiler will say so
        }
        delimiter = ")" + std::string(line.substr(i + 1, open - i - 1)) + "\"";
        state = State::raw;
        i = open + 1;
      } else if (c == '"') {
        state = State::string;
        ++i;
      } else if (c == '\'' && !digit_separator(line, i)) {
        state = State::character;
        ++i;
      } else {
        depth += c == '{' ? 1 : c == '}' ? -1 : 0;
        ++i;
      }
      break;
    }
    case State::block_comment: {
      const auto end = line.find("*/", i);
      if (end == std::string_view::npos) {
        return;
      }
      state = State::code;
      i = end + 2;
      break;
    }
    case State::string:
    case State::character: {
      const char quote = state == State::string ? '"' : '\'';
      if (line[i] == '\\') {
        i += 2;
      } else {
        if (line[i] == quote) {
          state = State::code;
        }
        ++i;
      }
      break;
    }
    case State::raw: {
      const auto end = line.find(delimiter, i);
      if (end == std::string_view::npos) {
        return;
      }
      state = State::code;
      i = end + delimiter.size();
      break;
    }
    }
  }
}

} // namespace

NormalisedText normalise_layout(std::string_view text) {
  NormalisedText out;
  out.text.reserve(text.size());
  State state = State::code;
  std::string delimiter;
  bool after_splice = false;
  int depth = 0;
  int number = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at);
    const std::string_view line =
        text.substr(at, end == std::string_view::npos ? text.size() - at : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    ++number;

    const State before = state;
    const int depth_before = depth;
    scan(line, state, delimiter, depth);
    // A backslash at the end, blanks after it aside, splices the next line on; a string or
    // character literal does not continue past its line otherwise.
    std::size_t kept = line.size();
    while (kept > 0 && (blank(line[kept - 1]) || line[kept - 1] == '\r')) {
      --kept;
    }
    const bool splice = state != State::raw && kept > 0 && line[kept - 1] == '\\';
    if ((state == State::string || state == State::character) && !splice) {
      state = State::code;
    }
    const bool verbatim_start = before == State::raw || after_splice;
    const bool verbatim_end = state == State::raw;

    std::size_t first = 0;
    if (!verbatim_start) {
      while (first < line.size() && blank(line[first])) {
        ++first;
      }
    }
    std::size_t last = line.size();
    if (!verbatim_end) {
      while (last > first && (blank(line[last - 1]) || line[last - 1] == '\r')) {
        --last;
      }
    }
    after_splice = splice;
    if (first == last && !verbatim_start && !verbatim_end) {
      continue; // a blank line
    }
    // Indented anew, two columns a brace (a line that closes one starts a level up), so that
    // the text stays readable; directives and verbatim lines start where they are.
    const std::string_view kept_text = line.substr(first, last - first);
    int levels = depth_before - (kept_text.starts_with('}') ? 1 : 0);
    if (verbatim_start || kept_text.starts_with('#') || levels < 0) {
      levels = 0;
    }
    out.text.append(static_cast<std::size_t>(2 * levels), ' ');
    out.text.append(kept_text);
    out.text += '\n';
    out.places.push_back({number, static_cast<int>(first) - 2 * levels});
  }
  return out;
}

} // namespace uwjit::codegen::detail
