// Jit: loads relocatable objects into this process (ORC LLJIT with JITLink), one JITDylib each.
#pragma once

#include <uwjit/codegen/kernel_abi.h>

#include <memory>
#include <span>
#include <string_view>

namespace uwjit::engine {

/// A loaded object: its entry and a handle that unloads the object when the last copy goes.
struct LoadedObject {
  uwjit_kernel_fn entry = nullptr;
  std::shared_ptr<const void> code; ///< unloads the object on destruction; keeps the JIT alive
};

/// The JIT of one process. Each object lives in its own JITDylib, so two kernels that define the
/// same internal names coexist, and each can be unloaded alone. Thread-safe.
class Jit {
public:
  /// Creates the JIT. Throws Error(jit) if LLVM cannot set it up for this host.
  [[nodiscard]] static std::shared_ptr<Jit> create();
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
