#include <uwjit/engine/engine.hpp>

#include <uwjit/cache/directory.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/common/version.hpp>
#include <uwjit/engine/disassemble.hpp>
#include <uwjit/engine/jit.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <mutex>

#include <unistd.h>

namespace uwjit::engine {

namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Loaded {
  uwjit_kernel_fn entry;
  std::shared_ptr<const void> code;
  std::shared_ptr<const KernelInfo> info;
  std::shared_ptr<const std::vector<char>> object; // kept to hand to other ranks
};

std::vector<cache::SlotTable> slot_tables(const codegen::SlotTables& slots) {
  return {{"state_in", slots.state_in},
          {"state_out", slots.state_out},
          {"statics", slots.statics},
          {"extents", slots.extents},
          {"integrals", slots.integrals}};
}

std::shared_ptr<KernelInfo> new_info(const codegen::KernelSource& source, const cache::Key& key,
                                     Tier tier) {
  auto info = std::make_shared<KernelInfo>();
  info->key = key.hex();
  info->entry = source.entry_symbol(key.hex());
  info->origin = source.origin();
  info->slots = source.slots();
  info->tier = tier;
  return info;
}

// Dumps and debug sources go through the atomic writer: processes (e.g. MPI ranks) writing the
// same kernel at once never leave a torn file for a reader such as gdb, and a symlink planted
// at the name is replaced, never followed. A failure never fails the request.
void write_dump(const std::filesystem::path& path, std::string_view text,
                const log::Logger& logger) {
  try {
    posix::write_file_atomically(path, text,
                                 {.mode = 0644, .durability = posix::Durability::buffered});
  } catch (const Error& e) {
    logger.warn("cannot write {}: {}", path.string(), e.what());
  }
}

std::string module_name(const cache::Key& key) {
  return "uwjit_mod_" + key.hex();
}

// The body's file name in a debug object's debug info, and of the file gdb shows for it.
std::string debug_file_name(const cache::Key& key) {
  return "uwjit_" + key.hex() + ".cpp";
}

// A short digest for log lines: two requests whose keys differ differ in the source digest, the
// salt digest or both.
std::string digest(std::string_view text) {
  return cache::sha256_hex(text).substr(0, 16);
}

// A kernel's compiler and the salt its keys are computed under: the engine's, or those of a
// kernel that carries its own options (codegen::KernelOptions).
struct Flavour {
  explicit Flavour(const CompileOptions& options) : compiler(options) {
    const TargetInfo& target = host_target();
    salt.add("uwjit", k_version)
        .add("format", std::to_string(cache::k_entry_format))
        .add("abi", std::to_string(UWJIT_KERNEL_ABI_VERSION))
        .add("llvm", target.llvm_version)
        .add("triple", target.triple)
        .add("cpu", target.cpu)
        .add("features", join(target.features, ","))
        .add("opt", std::to_string(compiler.options().opt_level))
        .add("flags", compiler.flags());
    salt_text = salt.text();
    salt_digest = digest(salt_text);
  }
  Compiler compiler;
  cache::Salt salt;
  std::string salt_text;
  std::string salt_digest;
};

// The map key of a kernel's options: one line per field.
std::string options_text(const codegen::KernelOptions& options) {
  std::string text = options.opt_level ? std::to_string(*options.opt_level) : "-";
  text += '\n';
  text += options.fp_contract ? codegen::to_string(*options.fp_contract) : "-";
  text += '\n';
  text += options.fast_math ? (*options.fast_math == codegen::FastMath::yes ? "1" : "0") : "-";
  for (const auto& define : options.defines) {
    text += '\n' + define;
  }
  return text;
}

std::string dump_stem(const std::string& origin, const cache::Key& key) {
  std::string stem;
  for (const char c : origin) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_';
    stem += plain ? c : '_';
  }
  return stem + "-" + key.hex();
}
} // namespace

