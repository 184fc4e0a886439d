// Engine: KernelSource in, callable Kernel out, through the in-memory tier and the compiler.
#pragma once

#include <uwjit/cache/key.hpp>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/kernel.hpp>

#include <memory>

namespace uwjit::engine {

struct EngineOptions {
  CompileOptions compile;
};

/// Turns kernel sources into loaded kernels, each compiled at most once per engine: concurrent
/// requests for one key wait for a single compile. Thread-safe.
class Engine {
public:
  /// Creates the compiler and the JIT. Throws Error(usage) on bad options, Error(jit) if the JIT
  /// cannot be set up.
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// The kernel for `source`. Throws Error(compile) with diagnostics, Error(jit) if the object
  /// cannot be loaded; a failed request leaves nothing behind and may be retried.
  [[nodiscard]] Kernel kernel(const codegen::KernelSource& source);

  /// The key `source` has under this engine's salt.
  [[nodiscard]] cache::Key key_of(const codegen::KernelSource& source) const;

  /// The salt: uwjit version, entry format, kernel ABI, LLVM version, target, CPU, features,
  /// optimisation level and flags.
  [[nodiscard]] const cache::Salt& salt() const noexcept;

  [[nodiscard]] const Compiler& compiler() const noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace uwjit::engine
