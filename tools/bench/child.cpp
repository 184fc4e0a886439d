// The child side of the fresh-process measurements:
//   uwjit-bench --child request --cache DIR|off --kernels A,B [--split] [--compile-repeats N]
// builds an Engine, requests the kernels one after the other, and prints one JSON line: what
// each request cost and which tier served it, the engine's counters, and the process's peak RSS
// and PSS. With --split, a disk hit is taken apart afterwards: key, lookup (manifest, object,
// checksum), checksum alone, and a second JIT load of the same object. With --compile-repeats,
// each source is compiled N more times and the fastest compile is reported too.
#include "bench.hpp"

#include <uwjit/cache/store.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/jit.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

namespace uwjit::bench {

namespace {

std::vector<cache::SlotTable> slot_tables(const codegen::SlotTables& slots) {
  return {{"state_in", slots.state_in},
          {"state_out", slots.state_out},
          {"statics", slots.statics},
          {"extents", slots.extents},
          {"integrals", slots.integrals}};
}

// Median of `count` timings of `body`, in milliseconds.
template <class Body> double median_ms(int count, Body&& body) {
  std::vector<double> times;
  for (int i = 0; i < count; ++i) {
    const auto start = Clock::now();
    body();
    times.push_back(ms_since(start));
  }
  return summarise(times).median;
}

} // namespace

int child_main(const std::vector<std::string>& args) {
  std::string cache = "off";
  std::vector<std::string> names;
  bool split = false;
  int repeats = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--cache" && i + 1 < args.size()) {
      cache = args[++i];
    } else if (args[i] == "--kernels" && i + 1 < args.size()) {
      names = split_list(args[++i]);
    } else if (args[i] == "--compile-repeats" && i + 1 < args.size()) {
      repeats = std::stoi(args[++i]);
    } else if (args[i] == "--split") {
      split = true;
    } else if (args[i] != "request") {
      std::cerr << "uwjit-bench --child: unknown argument " << args[i] << "\n";
      return 2;
    }
  }
  // Sources are made before the clock starts: a generator's cost is the node's, not the engine's.
  std::vector<codegen::KernelSource> sources;
  for (const auto& name : names) {
    sources.push_back(kernel_source(name));
  }
  Json out;
  const auto engine_start = Clock::now();
  // The environment's options (UWJIT_DUMP_DIR, UWJIT_DEBUG, ...) apply, as for any host.
  engine::EngineOptions options = engine::EngineOptions::from_environment();
  if (cache == "off") {
    options.disk_cache = engine::DiskCache::off;
  } else {
    options.cache_dir = cache;
  }
  engine::Engine engine(options);
  out["engine_ms"] = ms_since(engine_start);
  Json requests = Json::array();
  std::vector<engine::Kernel> kernels;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const auto start = Clock::now();
    kernels.push_back(engine.kernel(sources[i]));
    const double request_ms = ms_since(start);
    const auto& info = kernels.back().info();
    Json r;
    r["kernel"] = names[i];
    r["tier"] = engine::to_string(info.tier);
    r["request_ms"] = request_ms;
    r["ready_ns"] = monotonic_ns();
    r["compile_ms"] = info.compile.total_ms();
    r["frontend_ms"] = info.compile.frontend_ms;
    r["optimise_ms"] = info.compile.optimise_ms;
    r["codegen_ms"] = info.compile.codegen_ms;
    r["load_ms"] = info.load_ms;
    r["object_bytes"] = info.object_size;
    r["source_bytes"] = sources[i].canonical().size();
    requests.push_back(std::move(r));
  }
  // Compiling again in the same process (the engine would serve a memory hit): the fastest of
  // the compiles, the request's own included, is the compile time with the least noise.
  for (std::size_t i = 0; i < sources.size(); ++i) {
    double best = requests[i]["compile_ms"].get<double>();
    const std::string text = sources[i].instantiate(kernels[i].info().entry, "bench_again");
    for (int r = 0; r < repeats; ++r) {
      best = std::min(best, engine.compiler().compile(text).timings.total_ms());
    }
    requests[i]["compile_min_ms"] = best;
  }
  if (split && cache != "off") {
    cache::Stats scratch;
    auto store = cache::Store::open(cache, scratch);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      Json& r = requests[i];
      std::optional<cache::Key> key;
      r["split_key_ms"] = median_ms(5, [&] { key = engine.key_of(sources[i]); });
      const auto tables = slot_tables(sources[i].slots());
      cache::LookupOutcome found;
      r["split_lookup_ms"] =
          median_ms(5, [&] { found = store.lookup(*key, engine.salt(), tables); });
      if (!found.hit()) {
        continue;
      }
      const std::string_view object(found.object.data(), found.object.size());
      r["split_checksum_ms"] = median_ms(5, [&] { (void)cache::sha256_hex(object); });
      const auto jit = engine::Jit::shared();
      r["split_load_again_ms"] =
          median_ms(5, [&] { (void)jit->load(found.object, kernels[i].info().entry); });
    }
  }
  out["requests"] = std::move(requests);
  const auto stats = engine.stats();
  using cache::Stat;
  out["compiles"] = stats.get(Stat::compiles);
  out["disk_hits"] = stats.get(Stat::disk_hits);
  out["published"] = stats.get(Stat::published);
  out["lock_waits"] = stats.get(Stat::lock_waits);
  out["peak_rss_kb"] = self_peak_rss_kb();
  out["pss_kb"] = self_pss_kb();
  std::cout << out.dump() << std::endl;
  return 0;
}

} // namespace uwjit::bench