EngineOptions EngineOptions::from_environment() {
  // Every variable, not only those read here, so that a bad one is refused whichever parts of
  // the library this process goes on to use (as `uwjit env` refuses it).
  env::vars::check_all();
  EngineOptions options;
  if (env::get_bool(env::vars::debug)) {
    options.compile.debug_info = DebugInfo::yes;
  }
  options.lock_timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(env::get_seconds(env::vars::lock_timeout) * 1000));
  if (const auto dir = env::get_path(env::vars::dump_dir)) {
    options.dump_dir = *dir;
  }
  return options;
}

struct Engine::Impl {
  explicit Impl(EngineOptions engine_options)
      // The first SHA-256 of a process fetches the digest (~1.5 ms): Flavour pays it here, not
      // in the first request.
      : options(std::move(engine_options)), base(options.compile), jit(Jit::shared()) {
    open_store();
    if (options.dump_dir) {
      std::error_code ec;
      std::filesystem::create_directories(*options.dump_dir, ec);
      if (ec) {
        logger.warn("UWJIT_DUMP_DIR {}: {}; no dumps", options.dump_dir->string(), ec.message());
        options.dump_dir.reset();
      }
    }
    if (options.compile.debug_info == DebugInfo::yes) {
      open_debug_source_dir();
    }
  }

  void open_debug_source_dir() {
    std::error_code ec;
    auto dir = options.debug_source_dir ? *options.debug_source_dir
               : options.dump_dir       ? *options.dump_dir
                                        : std::filesystem::current_path(ec);
    if (!ec) {
      std::filesystem::create_directories(dir, ec);
    }
    if (!ec && ::access(dir.c_str(), W_OK | X_OK) != 0) {
      ec = std::error_code(errno, std::generic_category());
    }
    if (ec) {
      logger.warn("debug sources: {}: {}; a debugger will not show kernel source lines",
                  dir.string(), ec.message());
      return;
    }
    const auto absolute = std::filesystem::absolute(dir, ec);
    debug_source_dir = ec ? dir : absolute;
    logger.info("debug sources of kernels go to {}", debug_source_dir->string());
  }

  // The files a debugger needs to show a debug object's lines: the body under the name its
  // debug info gives it (the placeholders replaced, as compiled; line markers start the body at
  // line 1) and the headers in front of it.
  void write_debug_sources(const codegen::KernelSource& source, const cache::Key& key,
                           const std::string& entry) {
    if (!debug_source_dir) {
      return;
    }
    std::call_once(debug_headers_written, [&] {
      write_dump(*debug_source_dir / "uwjit_kernel_abi.h", codegen::kernel_abi_text(), logger);
      write_dump(*debug_source_dir / "uwjit_kernel_prelude.h", codegen::kernel_prelude_text(),
                 logger);
    });
    const auto body = codegen::replace_all(
        codegen::replace_all(source.body(), codegen::k_entry_placeholder, entry),
        codegen::k_module_placeholder, module_name(key));
    write_dump(*debug_source_dir / debug_file_name(key), body, logger);
  }

