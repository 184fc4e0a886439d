// Finding the user headers a kernel includes, as Clang finds them, and hashing what they hold.
#include "included_headers.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

namespace uwjit::engine::detail {

namespace {

namespace fs = std::filesystem;

// A header named by a directive: as written ("h.h" or <h.h>), and how it is searched.
struct Directive {
  std::string name;
  bool quoted = false;
};

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

std::size_t skip_blanks(std::string_view text, std::size_t at) {
  while (at < text.size() && is_blank(text[at])) {
    ++at;
  }
  return at;
}

// The header name at `at` ("..." or <...>); nullopt for anything else (a macro).
std::optional<Directive> header_name_at(std::string_view text, std::size_t at) {
  if (at >= text.size() || (text[at] != '"' && text[at] != '<')) {
    return std::nullopt;
  }
  const char close = text[at] == '"' ? '"' : '>';
  const auto end = text.find_first_of(std::string{close, '\n'}, at + 1);
  if (end == std::string_view::npos || text[end] != close || end == at + 1) {
    return std::nullopt;
  }
  return Directive{std::string(text.substr(at + 1, end - at - 1)), close == '"'};
}

[[noreturn]] void macro_named(std::string_view where, std::string_view line) {
  throw Error(ErrorKind::compile,
              format("{}: `{}` names its header with a macro; uwjit keys a kernel by the "
                     "contents of the headers it includes and finds them without preprocessing, "
                     "so a kernel's includes must name their file (\"name.h\" or <name.h>)",
                     where, line));
}

// Every header directive of `text`: #include, #include_next, #import and #embed lines, and the
// operands of __has_include and __has_embed. A directive in a comment is read too (its header
// hashed or marked missing: a key that says more than it must, never less).
std::vector<Directive> directives(std::string_view text, std::string_view where) {
  std::vector<Directive> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    std::size_t at = skip_blanks(line, 0);
    if (at < line.size() && line[at] == '#') {
      at = skip_blanks(line, at + 1);
      std::size_t word_end = at;
      while (word_end < line.size() &&
             (std::isalnum(static_cast<unsigned char>(line[word_end])) || line[word_end] == '_')) {
        ++word_end;
      }
      const std::string_view word = line.substr(at, word_end - at);
      if (word == "include" || word == "include_next" || word == "import" || word == "embed") {
        auto name = header_name_at(line, skip_blanks(line, word_end));
        if (!name) {
          macro_named(where, line);
        }
        out.push_back(std::move(*name));
      }
    }
    for (const std::string_view probe : {"__has_include", "__has_embed"}) {
      for (auto found = line.find(probe); found != std::string_view::npos;
           found = line.find(probe, found + probe.size())) {
        std::size_t open = found + probe.size();
        if (line.substr(open).starts_with("_next")) {
          open += 5;
        }
        open = skip_blanks(line, open);
        if (open >= line.size() || line[open] != '(') {
          continue; // the word itself, e.g. #ifdef __has_include
        }
        auto name = header_name_at(line, skip_blanks(line, open + 1));
        if (!name) {
          macro_named(where, line);
        }
        out.push_back(std::move(*name));
      }
    }
  }
  return out;
}

std::string kind_of(fs::file_type type) {
  switch (type) {
  case fs::file_type::directory:
    return "a directory";
  case fs::file_type::fifo:
    return "a FIFO";
  case fs::file_type::character:
  case fs::file_type::block:
    return "a device";
  case fs::file_type::socket:
    return "a socket";
  default:
    return "not a regular file";
  }
}

// The file a directive reads from the user's directories, or nullopt if it is found past them.
std::optional<fs::path> find_user_header(const Directive& d, const fs::path& includer_dir,
                                         const std::vector<std::string>& include_dirs) {
  std::vector<fs::path> candidates;
  if (fs::path(d.name).is_absolute()) {
    candidates.emplace_back(d.name);
  } else {
    if (d.quoted) {
      candidates.push_back(includer_dir / d.name);
    }
    for (const auto& dir : include_dirs) {
      candidates.push_back(fs::path(dir) / d.name);
    }
  }
  for (const auto& candidate : candidates) {
    std::error_code ec;
    if (fs::exists(candidate, ec)) {
      return candidate;
    }
  }
  return std::nullopt;
}

class Scan {
public:
  explicit Scan(const std::vector<std::string>& include_dirs) : m_include_dirs(include_dirs) {}

  void read(std::string_view text, const fs::path& includer_dir, std::string_view where) {
    for (const auto& d : directives(text, where)) {
      const std::string written = d.quoted ? "\"" + d.name + "\"" : "<" + d.name + ">";
      const auto path = find_user_header(d, includer_dir, m_include_dirs);
      if (!path) {
        m_digest += format("{} not in the user's directories\n", written);
        continue;
      }
      std::error_code ec;
      const auto status = fs::status(*path, ec);
      if (ec || status.type() != fs::file_type::regular) {
        throw Error(ErrorKind::compile,
                    format("{} includes {}, which is {} ({}): a kernel includes regular files "
                           "only",
                           where, written,
                           ec ? "unreadable: " + ec.message() : kind_of(status.type()),
                           path->string()));
      }
      std::ifstream in(*path, std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      if (!in.good() && !in.eof()) {
        throw Error(ErrorKind::io,
                    format("{} includes {}: cannot read {}", where, written, path->string()));
      }
      const std::string contents = std::move(bytes).str();
      m_digest += format("{} {}\n", written, cache::sha256_hex(contents));
      const auto canonical = fs::weakly_canonical(*path, ec);
      if (m_visited.insert(ec ? *path : canonical).second) {
        read(contents, path->parent_path(), path->string());
      }
    }
  }

  std::string digest() && { return std::move(m_digest); }

private:
  const std::vector<std::string>& m_include_dirs;
  std::set<fs::path> m_visited;
  std::string m_digest;
};

} // namespace

std::string included_headers(std::string_view text, const std::vector<std::string>& include_dirs) {
  if (text.find("include") == std::string_view::npos &&
      text.find("import") == std::string_view::npos &&
      text.find("embed") == std::string_view::npos) {
    return {};
  }
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  Scan scan(include_dirs);
  scan.read(text, ec ? fs::path(".") : cwd, "kernel.cpp");
  return std::move(scan).digest();
}

} // namespace uwjit::engine::detail
