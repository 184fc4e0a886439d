// PNG pictures of a run (--plot): field slices with a colour bar, and charts of a check's
// quantity against its reference, drawn with cairo (libcairo.so.2, opened when first needed).
#pragma once

#include <uwjit/driver/figures.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::driver {

/// What every picture's title says besides its field.
struct PlotCaption {
  std::string node; ///< e.g. "pipe-flow"
  std::int64_t step = 0;
  double time = 0;
};

/// The size of every picture, in pixels.
inline constexpr int k_plot_width = 900;
inline constexpr int k_plot_height = 700;

/// Whether write_plots can draw: uwjit was built with cairo's headers and libcairo.so.2 opens.
[[nodiscard]] bool plots_available() noexcept;

/// Writes one PNG per slice (`STEM_NAME.png`) and per chart (`STEM_NAME.png`) of `figures` into
/// `directory` (which must exist) and returns their paths. Throws Error(io) naming a file that
/// cannot be written, Error(usage) "--plot: ..." when cairo is missing (built without it, or
/// libcairo.so.2 does not open).
[[nodiscard]] std::vector<std::filesystem::path> write_plots(const Figures& figures,
                                                             const PlotCaption& caption,
                                                             const std::filesystem::path& directory,
                                                             std::string_view stem);

} // namespace uwjit::driver