  void open_store() {
    if (options.disk_cache == DiskCache::off) {
      no_store_reason = "the disk cache is off (DiskCache::off)";
      return;
    }
    std::optional<std::filesystem::path> dir = options.cache_dir;
    if (!dir) {
      const cache::CacheLocation location = cache::resolve_cache_location();
      logger.debug("cache directory: {} ({})", location.dir ? location.dir->string() : "none",
                   location.rule);
      dir = location.dir;
      if (!dir) {
        no_store_reason = "the disk cache is " + location.rule;
      }
    }
    if (!dir) {
      return;
    }
    max_size = cache::max_cache_size();
    try {
      store.emplace(cache::Store::open(*dir, stats));
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::io) {
        throw;
      }
      no_store_reason = error.what();
      // One warning per process: a host that makes many engines has one problem, not many.
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        logger.warn("the kernel cache is off for this process: {}", error.what());
      } else {
        logger.debug("the kernel cache is off for this engine: {}", error.what());
      }
    }
  }

  Loaded load(const codegen::KernelSource& source, const cache::Key& key,
              std::span<const char> object, std::shared_ptr<KernelInfo> info,
              Clock::time_point start) {
    const auto load_start = Clock::now();
    auto loaded = jit->load(object, info->entry);
    info->load_ms = ms_since(load_start);
    info->object_size = object.size();
    info->request_ms = ms_since(start);
    if (info->tier == Tier::disk && logger.enabled(log::Level::info)) {
      logger.info("disk hit key={} origin={} source={} salt={} loaded in {} ms", key.hex(),
                  source.origin(), digest(source.canonical()), flavour(source).salt_digest,
                  info->load_ms);
    }
    write_debug_sources(source, key, info->entry);
    return Loaded{loaded.entry, std::move(loaded.code), std::move(info),
                  std::make_shared<const std::vector<char>>(object.begin(), object.end())};
  }

  CompiledObject compile(const codegen::KernelSource& source, const cache::Key& key,
                         KernelInfo& info) {
    const Flavour& f = flavour(source);
    const auto text = source.instantiate(info.entry, module_name(key));
    auto object = f.compiler.compile(
        text, options.dump_dir ? Listing::ir_and_assembly : Listing::none, debug_file_name(key));
    stats.add(cache::Stat::compiles);
    // Before anything is published or loaded: an entry the object does not define is the
    // request's error, not a damaged cache entry.
    check_entry(source, info.entry, object.bytes);
    info.compile = object.timings;
    info.warnings = object.warnings;
    if (logger.enabled(log::Level::info)) {
      logger.info("compiled key={} origin={} source={} salt={} in {} ms (frontend {} ms, optimise "
                  "{} ms, codegen {} ms)",
                  key.hex(), source.origin(), digest(source.canonical()), f.salt_digest,
                  object.timings.total_ms(), object.timings.frontend_ms, object.timings.optimise_ms,
                  object.timings.codegen_ms);
    }
    if (options.dump_dir) {
      const auto stem = *options.dump_dir / dump_stem(source.origin(), key);
      write_dump(stem.string() + ".cpp", source.canonical(), logger);
      write_dump(stem.string() + ".ll", object.optimised_ir, logger);
      write_dump(stem.string() + ".s", object.assembly, logger);
    }
    return object;
  }

  // Throws the one error a wrong entry gets: it names the functions the object does define.
  void check_entry(const codegen::KernelSource& source, const std::string& entry,
                   std::span<const char> object) {
    const auto functions = defined_functions(object);
    if (std::find(functions.begin(), functions.end(), entry) != functions.end()) {
      return;
    }
    const std::string found = join(functions);
    throw Error(ErrorKind::compile,
                format("kernel entry \"{}\" (origin \"{}\"): the kernel defines no such "
                       "function; the functions it defines: {}. Nothing was published",
                       entry, source.origin(), found.empty() ? "none" : found));
  }

  cache::PublishOutcome publish(const codegen::KernelSource& source, const cache::Key& key,
                                const KernelInfo& info, const CompiledObject& object) {
    cache::Manifest manifest;
    manifest.salt = flavour(source).salt_text;
    manifest.entry = info.entry;
    manifest.slot_tables = slot_tables(source.slots());
    manifest.compile_ms = object.timings.total_ms();
    manifest.origin = source.origin();
    manifest.warnings = object.warnings;
    if (const auto& why = store->unwritable()) {
      // Said once, where the job's kernels are stored (rank 0, or a node's leader under MPI);
      // the store stays quiet about its failing locks and writes.
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        logger.warn("the kernel cache {} cannot be written ({}): kernels are read from it but "
                    "none is stored, so every job compiles again the kernels it does not find",
                    store->dir().string(), *why);
      }
    }
    auto outcome = store->publish(key, object.bytes, manifest, source.canonical());
    if (outcome.published()) {
      (void)store->maybe_evict(max_size);
    }
    return outcome;
  }

  // The disk tier and the cold compile, for the one request that owns this key in-process.
  Loaded build(const codegen::KernelSource& source, const cache::Key& key) {
    const auto start = Clock::now();
    auto info = new_info(source, key, Tier::compiled);
    if (!store) {
      info->tier = Tier::compiled;
      const auto object = compile(source, key, *info);
      info->publication = Publication::not_published;
      info->not_published_because = no_store_reason + "; memory only";
      return load(source, key, object.bytes, std::move(info), start);
    }
    const auto tables = slot_tables(source.slots());
    if (auto hit = try_disk(source, key, tables, info, start)) {
      return std::move(*hit);
    }
    // Miss: compile under the key's lock, so that processes racing on one key compile once.
    cache::KeyLock lock = store->lock(key, options.lock_timeout);
    if (lock.acquired()) {
      // Whoever held the lock before us may have published it meanwhile.
      if (auto hit = try_disk(source, key, tables, info, start)) {
        return std::move(*hit);
      }
    }
    info->tier = Tier::compiled;
    const auto object = compile(source, key, *info);
    if (lock.outcome() == cache::LockOutcome::timed_out) {
      logger.warn("key={}: another process held the lock for over {} ms (UWJIT_LOCK_TIMEOUT); "
                  "compiled privately, not published",
                  key.hex(), options.lock_timeout.count());
      info->publication = Publication::not_published;
      info->not_published_because =
          format("another process held the key's lock for over {} ms (UWJIT_LOCK_TIMEOUT)",
                 options.lock_timeout.count());
    } else if (const auto outcome = publish(source, key, *info, object); outcome.published()) {
      info->publication = Publication::published;
    } else {
      info->publication = Publication::not_published;
      info->not_published_because = outcome.reason;
    }
    lock.release();
    return load(source, key, object.bytes, std::move(info), start);
  }

  std::optional<Loaded> try_disk(const codegen::KernelSource& source, const cache::Key& key,
                                 const std::vector<cache::SlotTable>& tables,
                                 const std::shared_ptr<KernelInfo>& info, Clock::time_point start) {
    auto found = store->lookup(key, flavour(source).salt, tables);
    if (!found.hit()) {
      return std::nullopt;
    }
    if (found.manifest && found.manifest->entry != info->entry) {
      // The same source asked for under another entry name: the name is wrong, the cache
      // entry is sound. Say so once, without warning of damage or compiling again.
      check_entry(source, info->entry, found.object);
    }
    auto disk_info = std::make_shared<KernelInfo>(*info);
    disk_info->tier = Tier::disk;
    if (found.manifest) {
      disk_info->warnings = found.manifest->warnings; // replayed, as the compile printed them
    }
    try {
      auto loaded = load(source, key, found.object, disk_info, start);
      if (options.dump_dir) {
        const auto stem = *options.dump_dir / dump_stem(source.origin(), key);
        write_dump(stem.string() + ".cpp", source.canonical(), logger);
        write_dump(stem.string() + ".s", disassemble(found.object), logger);
      }
      return loaded;
    } catch (const Error& error) {
      // A verified object that does not link (e.g. a symbol this process lacks): compile.
      logger.warn("key={}: the cached object does not load ({}); compiling", key.hex(),
                  error.what());
      return std::nullopt;
    }
  }

  // The three tiers for one request, with single-flight per key inside this process.
  Loaded request(const codegen::KernelSource& source, const cache::Key& key) {
    const auto start = Clock::now();
    // What the key is made of, so that two processes' logs show why one key became another: the
    // source digest (SHA-256 of KEY.cpp) and the salt, component by component.
    if (logger.enabled(log::Level::debug)) {
      const Flavour& f = flavour(source);
      logger.debug("request key={} origin={} source={} salt={} salt_text={}", key.hex(),
                   source.origin(), digest(source.canonical()), f.salt_digest, f.salt_text);
    }
    std::shared_future<Loaded> pending;
    std::promise<Loaded> promise;
    bool owner = false;
    {
      std::lock_guard lock(mutex);
      auto [slot, inserted] = loaded.try_emplace(key);
      if (inserted) {
        slot->second = promise.get_future().share();
        owner = true;
      }
      pending = slot->second;
    }
    if (owner) {
      try {
        promise.set_value(build(source, key));
      } catch (...) {
        // Waiters get the same error; the slot goes, so a later request tries again.
        promise.set_exception(std::current_exception());
        std::lock_guard lock(mutex);
        loaded.erase(key);
        throw;
      }
      return pending.get();
    }
    Loaded hit = pending.get();
    if (const auto entry = source.entry_symbol(key.hex()); entry != hit.info->entry) {
      check_entry(source, entry, *hit.object);
    }
    stats.add(cache::Stat::memory_hits);
    auto info = std::make_shared<KernelInfo>(*hit.info);
    info->tier = Tier::memory;
    info->compile = {};
    info->warnings.clear();
    info->publication = Publication::not_needed;
    info->not_published_because.clear();
    info->load_ms = 0;
    info->request_ms = ms_since(start);
    logger.debug("memory hit key={} origin={}", key.hex(), source.origin());
    hit.info = std::move(info);
    return hit;
  }

  // The kernel of `key` if this process has it loaded already (a finished request).
  std::optional<Loaded> in_memory(const cache::Key& key) {
    std::lock_guard lock(mutex);
    const auto slot = loaded.find(key);
    if (slot == loaded.end() ||
        slot->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return std::nullopt;
    }
    try {
      return slot->second.get();
    } catch (...) {
      return std::nullopt;
    }
  }

  std::vector<Kernel> collective(std::span<const codegen::KernelSource> sources, comm::Comm& comm);
  Loaded adopt(const codegen::KernelSource& source, const cache::Key& key,
               const std::string& object, const KernelInfo& root_info, comm::Comm& comm);

  // The compiler and salt of a kernel: the engine's own unless the kernel carries options.
  const Flavour& flavour(const codegen::KernelSource& source) {
    if (source.options().empty()) {
      return base;
    }
    const std::string text = options_text(source.options());
    std::lock_guard lock(flavours_mutex);
    auto& slot = flavours[text];
    if (!slot) {
      slot = std::make_unique<Flavour>(with_kernel_options(options.compile, source.options()));
    }
    return *slot;
  }

  EngineOptions options;
  Flavour base;
  std::mutex flavours_mutex;
  std::map<std::string, std::unique_ptr<Flavour>> flavours; // by options_text
  std::shared_ptr<Jit> jit;
  std::string no_store_reason; // why there is no store, when there is none
  std::optional<std::filesystem::path> debug_source_dir;
  std::once_flag debug_headers_written;
  cache::Stats stats;
  std::optional<cache::Store> store;
  std::uint64_t max_size = cache::k_default_max_cache_size;
  log::Logger logger = log::get("uwjit.engine");
  std::mutex mutex;
  // One slot per key: the first request fills it, later ones share the result (single-flight).
  std::map<cache::Key, std::shared_future<Loaded>> loaded;
};

