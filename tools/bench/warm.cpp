// Warm: a fresh process served from disk, paired with the cold process that filled the cache;
// the memory-hit latency; the start-up cost of linking libuwjit.
#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/engine/engine.hpp>

#include <cstdlib>

namespace uwjit::bench {

namespace {

Json request_child(const Options& options, const std::filesystem::path& cache,
                   const std::string& kernel, bool split) {
  std::vector<std::string> argv = {helper(options, "uwjit-bench"),
                                   "--child",
                                   "request",
                                   "--cache",
                                   cache.string(),
                                   "--kernels",
                                   kernel};
  if (split) {
    argv.push_back("--split");
  }
  const auto result = run(argv, {"UWJIT_LOG_LEVEL=error"});
  Json out = result.json();
  out["wall_ms"] = result.wall_ms;
  return out;
}

void fresh_process_pairs(const Options& options, Report& report, Json& section) {
  Json kernels = Json::object();
  Series all; // per-process costs, whatever the kernel
  const auto dir = fresh_dir(options.work, "warm");
  for (const auto& name : options.kernels) {
    Series series;
    for (int round = 0; round < options.rounds; ++round) {
      // Each child asks for a trivial kernel first, so that the measured request is a further
      // kernel of a running process; what the first request of a process costs on top (JIT
      // set-up, first use of code paths) is reported on its own.
      const auto cache = fresh_dir(dir, name);
      const Json cold = request_child(options, cache, "tiny-1," + name, false);
      const Json warm = request_child(options, cache, "tiny-1," + name, true);
      const Json& c = cold["requests"][1];
      const Json& w = warm["requests"][1];
      const Json& first = warm["requests"][0];
      if (c.value("tier", "") != "compiled" || w.value("tier", "") != "disk" ||
          first.value("tier", "") != "disk") {
        throw Error(ErrorKind::internal,
                    format("warm pair for {}: tiers {} then {}, expected compiled then disk", name,
                           c.value("tier", "?"), w.value("tier", "?")));
      }
      series.add("cold_request_ms", c["request_ms"]);
      series.add("warm_request_ms", w["request_ms"]);
      series.add("cold_over_warm", c["request_ms"].get<double>() / w["request_ms"].get<double>());
      series.add("cold_process_ms", cold["wall_ms"]);
      series.add("warm_process_ms", warm["wall_ms"]);
      series.add("warm_engine_ms", warm["engine_ms"]);
      series.add("warm_first_request_ms", first["request_ms"]);
      series.add("warm_first_load_ms", first["load_ms"]);
      series.add("warm_load_ms", w["load_ms"]);
      series.add("warm_rest_ms", w["request_ms"].get<double>() - w["load_ms"].get<double>());
      for (const char* part :
           {"split_key_ms", "split_lookup_ms", "split_checksum_ms", "split_load_again_ms"}) {
        if (w.contains(part)) {
          series.add(std::string("warm_") + part, w[part]);
        }
      }
      series.add("object_bytes", w["object_bytes"]);
      all.add("engine_ms", warm["engine_ms"]);
      all.add("first_request_ms", first["request_ms"]);
      all.add("first_load_ms", first["load_ms"]);
    }
    kernels[name] = series.to_json();
    const std::string command = options.command("--sections warm --kernels " + name);
    const auto part = [&](const std::string& s) {
      return number_text(series.summary("warm_" + s).median);
    };
    const std::string split = format(
        "of the warm request, the JIT link takes {} ms (the same object loaded again in the same "
        "process: {} ms) and the rest {} ms: key {} ms, disk lookup {} ms when repeated (of which "
        "the SHA-256 check of the {}-byte object {} ms)",
        part("load_ms"), part("split_load_again_ms"), part("rest_ms"), part("split_key_ms"),
        part("split_lookup_ms"), number_text(series.summary("object_bytes").median),
        part("split_checksum_ms"));
    report.add({.section = "warm",
                .figure = name + ": warm request (fresh process, from disk, to callable)",
                .unit = "ms",
                .value = series.summary("warm_request_ms"),
                .goal = Goal{"≤ 1 ms", std::nullopt, 1.0},
                .limit = split,
                .command = command,
                .note = "inside the child, from request to function pointer; the process had "
                        "already served one trivial kernel"});
    report.add(
        {.section = "warm",
         .figure = name + ": cold / warm request (fresh processes, paired)",
         .unit = "×",
         .value = series.summary("cold_over_warm"),
         .goal = Goal{"≥ 50×", 50.0, std::nullopt},
         .limit = split,
         .command = command,
         .note = format("cold {} ms", number_text(series.summary("cold_request_ms").median))});
    report.add({.section = "warm",
                .figure = name + ": whole warm process (spawn to exit)",
                .unit = "ms",
                .value = series.summary("warm_process_ms"),
                .command = command});
  }
  section["kernels"] = std::move(kernels);
  section["per_process"] = all.to_json();
  const std::string command = options.command("--sections warm");
  report.add({.section = "warm",
              .figure = "fresh process: first request, from disk (one-time JIT set-up)",
              .unit = "ms",
              .value = all.summary("first_request_ms"),
              .command = command,
              .note = format("of which JIT link {} ms; the Engine's construction before it: {} ms",
                             number_text(all.summary("first_load_ms").median),
                             number_text(all.summary("engine_ms").median))});
}

void memory_hits(const Options& options, Report& report, Json& section) {
  engine::Engine engine({.disk_cache = engine::DiskCache::off});
  // The coupled-fields kernel whose canonical source is nearest 10 KB.
  std::string name = "fields-1";
  for (int fields = 1; fields <= 16; ++fields) {
    const auto size = [](const std::string& n) {
      return std::abs(static_cast<long>(kernel_source(n).canonical().size()) - 10000);
    };
    if (size("fields-" + std::to_string(fields)) < size(name)) {
      name = "fields-" + std::to_string(fields);
    }
  }
  const auto source = kernel_source(name);
  (void)engine.kernel(source);
  Series series;
  const int count = options.quick ? 50 : 400;
  for (int i = 0; i < count; ++i) {
    auto start = Clock::now();
    const auto kernel = engine.kernel(source);
    series.add("memory_hit_us", 1000 * ms_since(start));
    start = Clock::now();
    (void)engine.key_of(source);
    series.add("key_us", 1000 * ms_since(start));
  }
  Json entry = series.to_json();
  entry["kernel"] = name;
  entry["source_bytes"] = source.canonical().size();
  section["memory_hit"] = std::move(entry);
  report.add({.section = "warm",
              .figure = format("memory hit ({} KB source)",
                               number_text(static_cast<double>(source.canonical().size()) / 1000)),
              .unit = "µs",
              .value = series.summary("memory_hit_us"),
              .command = options.command("--sections warm"),
              .note = format("of which the key (SHA-256 of the source) {} µs",
                             number_text(series.summary("key_us").median))});
}

void start_up(const Options& options, Report& report, Json& section) {
  Series series;
  const int per_round = options.quick ? 2 : 5;
  for (int round = 0; round < options.rounds * per_round; ++round) {
    const bool plain_first = round % 2 == 0;
    double plain = 0, linked = 0;
    for (int step = 0; step < 2; ++step) {
      const bool is_plain = (step == 0) == plain_first;
      const auto result =
          run({helper(options, is_plain ? "uwjit-bench-start-plain" : "uwjit-bench-start-linked")});
      if (!result.ok()) {
        throw Error(ErrorKind::internal, "a start-up probe failed: " + result.err);
      }
      (is_plain ? plain : linked) = result.wall_ms;
    }
    series.add("plain_ms", plain);
    series.add("linked_ms", linked);
    series.add("linked_minus_plain_ms", linked - plain);
  }
  section["start_up"] = series.to_json();
  section["start_up"]["method"] =
      "spawn to exit of two trivial programs, alternately: one linked with libuwjit (which loads "
      "libLLVM and libclang-cpp) and calling into it, one not";
  report.add({.section = "warm",
              .figure = "process start-up added by linking libuwjit",
              .unit = "ms",
              .value = series.summary("linked_minus_plain_ms"),
              .command = options.command("--sections warm"),
              .note = format("start of a trivial program: {} ms plain, {} ms linked",
                             number_text(series.summary("plain_ms").median),
                             number_text(series.summary("linked_ms").median))});
}

} // namespace

void warm_section(const Options& options, Report& report) {
  Json& section = report.section("warm");
  section["method"] =
      "per round and kernel: a fresh process compiles the kernel into a fresh cache directory "
      "(cold), then another fresh process requests it from there (warm, then taken apart: key, "
      "lookup, checksum, a second load); request times are measured inside the children";
  fresh_process_pairs(options, report, section);
  memory_hits(options, report, section);
  start_up(options, report, section);
}

} // namespace uwjit::bench
