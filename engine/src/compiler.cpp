#include <uwjit/engine/compiler.hpp>

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include "llvm.hpp"
#include "nvptx.hpp"
#include "pipeline.hpp"
#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>

namespace uwjit::engine {

namespace detail {
void initialise_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    llvm::InitializeNativeTargetDisassembler();
  });
}
} // namespace detail

namespace {

using detail::Clock;
using detail::ms_since;

constexpr const char* k_clang_path = UWJIT_CLANG_PATH;

TargetInfo compute_host_target() {
  TargetInfo info;
  info.llvm_version = LLVM_VERSION_STRING;
  info.triple = llvm::sys::getProcessTriple();
  info.cpu = llvm::sys::getHostCPUName().str();
  for (const auto& feature : llvm::sys::getHostCPUFeatures()) {
    info.features.push_back((feature.second ? "+" : "-") + feature.first().str());
  }
  // getHostCPUFeatures() is a hash map: its order differs between runs, and the key must not.
  std::sort(info.features.begin(), info.features.end());
  info.resource_dir = UWJIT_CLANG_RESOURCE_DIR;
  info.clang_path = k_clang_path;
  return info;
}

// Collects the compiler's diagnostics as text instead of printing them.
struct DiagnosticSink {
  std::string text;
  llvm::raw_string_ostream stream{text};
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> options = [] {
    auto opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
    opts->ShowColors = false;
    opts->ShowPresumedLoc = true; // honour #line: lines are counted in the kernel's body
    return opts;
  }();
  clang::TextDiagnosticPrinter printer{stream, options.get()};
  llvm::IntrusiveRefCntPtr<clang::DiagnosticsEngine> engine =
      clang::CompilerInstance::createDiagnostics(options.get(), &printer, false);

  std::string flush() {
    stream.flush();
    return text;
  }
};

// Prints through the text printer and keeps each diagnostic's place (as #line presents it) and
// message, so that the engine can map lines to the texts a node wrote.
class RecordingConsumer : public clang::DiagnosticConsumer {
public:
  explicit RecordingConsumer(clang::DiagnosticConsumer& printer) : m_printer(printer) {}
  void BeginSourceFile(const clang::LangOptions& options,
                       const clang::Preprocessor* preprocessor) override {
    m_printer.BeginSourceFile(options, preprocessor);
  }
  void EndSourceFile() override { m_printer.EndSourceFile(); }
  void finish() override { m_printer.finish(); }
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic& info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(level, info);
    m_printer.HandleDiagnostic(level, info);
    CompileDiagnostic d;
    switch (level) {
    case clang::DiagnosticsEngine::Note:
      d.severity = "note";
      break;
    case clang::DiagnosticsEngine::Warning:
      d.severity = "warning";
      break;
    case clang::DiagnosticsEngine::Fatal:
      d.severity = "fatal error";
      break;
    case clang::DiagnosticsEngine::Ignored:
      return;
    default:
      d.severity = "error";
      break;
    }
    llvm::SmallString<128> message;
    info.FormatDiagnostic(message);
    d.message = message.str().str();
    if (info.getLocation().isValid() && info.hasSourceManager()) {
      const clang::PresumedLoc place = info.getSourceManager().getPresumedLoc(info.getLocation());
      if (place.isValid()) {
        d.section = place.getFilename();
        d.line = static_cast<int>(place.getLine());
        d.column = static_cast<int>(place.getColumn());
      }
    }
    diagnostics.push_back(std::move(d));
  }
  std::vector<CompileDiagnostic> diagnostics;

private:
  clang::DiagnosticConsumer& m_printer;
};

