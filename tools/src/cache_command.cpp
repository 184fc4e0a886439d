#include "args.hpp"
#include "cache_access.hpp"
#include "commands.hpp"
#include "text.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/common/env.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

namespace uwjit::tools {

namespace {

namespace fs = std::filesystem;

constexpr const char* k_cache_help =
    "usage: uwjit cache <subcommand> [<args>]\n\n"
    "Inspects and maintains the kernel cache, in the directory the library uses: UWJIT_CACHE_DIR,\n"
    "else $XDG_CACHE_HOME/uwjit, else ~/.cache/uwjit. The read-only site caches of\n"
    "UWJIT_CACHE_SITE_DIR are shown by dir, list, stats and verify, and never changed.\n\n"
    "subcommands:\n"
    "  dir                          the cache directory and the rule that chose it\n"
    "  list [--json]                the entries, most recently used first\n"
    "  stats [--json]               the persisted counters, entry count and size\n"
    "  inspect KEY-PREFIX [--source] [--asm] [--json]\n"
    "                               one entry's manifest; its stored source or disassembly\n"
    "  explain KEY-A KEY-B          which salt components and source lines differ\n"
    "  verify [--fix] [--json]      check every entry (exit 1 if any is bad); --fix removes them\n"
    "                               (exit 1 if anything bad is left)\n"
    "  prune (--max-size SIZE | --older-than AGE) [--dry-run]\n"
    "                               evict least recently used entries\n"
    "  wipe [--dry-run]             delete every entry (only in a directory with uwjit's "
    "CACHEDIR.TAG)\n\n"
    "Run 'uwjit cache <subcommand> --help' for details.\n";

// A site cache of UWJIT_CACHE_SITE_DIR as the library would use it: opened read-only, or why not.
struct Site {
  fs::path dir;
  std::optional<cache::Store> store;
  std::string problem;
};

std::vector<Site> open_sites() {
  static cache::Stats counters; // a command's own lookups are not the library's requests
  std::vector<Site> sites;
  for (const auto& dir : cache::resolve_site_locations()) {
    Site site{dir, std::nullopt, {}};
    try {
      site.store.emplace(cache::Store::open_site(dir, counters));
      site.dir = site.store->dir();
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::io) {
        throw;
      }
      site.problem = error.what();
    }
    sites.push_back(std::move(site));
  }
  return sites;
}

nlohmann::json site_json(Site& site) {
  nlohmann::json one = {{"dir", site.dir.string()}, {"usable", site.store.has_value()}};
  if (site.store) {
    one["entries"] = site.store->list().size();
    one["size"] = site.store->total_size();
  } else {
    one["problem"] = site.problem;
  }
  return one;
}

// "  site   DIR (read-only): N entries, SIZE", or why it is not used.
void print_sites(std::vector<Site>& sites) {
  for (auto& site : sites) {
    std::cout << "site cache  " << site.dir.string();
    if (site.store) {
      const std::size_t entries = site.store->list().size();
      std::cout << " (read-only): " << entries << (entries == 1 ? " entry, " : " entries, ")
                << human_size(site.store->total_size()) << "\n";
    } else {
      std::cout << " (not used: " << site.problem << ")\n";
    }
  }
}

int dir_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache dir", "Prints the cache directory and the rule that chose it (the same "
                            "resolution as the library),\nthen each read-only site cache of "
                            "UWJIT_CACHE_SITE_DIR: its entries, or why it is not used.");
  spec.flag("--json", "print it as JSON");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  cache::CacheLocation location = cache::resolve_cache_location();
  std::string rule = location.rule;
  if (location.dir) {
    const fs::path used = cache::store_directory(*location.dir);
    if (used != *location.dir) {
      rule += format(" (it holds files that are not uwjit's: {} is used)", used.string());
    }
    location.dir = used;
  }
  auto sites = open_sites();
  if (args.has("--json")) {
    nlohmann::json site_list = nlohmann::json::array();
    for (auto& site : sites) {
      site_list.push_back(site_json(site));
    }
    std::cout << nlohmann::json{{"dir", location.dir ? location.dir->string() : ""},
                                {"rule", rule},
                                {"exists", location.dir && fs::is_directory(*location.dir)},
                                {"site", site_list}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << (location.dir ? location.dir->string() : "(none)") << "\n"
            << "  chosen by: " << rule << "\n";
  print_sites(sites);
  return 0;
}

nlohmann::json entry_json(const cache::EntryInfo& entry, const std::string& site = {}) {
  return {{"key", entry.key.hex()},
          {"site", site.empty() ? nlohmann::json(nullptr) : nlohmann::json(site)},
          {"origin", entry.origin},
          {"entry", entry.entry},
          {"target", entry.target},
          {"object_size", entry.object_size},
          {"total_size", entry.total_size},
          {"created_utc", entry.created_utc},
          {"last_used_utc", utc_text(entry.last_used)},
          {"compile_ms", entry.compile_ms},
          {"uwjit_version", entry.uwjit_version}};
}

int list_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache list",
               "Lists the cache entries, most recently used first, then those of each "
               "read-only site cache.");
  spec.flag("--json", "print a JSON array");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  auto store = open_existing();
  auto entries = store ? store->list() : std::vector<cache::EntryInfo>{};
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.last_used > b.last_used; });
  auto sites = open_sites();
  if (args.has("--json")) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& entry : entries) {
      list.push_back(entry_json(entry));
    }
    for (auto& site : sites) {
      for (const auto& entry : site.store ? site.store->list() : std::vector<cache::EntryInfo>{}) {
        list.push_back(entry_json(entry, site.dir.string()));
      }
    }
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  const auto print = [](const std::vector<cache::EntryInfo>& listed) {
    Table table(
        {"key", "origin", "target", "object", "compile", "created (UTC)", "last used (UTC)"});
    for (const auto& entry : listed) {
      table.add({entry.key.hex(), entry.origin, entry.target, human_size(entry.object_size),
                 milliseconds(entry.compile_ms), entry.created_utc, utc_text(entry.last_used)});
    }
    std::cout << table.render();
    std::cout << listed.size() << (listed.size() == 1 ? " entry" : " entries") << "\n";
  };
  print(entries);
  for (auto& site : sites) {
    std::cout << "\nsite cache " << site.dir.string();
    if (!site.store) {
      std::cout << " (not used: " << site.problem << ")\n";
      continue;
    }
    std::cout << " (read-only)\n";
    print(site.store->list());
  }
  return 0;
}

