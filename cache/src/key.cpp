#include <uwjit/cache/key.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <openssl/evp.h>

#include <array>
#include <memory>

namespace uwjit::cache {

namespace {

// Fetching the algorithm costs ~1.5 ms the first time; do it once per process.
const EVP_MD* sha256() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

struct ContextDeleter {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};

bool is_lower_hex(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

} // namespace

std::string sha256_hex(std::initializer_list<std::string_view> pieces) {
  std::unique_ptr<EVP_MD_CTX, ContextDeleter> ctx(EVP_MD_CTX_new());
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx.get(), sha256(), nullptr) == 1;
  for (const auto piece : pieces) {
    ok = ok && EVP_DigestUpdate(ctx.get(), piece.data(), piece.size()) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(ctx.get(), digest.data(), &length) == 1;
  UWJIT_ASSERT(ok && length == 32, "OpenSSL SHA-256 failed");
  return hex_text(std::span<const unsigned char>(digest.data(), 32));
}

std::string sha256_hex(std::string_view data) {
  return sha256_hex({data});
}

Salt& Salt::add(std::string name, std::string value) {
  if (name.empty() || name.find_first_of("|=") != std::string::npos ||
      value.find('|') != std::string::npos) {
    throw Error(ErrorKind::usage,
                format("salt component \"{}={}\": names may not be empty or hold '|' or '=', "
                       "values may not hold '|'",
                       name, value));
  }
  m_components.emplace_back(std::move(name), std::move(value));
  return *this;
}

std::optional<std::string> Salt::get(std::string_view name) const {
  for (const auto& [component, value] : m_components) {
    if (component == name) {
      return value;
    }
  }
  return std::nullopt;
}

std::string Salt::text() const {
  std::string out;
  for (const auto& [name, value] : m_components) {
    out += out.empty() ? "" : "|";
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

std::string target_of(const Salt& salt) {
  return salt.get(k_target_component).value_or("host");
}

std::string target_of(std::string_view salt_text) {
  const auto salt = Salt::parse(salt_text);
  return salt ? target_of(*salt) : std::string("host");
}

std::vector<SaltDifference> differences(const Salt& left, const Salt& right) {
  std::vector<SaltDifference> out;
  for (const auto& [name, value] : left.components()) {
    if (auto theirs = right.get(name); !theirs || *theirs != value) {
      out.push_back({name, value, std::move(theirs)});
    }
  }
  for (const auto& [name, value] : right.components()) {
    if (!left.get(name)) {
      out.push_back({name, std::nullopt, value});
    }
  }
  return out;
}

std::optional<Salt> Salt::parse(std::string_view text) {
  Salt salt;
  while (!text.empty()) {
    const auto bar = text.find('|');
    const auto part = text.substr(0, bar);
    const auto eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return std::nullopt;
    }
    salt.m_components.emplace_back(std::string(part.substr(0, eq)),
                                   std::string(part.substr(eq + 1)));
    if (bar == std::string_view::npos) {
      break;
    }
    text.remove_prefix(bar + 1);
    if (text.empty()) {
      return std::nullopt;
    }
  }
  return salt;
}

Key Key::of(std::string_view canonical_source, const Salt& salt) {
  const std::string salt_text = salt.text();
  return Key(sha256_hex({canonical_source, "\n---\n", salt_text}).substr(0, 16));
}

std::optional<Key> Key::parse(std::string_view text) {
  if (text.size() != 16) {
    return std::nullopt;
  }
  for (const char c : text) {
    if (!is_lower_hex(c)) {
      return std::nullopt;
    }
  }
  return Key(std::string(text));
}

} // namespace uwjit::cache
