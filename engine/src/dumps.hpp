// Dumps and debug sources: the files the engine writes beside a kernel for people and debuggers
// (UWJIT_DUMP_DIR's source, IR and assembly; the body and headers gdb shows), never needed by a
// request and never failing one.
#pragma once

#include <uwjit/cache/key.hpp>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/engine.hpp>

#include <filesystem>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace uwjit::engine::detail {

/// The module name a kernel is compiled under: "uwjit_mod_KEY".
[[nodiscard]] std::string module_name(const cache::Key& key);

/// The body's file name in a debug object's debug info, and of the file gdb shows for it:
/// "uwjit_KEY.cpp".
[[nodiscard]] std::string debug_file_name(const cache::Key& key);

/// Writes `text` to `path` through the atomic writer; a failure is logged as a warning, never
/// thrown. A regular file already there is replaced only if it is empty or starts with
/// `replaces` (AtomicFileOptions::replaces; "" replaces any), a `kind`. Thread-safe.
void write_dump(const std::filesystem::path& path, std::string_view text, const log::Logger& logger,
                std::string_view replaces = {}, std::string_view kind = "file");

/// Where an engine's dumps and debug sources go, if anywhere. Thread-safe after construction.
class Dumps {
public:
  /// Makes the dump directory and, with debug info, the debug-source directory (options'
  /// debug_source_dir, else dump_dir, else the working directory); one that cannot be made or
  /// written is warned about and left out.
  explicit Dumps(const EngineOptions& options);

  /// Whether compiles should list IR and assembly for the dump directory.
  [[nodiscard]] Listing listing() const noexcept {
    return m_dump_dir ? Listing::ir_and_assembly : Listing::none;
  }
  /// A kernel compiled now: its canonical source, optimised IR and assembly, as ORIGIN-KEY.*.
  void compiled(const codegen::KernelSource& source, const cache::Key& key,
                const CompiledObject& object) const;
  /// A kernel that did not compile: its canonical source as ORIGIN-KEY.cpp. Returns the file's
  /// path, or nullopt without a dump directory or when it could not be written (warned).
  [[nodiscard]] std::optional<std::filesystem::path> failed(const codegen::KernelSource& source,
                                                            const cache::Key& key) const;
  /// Whether a dump directory is in use.
  [[nodiscard]] bool enabled() const noexcept { return m_dump_dir.has_value(); }
  /// A kernel loaded from the disk cache: its canonical source and the object's disassembly.
  void loaded_from_disk(const codegen::KernelSource& source, const cache::Key& key,
                        std::span<const char> object) const;
  /// The files a debugger needs to show a loaded debug object's lines (with debug info only).
  void debug_sources(const codegen::KernelSource& source, const cache::Key& key,
                     const std::string& entry);

private:
  void open_debug_source_dir(const EngineOptions& options);

  std::optional<std::filesystem::path> m_dump_dir;
  std::optional<std::filesystem::path> m_debug_source_dir;
  std::once_flag m_debug_headers_written;
  log::Logger m_logger = log::get("uwjit.engine");
};

} // namespace uwjit::engine::detail
