#include "entry_names.hpp"

#include <array>

namespace uwjit::cache::names {

namespace {
constexpr std::array<std::pair<std::string_view, FileKind>, 6> k_entry_suffixes{{
    {".o", FileKind::object},
    {".ptx", FileKind::object},
    {".cubin", FileKind::binary},
    {".json", FileKind::manifest},
    {".cpp", FileKind::source},
    {".lock", FileKind::lock},
}};

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

bool is_uwjit_tag(std::string_view text) {
  // The line that names uwjit, not the whole text, so that a later wording still counts.
  return text.starts_with(k_tag_signature) &&
         text.find("\n# This file is a cache directory tag created by uwjit") !=
             std::string_view::npos;
}

Ownership ownership_of(int dir_fd) {
  auto marked = [dir_fd] {
    std::string text;
    return posix::read_file_at(dir_fd, std::string(k_tag), 4096, text).error == 0 &&
           is_uwjit_tag(text);
  };
  if (marked()) {
    return Ownership::ours;
  }
  int error = 0;
  const auto listed = posix::list_names(dir_fd, error);
  if (!listed) {
    return Ownership::foreign;
  }
  bool others = false;
  for (const auto& name : *listed) {
    // Another process may have marked the directory since we looked: ask the tag again.
    if (name == k_tag && marked()) {
      return Ownership::ours;
    }
    others = others || !name.starts_with(k_temporary_prefix);
  }
  return others ? Ownership::foreign : Ownership::empty;
}

std::string object(const Key& key) {
  return key.hex() + ".o";
}
std::string object(const Key& key, std::string_view salt_text) {
  return target_of(salt_text).starts_with("cuda:") ? key.hex() + ".ptx" : object(key);
}
std::array<std::string, 5> entry_files(const Key& key) {
  return {manifest(key), object(key), key.hex() + ".ptx", binary(key), source(key)};
}
std::string binary(const Key& key) {
  return key.hex() + ".cubin";
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

} // namespace uwjit::cache::names