int stats_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache stats", "Prints the counters persisted in the cache directory by every "
                              "process that used it, and its size.");
  spec.flag("--json", "print it as JSON");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  auto store = open_existing();
  const cache::StatsSnapshot counters = store ? store->read_stats() : cache::StatsSnapshot{};
  const std::size_t entries = store ? store->list().size() : 0;
  const std::uint64_t size = store ? store->total_size() : 0;
  const std::uint64_t limit = cache::max_cache_size();
  auto sites = open_sites();
  // Where requests were served: each kernel request counts once, as a memory hit, a disk hit or
  // a compile.
  const std::uint64_t memory = counters.get(cache::Stat::memory_hits);
  const std::uint64_t disk = counters.get(cache::Stat::disk_hits);
  const std::uint64_t compiled = counters.get(cache::Stat::compiles);
  // Saturating: the counters come from a file, and each saturates at 2^64 - 1 already.
  const auto sum = [](std::uint64_t a, std::uint64_t b) {
    return b > std::numeric_limits<std::uint64_t>::max() - a
               ? std::numeric_limits<std::uint64_t>::max()
               : a + b;
  };
  const std::uint64_t served = sum(memory, disk);
  const std::uint64_t requests = sum(served, compiled);
  const auto share = [&](std::uint64_t part) {
    return requests == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(requests);
  };
  if (args.has("--json")) {
    const auto ratio = [&](std::uint64_t part) {
      return requests == 0 ? nlohmann::json(nullptr) : nlohmann::json(share(part));
    };
    const nlohmann::json hit_ratio = {{"requests", requests},
                                      {"hit", ratio(served)},
                                      {"memory", ratio(memory)},
                                      {"disk", ratio(disk)},
                                      {"compiles", ratio(compiled)}};
    nlohmann::json counter_json = nlohmann::json::object();
    for (const cache::Stat stat : cache::k_all_stats) {
      counter_json[std::string(cache::to_string(stat))] = counters.get(stat);
    }
    nlohmann::json site_list = nlohmann::json::array();
    for (auto& site : sites) {
      site_list.push_back(site_json(site));
    }
    std::cout << nlohmann::json{{"dir",
                                 store ? store->dir().string() : cache_dir_or_throw().string()},
                                {"entries", entries},
                                {"size", size},
                                {"max_size", limit},
                                {"hit_ratio", hit_ratio},
                                {"counters", counter_json},
                                {"site", site_list}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "directory   " << (store ? store->dir().string() : cache_dir_or_throw().string())
            << "\n"
            << "entries     " << entries << "\n"
            << "size        " << human_size(size) << " of " << human_size(limit)
            << " (UWJIT_CACHE_MAX_SIZE)\n";
  print_sites(sites);
  if (requests == 0) {
    std::cout << "hit ratio   - (no requests yet)\n";
  } else {
    const auto percent = [&](std::uint64_t part) {
      std::ostringstream text;
      text << std::fixed << std::setprecision(1) << 100 * share(part) << " %";
      return text.str();
    };
    std::cout << "hit ratio   " << percent(served) << " of " << requests << " requests (memory "
              << percent(memory) << ", disk " << percent(disk) << ", compiled " << percent(compiled)
              << ")\n";
  }
  for (const cache::Stat stat : cache::k_all_stats) {
    std::string name(cache::to_string(stat));
    name.resize(std::max<std::size_t>(name.size() + 1, 28), ' ');
    std::cout << name << counters.get(stat) << "\n";
  }
  return 0;
}

int verify_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache verify", "Checks every entry as a lookup would (manifest, format, key, "
                               "salt text, object size and SHA-256).\nExits 1 if any entry is "
                               "bad, any file is orphaned or a directory stands in an entry's "
                               "place;\nwith --fix, if anything bad is left (in use by a writer, "
                               "not removable, or not a file).\nThe read-only site caches of "
                               "UWJIT_CACHE_SITE_DIR are checked too, never fixed.");
  spec.flag("--fix", "remove bad entries, orphans and stale temporaries")
      .flag("--json", "print the report as JSON");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  auto store = open_existing();
  auto sites = open_sites();
  // A site cache is read-only: checked as any, never fixed; what is wrong there stays wrong.
  bool sites_ok = true;
  nlohmann::json site_list = nlohmann::json::array();
  const auto check_sites = [&] {
    for (auto& site : sites) {
      nlohmann::json one = {{"dir", site.dir.string()}, {"usable", site.store.has_value()}};
      if (!site.store) {
        sites_ok = false;
        one["ok"] = false;
        one["problem"] = site.problem;
        std::cout << (args.has("--json")
                          ? ""
                          : site.dir.string() + "  SITE CACHE NOT USED: " + site.problem + "\n");
        site_list.push_back(std::move(one));
        continue;
      }
      const cache::VerifyReport checked = site.store->verify(cache::Fix::no);
      std::size_t bad = 0;
      nlohmann::json bad_entries = nlohmann::json::array();
      for (const auto& verdict : checked.entries) {
        if (verdict.problem) {
          ++bad;
          bad_entries.push_back({{"key", verdict.key.hex()},
                                 {"problem", std::string(cache::to_string(*verdict.problem))},
                                 {"detail", verdict.detail}});
          if (!args.has("--json")) {
            std::cout << verdict.key.hex() << "  BAD IN SITE CACHE " << site.dir.string() << "  "
                      << cache::to_string(*verdict.problem) << ": " << verdict.detail
                      << " (read-only: not fixed)\n";
          }
        }
      }
      sites_ok = sites_ok && checked.ok();
      one["ok"] = checked.ok();
      one["entries"] = checked.entries.size();
      one["bad"] = bad_entries;
      one["orphans"] = checked.orphans;
      one["foreign"] = checked.foreign;
      if (!args.has("--json")) {
        std::cout << "site cache " << site.dir.string() << ": " << checked.entries.size()
                  << " entries checked, " << bad << " bad, " << checked.orphans.size()
                  << " orphaned files (read-only)\n";
      }
      site_list.push_back(std::move(one));
    }
  };
  if (!store) {
    check_sites();
    if (args.has("--json")) {
      const auto none = nlohmann::json::array();
      std::cout << nlohmann::json{{"ok", sites_ok},    {"entries", none},
                                  {"orphans", none},   {"stale_temporaries", none},
                                  {"foreign", none},   {"removed", none},
                                  {"remaining", none}, {"site", site_list}}
                       .dump(2)
                << "\n";
    }
    return sites_ok ? 0 : 1;
  }
  const cache::VerifyReport report =
      store->verify(args.has("--fix") ? cache::Fix::yes : cache::Fix::no);
  std::size_t bad = 0;
  for (const auto& verdict : report.entries) {
    bad += verdict.problem ? 1 : 0;
  }
  if (args.has("--json")) {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& verdict : report.entries) {
      entries.push_back(
          {{"key", verdict.key.hex()},
           {"ok", !verdict.problem},
           {"problem",
            verdict.problem ? std::string(cache::to_string(*verdict.problem)) : std::string()},
           {"detail", verdict.detail},
           {"removed", verdict.removed}});
    }
    check_sites();
    std::cout << nlohmann::json{{"ok", report.ok() && sites_ok},
                                {"entries", entries},
                                {"orphans", report.orphans},
                                {"stale_temporaries", report.stale_temporaries},
                                {"foreign", report.foreign},
                                {"removed", report.removed},
                                {"remaining", report.remaining},
                                {"site", site_list}}
                     .dump(2)
              << "\n";
  } else {
    for (const auto& verdict : report.entries) {
      if (verdict.problem) {
        std::cout << verdict.key.hex() << "  BAD  " << cache::to_string(*verdict.problem) << ": "
                  << verdict.detail << (verdict.removed ? " (removed)" : "") << "\n";
      }
    }
    for (const auto& orphan : report.orphans) {
      std::cout << orphan << "  ORPHAN\n";
    }
    for (const auto& temporary : report.stale_temporaries) {
      std::cout << temporary << "  STALE TEMPORARY\n";
    }
    for (const auto& name : report.foreign) {
      std::cout << name << "  NOT A FILE (never removed)\n";
    }
    for (const auto& name : report.remaining) {
      std::cout << name << "  STILL BAD\n";
    }
    std::cout << report.entries.size() << " entries checked, " << bad << " bad, "
              << report.orphans.size() << " orphaned files";
    if (args.has("--fix")) {
      std::cout << ", " << report.removed.size() << " files removed";
    }
    std::cout << "\n";
    check_sites();
  }
  if (args.has("--fix")) {
    return report.remaining.empty() && sites_ok ? 0 : 1; // 0: what was wrong is gone
  }
  return report.ok() && sites_ok ? 0 : 1;
}

