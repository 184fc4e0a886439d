// PNG pictures of a run (`uwjit run --plot`): field slices with a colour bar, and charts of a
// check's quantity against its reference, drawn with cairo.
#pragma once

#include <uwjit/nodes/builtin.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::tools {

/// What every picture's title says besides its field.
struct PlotCaption {
  std::string node; ///< e.g. "pipe-flow"
  std::int64_t step = 0;
  double time = 0;
};

/// The size of every picture, in pixels.
inline constexpr int k_plot_width = 900;
inline constexpr int k_plot_height = 700;

/// Whether this uwjit was built with cairo, so that write_plots can draw.
[[nodiscard]] bool plots_available() noexcept;

/// Writes one PNG per slice (`STEM_NAME.png`) and per chart (`STEM_NAME.png`) of `figures` into
/// `directory` (which must exist) and returns their paths. Throws Error(io) naming a file that
/// cannot be written, Error(usage) when built without cairo.
[[nodiscard]] std::vector<std::filesystem::path> write_plots(const nodes::Figures& figures,
                                                             const PlotCaption& caption,
                                                             const std::filesystem::path& directory,
                                                             std::string_view stem);

} // namespace uwjit::tools
