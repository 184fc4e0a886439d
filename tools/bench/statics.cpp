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
