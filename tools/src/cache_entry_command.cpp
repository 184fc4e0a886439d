// uwjit cache inspect and explain: one entry shown, or two compared, from files anyone who can
// write the cache could have edited (every control byte is shown as \xHH).
#include "cache_access.hpp"
#include "text.hpp"

#include <uwjit/cache/manifest.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/engine/disassemble.hpp>

#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>

namespace uwjit::tools {

int inspect_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache inspect", "Shows one entry's manifest, found by a unique key prefix.");
  spec.flag("--source", "print the stored canonical source (the text that was hashed; a control "
                        "byte other than a newline or tab, never in a real one, as \\xHH)")
      .flag("--asm", "disassemble the stored object (after the source, with --source), jump and "
                     "call targets as addresses with symbol names; a GPU entry's PTX as stored")
      .flag("--json", "print the manifest as one JSON object (with --source and --asm, its "
                      "\"source\" and \"asm\" as strings too)")
      .positional("KEY-PREFIX", "the first hex digits of a key");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  check_prefix(spec, args.positional().at(0));
  auto store = open_existing();
  if (!store) {
    throw Error(ErrorKind::usage, "the cache is empty");
  }
  const cache::Key key = resolve_prefix(*store, args.positional().at(0));
  const auto manifest = store->read_manifest(key);
  std::optional<std::string> source;
  if (args.has("--source")) {
    source = store->read_source(key);
    if (!source) {
      throw Error(ErrorKind::io, format("entry {}: its source file is missing", key.hex()));
    }
  }
  std::optional<std::string> listing;
  if (args.has("--asm")) {
    // Through the store: never follows a symlink planted in the object's place.
    const auto object = store->read_object(key);
    if (!object || object->empty()) {
      throw Error(ErrorKind::io, format("entry {}: its object file cannot be read", key.hex()));
    }
    const bool ptx = manifest && cache::target_of(std::string_view(manifest->salt)) != "host";
    listing = ptx ? std::string(object->data(), object->size()) // PTX is text already
                  : engine::disassemble(*object);
  }
  if (!manifest && (args.has("--json") || (!source && !listing))) {
    throw Error(ErrorKind::io, format("entry {}: its manifest cannot be read", key.hex()));
  }
  if (args.has("--json")) {
    if (!source && !listing) {
      std::cout << cache::to_json(*manifest);
      return 0;
    }
    nlohmann::json json = nlohmann::json::parse(cache::to_json(*manifest));
    if (source) {
      json["source"] = *source;
    }
    if (listing) {
      json["asm"] = *listing;
    }
    std::cout << json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  // What the entry's files say, none of which uwjit must trust: anyone who can write the cache
  // could have put escapes in them, and none reaches the terminal.
  std::ostringstream out;
  if (source || listing) {
    // The stored source (exactly what was hashed), then the listing.
    if (source) {
      out << *source << (!listing ? "" : source->ends_with('\n') ? "\n" : "\n\n");
    }
    if (listing) {
      out << *listing;
    }
    std::cout << terminal_safe(out.str());
    return 0;
  }
  out << "key           " << manifest->key << "\n"
      << "origin        " << manifest->origin << "\n"
      << "entry         " << manifest->entry << "\n"
      << "target        " << cache::target_of(std::string_view(manifest->salt)) << "\n"
      << "object        " << human_size(manifest->object_size) << " (sha256 "
      << manifest->object_sha256 << ")\n"
      << "created       " << manifest->created_utc << " by uwjit " << manifest->uwjit_version
      << "\n"
      << "compile       " << milliseconds(manifest->compile_ms) << "\n"
      << "slots\n";
  for (const auto& table : manifest->slot_tables) {
    std::string names;
    for (const auto& slot : table.slots) {
      names += (names.empty() ? "" : ", ") + slot;
    }
    std::string label = table.name;
    label.resize(12, ' ');
    out << "  " << label << (names.empty() ? "-" : names) << "\n";
  }
  out << "salt\n";
  for (const auto& [name, value] : manifest->salt_components) {
    std::string label = name;
    label.resize(12, ' ');
    out << "  " << label << value << "\n";
  }
  std::cout << terminal_safe(out.str());
  return 0;
}

int explain_command(const std::vector<std::string>& argv) {
  ArgSpec spec("cache explain", "Explains why two keys differ: the salt components that differ, "
                                "then the source lines that differ.");
  spec.positional("KEY-A", "a key or unique prefix").positional("KEY-B", "a key or unique prefix");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  check_prefix(spec, args.positional().at(0));
  check_prefix(spec, args.positional().at(1));
  auto store = open_existing();
  if (!store) {
    throw Error(ErrorKind::usage, "the cache is empty");
  }
  const cache::Key a = resolve_prefix(*store, args.positional().at(0));
  const cache::Key b = resolve_prefix(*store, args.positional().at(1));
  const auto manifest_a = store->read_manifest(a);
  const auto manifest_b = store->read_manifest(b);
  const auto source_a = store->read_source(a);
  const auto source_b = store->read_source(b);
  if (!manifest_a || !manifest_b || !source_a || !source_b) {
    throw Error(ErrorKind::io, "an entry's manifest or source cannot be read");
  }
  std::cout << terminal_safe(
      explain_difference(a.hex(), *manifest_a, *source_a, b.hex(), *manifest_b, *source_b));
  return 0;
}

} // namespace uwjit::tools
