// In-process C++ → object compilation with Clang/LLVM 19: an ELF object for the host CPU, or
// PTX text for an NVIDIA GPU (a cuda:sm_XX Target).
#pragma once

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/engine/target.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::engine {

enum class DebugInfo { no, yes };

/// What the compiler does to a kernel. Every field changes the object, so every field is part
/// of Compiler::flags() and, through it, of the cache key's salt.
struct CompileOptions {
  int opt_level = 3;                     ///< 0..3, like -O0..-O3
  std::vector<std::string> include_dirs; ///< -I directories, for kernels that #include headers
  DebugInfo debug_info = DebugInfo::no;  ///< -g, for stepping into kernels in gdb
  /// -ffp-contract. Default off: every operation is rounded as written, so a kernel gives the
  /// same bits on CPUs with and without fused multiply-add, and the same bits as the C++ it was
  /// checked against (g++ and Clang without -march=native do not fuse). `on` (Clang's own
  /// default) fuses a*b+c within one expression, `fast` across statements too; a node opts in
  /// through Node::kernel_options().
  codegen::FpContract fp_contract = codegen::FpContract::off;
  codegen::FastMath fast_math = codegen::FastMath::no; ///< -ffast-math
  std::vector<std::string> defines; ///< "NAME" or "NAME=VALUE", as codegen::KernelOptions
};

/// `base` with a kernel's options over it (codegen::KernelOptions says how). Throws Error(usage)
/// if `kernel` is invalid.
[[nodiscard]] CompileOptions with_kernel_options(CompileOptions base,
                                                 const codegen::KernelOptions& kernel);

/// Where a compile's time went, in milliseconds.
struct CompileTimings {
  double frontend_ms = 0; ///< preprocess, parse, emit IR
  double optimise_ms = 0; ///< the -O pass pipeline (loop and SLP vectorisers on at -O2/-O3)
  double codegen_ms = 0;  ///< instruction selection to ELF object (or to PTX text)
  [[nodiscard]] double total_ms() const noexcept { return frontend_ms + optimise_ms + codegen_ms; }
};

/// What a compile made and how long it took: for the host a relocatable ELF object, for a cuda
/// target the PTX text (ASCII; what the CUDA driver's cuModuleLoadData takes).
struct CompiledObject {
  std::vector<char> bytes;
  CompileTimings timings;
  std::string warnings;     ///< the compiler's warnings, as it printed them ("" when none)
  std::string optimised_ir; ///< the optimised LLVM IR, when a Listing asked for it
  std::string assembly;     ///< the assembly, when a Listing asked for it
};

/// What compile() returns as text besides the object (for dumps and tests). The object is the
/// same whatever is asked for.
enum class Listing { none, ir, ir_and_assembly };

/// The machine kernels are compiled for: the host, with its CPU name and sorted features.
struct TargetInfo {
  std::string llvm_version;          ///< e.g. "19.1.7"
  std::string triple;                ///< e.g. "x86_64-pc-linux-gnu"
  std::string cpu;                   ///< e.g. "skylake-avx512"
  std::vector<std::string> features; ///< "+avx2", "-avx512f", ...: sorted, so keys are stable
  std::string resource_dir;          ///< Clang's builtin headers (stddef.h, ...)
  std::string clang_path;            ///< the driver path used to find system headers
};

/// The host target, computed once per process. Thread-safe.
[[nodiscard]] const TargetInfo& host_target();

/// Compiles kernel source to object bytes (host) or PTX text (cuda) in process. Construction
/// validates the options (Error(usage)) and, for a cuda target, looks for libdevice
/// (find_libdevice(); Error(io) if found but unreadable); compile() is const and thread-safe:
/// each call has its own CompilerInstance, LLVMContext and TargetMachine.
class Compiler {
public:
  explicit Compiler(CompileOptions options = {}, Target target = {});
  ~Compiler();
  Compiler(const Compiler&) = delete;
  Compiler& operator=(const Compiler&) = delete;

  /// Compiles `source` (C++20, compiled as the buffer kernel.cpp). Throws Error(compile) with the
  /// diagnostics (`kernel.cpp:LINE:COL: error: ...` and the offending line; Error::diagnostics()
  /// holds them with lines as the text's line markers present them) if it does not
  /// compile, or if the object would need static initialisers (they never run in the JIT).
  /// With debug info, a non-empty `debug_file` replaces kernel.cpp as the body's file name in
  /// the debug info only (e.g. "uwjit_KEY.cpp"), so that a debugger tells kernels apart;
  /// diagnostics still say kernel.cpp.
  /// For a cuda target the same frontend runs for nvptx64-nvidia-cuda and the target's sm (PTX
  /// ISA k_ptx_isa), then the NVPTX backend writes PTX. A GPU kernel's entry is
  /// `extern "C" __attribute__((nvptx_kernel)) void NAME(...)`. Calls of exp, log, pow, tanh and
  /// the like are mapped to libdevice and linked in; without libdevice they throw
  /// Error(compile) naming the functions and the paths looked at. A call of any other function
  /// the kernel does not define throws Error(compile).
  [[nodiscard]] CompiledObject compile(std::string_view source, Listing listing = Listing::none,
                                       std::string_view debug_file = {}) const;

  [[nodiscard]] const CompileOptions& options() const noexcept;

  /// The target this compiler compiles for.
  [[nodiscard]] const Target& target() const noexcept;

  /// For a cuda target: the SHA-256 of the libdevice found (64 hex), or "none"; "" for the host.
  [[nodiscard]] const std::string& libdevice_digest() const noexcept;

  /// The options as a canonical string for the cache key's salt, e.g.
  /// "-std=c++20 -O3 -fno-math-errno -fno-exceptions -fno-rtti -fPIC ..."; -ffp-contract (when
  /// not on), -ffast-math and the defines (sorted by name) come last.
  [[nodiscard]] const std::string& flags() const noexcept;

  /// The optimisation pipeline's name for the cache key's salt,
  /// "slp-where-scalar,lsr-where-offsets-vary,lsr-vector-loops-on-x86-without-avx512": LLVM's
  /// pipeline of the -O level less what kernels do not gain from (another choice, another key).
  [[nodiscard]] const std::string& pipeline() const noexcept;

private:
  struct Impl;
  // compile() on the calling thread.
  [[nodiscard]] CompiledObject compile_here(std::string_view source, Listing listing,
                                            std::string_view debug_file) const;
  std::unique_ptr<Impl> m_impl;
};

} // namespace uwjit::engine
