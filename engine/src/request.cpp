// The request logic: a kernel source to a loaded kernel through three tiers (this process's
// memory, the verified disk cache, a cold compile published under the key's lock), with one
// request per key in flight in this process (single flight).
#include "engine_impl.hpp"
#include "included_headers.hpp"
#include "nvptx.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/common/version.hpp>
#include <uwjit/engine/disassemble.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <tuple>

namespace uwjit::engine {

using detail::Clock;
using detail::Flavour;
using detail::k_nvptx_triple;
using detail::Loaded;
using detail::ms_since;
using detail::new_info;
using detail::slot_tables;

namespace {
// A short digest for log lines: two requests whose keys differ differ in the source digest, the
// salt digest or both.
std::string digest(std::string_view text) {
  return cache::sha256_hex(text).substr(0, 16);
}

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

// The compile error of a kernel a node wrote, in the node's terms: each diagnostic names the
// node and counts lines in the text the node wrote (body() or helpers()), with that line quoted;
// then where the failing source was dumped. Hand-written kernels keep their own lines.
Error describe_compile_failure(const codegen::KernelSource& source, const Error& error,
                               const std::optional<std::filesystem::path>& dump) {
  const auto& map = source.line_map();
  // The compiler counted positions in the compiled body (without its layout): first, positions
  // in the body as written.
  std::vector<CompileDiagnostic> mapped = error.diagnostics();
  std::vector<int> compiled_lines;
  for (CompileDiagnostic& d : mapped) {
    compiled_lines.push_back(d.line);
    if (d.section == codegen::k_buffer_name) {
      std::tie(d.line, d.column) = source.written_position(d.line, d.column);
    }
  }
  std::string where;
  if (dump) {
    where = format("the failing source is {}", dump->string());
    if (!map.empty()) {
      where += format(" (its line {} is the generated kernel's line 1)", source.body_first_line());
    }
  } else {
    where = "set UWJIT_DUMP_DIR to a directory to keep the failing source";
  }
  if (map.empty()) {
    return Error(ErrorKind::compile, source.written_positions(error.what()) + where,
                 std::move(mapped));
  }
  std::string message;
  for (std::size_t i = 0; i < mapped.size(); ++i) {
    CompileDiagnostic& d = mapped[i];
    const int written_line = d.line;
    const bool in_body = d.section == codegen::k_buffer_name;
    if (in_body) {
      if (const codegen::LineSpan* span = map.find(d.line)) {
        d.section = span->section;
        d.line = d.line - span->first + span->source_first;
      } else {
        d.section = "generated";
      }
    }
    std::string place = d.line > 0 ? format("{} line {}, column {}", d.section, d.line, d.column)
                                   : std::string("kernel");
    if (in_body && d.section == "generated") {
      place += format(" (written by the KernelWriter, not by the node; line {} of the "
                      "failing source)",
                      source.body_first_line() - 1 + compiled_lines[i]);
    }
    message += format("node \"{}\": {}: {}: {}\n", source.origin(), place, d.severity, d.message);
    if (in_body) {
      message += format("    {}\n", line_of(source.body(), written_line));
    }
  }
  message += format("node \"{}\": the kernel does not compile; {}", source.origin(), where);
  return Error(ErrorKind::compile, message, std::move(mapped));
}
} // namespace

namespace detail {

Flavour::Flavour(const CompileOptions& options, const Target& gpu) : compiler(options, gpu) {
  const TargetInfo& target = host_target();
  const bool cuda = gpu.is_cuda();
  salt.add("uwjit", k_version)
      .add("format", std::to_string(cache::k_entry_format))
      .add("abi", std::to_string(UWJIT_KERNEL_ABI_VERSION))
      .add("canonical", std::to_string(codegen::k_canonical_version))
      .add("llvm", target.llvm_version)
      .add("triple", cuda ? std::string(k_nvptx_triple) : target.triple)
      .add("cpu", cuda ? gpu.sm() : target.cpu)
      .add("features", cuda ? "+ptx" + std::string(k_ptx_isa) : join(target.features, ","))
      .add("opt", std::to_string(compiler.options().opt_level))
      .add("flags", compiler.flags())
      .add("pipeline", compiler.pipeline());
  if (cuda) {
    // The host's salt has no target component, so that host keys stay what they were; its
    // triple, CPU and features name the host.
    salt.add(std::string(cache::k_target_component), gpu.text())
        .add("ptx", std::string(k_ptx_isa))
        .add("libdevice", compiler.libdevice_digest().substr(0, 16));
  }
  salt_text = salt.text();
  salt_digest = digest(salt_text);
}

std::string Flavour::keyed_text(const codegen::KernelSource& source) const {
  const std::string headers = included_headers(source.body(), compiler.options().include_dirs);
  if (headers.empty()) {
    return source.canonical();
  }
  // A comment after the body: the text compiles as the body alone does.
  return source.canonical() + "/* uwjit included headers:\n" + headers + "*/\n";
}

cache::Key Flavour::key_of(const codegen::KernelSource& source) const {
  return cache::Key::of(keyed_text(source), salt);
}

std::vector<cache::SlotTable> slot_tables(const codegen::SlotTables& slots) {
  return {{"state_in", slots.state_in}, {"state_out", slots.state_out}, {"statics", slots.statics},
          {"extents", slots.extents},   {"integrals", slots.integrals}, {"params", slots.params}};
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

} // namespace detail

Engine::Impl::Impl(EngineOptions engine_options)
    // The first SHA-256 of a process fetches the digest (~1.5 ms): Flavour pays it here, not
    // in the first request.
    : options(std::move(engine_options)), base(options.compile), jit(Jit::shared()),
      dumps(options) {
  open_store();
}

void Engine::Impl::open_sites() {
  // One warning per directory and process: a job's many engines have one problem, not many.
  static std::mutex said_mutex;
  static std::set<std::string> said;
  for (const auto& dir : cache::resolve_site_locations()) {
    try {
      auto site = cache::Store::open_site(dir, stats);
      std::error_code same_error;
      if (store && std::filesystem::equivalent(site.dir(), store->dir(), same_error)) {
        continue; // the cache directory itself: already consulted, and writable
      }
      logger.debug("site cache {}", site.dir().string());
      sites.push_back(std::move(site));
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::io) {
        throw;
      }
      std::lock_guard guard(said_mutex);
      if (said.insert(dir.string()).second) {
        logger.warn("the site cache {} is not used: {}", dir.string(), error.what());
      }
    }
  }
}

void Engine::Impl::open_store() {
  if (options.disk_cache == DiskCache::off) {
    no_store_reason = "the disk cache is off (DiskCache::off)";
    return;
  }
  open_cache_dir();
  // Whatever became of the cache directory: a site cache serves a process whose own is refused.
  open_sites();
}

void Engine::Impl::open_cache_dir() {
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

Loaded Engine::Impl::load(const codegen::KernelSource& source, const cache::Key& key,
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
  dumps.debug_sources(source, key, info->entry);
  return Loaded{loaded.entry, std::move(loaded.code), std::move(info),
                std::make_shared<const std::vector<char>>(object.begin(), object.end())};
}

CompiledObject Engine::Impl::compile(const codegen::KernelSource& source, const cache::Key& key,
                                     KernelInfo& info) {
  const Flavour& f = flavour(source);
  const auto text = source.instantiate(info.entry, detail::module_name(key));
  auto object = [&] {
    try {
      return f.compiler.compile(text, dumps.listing(), detail::debug_file_name(key));
    } catch (const Error& error) {
      if (error.kind() != ErrorKind::compile || error.diagnostics().empty()) {
        throw;
      }
      throw describe_compile_failure(source, error, dumps.failed(source, key));
    }
  }();
  stats.add(cache::Stat::compiles);
  check_headers_unchanged(source, key, f);
  // Before anything is published or loaded: an entry the object does not define is the
  // request's error, not a damaged cache entry.
  check_entry(source, info.entry, object.bytes);
  info.compile = object.timings;
  info.warnings = source.written_positions(object.warnings);
  if (logger.enabled(log::Level::info)) {
    logger.info("compiled key={} origin={} source={} salt={} in {} ms (frontend {} ms, optimise "
                "{} ms, codegen {} ms)",
                key.hex(), source.origin(), digest(source.canonical()), f.salt_digest,
                object.timings.total_ms(), object.timings.frontend_ms, object.timings.optimise_ms,
                object.timings.codegen_ms);
  }
  dumps.compiled(source, key, object);
  return object;
}

// A header edited while the compile read it would publish an object under a key of other
// contents: the key is taken again after the compile, and the object is kept only if it is the
// same.
void Engine::Impl::check_headers_unchanged(const codegen::KernelSource& source,
                                           const cache::Key& key, const Flavour& f) {
  if (f.key_of(source) != key) {
    throw Error(ErrorKind::io,
                format("kernel \"{}\": a header it includes changed while it was compiled; "
                       "nothing was published or loaded: ask again",
                       source.origin()));
  }
}

// Throws the one error a wrong entry gets: it names the functions the object does define.
void Engine::Impl::check_entry(const codegen::KernelSource& source, const std::string& entry,
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

void Engine::Impl::publish_cold(const codegen::KernelSource& source, const cache::Key& key,
                                KernelInfo& info, const CompiledObject& object,
                                const cache::KeyLock& lock, const detail::Flavour& f) {
  if (lock.outcome() == cache::LockOutcome::timed_out) {
    logger.warn("key={}: another process held the lock for over {} ms (UWJIT_LOCK_TIMEOUT); "
                "compiled privately, not published",
                key.hex(), options.lock_timeout.count());
    info.publication = Publication::not_published;
    info.not_published_because =
        format("another process held the key's lock for over {} ms (UWJIT_LOCK_TIMEOUT)",
               options.lock_timeout.count());
  } else if (const auto outcome = publish(source, key, info, object, f); outcome.published()) {
    info.publication = Publication::published;
  } else {
    info.publication = Publication::not_published;
    info.not_published_because = outcome.reason;
  }
}

cache::PublishOutcome Engine::Impl::publish(const codegen::KernelSource& source,
                                            const cache::Key& key, const KernelInfo& info,
                                            const CompiledObject& object) {
  return publish(source, key, info, object, flavour(source));
}

cache::PublishOutcome Engine::Impl::publish(const codegen::KernelSource& source,
                                            const cache::Key& key, const KernelInfo& info,
                                            const CompiledObject& object,
                                            const detail::Flavour& f) {
  cache::Manifest manifest;
  manifest.salt = f.salt_text;
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
  auto outcome = store->publish(key, object.bytes, manifest, f.keyed_text(source));
  if (outcome.published()) {
    (void)store->maybe_evict(max_size);
  }
  return outcome;
}

// The disk tier and the cold compile, for the one request that owns this key in-process.
Loaded Engine::Impl::build(const codegen::KernelSource& source, const cache::Key& key) {
  const auto start = Clock::now();
  auto info = new_info(source, key, Tier::compiled);
  const auto tables = slot_tables(source.slots());
  if (store) {
    if (auto hit = try_disk(*store, source, key, tables, info, start)) {
      return std::move(*hit);
    }
  }
  if (auto hit = try_sites(source, key, tables, info, start)) {
    return std::move(*hit);
  }
  if (!store) {
    info->tier = Tier::compiled;
    const auto object = compile(source, key, *info);
    info->publication = Publication::not_published;
    info->not_published_because = no_store_reason + "; memory only";
    return load(source, key, object.bytes, std::move(info), start);
  }
  // Miss: compile under the key's lock, so that processes racing on one key compile once.
  cache::KeyLock lock = store->lock(key, options.lock_timeout);
  if (lock.acquired()) {
    // Whoever held the lock before us may have published it meanwhile.
    if (auto hit = try_disk(*store, source, key, tables, info, start)) {
      return std::move(*hit);
    }
  }
  info->tier = Tier::compiled;
  const auto object = compile(source, key, *info);
  publish_cold(source, key, *info, object, lock, flavour(source));
  lock.release();
  return load(source, key, object.bytes, std::move(info), start);
}

std::optional<Loaded> Engine::Impl::try_sites(const codegen::KernelSource& source,
                                              const cache::Key& key,
                                              const std::vector<cache::SlotTable>& tables,
                                              const std::shared_ptr<KernelInfo>& info,
                                              Clock::time_point start) {
  for (auto& site : sites) {
    if (auto hit = try_disk(site, source, key, tables, info, start)) {
      stats.add(cache::Stat::site_hits);
      return hit;
    }
  }
  return std::nullopt;
}

bool Engine::Impl::on_disk(const cache::Key& key, const cache::Salt& salt,
                           const std::vector<cache::SlotTable>& tables) {
  if (store && store->lookup(key, salt, tables).hit()) {
    return true;
  }
  return std::any_of(sites.begin(), sites.end(),
                     [&](cache::Store& site) { return site.lookup(key, salt, tables).hit(); });
}

std::optional<Loaded>
Engine::Impl::try_disk(cache::Store& from, const codegen::KernelSource& source,
                       const cache::Key& key, const std::vector<cache::SlotTable>& tables,
                       const std::shared_ptr<KernelInfo>& info, Clock::time_point start) {
  auto found = from.lookup(key, flavour(source).salt, tables);
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
  disk_info->served_from = from.dir().string();
  if (found.manifest) {
    // Replayed as the compile printed them, at the positions of this request's text.
    disk_info->warnings = source.written_positions(found.manifest->warnings);
  }
  try {
    auto loaded = load(source, key, found.object, disk_info, start);
    dumps.loaded_from_disk(source, key, found.object);
    return loaded;
  } catch (const Error& error) {
    // A verified object that does not link (e.g. a symbol this process lacks): compile.
    logger.warn("key={}: the cached object does not load ({}); compiling", key.hex(), error.what());
    return std::nullopt;
  }
}

// The three tiers for one request, with single-flight per key inside this process.
Loaded Engine::Impl::request(const codegen::KernelSource& source, const cache::Key& key) {
  const auto start = Clock::now();
  // What the key is made of, so that two processes' logs show why one key became another: the
  // source digest (SHA-256 of KEY.cpp) and the salt, component by component.
  if (logger.enabled(log::Level::debug)) {
    const Flavour& f = flavour(source);
    logger.debug("request key={} origin={} source={} salt={} salt_text={}", key.hex(),
                 source.origin(), digest(source.canonical()), f.salt_digest, f.salt_text);
  }
  auto [hit, built] = single_flight(loaded, key, [&] { return build(source, key); });
  if (built) {
    return hit;
  }
  if (const auto entry = source.entry_symbol(key.hex()); entry != hit.info->entry) {
    check_entry(source, entry, *hit.object);
  }
  hit.info = memory_hit(*hit.info, start);
  logger.debug("memory hit key={} origin={}", key.hex(), source.origin());
  return hit;
}

std::shared_ptr<KernelInfo> Engine::Impl::memory_hit(const KernelInfo& built,
                                                     Clock::time_point start) {
  stats.add(cache::Stat::memory_hits);
  auto info = std::make_shared<KernelInfo>(built);
  info->tier = Tier::memory;
  info->compile = {};
  info->warnings.clear();
  info->publication = Publication::not_needed;
  info->not_published_because.clear();
  info->load_ms = 0;
  info->request_ms = ms_since(start);
  return info;
}

// The kernel of `key` if this process has it loaded already (a finished request).
// The compiler and salt of a kernel: the engine's own unless the kernel carries options.
const Flavour& Engine::Impl::flavour(const codegen::KernelSource& source) {
  return flavour(source, Target::host());
}

// The compiler and salt of a kernel for `target`: the engine's own for the host unless the
// kernel carries options.
const Flavour& Engine::Impl::flavour(const codegen::KernelSource& source, const Target& target) {
  if (source.options().empty() && target.is_host()) {
    return base;
  }
  const std::string text = target.text() + '\n' + options_text(source.options());
  std::lock_guard lock(flavours_mutex);
  auto& slot = flavours[text];
  if (!slot) {
    slot =
        std::make_unique<Flavour>(with_kernel_options(options.compile, source.options()), target);
  }
  return *slot;
}
} // namespace uwjit::engine