int prune_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache prune", "Evicts whole entries, least recently used first (every disk hit "
                              "refreshes an entry).");
  spec.option("--max-size", "SIZE", "trim the cache to 90 % of SIZE when it is larger, e.g. 500M")
      .option("--older-than", "AGE", "evict entries unused for longer than AGE, e.g. 7d, 12h")
      .flag("--dry-run", "say what would be evicted, delete nothing");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  cache::EvictBy by;
  try {
    if (const auto size = args.get("--max-size")) {
      by.max_size = env::parse_size("--max-size", *size);
    }
    if (const auto age = args.get("--older-than")) {
      by.older_than =
          std::chrono::seconds(static_cast<std::int64_t>(env::parse_seconds("--older-than", *age)));
    }
  } catch (const Error& error) {
    spec.fail(error.what());
  }
  if (!by.max_size && !by.older_than) {
    spec.fail("give --max-size SIZE or --older-than AGE");
  }
  auto store = open_existing();
  if (!store) {
    return 0;
  }
  const bool dry = args.has("--dry-run");
  const auto report = store->evict(by, dry ? cache::DryRun::yes : cache::DryRun::no);
  for (const auto& entry : report.evicted) {
    std::cout << (dry ? "would evict " : "evicted ") << entry.key.hex() << "  "
              << human_size(entry.bytes) << "  last used " << utc_text(entry.last_used) << "\n";
  }
  for (const auto& key : report.in_use) {
    std::cout << "kept " << key.hex() << " (being written)\n";
  }
  for (const auto& entry : report.larger_than_limit) {
    std::cerr << "uwjit: warning: entry " << entry.key.hex() << " alone ("
              << human_size(entry.bytes) << ") is larger than --max-size: a limit that small "
              << "keeps nothing of it\n";
  }
  std::cout << report.evicted.size() << (dry ? " entries would be evicted: " : " entries evicted: ")
            << human_size(report.size_before) << " -> " << human_size(report.size_after) << "\n";
  return 0;
}

