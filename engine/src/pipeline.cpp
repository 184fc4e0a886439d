// The optimisation pipeline of a kernel: LLVM's own pipeline of the -O level, with two changes
// that make a cold compile cheaper and leave the kernels as fast (docs/explanation/performance.md,
// "A pipeline chosen for kernels"):
//
// - SLP vectorisation runs at the end of the pipeline, and only on a function the loop
//   vectoriser left without vector instructions. A kernel's time is in its innermost loop; once
//   that loop is vectorised, the straight-line vectoriser has nothing there worth its cost, and
//   a kernel whose loops stay scalar (gathers, a loop the cost model refuses, as fields16's and
//   mlp's) still gets it.
// - On AMD's Zen cores (LLVM's host CPU `znver*`), code generation leaves out loop strength
//   reduction. For loops that read many arrays it was 40 % of pipe-flow's code generation (19
//   populations at three offsets) and three quarters of the stencil's, and there the kernels
//   ran as fast without it (Zen 4; pipe-flow 2 % slower on Zen 5). On an Intel Xeon (Sapphire
//   Rapids) the stencil, whose loads are indexed by strides known only at run time, ran 10 %
//   slower without it (JIT/AOT 0.90 against 1.00), so on other CPUs it stays. LLVM offers no
//   per-compile switch for it, only the process-wide option `-disable-lsr`: it is set once, and
//   so applies to every compile by this process's LLVM (a host that also generates code with
//   the same libLLVM gets it too).
#include "pipeline.hpp"

namespace uwjit::engine::detail {

namespace {

bool has_vector_instructions(const llvm::Function& function) {
  for (const llvm::BasicBlock& block : function) {
    for (const llvm::Instruction& instruction : block) {
      if (instruction.getType()->isVectorTy()) {
        return true;
      }
    }
  }
  return false;
}

// SLP vectorisation of a function left scalar, then the clean-up the default pipeline runs
// after it.
struct SlpWhereScalar : llvm::PassInfoMixin<SlpWhereScalar> {
  llvm::PreservedAnalyses run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
    if (function.isDeclaration() || has_vector_instructions(function)) {
      return llvm::PreservedAnalyses::all();
    }
    llvm::PreservedAnalyses kept = llvm::SLPVectorizerPass().run(function, analyses);
    if (kept.areAllPreserved()) {
      return kept;
    }
    analyses.invalidate(function, kept);
    llvm::PreservedAnalyses combined = llvm::VectorCombinePass().run(function, analyses);
    analyses.invalidate(function, combined);
    combined.intersect(llvm::InstCombinePass().run(function, analyses));
    combined.intersect(std::move(kept));
    return combined;
  }
};

// On a Zen host, sets LLVM's -disable-lsr, once per process; whether it is set (every build
// registers it).
bool no_loop_strength_reduction() {
  static const bool disabled = [] {
    if (!llvm::sys::getHostCPUName().starts_with("znver")) {
      return false;
    }
    auto& options = llvm::cl::getRegisteredOptions();
    const auto found = options.find("disable-lsr");
    return found != options.end() && !found->second->addOccurrence(0, "disable-lsr", "true");
  }();
  return disabled;
}

} // namespace

llvm::ModulePassManager kernel_pipeline(llvm::PassBuilder& builder, int level) {
  if (level == 0) {
    return builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  }
  const llvm::OptimizationLevel opt = level == 1   ? llvm::OptimizationLevel::O1
                                      : level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
  if (level >= 2) {
    builder.registerOptimizerLastEPCallback(
        [](llvm::ModulePassManager& passes, llvm::OptimizationLevel) {
          passes.addPass(llvm::createModuleToFunctionPassAdaptor(SlpWhereScalar()));
        });
  }
  return builder.buildPerModuleDefaultPipeline(opt);
}

void configure_code_generation() {
  (void)no_loop_strength_reduction();
}

const std::string& pipeline_name() {
  static const std::string name =
      no_loop_strength_reduction() ? "slp-where-scalar,no-lsr" : "slp-where-scalar";
  return name;
}

} // namespace uwjit::engine::detail
