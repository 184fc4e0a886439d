// Disassembly of compiled kernel objects (what `uwjit cache inspect --asm` shows).
#pragma once

#include <span>
#include <string>

namespace uwjit::engine {

/// The text sections of `object` (a relocatable ELF object for the host) as assembly in AT&T
/// syntax, one function per symbol with its offsets. Throws Error(jit) if `object` is not an
/// object file LLVM can read. Thread-safe.
[[nodiscard]] std::string disassemble(std::span<const char> object);

} // namespace uwjit::engine
