// Finds the statements that would leave the cell in a cell form's text: the writer's loop runs the
// text once per cell, so a `return`, a `goto`, or a `break` or `continue` that is not inside a
// loop (or, for `break`, a switch) of the text itself would skip cells or stop the loop early.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace uwjit::codegen::detail {

/// Where a cell's text leaves the cell.
struct CellEscape {
  std::string_view keyword; ///< "return", "break", "continue" or "goto"
  std::size_t line = 0;     ///< 1-based, in the text
  std::size_t column = 0;   ///< 1-based
};

/// The first statement of `text` that leaves the cell, or nullopt. Comments, string and character
/// literals and preprocessor lines are skipped; the bodies of lambdas and of classes the text
/// defines (braces inside an expression) are their own, and so are loops and switches the text
/// writes. Thread-safe.
[[nodiscard]] std::optional<CellEscape> find_cell_escape(std::string_view text);

} // namespace uwjit::codegen::detail