namespace {

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<std::string> numbers;
  for (const int r : ranks) {
    numbers.push_back(std::to_string(r));
  }
  return join(numbers, ",");
}

// The first line where two texts differ (1-based), and that line in each.
struct LineDifference {
  std::size_t line = 0;
  std::string a, b;
};

LineDifference first_difference(const std::string& a, const std::string& b) {
  const auto lines_a = split(a, '\n');
  const auto lines_b = split(b, '\n');
  for (std::size_t i = 0; i < std::max(lines_a.size(), lines_b.size()); ++i) {
    const std::string la = i < lines_a.size() ? lines_a[i] : "(end of source)";
    const std::string lb = i < lines_b.size() ? lines_b[i] : "(end of source)";
    if (la != lb) {
      return {i + 1, la, lb};
    }
  }
  return {};
}

// The salt components in which rank `r`'s salt differs from rank 0's, e.g.
// `"opt" is "3" on rank 0, "2" on rank 1`.
std::string salt_difference(const std::string& root, const std::string& other, int r) {
  const auto a = cache::Salt::parse(root);
  const auto b = cache::Salt::parse(other);
  if (!a || !b) {
    return format("\"{}\" on rank 0, \"{}\" on rank {}", root, other, r);
  }
  std::string out;
  auto add = [&out](const std::string& text) { out += (out.empty() ? "" : ", ") + text; };
  for (const auto& [name, value] : a->components()) {
    const auto theirs = b->get(name);
    if (!theirs) {
      add(format("\"{}\" only on rank 0", name));
    } else if (*theirs != value) {
      add(format("\"{}\" is \"{}\" on rank 0, \"{}\" on rank {}", name, value, *theirs, r));
    }
  }
  for (const auto& [name, value] : b->components()) {
    if (!a->get(name)) {
      add(format("\"{}\" only on rank {}", name, r));
    }
  }
  return out.empty() ? "its components are in another order" : "component " + out;
}

} // namespace

