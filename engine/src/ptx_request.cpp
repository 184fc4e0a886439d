// The request logic of a GPU target's PTX: the same three tiers as a host kernel's (this
// process's memory, the verified disk cache, a compile published under the key's lock) with
// single flight per key, but nothing is loaded: the PTX text is the result.
#include "engine_impl.hpp"
#include "nvptx.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>

namespace uwjit::engine {

using detail::Clock;
using detail::ms_since;
using detail::new_info;
using detail::Ptx;
using detail::slot_tables;

namespace {

// The one error a wrong GPU entry gets: what the PTX defines, and how a kernel is declared.
void check_ptx_entry(const codegen::KernelSource& source, const std::string& entry,
                     const Target& target, std::string_view ptx) {
  const auto entries = detail::ptx_entries(ptx);
  if (std::find(entries.begin(), entries.end(), entry) != entries.end()) {
    return;
  }
  const auto functions = detail::ptx_functions(ptx);
  if (std::find(functions.begin(), functions.end(), entry) != functions.end()) {
    throw Error(ErrorKind::compile,
                format("kernel entry \"{}\" (origin \"{}\"): on {} it is a device function, not "
                       "a GPU kernel; declare it extern \"C\" __attribute__((nvptx_kernel)) void. "
                       "Nothing was published",
                       entry, source.origin(), target.text()));
  }
  const std::string found = join(entries);
  throw Error(ErrorKind::compile,
              format("kernel entry \"{}\" (origin \"{}\"): the kernel defines no such GPU kernel "
                     "on {}; the kernels it defines: {}. Nothing was published",
                     entry, source.origin(), target.text(), found.empty() ? "none" : found));
}

std::shared_ptr<const std::string> text_of(std::span<const char> bytes) {
  return std::make_shared<const std::string>(bytes.begin(), bytes.end());
}

} // namespace

std::optional<Ptx> Engine::Impl::try_sites_ptx(const codegen::KernelSource& source,
                                               const cache::Key& key, const Target& target,
                                               const std::shared_ptr<KernelInfo>& info,
                                               Clock::time_point start) {
  for (auto& site : sites) {
    if (auto hit = try_disk_ptx(site, source, key, target, info, start)) {
      stats.add(cache::Stat::site_hits);
      return hit;
    }
  }
  return std::nullopt;
}

std::optional<Ptx> Engine::Impl::try_disk_ptx(cache::Store& from,
                                              const codegen::KernelSource& source,
                                              const cache::Key& key, const Target& target,
                                              const std::shared_ptr<KernelInfo>& info,
                                              Clock::time_point start) {
  auto found = from.lookup(key, flavour(source, target).salt, slot_tables(source.slots()));
  if (!found.hit()) {
    return std::nullopt;
  }
  const std::string_view text(found.object.data(), found.object.size());
  check_ptx_entry(source, info->entry, target, text);
  auto disk_info = std::make_shared<KernelInfo>(*info);
  disk_info->tier = Tier::disk;
  disk_info->served_from = from.dir().string();
  if (found.manifest) {
    // Replayed as the compile printed them, at the positions of this request's text.
    disk_info->warnings = source.written_positions(found.manifest->warnings);
  }
  disk_info->object_size = found.object.size();
  disk_info->request_ms = ms_since(start);
  logger.info("disk hit key={} origin={} target={}", key.hex(), source.origin(), target.text());
  return Ptx{text_of(found.object), std::move(disk_info)};
}

Ptx Engine::Impl::build_ptx(const codegen::KernelSource& source, const cache::Key& key,
                            const Target& target) {
  const auto start = Clock::now();
  const detail::Flavour& f = flavour(source, target);
  auto info = new_info(source, key, Tier::compiled);
  std::optional<cache::KeyLock> lock;
  if (store) {
    if (auto hit = try_disk_ptx(*store, source, key, target, info, start)) {
      return std::move(*hit);
    }
  }
  if (auto hit = try_sites_ptx(source, key, target, info, start)) {
    return std::move(*hit);
  }
  if (store) {
    // Miss: compile under the key's lock, so that processes racing on one key compile once.
    lock.emplace(store->lock(key, options.lock_timeout));
    if (lock->acquired()) {
      if (auto hit = try_disk_ptx(*store, source, key, target, info, start)) {
        return std::move(*hit);
      }
    }
  }
  const auto text = source.instantiate(info->entry, detail::module_name(key));
  const auto object = f.compiler.compile(text, dumps.listing());
  stats.add(cache::Stat::compiles);
  check_headers_unchanged(source, key, f);
  check_ptx_entry(source, info->entry, target,
                  std::string_view(object.bytes.data(), object.bytes.size()));
  info->compile = object.timings;
  info->warnings = source.written_positions(object.warnings);
  info->object_size = object.bytes.size();
  logger.info("compiled key={} origin={} target={} in {} ms (frontend {} ms, optimise {} ms, "
              "codegen {} ms)",
              key.hex(), source.origin(), target.text(), object.timings.total_ms(),
              object.timings.frontend_ms, object.timings.optimise_ms, object.timings.codegen_ms);
  dumps.compiled(source, key, object);
  if (!store) {
    info->publication = Publication::not_published;
    info->not_published_because = no_store_reason + "; memory only";
  } else {
    publish_cold(source, key, *info, object, *lock, f);
  }
  if (lock) {
    lock->release();
  }
  info->request_ms = ms_since(start);
  return Ptx{text_of(object.bytes), std::move(info)};
}

Ptx Engine::Impl::request_ptx(const codegen::KernelSource& source, const cache::Key& key,
                              const Target& target) {
  const auto start = Clock::now();
  auto [hit, built] =
      single_flight(ptx_loaded, key, [&] { return build_ptx(source, key, target); });
  if (built) {
    return hit;
  }
  if (const auto entry = source.entry_symbol(key.hex()); entry != hit.info->entry) {
    check_ptx_entry(source, entry, target, *hit.text);
  }
  hit.info = memory_hit(*hit.info, start);
  logger.debug("memory hit key={} origin={} target={}", key.hex(), source.origin(), target.text());
  return hit;
}

} // namespace uwjit::engine