// The optimiser's and code generator's diagnostics, instead of LLVM's default of printing them
// to stderr (and exiting on an error). Optimisation remarks and failures (a loop a pragma asked
// to vectorise that could not be, as checked kernels' bounds tests make) say how the compiler
// did its work, not what is wrong with the kernel: they are dropped. Other warnings are kept
// with the frontend's; errors fail the compile. Never throws (an LLVM callback).
class BackendDiagnostics final : public llvm::DiagnosticHandler {
public:
  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (llvm::isa<llvm::DiagnosticInfoOptimizationBase>(info) ||
        info.getSeverity() == llvm::DS_Remark || info.getSeverity() == llvm::DS_Note) {
      return true;
    }
    std::string text;
    llvm::raw_string_ostream stream(text);
    llvm::DiagnosticPrinterRawOStream printer(stream);
    info.print(printer);
    stream.flush();
    (info.getSeverity() == llvm::DS_Error ? errors : warnings).push_back(std::move(text));
    return true;
  }
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};

// A kernel whose object needs constructors would run with zeroed globals: the JIT never runs
// static initialisers of added objects. Refuse it at compile time, with a reason.
void reject_static_initialisers(const llvm::Module& module) {
  for (const char* name : {"llvm.global_ctors", "llvm.global_dtors"}) {
    if (const auto* list = module.getNamedGlobal(name); list != nullptr && list->hasInitializer()) {
      throw Error(ErrorKind::compile,
                  format("{}: the kernel needs static initialisers or destructors ({}), which "
                         "never run for JIT-loaded code; give globals constant initialisers",
                         codegen::k_buffer_name, name));
    }
  }
  if (const auto* guard = module.getFunction("__cxa_guard_acquire"); guard != nullptr) {
    throw Error(ErrorKind::compile,
                format("{}: the kernel has a function-local static with a dynamic initialiser; "
                       "kernels may hold only constant-initialised globals",
                       codegen::k_buffer_name));
  }
}

// "+ptx85" for PTX ISA 8.5: the NVPTX subtarget feature that picks the ISA version.
std::string ptx_feature() {
  std::string feature = "+ptx";
  for (const char c : k_ptx_isa) {
    if (c != '.') {
      feature += c;
    }
  }
  return feature;
}

} // namespace

const TargetInfo& host_target() {
  static const TargetInfo info = [] {
    detail::initialise_native_target();
    return compute_host_target();
  }();
  return info;
}

CompileOptions with_kernel_options(CompileOptions base, const codegen::KernelOptions& kernel) {
  codegen::validate(kernel, "kernel options");
  base.opt_level = kernel.opt_level.value_or(base.opt_level);
  base.fp_contract = kernel.fp_contract.value_or(base.fp_contract);
  base.fast_math = kernel.fast_math.value_or(base.fast_math);
  for (const auto& define : kernel.defines) {
    std::erase_if(base.defines, [&](const std::string& d) {
      return codegen::define_name(d) == codegen::define_name(define);
    });
    base.defines.push_back(define);
  }
  return base;
}

struct Compiler::Impl {
  CompileOptions options;
  Target target;
  detail::Libdevice libdevice; // cuda targets only
  std::string libdevice_digest;
  llvm::TargetOptions target_options;
  std::string flags;
  // The driver's work (finding libstdc++ and system include paths) is done once; each compile
  // copies this invocation.
  std::shared_ptr<clang::CompilerInvocation> invocation;
};

