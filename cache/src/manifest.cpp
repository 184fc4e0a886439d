#include <uwjit/cache/manifest.hpp>

#include "manifest_json.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/format.hpp>

#include <nlohmann/json.hpp>

#include <climits>
#include <cmath>
#include <cstdint>

namespace uwjit::cache {

namespace {

// ordered_json keeps the documented field order, so that manifests read well.
using Json = nlohmann::ordered_json;

bool is_lower_hex(std::string_view text, std::size_t length) {
  return text.size() == length && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Field readers: each returns false and sets `why` when the field is missing or mistyped.
class Reader {
public:
  explicit Reader(const Json& object) : m_object(object) {}

  bool string(const char* name, std::string& out) {
    const Json* field = find(name);
    if (field == nullptr || !field->is_string()) {
      return fail(name, "a string");
    }
    out = field->get<std::string>();
    return true;
  }

  bool integer(const char* name, int& out) {
    const Json* field = find(name);
    if (field == nullptr || !field->is_number_integer() || field->get<std::int64_t>() < INT_MIN ||
        field->get<std::int64_t>() > INT_MAX) {
      return fail(name, "an integer");
    }
    out = field->get<int>();
    return true;
  }

  bool size(const char* name, std::uint64_t& out) {
    const Json* field = find(name);
    if (field == nullptr || !(field->is_number_unsigned() ||
                              (field->is_number_integer() && field->get<std::int64_t>() >= 0))) {
      return fail(name, "a non-negative integer");
    }
    out = field->get<std::uint64_t>();
    return true;
  }

  bool number(const char* name, double& out) {
    const Json* field = find(name);
    if (field == nullptr || !field->is_number()) {
      return fail(name, "a number");
    }
    out = field->get<double>();
    return true;
  }

  const Json* array(const char* name) {
    const Json* field = find(name);
    if (field == nullptr || !field->is_array()) {
      fail(name, "an array");
      return nullptr;
    }
    return field;
  }

  bool fail(const char* name, std::string_view expected) {
    m_why = find(name) == nullptr ? format("field \"{}\" is missing", name)
                                  : format("field \"{}\": expected {}", name, expected);
    return false;
  }

  [[nodiscard]] const std::string& why() const noexcept { return m_why; }

private:
  const Json* find(const char* name) const {
    const auto found = m_object.find(name);
    return found == m_object.end() ? nullptr : &*found;
  }
  const Json& m_object;
  std::string m_why;
};

bool read_salt_components(const Json& array, Manifest& out, std::string& why) {
  for (const auto& pair : array) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
      why = "field \"salt_components\": expected an array of [name, value] string pairs";
      return false;
    }
    out.salt_components.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
  }
  return true;
}

bool read_slot_tables(const Json& array, Manifest& out, std::string& why) {
  for (const auto& table : array) {
    const bool shaped = table.is_object() && table.contains("name") && table["name"].is_string() &&
                        table.contains("slots") && table["slots"].is_array();
    if (!shaped) {
      why = "field \"slot_tables\": expected an array of {\"name\": string, \"slots\": [string]}";
      return false;
    }
    SlotTable parsed{table["name"].get<std::string>(), {}};
    for (const auto& slot : table["slots"]) {
      if (!slot.is_string()) {
        why = format("field \"slot_tables\": table \"{}\" holds a slot name that is not a string",
                     parsed.name);
        return false;
      }
      parsed.slots.push_back(slot.get<std::string>());
    }
    out.slot_tables.push_back(std::move(parsed));
  }
  return true;
}

std::optional<Manifest> parse(std::string_view text, std::string& why) {
  const Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    why = "not valid JSON";
    return std::nullopt;
  }
  if (!json.is_object()) {
    why = "not a JSON object";
    return std::nullopt;
  }
  Manifest m;
  Reader read(json);
  const Json* salt_components = nullptr;
  const Json* slot_tables = nullptr;
  const bool fields_ok =
      read.integer("format", m.format) && read.string("key", m.key) &&
      read.string("salt", m.salt) && (salt_components = read.array("salt_components")) &&
      read.string("entry", m.entry) && (slot_tables = read.array("slot_tables")) &&
      read.size("object_size", m.object_size) && read.string("object_sha256", m.object_sha256) &&
      read.string("created_utc", m.created_utc) && read.number("compile_ms", m.compile_ms) &&
      read.string("origin", m.origin) && read.string("uwjit_version", m.uwjit_version);
  if (!fields_ok) {
    why = read.why();
    return std::nullopt;
  }
  if (!read_salt_components(*salt_components, m, why) || !read_slot_tables(*slot_tables, m, why)) {
    return std::nullopt;
  }
  // Optional (entries written before it existed have none): absent means no warnings.
  if (const auto warnings = json.find("warnings"); warnings != json.end()) {
    if (!warnings->is_string()) {
      why = "field \"warnings\": expected a string";
      return std::nullopt;
    }
    m.warnings = warnings->get<std::string>();
  }
  if (!Key::parse(m.key)) {
    why = format("field \"key\": \"{}\" is not 16 lowercase hex digits", m.key);
    return std::nullopt;
  }
  if (!is_lower_hex(m.object_sha256, 64)) {
    why = "field \"object_sha256\": expected 64 lowercase hex digits";
    return std::nullopt;
  }
  const auto salt = Salt::parse(m.salt);
  if (!salt || salt->components() != m.salt_components) {
    why = "field \"salt_components\" does not match field \"salt\"";
    return std::nullopt;
  }
  return m;
}

} // namespace

std::string to_json(const Manifest& manifest) {
  Json slot_tables = Json::array();
  for (const auto& table : manifest.slot_tables) {
    slot_tables.push_back(Json{{"name", table.name}, {"slots", table.slots}});
  }
  Json salt_components = Json::array();
  for (const auto& [name, value] : manifest.salt_components) {
    salt_components.push_back(Json::array({name, value}));
  }
  const bool sane_time = std::isfinite(manifest.compile_ms) && manifest.compile_ms >= 0;
  Json json = {
      {"format", manifest.format},
      {"key", manifest.key},
      {"salt", manifest.salt},
      {"salt_components", std::move(salt_components)},
      {"entry", manifest.entry},
      {"slot_tables", std::move(slot_tables)},
      {"object_size", manifest.object_size},
      {"object_sha256", manifest.object_sha256},
      {"created_utc", manifest.created_utc},
      {"compile_ms", sane_time ? manifest.compile_ms : 0.0},
      {"origin", manifest.origin},
      {"uwjit_version", manifest.uwjit_version},
  };
  if (!manifest.warnings.empty()) {
    json["warnings"] = manifest.warnings;
  }
  return json.dump(2, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace) + "\n";
}

std::optional<Manifest> parse_manifest(std::string_view json, std::string* why) {
  std::string reason;
  std::optional<Manifest> result;
  try {
    result = parse(json, reason);
  } catch (const std::exception& e) {
    // nlohmann throws from get<> on out-of-range numbers; anything here means "bad manifest".
    reason = format("unreadable: {}", e.what());
    result.reset();
  }
  if (!result && why != nullptr) {
    *why = std::move(reason);
  }
  return result;
}

std::optional<long long> manifest_format(std::string_view json) noexcept {
  try {
    const Json parsed = Json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object()) {
      const auto found = parsed.find("format");
      if (found != parsed.end() && found->is_number_integer()) {
        return found->get<long long>();
      }
    }
  } catch (...) {
    // bad_alloc and the like: no format to report; the full parse will say "corrupt".
  }
  return std::nullopt;
}

} // namespace uwjit::cache
