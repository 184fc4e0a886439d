// The layout of kernel text, taken out of its canonical form: lines indented anew by their brace
// depth, trailing blanks and blank lines dropped, everything inside literals kept. Two texts that
// differ only in layout have one canonical form, so one key; the places of the lines kept map
// every position back to the text as written, for diagnostics.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace uwjit::codegen::detail {

/// Where a line of the normalised text came from.
struct LinePlace {
  int line = 1;   ///< its line in the text as written, from 1
  int indent = 0; ///< columns as written minus columns now, at its start (negative: added)
};

struct NormalisedText {
  std::string text;              ///< every line ends in '\n'
  std::vector<LinePlace> places; ///< one per line of `text`
};

/// `text` without its layout. A line's leading spaces and tabs and its trailing spaces, tabs and
/// carriage returns are removed and a line left empty is dropped, except where that would change
/// what the compiler reads: inside a raw string literal, and on the line after a backslash
/// splice (its leading blanks separate tokens, and an empty line there ends a directive). Each
/// other line is then indented by two spaces per brace of code open at its start (one fewer when
/// it starts with '}'; none for a directive).
/// Comments and string and character literals are recognised so that their contents are never
/// touched. Thread-safe.
[[nodiscard]] NormalisedText normalise_layout(std::string_view text);

} // namespace uwjit::codegen::detail