std::vector<Kernel> Engine::Impl::collective(std::span<const codegen::KernelSource> sources,
                                             comm::Comm& comm) {
  // 1. Every rank states its keys and which kernels it holds already; one all-gather.
  std::vector<cache::Key> keys;
  std::string mine;
  for (const auto& source : sources) {
    keys.push_back(cache::Key::of(source.canonical(), flavour(source).salt));
    mine += (mine.empty() ? "" : ",") + keys.back().hex() + (in_memory(keys.back()) ? "+" : "-");
  }
  const std::vector<std::string> all = comm.all_gather(mine);

  // 2. Key agreement: the same verdict on every rank, from the same gathered text.
  std::vector<std::vector<std::string>> per_rank;
  for (const auto& text : all) {
    per_rank.push_back(text.empty() ? std::vector<std::string>{} : split(text, ','));
  }
  std::optional<std::size_t> differing;
  for (int r = 1; r < comm.size() && !differing; ++r) {
    if (per_rank[r].size() != per_rank[0].size()) {
      throw Error(ErrorKind::collective,
                  format("collective kernel request: rank {} asks for {} kernels, rank 0 for {}", r,
                         per_rank[r].size(), per_rank[0].size()));
    }
    for (std::size_t i = 0; i < per_rank[0].size(); ++i) {
      if (per_rank[r][i].substr(0, 16) != per_rank[0][i].substr(0, 16)) {
        differing = differing ? std::min(*differing, i) : i;
      }
    }
  }
  if (differing) {
    const std::size_t i = *differing;
    // Every rank takes part, as every rank reached the same verdict.
    const std::vector<std::string> texts = comm.all_gather(sources[i].canonical());
    const std::vector<std::string> salts = comm.all_gather(flavour(sources[i]).salt_text);
    std::map<std::string, std::vector<int>> groups; // key → ranks
    for (int r = 0; r < comm.size(); ++r) {
      groups[per_rank[r][i].substr(0, 16)].push_back(r);
    }
    std::string message = format("ranks disagree on kernel {} of {} (origin \"{}\"):", i + 1,
                                 sources.size(), sources[i].origin());
    for (const auto& [key, ranks] : groups) {
      message += format(" ranks {} have key {};", rank_list(ranks), key);
    }
    const std::string& reference = texts[0];
    for (const auto& [key, ranks] : groups) {
      if (ranks.front() == 0) {
        continue;
      }
      const int r = ranks.front();
      if (texts[r] != reference) {
        const auto diff = first_difference(reference, texts[r]);
        message += format(" rank {} first differs from rank 0 at line {} of the canonical "
                          "source: rank 0 has `{}`, rank {} has `{}`;",
                          r, diff.line, diff.a, r, diff.b);
      }
      if (salts[r] != salts[0]) {
        message += format(" rank {} has {} salt than rank 0 ({});", r,
                          texts[r] == reference ? "the same source but another" : "another",
                          salt_difference(salts[0], salts[r], r));
      }
    }
    message += " each distinct source is written to mismatch/KEY.cpp in the cache directory";
    if (store) {
      std::error_code ec;
      const auto dir = store->dir() / "mismatch";
      std::filesystem::create_directories(dir, ec);
      // Not through a symlink planted in the cache directory.
      if (std::filesystem::is_directory(std::filesystem::symlink_status(dir, ec))) {
        for (const auto& [key, ranks] : groups) {
          write_dump(dir / (key + ".cpp"), texts[ranks.front()], logger);
        }
      }
    }
    logger.error("{}", message);
    throw Error(ErrorKind::collective, message);
  }

  // 3. Which kernels some rank lacks: known alike on every rank.
  std::vector<bool> needed(sources.size(), false);
  bool any_needed = false;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    for (int r = 0; r < comm.size(); ++r) {
      needed[i] = needed[i] || per_rank[r][i].back() == '-';
    }
    any_needed = any_needed || needed[i];
  }
  std::vector<Kernel> out;
  if (!any_needed) {
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const Loaded hit = request(sources[i], keys[i]);
      out.emplace_back(hit.entry, hit.code, hit.info);
    }
    return out;
  }

  // 4. Rank 0 gets every needed kernel (memory, disk or compile, in parallel) and broadcasts
  //    each outcome; an error is caught and broadcast, never thrown before the broadcast.
  std::string payload;
  std::vector<std::optional<Loaded>> fetched(sources.size()); // rank 0's own results
  if (comm.rank() == 0) {
    std::vector<std::future<Loaded>> pending(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (needed[i]) {
        pending[i] = std::async(std::launch::async, [this, &sources, &keys, i] {
          return request(sources[i], keys[i]);
        });
      }
    }
    // The payload: per needed kernel, in request order, either the object and what it cost,
    // or the error every rank must raise.
    ByteWriter writer;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (!needed[i]) {
        continue;
      }
      try {
        const Loaded& got = fetched[i].emplace(pending[i].get());
        writer.u64(0);
        writer.u64(static_cast<std::uint64_t>(got.info->tier));
        writer.f64(got.info->compile.frontend_ms);
        writer.f64(got.info->compile.optimise_ms);
        writer.f64(got.info->compile.codegen_ms);
        writer.str(std::string_view(got.object->data(), got.object->size()));
      } catch (const Error& error) {
        writer.u64(1);
        writer.u64(static_cast<std::uint64_t>(error.kind()));
        writer.str(error.what());
      } catch (const std::exception& error) {
        writer.u64(1);
        writer.u64(static_cast<std::uint64_t>(ErrorKind::internal));
        writer.str(error.what());
      }
    }
    payload = std::move(writer.bytes());
  }
  payload = comm.broadcast(std::move(payload), 0);

  // 5. Every rank reads the same outcomes: the first error is raised everywhere alike.
  ByteReader reader(payload, "collective kernel request payload");
  std::vector<std::optional<std::pair<KernelInfo, std::string>>> received(sources.size());
  std::optional<Error> failure;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!needed[i]) {
      continue;
    }
    if (reader.u64() != 0) {
      const auto kind = static_cast<ErrorKind>(reader.u64());
      std::string message = reader.str();
      if (!failure) {
        failure.emplace(kind, message);
      }
      continue;
    }
    KernelInfo info;
    info.tier = static_cast<Tier>(reader.u64());
    info.compile.frontend_ms = reader.f64();
    info.compile.optimise_ms = reader.f64();
    info.compile.codegen_ms = reader.f64();
    received[i].emplace(std::move(info), reader.str());
  }
  if (failure) {
    throw *failure;
  }
  // 6. Every rank loads what it received; a load failing on some ranks fails on every rank.
  comm::together(comm, [&] {
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (fetched[i]) {
        out.emplace_back(fetched[i]->entry, fetched[i]->code, fetched[i]->info);
        continue;
      }
      if (!needed[i] || in_memory(keys[i])) {
        const Loaded hit = request(sources[i], keys[i]);
        out.emplace_back(hit.entry, hit.code, hit.info);
        continue;
      }
      const Loaded got = adopt(sources[i], keys[i], received[i]->second, received[i]->first, comm);
      out.emplace_back(got.entry, got.code, got.info);
    }
  });
  return out;
}

