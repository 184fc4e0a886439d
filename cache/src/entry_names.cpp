#include "entry_names.hpp"

#include <uwjit/common/format.hpp>

#include <unistd.h>

#include <array>
#include <atomic>
#include <random>

namespace uwjit::cache::names {

namespace {
constexpr std::array<std::pair<std::string_view, FileKind>, 4> k_entry_suffixes{{
    {".o", FileKind::object},
    {".json", FileKind::manifest},
    {".cpp", FileKind::source},
    {".lock", FileKind::lock},
}};

// Unique among writers: the pid separates processes, the counter separates calls, and the random
// part separates a process from an earlier one that had the same pid (a killed writer's leftover).
std::uint64_t next_random() {
  static const std::uint64_t seed = [] {
    std::random_device device;
    return (std::uint64_t{device()} << 32) ^ device();
  }();
  static std::atomic<std::uint64_t> counter{0};
  // splitmix64: spreads seed + counter over all bits.
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (counter.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
} // namespace

Classified classify(std::string_view name) {
  if (name.starts_with(k_temporary_prefix)) {
    return {FileKind::temporary, std::nullopt};
  }
  if (name == k_tag) {
    return {FileKind::tag, std::nullopt};
  }
  if (name == k_stats || name == k_stats_lock || name == k_evict_lock || name == k_cleanup_stamp) {
    return {FileKind::housekeeping, std::nullopt};
  }
  for (const auto& [suffix, kind] : k_entry_suffixes) {
    if (name.size() == 16 + suffix.size() && name.ends_with(suffix)) {
      if (auto key = Key::parse(name.substr(0, 16))) {
        return {kind, std::move(key)};
      }
    }
  }
  return {FileKind::other, std::nullopt};
}

std::string object(const Key& key) {
  return key.hex() + ".o";
}
std::string manifest(const Key& key) {
  return key.hex() + ".json";
}
std::string source(const Key& key) {
  return key.hex() + ".cpp";
}
std::string lock(const Key& key) {
  return key.hex() + ".lock";
}

std::string temporary(std::string_view stem, std::string_view ext) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::uint64_t bits = next_random();
  std::string random(16, '0');
  for (auto& digit : random) {
    digit = k_hex[bits & 0xF];
    bits >>= 4;
  }
  return format("{}{}.{}.{}.{}", k_temporary_prefix, stem, ::getpid(), random, ext);
}

} // namespace uwjit::cache::names
