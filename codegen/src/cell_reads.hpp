// What a cell's text shows about the reach of its accessors along the domain axes: the calls
// whose index on a domain axis is the cell's own index plus a constant can be judged against the
// buffer's halo exactly, before anything is compiled; anything else is left to a run-time check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::codegen::detail {

/// One accessor as the cell's text may call it.
struct AccessorAxes {
  std::string_view accessor;
  bool writable = false;        ///< a state output: a call writes the cell it names
  std::vector<int> domain_axis; ///< per buffer axis: the domain axis it spans, or -1
  std::vector<int> halo;        ///< per buffer axis
};

/// A call whose index on a domain axis is the cell's index plus `offset`, beyond what the buffer
/// allows there: more than its halo for a read, anything but the cell itself for a write.
struct Reach {
  std::size_t accessor = 0; ///< index into the accessors judged
  std::size_t axis = 0;     ///< the buffer's axis
  std::int64_t offset = 0;
  std::string call;       ///< the call as written, blanks collapsed, e.g. "u(i - 1, j)"
  std::size_t line = 0;   ///< 1-based, in the cell's text
  std::size_t column = 0; ///< 1-based
};

struct CellReads {
  /// Every call that reaches beyond, in text order.
  std::vector<Reach> beyond;
  /// Every index on a domain axis of every accessor call is the cell's index on that axis plus
  /// a constant (so `beyond` lists every reach past a halo), and no accessor is used otherwise
  /// than called.
  bool judged = true;
  /// The text may skip a call for some cells: it branches or loops (if, ?:, switch, for, while,
  /// do, goto, &&, ||, a lambda) or has preprocessor lines. A reach it lists may then never be
  /// made, so only a run can tell.
  bool conditional = false;
};

/// Judges the accessor calls of a cell's `text`, whose cell indices are `indices` (one per
/// domain axis, in axis order). A text that declares or assigns a name of `indices` is not
/// judged (its calls may not use the cell's own index). Thread-safe.
[[nodiscard]] CellReads judge_cell_reads(std::string_view text,
                                         const std::vector<std::string>& indices,
                                         const std::vector<AccessorAxes>& accessors);

} // namespace uwjit::codegen::detail
