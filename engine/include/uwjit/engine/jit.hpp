// Jit: loads relocatable objects into this process (ORC LLJIT with JITLink), one JITDylib each.
#pragma once

#include <uwjit/codegen/kernel_abi.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::engine {

/// The functions `object` (a relocatable ELF object) defines with external linkage, sorted: the
/// names a kernel's entry may have. Throws Error(jit) if `object` is not an object file LLVM can
/// read. Thread-safe.
[[nodiscard]] std::vector<std::string> defined_functions(std::span<const char> object);

/// A loaded object: its entry and a handle that unloads the object when the last copy goes.
struct LoadedObject {
  uwjit_kernel_fn entry = nullptr;
  std::shared_ptr<const void> code; ///< unloads the object on destruction; keeps the JIT alive
};

enum class DebuggerSupport { no, yes };
enum class PerfSupport { no, yes };

struct JitOptions {
  /// Register JIT'd code with gdb (ORC's debugger support), so that a debugger can break in a
  /// kernel by name and, with -g, show its source lines.
  DebuggerSupport debugger = DebuggerSupport::no;
  /// Describe JIT'd code to perf in a jitdump file, for `perf record -k 1` + `perf inject --jit`
  /// + `perf report`: `$JITDUMPDIR/.debug/jit/llvm-IR-jit-DATE-XXXXXX/jit-PID.dump` ($HOME when
  /// JITDUMPDIR is unset), its path logged at info level. LLVM keeps one jitdump per process:
  /// give perf support to one JIT at a time (Jit::shared() does).
  PerfSupport perf = PerfSupport::no;

  /// UWJIT_DEBUG turns debugger support on, UWJIT_PERF perf support. Throws Error(usage).
  [[nodiscard]] static JitOptions from_environment();
};

/// A JIT in this process. Each object lives in its own JITDylib, so two kernels that define the
/// same internal names coexist, and each can be unloaded alone. Thread-safe.
class Jit {
public:
  /// Creates a JIT. Throws Error(jit) if LLVM cannot set it up for this host. Debugger or perf
  /// support that cannot be set up is reported once as a warning; the JIT works without it.
  [[nodiscard]] static std::shared_ptr<Jit> create(JitOptions options = {});

  /// The process's JIT, created on first use with JitOptions::from_environment(); engines share
  /// it, so LLJIT is set up once per process. Thread-safe.
  [[nodiscard]] static std::shared_ptr<Jit> shared();
  ~Jit();

  /// Links `object` (a relocatable ELF object) and looks up `entry`. Throws Error(jit) when the
  /// object is malformed, has undefined symbols, or lacks the entry. Nothing stays loaded then.
  [[nodiscard]] LoadedObject load(std::span<const char> object, std::string_view entry);

  struct Impl;

private:
  explicit Jit(std::shared_ptr<Impl> impl) : m_impl(std::move(impl)) {}
  std::shared_ptr<Impl> m_impl;
};

} // namespace uwjit::engine