Compiler::Compiler(CompileOptions options, Target gpu) : m_impl(std::make_unique<Impl>()) {
  if (options.opt_level < 0 || options.opt_level > 3) {
    throw Error(ErrorKind::usage,
                format("optimisation level {}: expected 0, 1, 2 or 3", options.opt_level));
  }
  const TargetInfo& target = host_target();
  const bool cuda = gpu.is_cuda();
  detail::configure_code_generation();
  // -S for cuda: the driver's NVPTX job list is then cc1 alone (no ptxas step to find).
  std::vector<std::string> args = {target.clang_path,
                                   cuda ? "-S" : "-c",
                                   "-x",
                                   "c++",
                                   "-std=c++20",
                                   "-O" + std::to_string(options.opt_level),
                                   "-fno-math-errno",
                                   "-fno-exceptions",
                                   "-fno-rtti"};
  if (cuda) {
    detail::initialise_nvptx_target();
    args.insert(args.end(), {std::string("--target=") + detail::k_nvptx_triple,
                             "-march=" + gpu.sm(), "-nogpulib"});
    m_impl->libdevice = detail::load_libdevice();
    m_impl->libdevice_digest = m_impl->libdevice.digest;
  } else {
    // LLVM's host detection reports avx10.1-256 without -512 on some CPUs; the frontend's
    // warning about it is noise.
    args.insert(args.end(), {"-fPIC", "-Wno-invalid-feature-combination"});
  }
  if (options.debug_info == DebugInfo::yes) {
    // A fixed compilation directory keeps the object identical whatever the working directory.
    args.insert(args.end(), {"-g", "-fdebug-compilation-dir=."});
  }
  for (const auto& dir : options.include_dirs) {
    args.push_back("-I" + dir);
  }
  codegen::KernelOptions checked;
  checked.defines = options.defines;
  codegen::validate(checked, "compile options");
  // Always explicit: the flags (and so the key's salt) say how a kernel rounds, whatever Clang's
  // own default is.
  args.push_back(std::string("-ffp-contract=") + codegen::to_string(options.fp_contract));
  if (options.fast_math == codegen::FastMath::yes) {
    args.emplace_back("-ffast-math");
  }
  // Sorted, so that the same defines given in another order give the same flags and key.
  std::vector<std::string> defines = options.defines;
  std::sort(defines.begin(), defines.end(), [](const std::string& a, const std::string& b) {
    return codegen::define_name(a) < codegen::define_name(b);
  });
  for (const auto& define : defines) {
    args.push_back("-D" + define);
  }
  m_impl->flags = join(std::vector<std::string>(args.begin() + 4, args.end()), " ");
  args.insert(args.end(), {"-", "-o", "/dev/null"});

  DiagnosticSink sink;
  std::vector<const char*> argv;
  for (const auto& arg : args) {
    argv.push_back(arg.c_str());
  }
  clang::CreateInvocationOptions create;
  create.Diags = sink.engine;
  std::unique_ptr<clang::CompilerInvocation> invocation = clang::createInvocation(argv, create);
  if (!invocation) {
    throw Error(ErrorKind::usage, "compiler options rejected: " + sink.flush());
  }
  auto& target_opts = invocation->getTargetOpts();
  target_opts.TuneCPU.clear();
  if (cuda) {
    target_opts.Triple = detail::k_nvptx_triple;
    target_opts.CPU = gpu.sm();
    target_opts.FeaturesAsWritten = {ptx_feature()};
  } else {
    target_opts.Triple = target.triple;
    target_opts.CPU = target.cpu;
    target_opts.FeaturesAsWritten = target.features;
  }
  invocation->getFrontendOpts().DisableFree = false; // the driver's default leaks the AST
  // ... and its backend's TargetMachine (BuryPointer), about 27 KB per compile.
  invocation->getCodeGenOpts().DisableFree = false;
  invocation->getFrontendOpts().Inputs.clear();
  invocation->getFrontendOpts().Inputs.emplace_back(std::string(codegen::k_buffer_name),
                                                    clang::InputKind(clang::Language::CXX));
  invocation->getFrontendOpts().OutputFile.clear();
  invocation->getCodeGenOpts().MainFileName = std::string(codegen::k_buffer_name);
  // The frontend only emits IR; the pipeline runs below, timed on its own.
  invocation->getCodeGenOpts().DisableLLVMPasses = true;
  invocation->getDiagnosticOpts().ShowColors = false;
  // Otherwise the instance prints "N warnings generated." to stderr itself; the warnings are
  // returned with the object instead.
  invocation->getDiagnosticOpts().ShowCarets = false;
  // What clang's backend derives from the language options (its initTargetOptions): fused
  // multiply-add and the fast-math assumptions, for the TargetMachine built in compile().
  const clang::LangOptions& lang = invocation->getLangOpts();
  auto& to = m_impl->target_options;
  switch (lang.getDefaultFPContractMode()) {
  case clang::LangOptions::FPM_Off:
    to.AllowFPOpFusion = llvm::FPOpFusion::Strict;
    break;
  case clang::LangOptions::FPM_On:
  case clang::LangOptions::FPM_FastHonorPragmas:
    to.AllowFPOpFusion = llvm::FPOpFusion::Standard;
    break;
  case clang::LangOptions::FPM_Fast:
    to.AllowFPOpFusion = llvm::FPOpFusion::Fast;
    break;
  }
  to.UnsafeFPMath = lang.AllowFPReassoc && lang.AllowRecip && lang.NoSignedZero && lang.ApproxFunc;
  to.NoInfsFPMath = lang.NoHonorInfs;
  to.NoNaNsFPMath = lang.NoHonorNaNs;
  to.NoSignedZerosFPMath = lang.NoSignedZero;
  to.ApproxFuncFPMath = lang.ApproxFunc;
  m_impl->invocation = std::move(invocation);
  m_impl->options = std::move(options);
  m_impl->target = std::move(gpu);
}

