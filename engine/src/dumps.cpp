// Writing dumps and debug sources (see dumps.hpp): best effort, atomic, never through a symlink.
#include "dumps.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/engine/disassemble.hpp>

#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace uwjit::engine::detail {

namespace {
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

std::string module_name(const cache::Key& key) {
  return "uwjit_mod_" + key.hex();
}

std::string debug_file_name(const cache::Key& key) {
  return "uwjit_" + key.hex() + ".cpp";
}

// Dumps and debug sources go through the atomic writer: processes (e.g. MPI ranks) writing the
// same kernel at once never leave a torn file for a reader such as gdb, and a symlink planted
// at the name is replaced, never followed. A failure never fails the request.
void write_dump(const std::filesystem::path& path, std::string_view text, const log::Logger& logger,
                std::string_view replaces, std::string_view kind) {
  try {
    posix::write_file_atomically(path, text,
                                 {.mode = 0644,
                                  .durability = posix::Durability::buffered,
                                  .replaces = replaces,
                                  .kind = kind});
  } catch (const Error& e) {
    logger.warn("cannot write {}: {}", path.string(), e.what());
  }
}

Dumps::Dumps(const EngineOptions& options) : m_dump_dir(options.dump_dir) {
  if (m_dump_dir) {
    std::error_code ec;
    std::filesystem::create_directories(*m_dump_dir, ec);
    if (ec) {
      m_logger.warn("UWJIT_DUMP_DIR {}: {}; no dumps", m_dump_dir->string(), ec.message());
      m_dump_dir.reset();
    }
  }
  if (options.compile.debug_info == DebugInfo::yes) {
    open_debug_source_dir(options);
  }
}

void Dumps::open_debug_source_dir(const EngineOptions& options) {
  std::error_code ec;
  auto dir = options.debug_source_dir ? *options.debug_source_dir
             : m_dump_dir             ? *m_dump_dir
                                      : std::filesystem::current_path(ec);
  if (!ec) {
    std::filesystem::create_directories(dir, ec);
  }
  if (!ec && ::access(dir.c_str(), W_OK | X_OK) != 0) {
    ec = std::error_code(errno, std::generic_category());
  }
  if (ec) {
    m_logger.warn("debug sources: {}: {}; a debugger will not show kernel source lines",
                  dir.string(), ec.message());
    return;
  }
  const auto absolute = std::filesystem::absolute(dir, ec);
  m_debug_source_dir = ec ? dir : absolute;
  m_logger.info("debug sources of kernels go to {}", m_debug_source_dir->string());
}

void Dumps::compiled(const codegen::KernelSource& source, const cache::Key& key,
                     const CompiledObject& object) const {
  if (!m_dump_dir) {
    return;
  }
  const auto stem = *m_dump_dir / dump_stem(source.origin(), key);
  write_dump(stem.string() + ".cpp", source.canonical(), m_logger);
  write_dump(stem.string() + ".ll", object.optimised_ir, m_logger);
  write_dump(stem.string() + ".s", object.assembly, m_logger);
}

std::optional<std::filesystem::path> Dumps::failed(const codegen::KernelSource& source,
                                                   const cache::Key& key) const {
  if (!m_dump_dir) {
    return std::nullopt;
  }
  std::filesystem::path path = *m_dump_dir / (dump_stem(source.origin(), key) + ".cpp");
  try {
    posix::write_file_atomically(path, source.canonical(),
                                 {.mode = 0644, .durability = posix::Durability::buffered});
  } catch (const Error& e) {
    m_logger.warn("cannot write {}: {}", path.string(), e.what());
    return std::nullopt;
  }
  return path;
}

void Dumps::loaded_from_disk(const codegen::KernelSource& source, const cache::Key& key,
                             std::span<const char> object) const {
  if (!m_dump_dir) {
    return;
  }
  const auto stem = *m_dump_dir / dump_stem(source.origin(), key);
  write_dump(stem.string() + ".cpp", source.canonical(), m_logger);
  write_dump(stem.string() + ".s", disassemble(object), m_logger);
}

// The body under the name its debug info gives it (the placeholders replaced, as compiled; line
// markers start the body at line 1) and the headers in front of it.
void Dumps::debug_sources(const codegen::KernelSource& source, const cache::Key& key,
                          const std::string& entry) {
  if (!m_debug_source_dir) {
    return;
  }
  // The headers' names are plain ones, and the directory may be the user's working directory:
  // only a file that is an earlier copy of the same header, of any version (its text up to the
  // first colon: "/* uwjit kernel ABI:"), is replaced.
  std::call_once(m_debug_headers_written, [&] {
    const auto header = [&](const char* name, std::string_view text) {
      write_dump(*m_debug_source_dir / name, text, m_logger, text.substr(0, text.find(':') + 1),
                 "uwjit kernel header");
    };
    header("uwjit_kernel_abi.h", codegen::kernel_abi_text());
    header("uwjit_kernel_prelude.h", codegen::kernel_prelude_text());
  });
  const auto body =
      codegen::replace_all(codegen::replace_all(source.body(), codegen::k_entry_placeholder, entry),
                           codegen::k_module_placeholder, module_name(key));
  write_dump(*m_debug_source_dir / debug_file_name(key), body, m_logger);
}

} // namespace uwjit::engine::detail