// Loads an object received from rank 0, as this process's copy of `key`; a node leader also
// publishes it to its node's cache when that lacks it (node-local cache directories).
Loaded Engine::Impl::adopt(const codegen::KernelSource& source, const cache::Key& key,
                           const std::string& object, const KernelInfo& root_info,
                           comm::Comm& comm) {
  const auto start = Clock::now();
  auto info = new_info(source, key, Tier::received);
  Loaded got = load(source, key, std::span(object.data(), object.size()), info, start);
  {
    std::lock_guard lock(mutex);
    std::promise<Loaded> done;
    done.set_value(got);
    loaded.insert_or_assign(key, done.get_future().share());
  }
  if (store && comm.node_rank() == 0 &&
      !store->lookup(key, flavour(source).salt, slot_tables(source.slots())).hit()) {
    cache::KeyLock lock = store->lock(key, options.lock_timeout);
    if (lock.outcome() != cache::LockOutcome::timed_out) {
      CompiledObject compiled;
      compiled.bytes.assign(object.begin(), object.end());
      compiled.timings = root_info.compile;
      publish(source, key, *info, compiled);
    }
  }
  return got;
}

Engine::Engine() : Engine(EngineOptions::from_environment()) {}

namespace {
// An engine refuses every bad variable up front, also when its options were not read from the
// environment: it goes on to read several (log level, cache, trust) at different moments.
EngineOptions checked(EngineOptions options) {
  env::vars::check_all();
  return options;
}
} // namespace

