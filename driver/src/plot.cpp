#include "plot.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>

#ifdef UWJIT_HAVE_CAIRO
#include <cairo.h>
#include <dlfcn.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

namespace uwjit::driver {

#ifndef UWJIT_HAVE_CAIRO

bool plots_available() noexcept {
  return false;
}

std::vector<std::filesystem::path> write_plots(const Figures&, const PlotCaption&,
                                               const std::filesystem::path&, std::string_view) {
  throw Error(ErrorKind::usage, "--plot: this uwjit was built without cairo (install "
                                "libcairo2-dev, e.g. with tools/setup.sh, and rebuild)");
}

#else

namespace {

// libcairo.so.2, opened with dlopen when the first picture is drawn: a host that links libuwjit
// and never draws loads nothing of cairo (nor fontconfig, freetype and the rest cairo needs).
#define UWJIT_CAIRO_FUNCTIONS(X)                                                                   \
  X(arc)                                                                                           \
  X(clip)                                                                                          \
  X(create)                                                                                        \
  X(destroy)                                                                                       \
  X(fill)                                                                                          \
  X(get_source)                                                                                    \
  X(image_surface_create)                                                                          \
  X(image_surface_get_data)                                                                        \
  X(image_surface_get_stride)                                                                      \
  X(line_to)                                                                                       \
  X(move_to)                                                                                       \
  X(new_sub_path)                                                                                  \
  X(paint)                                                                                         \
  X(pattern_add_color_stop_rgb)                                                                    \
  X(pattern_create_linear)                                                                         \
  X(pattern_destroy)                                                                               \
  X(pattern_set_filter)                                                                            \
  X(rectangle)                                                                                     \
  X(restore)                                                                                       \
  X(rotate)                                                                                        \
  X(save)                                                                                          \
  X(scale)                                                                                         \
  X(select_font_face)                                                                              \
  X(set_font_size)                                                                                 \
  X(set_line_width)                                                                                \
  X(set_source)                                                                                    \
  X(set_source_rgb)                                                                                \
  X(set_source_surface)                                                                            \
  X(show_text)                                                                                     \
  X(status)                                                                                        \
  X(stroke)                                                                                        \
  X(surface_destroy)                                                                               \
  X(surface_flush)                                                                                 \
  X(surface_mark_dirty)                                                                            \
  X(surface_write_to_png_stream)                                                                   \
  X(text_extents)                                                                                  \
  X(translate)

struct CairoApi {
#define UWJIT_CAIRO_MEMBER(name) decltype(&::cairo_##name) name = nullptr;
  UWJIT_CAIRO_FUNCTIONS(UWJIT_CAIRO_MEMBER)
#undef UWJIT_CAIRO_MEMBER
};

// The outcome of opening libcairo.so.2, once per process: the table, or why it cannot be used.
struct CairoLoad {
  CairoApi api;
  std::string problem; // "" when loaded
};

const CairoLoad& cairo_load() {
  static const CairoLoad load = [] {
    CairoLoad out;
    void* library = ::dlopen("libcairo.so.2", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      out.problem = format("cannot open libcairo.so.2 ({}); install cairo (Debian: libcairo2)",
                           why != nullptr ? why : "unknown reason");
      return out;
    }
    std::string missing;
#define UWJIT_CAIRO_RESOLVE(name)                                                                  \
  out.api.name = reinterpret_cast<decltype(&::cairo_##name)>(::dlsym(library, "cairo_" #name));    \
  if (out.api.name == nullptr) {                                                                   \
    missing += (missing.empty() ? "" : ", ") + std::string("cairo_" #name);                        \
  }
    UWJIT_CAIRO_FUNCTIONS(UWJIT_CAIRO_RESOLVE)
#undef UWJIT_CAIRO_RESOLVE
    if (!missing.empty()) {
      out.problem = format("libcairo.so.2 lacks {} (a cairo too old)", missing);
    }
    return out;
  }();
  return load;
}

// The table; only called once write_plots has found it usable.
const CairoApi& api() {
  return cairo_load().api;
}

} // namespace

namespace {

struct Rgb {
  double r, g, b;
};

// Dark blue through teal and green to yellow: lightness rises monotonically, so the order of
// values reads the same in grey.
Rgb colour(double t) {
  static constexpr std::array<Rgb, 6> k_stops = {{{0.08, 0.05, 0.30},
                                                  {0.15, 0.25, 0.55},
                                                  {0.12, 0.48, 0.56},
                                                  {0.20, 0.66, 0.47},
                                                  {0.58, 0.80, 0.25},
                                                  {0.99, 0.90, 0.15}}};
  t = std::clamp(t, 0.0, 1.0) * (k_stops.size() - 1);
  const auto i = std::min(static_cast<std::size_t>(t), k_stops.size() - 2);
  const double f = t - static_cast<double>(i);
  const Rgb& a = k_stops[i];
  const Rgb& b = k_stops[i + 1];
  return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

// Line colours of a chart's curves, in order.
constexpr std::array<Rgb, 4> k_curve_colours = {
    {{0.10, 0.10, 0.10}, {0.80, 0.20, 0.15}, {0.15, 0.40, 0.75}, {0.20, 0.60, 0.25}}};

std::string tick_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", std::abs(value) < 1e-300 ? 0.0 : value);
  return text;
}

// Round numbers (1, 2 or 5 × 10^k apart) that cover [lo, hi] with about five intervals.
std::vector<double> ticks(double lo, double hi) {
  const double span = hi - lo;
  if (!(span > 0) || !std::isfinite(span)) {
    return {lo};
  }
  const double raw = span / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) {
      break;
    }
  }
  std::vector<double> out;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

// A range that is never empty, so that a uniform field still maps to one colour.
std::pair<double, double> widened(double lo, double hi) {
  if (!(lo <= hi)) {
    return {0.0, 1.0};
  }
  if (hi - lo <= 1e-12 * std::max(std::abs(lo), std::abs(hi))) {
    const double pad = lo == 0 ? 0.5 : std::abs(lo) * 0.01;
    return {lo - pad, hi + pad};
  }
  return {lo, hi};
}

using Surface = std::unique_ptr<cairo_surface_t, decltype(&::cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&::cairo_destroy)>;

class Canvas {
public:
  Canvas()
      : m_surface(api().image_surface_create(CAIRO_FORMAT_RGB24, k_plot_width, k_plot_height),
                  api().surface_destroy),
        m_cr(api().create(m_surface.get()), api().destroy) {
    api().set_source_rgb(cr(), 1, 1, 1);
    api().paint(cr());
    api().select_font_face(cr(), "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  }
  cairo_t* cr() { return m_cr.get(); }

  enum class Align { left, centre, right };
  // Text with its baseline at y, aligned at x; rotated a quarter turn when `vertical`.
  void text(const std::string& s, double x, double y, double size, Align align,
            bool vertical = false) {
    api().set_font_size(cr(), size);
    cairo_text_extents_t extents;
    api().text_extents(cr(), s.c_str(), &extents);
    const double shift = align == Align::left     ? 0
                         : align == Align::centre ? extents.x_advance / 2
                                                  : extents.x_advance;
    api().save(cr());
    api().set_source_rgb(cr(), 0, 0, 0);
    api().translate(cr(), x, y);
    if (vertical) {
      api().rotate(cr(), -M_PI / 2);
    }
    api().move_to(cr(), -shift, 0);
    api().show_text(cr(), s.c_str());
    api().restore(cr());
  }

  void title(const std::string& first, const std::string& second) {
    text(first, k_plot_width / 2.0, 30, 19, Align::centre);
    text(second, k_plot_width / 2.0, 54, 14, Align::centre);
  }

  // Encoded in memory, then written by the one atomic writer: a picture is never torn, and a
  // symlink, device or FIFO at its name is never written through.
  void save(const std::filesystem::path& path) {
    api().surface_flush(m_surface.get());
    std::string png;
    const auto append = [](void* closure, const unsigned char* data, unsigned int length) {
      static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
      return CAIRO_STATUS_SUCCESS;
    };
    if (api().status(cr()) != CAIRO_STATUS_SUCCESS ||
        api().surface_write_to_png_stream(m_surface.get(), append, &png) != CAIRO_STATUS_SUCCESS) {
      throw Error(ErrorKind::io, format("{}: cannot draw the picture", path.string()));
    }
    posix::write_file_atomically(path, png, {.mode = 0644});
  }

private:
  Surface m_surface;
  Context m_cr;
};

// The frame of a plot area with ticks and their labels along its left and bottom edges.
struct Frame {
  double left, top, width, height; // pixels
  double x0, x1, y0, y1;           // the axis ranges

  [[nodiscard]] double px(double x) const { return left + (x - x0) / (x1 - x0) * width; }
  [[nodiscard]] double py(double y) const { return top + height - (y - y0) / (y1 - y0) * height; }

  void draw(Canvas& canvas, const std::string& x_label, const std::string& y_label) const {
    cairo_t* cr = canvas.cr();
    api().set_source_rgb(cr, 0, 0, 0);
    api().set_line_width(cr, 1);
    api().rectangle(cr, left, top, width, height);
    api().stroke(cr);
    for (const double x : ticks(x0, x1)) {
      api().move_to(cr, px(x), top + height);
      api().line_to(cr, px(x), top + height + 5);
      api().stroke(cr);
      canvas.text(tick_text(x), px(x), top + height + 20, 12, Canvas::Align::centre);
    }
    for (const double y : ticks(y0, y1)) {
      api().move_to(cr, left - 5, py(y));
      api().line_to(cr, left, py(y));
      api().stroke(cr);
      canvas.text(tick_text(y), left - 8, py(y) + 4, 12, Canvas::Align::right);
    }
    canvas.text(x_label, left + width / 2, top + height + 44, 14, Canvas::Align::centre);
    canvas.text(y_label, left - 62, top + height / 2, 14, Canvas::Align::centre, true);
  }
};

std::string subtitle(const PlotCaption& caption) {
  return format("step {}, time {}", caption.step, tick_text(caption.time));
}

void draw_slice(const Slice& slice, const PlotCaption& caption, const std::filesystem::path& path) {
  Canvas canvas;
  canvas.title(
      format("{}: {}{}{}", caption.node, slice.field, slice.where.empty() ? "" : ", ", slice.where),
      subtitle(caption));
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (const double v : slice.values) {
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  std::tie(lo, hi) = widened(lo, hi);
  const bool cells = slice.x0 == slice.x1;
  const double x0 = cells ? 0 : slice.x0;
  const double x1 = cells ? static_cast<double>(slice.width) : slice.x1;
  const double y0 = cells ? 0 : slice.y0;
  const double y1 = cells ? static_cast<double>(slice.height) : slice.y1;
  // The largest area of the right shape (square cells) that fits left of the colour bar.
  constexpr double k_left = 100, k_top = 80, k_right = 170, k_bottom = 80;
  const double room_w = k_plot_width - k_left - k_right;
  const double room_h = k_plot_height - k_top - k_bottom;
  const double scale = std::min(room_w / (x1 - x0), room_h / (y1 - y0));
  const Frame frame{k_left + (room_w - scale * (x1 - x0)) / 2,
                    k_top + (room_h - scale * (y1 - y0)) / 2,
                    scale * (x1 - x0),
                    scale * (y1 - y0),
                    x0,
                    x1,
                    y0,
                    y1};
  // The raster, top row first as images are, drawn scaled with square, unsmoothed cells.
  Surface raster(api().image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(slice.width),
                                            static_cast<int>(slice.height)),
                 api().surface_destroy);
  api().surface_flush(raster.get());
  auto* pixels = api().image_surface_get_data(raster.get());
  const int stride = api().image_surface_get_stride(raster.get());
  for (std::int64_t y = 0; y < slice.height; ++y) {
    auto* row = reinterpret_cast<std::uint32_t*>(pixels + (slice.height - 1 - y) * stride);
    for (std::int64_t x = 0; x < slice.width; ++x) {
      const double v = slice.values[static_cast<std::size_t>(y * slice.width + x)];
      const Rgb c = std::isfinite(v) ? colour((v - lo) / (hi - lo)) : Rgb{0.82, 0.82, 0.82};
      row[x] = (static_cast<std::uint32_t>(c.r * 255) << 16) |
               (static_cast<std::uint32_t>(c.g * 255) << 8) | static_cast<std::uint32_t>(c.b * 255);
    }
  }
  api().surface_mark_dirty(raster.get());
  cairo_t* cr = canvas.cr();
  api().save(cr);
  api().translate(cr, frame.left, frame.top);
  api().scale(cr, frame.width / static_cast<double>(slice.width),
              frame.height / static_cast<double>(slice.height));
  api().set_source_surface(cr, raster.get(), 0, 0);
  api().pattern_set_filter(api().get_source(cr), CAIRO_FILTER_NEAREST);
  api().rectangle(cr, 0, 0, static_cast<double>(slice.width), static_cast<double>(slice.height));
  api().fill(cr);
  api().restore(cr);
  frame.draw(canvas, slice.x_label, slice.y_label);
  // The colour bar: the value range bottom to top, with round ticks.
  const Frame bar{k_plot_width - k_right + 40, k_top, 24, room_h, 0, 1, lo, hi};
  // colour() interpolates linearly between its stops, as a linear gradient does.
  cairo_pattern_t* gradient = api().pattern_create_linear(0, bar.top + bar.height, 0, bar.top);
  constexpr int k_stops = 5;
  for (int i = 0; i <= k_stops; ++i) {
    const double t = static_cast<double>(i) / k_stops;
    const Rgb c = colour(t);
    api().pattern_add_color_stop_rgb(gradient, t, c.r, c.g, c.b);
  }
  api().set_source(cr, gradient);
  api().rectangle(cr, bar.left, bar.top, bar.width, bar.height);
  api().fill(cr);
  api().pattern_destroy(gradient);
  api().set_source_rgb(cr, 0, 0, 0);
  api().set_line_width(cr, 1);
  api().rectangle(cr, bar.left, bar.top, bar.width, bar.height);
  api().stroke(cr);
  for (const double v : ticks(lo, hi)) {
    api().move_to(cr, bar.left + bar.width, bar.py(v));
    api().line_to(cr, bar.left + bar.width + 5, bar.py(v));
    api().stroke(cr);
    canvas.text(tick_text(v), bar.left + bar.width + 8, bar.py(v) + 4, 12, Canvas::Align::left);
  }
  canvas.text(slice.field, bar.left + bar.width / 2, bar.top - 10, 14, Canvas::Align::centre);
  canvas.save(path);
}

void draw_chart(const Chart& chart, const PlotCaption& caption, const std::filesystem::path& path) {
  Canvas canvas;
  canvas.title(format("{}: {}", caption.node, chart.title), subtitle(caption));
  double x_lo = std::numeric_limits<double>::infinity();
  double x_hi = -x_lo;
  double y_lo = x_lo;
  double y_hi = -x_lo;
  for (const auto& curve : chart.curves) {
    for (std::size_t i = 0; i < curve.x.size() && i < curve.y.size(); ++i) {
      if (std::isfinite(curve.x[i]) && std::isfinite(curve.y[i])) {
        x_lo = std::min(x_lo, curve.x[i]);
        x_hi = std::max(x_hi, curve.x[i]);
        y_lo = std::min(y_lo, curve.y[i]);
        y_hi = std::max(y_hi, curve.y[i]);
      }
    }
  }
  std::tie(x_lo, x_hi) = widened(x_lo, x_hi);
  std::tie(y_lo, y_hi) = widened(y_lo, y_hi);
  const double margin = 0.05 * (y_hi - y_lo);
  const Frame frame{100,  80,   k_plot_width - 140.0, k_plot_height - 160.0,
                    x_lo, x_hi, y_lo - margin,        y_hi + margin};
  cairo_t* cr = canvas.cr();
  api().save(cr);
  api().rectangle(cr, frame.left, frame.top, frame.width, frame.height);
  api().clip(cr);
  for (std::size_t c = 0; c < chart.curves.size(); ++c) {
    const auto& curve = chart.curves[c];
    const Rgb colour = k_curve_colours[c % k_curve_colours.size()];
    api().set_source_rgb(cr, colour.r, colour.g, colour.b);
    api().set_line_width(cr, 2);
    bool drawing = false;
    for (std::size_t i = 0; i < curve.x.size() && i < curve.y.size(); ++i) {
      if (!std::isfinite(curve.x[i]) || !std::isfinite(curve.y[i])) {
        drawing = false;
        continue;
      }
      const double x = frame.px(curve.x[i]);
      const double y = frame.py(curve.y[i]);
      if (curve.points) {
        api().new_sub_path(cr);
        api().arc(cr, x, y, 3, 0, 2 * M_PI);
        api().fill(cr);
      } else if (drawing) {
        api().line_to(cr, x, y);
      } else {
        api().move_to(cr, x, y);
        drawing = true;
      }
    }
    if (!curve.points) {
      api().stroke(cr);
    }
  }
  api().restore(cr);
  frame.draw(canvas, chart.x_label, chart.y_label);
  // The legend, top right inside the frame.
  double y = frame.top + 24;
  for (std::size_t c = 0; c < chart.curves.size(); ++c) {
    const Rgb colour = k_curve_colours[c % k_curve_colours.size()];
    const double x = frame.left + frame.width - 330;
    api().set_source_rgb(cr, colour.r, colour.g, colour.b);
    if (chart.curves[c].points) {
      api().arc(cr, x + 12, y - 4, 3, 0, 2 * M_PI);
      api().fill(cr);
    } else {
      api().set_line_width(cr, 2);
      api().move_to(cr, x, y - 4);
      api().line_to(cr, x + 24, y - 4);
      api().stroke(cr);
    }
    canvas.text(chart.curves[c].label, x + 32, y, 13, Canvas::Align::left);
    y += 20;
  }
  canvas.save(path);
}

} // namespace

bool plots_available() noexcept {
  return cairo_load().problem.empty();
}

std::vector<std::filesystem::path> write_plots(const Figures& figures, const PlotCaption& caption,
                                               const std::filesystem::path& directory,
                                               std::string_view stem) {
  if (const auto& problem = cairo_load().problem; !problem.empty()) {
    throw Error(ErrorKind::usage, format("--plot: {}", problem));
  }
  std::vector<std::filesystem::path> paths;
  for (const auto& slice : figures.slices) {
    if (slice.width < 1 || slice.height < 1 ||
        slice.values.size() != static_cast<std::size_t>(slice.width * slice.height)) {
      throw Error(ErrorKind::internal,
                  format("plot: slice \"{}\" holds {} values for {} x {}", slice.name,
                         slice.values.size(), slice.width, slice.height));
    }
    paths.push_back(directory / format("{}_{}.png", stem, slice.name));
    draw_slice(slice, caption, paths.back());
  }
  for (const auto& chart : figures.charts) {
    paths.push_back(directory / format("{}_{}.png", stem, chart.name));
    draw_chart(chart, caption, paths.back());
  }
  return paths;
}

#endif

} // namespace uwjit::driver