int wipe_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache wipe", "Deletes every cache entry, lock, temporary and the counters. "
                             "Refuses a directory without\nuwjit's CACHEDIR.TAG; never deletes a "
                             "file that is not named like uwjit's,\nnor an entry a writer is "
                             "publishing (exit 1 then).");
  spec.flag("--dry-run", "list what would be deleted");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  auto store = open_existing();
  if (!store) {
    return 0;
  }
  const bool dry = args.has("--dry-run");
  const auto report = store->wipe(dry ? cache::DryRun::yes : cache::DryRun::no);
  if (dry) {
    for (const auto& name : report.removed) {
      std::cout << "would delete " << name << "\n";
    }
  }
  for (const auto& name : report.kept) {
    std::cout << "kept " << name << " (not a uwjit file)\n";
  }
  for (const auto& failure : report.failed) {
    std::cerr << "uwjit: cannot delete " << failure << "\n";
  }
  for (const auto& name : report.in_use) {
    std::cerr << "uwjit: kept " << name << ": a writer may be using it (run wipe again later)\n";
  }
  std::cout << report.removed.size() << (dry ? " files would be deleted (" : " files deleted (")
            << human_size(report.bytes) << ") in " << store->dir().string() << "\n";
  return report.failed.empty() && report.in_use.empty() ? 0 : 1;
}

} // namespace

int cache_command(const std::vector<std::string>& argv) {
  if (argv.empty() || argv.front() == "--help" || argv.front() == "-h") {
    (argv.empty() ? std::cerr : std::cout) << k_cache_help;
    return argv.empty() ? 2 : 0;
  }
  using Subcommand = int (*)(const std::vector<std::string>&);
  static constexpr std::pair<std::string_view, Subcommand> k_subcommands[] = {
      {"dir", dir_command},         {"list", list_command},       {"stats", stats_command},
      {"inspect", inspect_command}, {"explain", explain_command}, {"verify", verify_command},
      {"prune", prune_command},     {"wipe", wipe_command},
  };
  const std::string& sub = argv.front();
  for (const auto& [name, run] : k_subcommands) {
    if (name == sub) {
      return run({argv.begin() + 1, argv.end()});
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, run] : k_subcommands) {
    names.emplace_back(name);
  }
  throw UsageError(format("cache: unknown subcommand \"{}\"{}", sub, did_you_mean(sub, names)),
                   k_cache_help, "cache");
}

} // namespace uwjit::tools