Compiler::~Compiler() = default;

const CompileOptions& Compiler::options() const noexcept {
  return m_impl->options;
}

const std::string& Compiler::flags() const noexcept {
  return m_impl->flags;
}

const std::string& Compiler::pipeline() const noexcept {
  return detail::pipeline_name();
}

const Target& Compiler::target() const noexcept {
  return m_impl->target;
}

const std::string& Compiler::libdevice_digest() const noexcept {
  return m_impl->libdevice_digest;
}

// Clang and LLVM recurse on a kernel's expressions: a text of deeply nested ones (an expression
// of 50,000 terms) overflowed the caller's stack of 8 MiB and took the whole process down, where
// a compiler process would have died alone. A compile runs on a thread of its own with a larger
// stack (reserved, and touched only as deep as the text needs), whose bottom Clang is told, so
// that where Clang measures its depth it goes on in a fresh stack instead of overflowing.
constexpr unsigned k_compile_stack_bytes = 256U << 20;

CompiledObject Compiler::compile(std::string_view source, Listing listing,
                                 std::string_view debug_file) const {
  std::optional<CompiledObject> result;
  std::exception_ptr failure;
  llvm::thread worker(std::optional<unsigned>(k_compile_stack_bytes), [&] {
    clang::noteBottomOfStack();
    try {
      result.emplace(compile_here(source, listing, debug_file));
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) {
    std::rethrow_exception(failure);
  }
  return std::move(*result);
}

CompiledObject Compiler::compile_here(std::string_view source, Listing listing,
                                      std::string_view debug_file) const {
  const TargetInfo& host = host_target();
  const bool cuda = m_impl->target.is_cuda();
  const std::string triple = cuda ? std::string(detail::k_nvptx_triple) : host.triple;
  const std::string cpu = cuda ? m_impl->target.sm() : host.cpu;
  const std::string features = cuda ? ptx_feature() : join(host.features, ",");
  CompiledObject result;
  auto start = Clock::now();

  // --- Frontend: source → IR -------------------------------------------------------------------
  auto context = std::make_unique<llvm::LLVMContext>();
  DiagnosticSink sink;
  auto invocation = std::make_shared<clang::CompilerInvocation>(*m_impl->invocation);
  if (m_impl->options.debug_info == DebugInfo::yes && !debug_file.empty()) {
    // A prefix map renames files in the debug info only; diagnostics keep the name the body's
    // line marker gives (kernel.cpp). The headers (uwjit_kernel_*.h) keep their names.
    invocation->getCodeGenOpts().DebugPrefixMap.emplace_back(std::string(codegen::k_buffer_name),
                                                             std::string(debug_file));
  }
  invocation->getPreprocessorOpts().addRemappedFile(
      codegen::k_buffer_name,
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()),
                                           codegen::k_buffer_name)
          .release());
  clang::CompilerInstance instance;
  instance.setInvocation(invocation);
  RecordingConsumer recorder(sink.printer);
  instance.createDiagnostics(&recorder, false);
  clang::EmitLLVMOnlyAction action(context.get());
  const bool parsed = instance.ExecuteAction(action);
  std::unique_ptr<llvm::Module> module =
      parsed && !instance.getDiagnostics().hasErrorOccurred() ? action.takeModule() : nullptr;
  if (!module) {
    throw Error(ErrorKind::compile, "kernel does not compile:\n" + sink.flush(),
                std::move(recorder.diagnostics));
  }
  result.warnings = sink.flush();
  if (cuda) {
    module->setTargetTriple(triple);
    detail::link_libdevice(*module, m_impl->libdevice, m_impl->target);
  }
  result.timings.frontend_ms = ms_since(start);

  // --- Optimise ----------------------------------------------------------------------------------
  start = Clock::now();
  auto owned_diagnostics = std::make_unique<BackendDiagnostics>();
  BackendDiagnostics& backend = *owned_diagnostics;
  context->setDiagnosticHandler(std::move(owned_diagnostics));
  const auto backend_errors = [&](std::string_view phase) {
    if (!backend.errors.empty()) {
      throw Error(ErrorKind::compile,
                  format("kernel does not compile ({}):\n{}", phase, join(backend.errors, "\n")));
    }
  };
  std::string lookup_error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, lookup_error);
  if (llvm_target == nullptr) {
    throw Error(ErrorKind::internal, "no LLVM target for " + triple + ": " + lookup_error);
  }
  const int level = m_impl->options.opt_level;
  const auto codegen_level = level == 0   ? llvm::CodeGenOptLevel::None
                             : level == 1 ? llvm::CodeGenOptLevel::Less
                             : level == 2 ? llvm::CodeGenOptLevel::Default
                                          : llvm::CodeGenOptLevel::Aggressive;
  llvm::TargetOptions target_options = m_impl->target_options;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target->createTargetMachine(
      triple, cpu, features, target_options,
      cuda ? std::optional<llvm::Reloc::Model>() : llvm::Reloc::PIC_, std::nullopt, codegen_level));
  module->setDataLayout(machine->createDataLayout());
  module->setTargetTriple(triple);

  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    // Hand-built pipelines leave the vectorisers off unless told (the driver turns them on);
    // SLP vectorisation is the kernel pipeline's own (pipeline.cpp).
    llvm::PipelineTuningOptions tuning;
    tuning.LoopVectorization = level >= 2;
    tuning.SLPVectorization = false;
    tuning.LoopUnrolling = level >= 1;
    tuning.LoopInterleaving = level >= 1;
    llvm::PassBuilder builder(machine.get(), tuning);
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager passes = detail::kernel_pipeline(builder, level);
    passes.run(*module, mam);
  }
  backend_errors("optimisation");
  reject_static_initialisers(*module);
  if (cuda) {
    detail::reject_undefined_calls(*module, m_impl->target);
  }
  result.timings.optimise_ms = ms_since(start);
  if (listing != Listing::none) {
    llvm::raw_string_ostream ir(result.optimised_ir);
    module->print(ir, nullptr);
  }
  if (listing == Listing::ir_and_assembly && !cuda) { // a cuda target's result is assembly
    // Codegen passes may change the module: print the assembly from a copy.
    const std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*module);
    llvm::raw_string_ostream text(result.assembly);
    llvm::buffer_ostream stream(text);
    llvm::legacy::PassManager passes;
    if (!machine->addPassesToEmitFile(passes, stream, nullptr,
                                      llvm::CodeGenFileType::AssemblyFile)) {
      passes.run(*copy);
    }
  }

  // --- Codegen: IR → ELF object (host) or PTX text (cuda) ---------------------------------------
  start = Clock::now();
  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream stream(object);
    llvm::legacy::PassManager passes;
    const auto type =
        cuda ? llvm::CodeGenFileType::AssemblyFile : llvm::CodeGenFileType::ObjectFile;
    if (machine->addPassesToEmitFile(passes, stream, nullptr, type)) {
      throw Error(ErrorKind::internal, "the target cannot emit its output: " + triple);
    }
    passes.run(*module);
  }
  backend_errors("code generation");
  for (const auto& warning : backend.warnings) {
    result.warnings += "warning: " + warning + "\n";
  }
  result.bytes.assign(object.begin(), object.end());
  if (cuda && listing == Listing::ir_and_assembly) {
    result.assembly.assign(object.begin(), object.end());
  }
  result.timings.codegen_ms = ms_since(start);
  return result;
}

} // namespace uwjit::engine
