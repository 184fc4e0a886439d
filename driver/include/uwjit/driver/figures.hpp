// Pictures of a run (`--plot`): slices of a node's fields and charts of what its check measures.
#pragma once

#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/snapshot.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace uwjit::driver {

/// A picture of one scalar: `width` × `height` values, row-major with x fastest and row 0 at the
/// bottom; NaN where there is nothing to show (e.g. inside a wall).
struct Slice {
  std::string name;             ///< for the file name, e.g. "u", "velocity_x-section"
  std::string field;            ///< e.g. "u", "velocity_x"
  std::string where;            ///< e.g. "z = 16 (mid-plane)"
  std::string x_label, y_label; ///< e.g. "x (cells)"
  std::int64_t width = 0, height = 0;
  std::vector<double> values;
  /// The raster's extent in the axes' units; x0 == x1: cells, 0 to width and 0 to height.
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
};

/// One line or set of points of a Chart.
struct Curve {
  std::string label;
  std::vector<double> x, y;
  bool points = false; ///< markers (measured), else a line (reference)
};

/// A plot of a quantity a node's check tests, measured against its reference.
struct Chart {
  std::string name;  ///< for the file name, e.g. "profile"
  std::string title; ///< e.g. "axial velocity across the pipe"
  std::string x_label, y_label;
  std::vector<Curve> curves;
};

/// What `--plot` draws for a node.
struct Figures {
  std::vector<Slice> slices;
  std::vector<Chart> charts;
};

/// The pictures of any node of two or three domain axes: a slice through the middle of the last
/// axis of each f64 state field (one per component, at most three); none for one axis. What
/// --plot draws for a node kind that gives no figures of its own. From a snapshot of one rank's
/// slab, each rank fills the plane where its slab lies and the planes are joined
/// (Snapshot::total_over_ranks: collective, the plane's memory on each rank). Thread-safe.
[[nodiscard]] Figures default_figures(const runtime::Node& node, const runtime::Snapshot& snapshot);

} // namespace uwjit::driver
