// Static arrays: compile time of a kernel whose static array has N elements, bound as an
// external buffer (its shape compiled in, never its contents) or baked into the source as an
// initialiser (capped by a time limit). Each compile runs in a fresh process.
#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cmath>

namespace uwjit::bench {

namespace {

std::string count_text(std::int64_t count) {
  const double exponent = std::log10(static_cast<double>(count));
  if (std::fabs(exponent - std::round(exponent)) < 1e-9) {
    return "1e" + std::to_string(static_cast<int>(std::round(exponent)));
  }
  return std::to_string(count);
}

} // namespace

void static_section(const Options& options, Report& report) {
  Json& section = report.section("static_arrays");
  section["method"] =
      "per round, for each element count N, a fresh process compiles (memory-only cache) a "
      "kernel reading a static array of N doubles: external (a pointer; N compiled in), the "
      "external ones back to back in alternating order, then baked (a constexpr initialiser of N "
      "17-digit literals); a compile is the fastest of its process's repeats (externals: 5, "
      "small baked: 3, large baked: 1); a baked compile that exceeds the time limit is killed "
      "and larger N are not tried";
  section["baked_limit_s"] = options.baked_limit_s;
  const auto& sizes = options.static_sizes;
  Series series;
  std::optional<std::int64_t> capped_at;
  const auto limit =
      std::chrono::milliseconds(static_cast<long long>(options.baked_limit_s * 1000));
  // Cube edges of the heat node whose static arrays have (about) each element count, at most
  // 80: up to 80³ = 512000 cells (2^19 and under) heat's kernel is one text, the cell form
  // reading each face's stored conductance, whatever the size; above, its CPU kernel is loops
  // of its own reading kappa, another kernel, whose compile would not tell the size's cost.
  constexpr std::int64_t k_heat_largest_edge = 80;
  std::vector<std::int64_t> heat_edges;
  for (const std::int64_t count : sizes) {
    const std::int64_t edge =
        std::min(k_heat_largest_edge,
                 static_cast<std::int64_t>(std::llround(std::cbrt(static_cast<double>(count)))));
    if (heat_edges.empty() || heat_edges.back() != edge) {
      heat_edges.push_back(edge);
    }
  }
  const auto heat_label = [](std::int64_t edge) {
    const std::int64_t count = edge * edge * edge;
    const double exponent = std::log10(static_cast<double>(count));
    return std::fabs(exponent - std::round(exponent)) < 1e-9
               ? "1e" + std::to_string(static_cast<int>(std::round(exponent)))
               : std::to_string(count);
  };
  const std::string heat_first = "heat_" + heat_label(heat_edges.front()) + "_compile_ms";
  const std::string heat_last = "heat_" + heat_label(heat_edges.back()) + "_compile_ms";
  for (int round = 0; round < options.rounds; ++round) {
    // Externals first, adjacent to one another (their ratio is the flatness), in an order that
    // alternates between rounds; then the baked initialisers, smallest first.
    std::vector<std::int64_t> order = sizes;
    if (round % 2 == 1) {
      std::reverse(order.begin(), order.end());
    }
    for (int step = 0; step < 2; ++step) {
      const bool baked = step == 1;
      for (const std::int64_t count : baked ? sizes : order) {
        const std::string label = count_text(count);
        if (baked && capped_at && count >= *capped_at) {
          continue;
        }
        const std::string kernel =
            (baked ? "static-baked-" : "static-ext-") + std::to_string(count);
        // A small compile is repeated in its process and the fastest kept (it is tens of
        // milliseconds, which a busy machine stretches); a baked large one runs once.
        const int repeats = !baked ? 4 : count <= 10000 ? 2 : 0;
        const auto result =
            run({helper(options, "uwjit-bench"), "--child", "request", "--cache", "off",
                 "--kernels", kernel, "--compile-repeats", std::to_string(repeats)},
                {"UWJIT_LOG_LEVEL=error"}, baked ? limit : std::chrono::milliseconds(600000));
        if (result.timed_out) {
          capped_at = capped_at ? std::min(*capped_at, count) : count;
          continue;
        }
        const Json out = result.json();
        const Json& r = out["requests"][0];
        const std::string way = baked ? "baked" : "external";
        series.add(way + "_" + label + "_compile_ms", r.value("compile_min_ms", 0.0));
        series.add(way + "_" + label + "_first_compile_ms", r["compile_ms"]);
        series.add(way + "_" + label + "_process_ms", result.wall_ms);
        series.add(way + "_" + label + "_max_rss_mb", out["peak_rss_kb"].get<double>() / 1024);
        series.add(way + "_" + label + "_object_bytes", r["object_bytes"]);
        series.add(way + "_" + label + "_source_bytes", r["source_bytes"]);
      }
    }
    for (const std::int64_t count : sizes) {
      const std::string label = count_text(count);
      const std::string e = "external_" + label + "_compile_ms";
      const std::string b = "baked_" + label + "_compile_ms";
      if (series.has(b) && series.values(b).size() == static_cast<std::size_t>(round + 1) &&
          series.values(e).size() == static_cast<std::size_t>(round + 1)) {
        series.add("baked_over_external_" + label,
                   series.values(b).back() / series.values(e).back());
      }
    }
    const std::string first = "external_" + count_text(sizes.front()) + "_compile_ms";
    const std::string last = "external_" + count_text(sizes.back()) + "_compile_ms";
    series.add("external_last_over_first",
               series.values(last).back() / series.values(first).back());

    // The same through a real node: heat's conductivity kappa is a static array of n³ doubles,
    // bound as an external buffer; with run-time extents its kernel differs between sizes only
    // in the static data's hash. Each size is a fresh `uwjit run` with the disk cache off.
    std::vector<double> heat_ms;
    for (std::size_t s = 0; s < heat_edges.size(); ++s) {
      const std::int64_t edge = heat_edges[round % 2 == 0 ? s : heat_edges.size() - 1 - s];
      const auto result = run({helper(options, "uwjit"), "run", "heat", "--size",
                               std::to_string(edge), "--steps", "1", "--set", "extents=runtime",
                               "--json", "--output", (options.work / "heat-vtk").string()},
                              {"UWJIT_CACHE=0", "UWJIT_LOG_LEVEL=error"});
      const Json doc = result.json();
      const Json& k = doc["kernels"][0];
      const double ms = k["frontend_ms"].get<double>() + k["optimise_ms"].get<double>() +
                        k["codegen_ms"].get<double>();
      series.add("heat_" + count_text(edge * edge * edge) + "_compile_ms", ms);
    }
    series.add("heat_last_over_first",
               series.values(heat_last).back() / series.values(heat_first).back());
  }
  section["series"] = series.to_json();
  section["baked_capped_at"] = capped_at ? Json(*capped_at) : Json(nullptr);
  const std::string command = options.command("--sections static_arrays");
  const std::string first = count_text(sizes.front());
  const std::string last = count_text(sizes.back());
  for (const std::int64_t count : sizes) {
    const std::string label = count_text(count);
    report.add(
        {.section = "static_arrays",
         .figure = "external buffer, " + label + " elements: compile",
         .unit = "ms",
         .value = series.summary("external_" + label + "_compile_ms"),
         .command = command,
         .note = format("peak RSS {} MB",
                        number_text(series.summary("external_" + label + "_max_rss_mb").median))});
    if (series.has("baked_" + label + "_compile_ms")) {
      report.add(
          {.section = "static_arrays",
           .figure = "baked initialiser, " + label + " elements: compile",
           .unit = "ms",
           .value = series.summary("baked_" + label + "_compile_ms"),
           .command = command,
           .note = format("{}× the external compile; peak RSS {} MB; object {} bytes",
                          number_text(series.summary("baked_over_external_" + label).median),
                          number_text(series.summary("baked_" + label + "_max_rss_mb").median),
                          number_text(series.summary("baked_" + label + "_object_bytes").median))});
    } else {
      report.add({.section = "static_arrays",
                  .figure = "baked initialiser, " + label + " elements: compile",
                  .unit = "ms",
                  .value = summarise({}),
                  .command = command,
                  .note = format("over the time limit of {} s: not measured",
                                 number_text(options.baked_limit_s))});
    }
  }
  for (const std::int64_t edge : heat_edges) {
    report.add({.section = "static_arrays",
                .figure = format("heat node, {}³ = {} cells, static arrays of as many "
                                 "elements (external): compile",
                                 edge, heat_label(edge)),
                .unit = "ms",
                .value = series.summary("heat_" + heat_label(edge) + "_compile_ms"),
                .command = command,
                .note = "uwjit run heat --size N --steps 1 --set extents=runtime, UWJIT_CACHE=0"});
  }
  report.add({.section = "static_arrays",
              .figure = format("heat node: compile at {} / at {} cells",
                               heat_label(heat_edges.back()), heat_label(heat_edges.front())),
              .unit = "×",
              .value = series.summary("heat_last_over_first"),
              .goal = Goal{"0.90–1.10 (flat)", 0.90, 1.10},
              .limit = format(
                  "one compile per fresh `uwjit run` process: {} ms at {} vs {} ms at "
                  "{} cells; the kernels differ only in the static data's hash",
                  number_text(series.summary(heat_last).median), heat_label(heat_edges.back()),
                  number_text(series.summary(heat_first).median), heat_label(heat_edges.front())),
              .command = command});
  report.add({.section = "static_arrays",
              .figure = "external buffer: compile at " + last + " / at " + first + " elements",
              .unit = "×",
              .value = series.summary("external_last_over_first"),
              .goal = Goal{"0.90–1.10 (flat)", 0.90, 1.10},
              .limit = format(
                  "external compiles: {} ms at {} vs {} ms at {}; the sources differ only "
                  "in the digits of the compiled-in element count",
                  number_text(series.summary("external_" + last + "_compile_ms").median), last,
                  number_text(series.summary("external_" + first + "_compile_ms").median), first),
              .command = command});
}

} // namespace uwjit::bench