Engine::Engine(EngineOptions options)
    : m_impl(std::make_unique<Impl>(checked(std::move(options)))) {}

Engine::~Engine() {
  if (m_impl->store) {
    m_impl->store->flush_stats(m_impl->stats);
  }
}

const cache::Salt& Engine::salt() const noexcept {
  return m_impl->base.salt;
}

const cache::Salt& Engine::salt_of(const codegen::KernelSource& source) const {
  return m_impl->flavour(source).salt;
}

const Compiler& Engine::compiler() const noexcept {
  return m_impl->base.compiler;
}

cache::StatsSnapshot Engine::stats() const {
  return m_impl->stats.snapshot();
}

std::optional<std::filesystem::path> Engine::cache_dir() const {
  if (m_impl->store) {
    return m_impl->store->dir();
  }
  return std::nullopt;
}

cache::Key Engine::key_of(const codegen::KernelSource& source) const {
  return cache::Key::of(source.canonical(), m_impl->flavour(source).salt);
}

Kernel Engine::kernel(const codegen::KernelSource& source) {
  const Loaded loaded = m_impl->request(source, key_of(source));
  return Kernel(loaded.entry, loaded.code, loaded.info);
}

std::vector<Kernel> Engine::kernels(std::span<const codegen::KernelSource> sources) {
  std::vector<std::future<Loaded>> pending;
  for (const auto& source : sources) {
    pending.push_back(std::async(
        std::launch::async, [this, &source] { return m_impl->request(source, key_of(source)); }));
  }
  std::vector<Kernel> out;
  std::exception_ptr failure;
  for (auto& future : pending) {
    try {
      const Loaded loaded = future.get();
      out.emplace_back(loaded.entry, loaded.code, loaded.info);
    } catch (...) {
      failure = failure ? failure : std::current_exception();
    }
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  return out;
}

Kernel Engine::kernel(const codegen::KernelSource& source, comm::Comm& comm) {
  return kernels(std::span(&source, 1), comm).front();
}

std::vector<Kernel> Engine::kernels(std::span<const codegen::KernelSource> sources,
                                    comm::Comm& comm) {
  return m_impl->collective(sources, comm);
}

} // namespace uwjit::engine
