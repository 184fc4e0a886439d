// The optimisation pipeline of a kernel: LLVM's own pipeline of the -O level, with two changes
// that make a cold compile cheaper and leave the kernels as fast (docs/explanation/performance.md,
// "A pipeline chosen for kernels"):
//
// - SLP vectorisation runs at the end of the pipeline, and only on a function the loop
//   vectoriser left without vector instructions. A kernel's time is in its innermost loop; once
//   that loop is vectorised, the straight-line vectoriser has nothing there worth its cost, and
//   a kernel whose loops stay scalar (gathers, a loop the cost model refuses, as fields16's and
//   mlp's) still gets it.
// - Loop strength reduction, which code generation runs on every loop, runs instead at the end
//   of the optimisation pipeline, and only on the loops of a function one of whose innermost
//   loops reads or writes one array at offsets whose distance is known only at run time (a
//   stencil whose strides are run-time extents: `u[c - sx]`, `u[c]`, `u[c + sx]`). There it turns
//   each offset into a base register of its own, and without it a stencil on an Intel Xeon
//   (Sapphire Rapids) ran 10 % slower (JIT/AOT 0.90 against 1.00). Where the distances are
//   constants (extents compiled in, as pipe-flow's and heat's), the offsets fold into the address
//   and the pass changes little at a high price: 40 % of pipe-flow's code generation (19
//   populations at three offsets), with the kernel as fast without it on an Intel Xeon and on AMD's
//   Zen 4 (2 % slower on Zen 5). On an x86 CPU with 16 vector registers (no AVX-512: AMD's Zen 3,
//   for one), the pass also runs on each vectorised loop, not on its scalar remainder: pipe-flow's
//   vector loop spills there, and the fewer address registers the pass leaves make it faster
//   (JIT/AOT 0.80-0.94 without, 1.00-1.01 with, on Zen 3) for 25-30 ms more of a cold request; on
//   every loop it added 67 ms there (docs/explanation/performance.md). Code generation is told to
//   leave it out with LLVM's process-wide option `-disable-lsr`, set once (a host that also
//   generates code with the same libLLVM in the same process gets it too).
#include "pipeline.hpp"

#include <uwjit/common/error.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace uwjit::engine::detail {

namespace {

bool has_vector_instructions(const llvm::BasicBlock& block) {
  return std::any_of(block.begin(), block.end(), [](const llvm::Instruction& instruction) {
    return instruction.getType()->isVectorTy();
  });
}

bool has_vector_instructions(const llvm::Function& function) {
  return std::any_of(function.begin(), function.end(),
                     [](const llvm::BasicBlock& block) { return has_vector_instructions(block); });
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

// Whether an innermost loop of `function` accesses one array (one pointer base) at two addresses
// whose distance is not a constant.
bool offsets_vary(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
  llvm::LoopInfo& loops = analyses.getResult<llvm::LoopAnalysis>(function);
  llvm::ScalarEvolution& evolution = analyses.getResult<llvm::ScalarEvolutionAnalysis>(function);
  for (const llvm::Loop* loop : loops.getLoopsInPreorder()) {
    if (!loop->isInnermost()) {
      continue;
    }
    // Each pointer base with the first address seen from it (a loop reads a few arrays).
    std::vector<std::pair<const llvm::SCEV*, const llvm::SCEV*>> first_address;
    for (const llvm::BasicBlock* block : loop->blocks()) {
      for (const llvm::Instruction& instruction : *block) {
        const llvm::Value* pointer = llvm::getLoadStorePointerOperand(&instruction);
        if (pointer == nullptr || !evolution.isSCEVable(pointer->getType())) {
          continue;
        }
        const llvm::SCEV* address = evolution.getSCEV(const_cast<llvm::Value*>(pointer));
        const llvm::SCEV* base = evolution.getPointerBase(address);
        const auto found = std::find_if(first_address.begin(), first_address.end(),
                                        [&](const auto& seen) { return seen.first == base; });
        if (found == first_address.end()) {
          first_address.emplace_back(base, address);
        } else if (!llvm::isa<llvm::SCEVConstant>(evolution.getMinusSCEV(address, found->second))) {
          return true;
        }
      }
    }
  }
  return false;
}

// Whether `function` is compiled for an x86 CPU with 16 vector registers (no AVX-512).
bool sixteen_vector_registers(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
  if (!llvm::Triple(function.getParent()->getTargetTriple()).isX86()) {
    return false;
  }
  const llvm::TargetTransformInfo& target = analyses.getResult<llvm::TargetIRAnalysis>(function);
  return target.getNumberOfRegisters(target.getRegisterClassForType(true)) <= 16;
}

// Loop strength reduction of a loop that holds vector instructions (a vectorised loop, not its
// scalar remainder).
struct StrengthReduceVectorLoop : llvm::PassInfoMixin<StrengthReduceVectorLoop> {
  llvm::PreservedAnalyses run(llvm::Loop& loop, llvm::LoopAnalysisManager& analyses,
                              llvm::LoopStandardAnalysisResults& results,
                              llvm::LPMUpdater& updater) {
    const auto blocks = loop.blocks();
    if (std::none_of(blocks.begin(), blocks.end(), [](const llvm::BasicBlock* block) {
          return has_vector_instructions(*block);
        })) {
      return llvm::PreservedAnalyses::all();
    }
    return llvm::LoopStrengthReducePass().run(loop, analyses, results, updater);
  }
};

// Loop strength reduction as code generation runs it (after canonicalising freezes): on every
// loop of a function one of whose innermost loops offsets_vary(), and on the vectorised loops of
// any function compiled for 16 vector registers.
struct StrengthReduceWhereItPays : llvm::PassInfoMixin<StrengthReduceWhereItPays> {
  llvm::PreservedAnalyses run(llvm::Function& function, llvm::FunctionAnalysisManager& analyses) {
    if (function.isDeclaration()) {
      return llvm::PreservedAnalyses::all();
    }
    const bool every_loop = offsets_vary(function, analyses);
    if (!every_loop && !sixteen_vector_registers(function, analyses)) {
      return llvm::PreservedAnalyses::all();
    }
    llvm::LoopPassManager loop_passes;
    loop_passes.addPass(llvm::CanonicalizeFreezeInLoopsPass());
    if (every_loop) {
      loop_passes.addPass(llvm::LoopStrengthReducePass());
    } else {
      loop_passes.addPass(StrengthReduceVectorLoop());
    }
    llvm::FunctionPassManager passes;
    passes.addPass(llvm::createFunctionToLoopPassAdaptor(std::move(loop_passes)));
    return passes.run(function, analyses);
  }
};

// Sets LLVM's -disable-lsr, once per process; whether it is set (every build registers it).
bool code_generation_leaves_out_strength_reduction() {
  static const bool disabled = [] {
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
  if (level >= 1) { // code generation runs it from -O1
    builder.registerOptimizerLastEPCallback(
        [](llvm::ModulePassManager& passes, llvm::OptimizationLevel) {
          passes.addPass(llvm::createModuleToFunctionPassAdaptor(StrengthReduceWhereItPays()));
        });
  }
  return builder.buildPerModuleDefaultPipeline(opt);
}

void configure_code_generation() {
  if (!code_generation_leaves_out_strength_reduction()) {
    throw Error(ErrorKind::internal,
                "LLVM's option -disable-lsr is not registered: the kernel pipeline cannot run "
                "loop strength reduction only where it pays");
  }
}

const std::string& pipeline_name() {
  static const std::string name =
      "slp-where-scalar,lsr-where-offsets-vary,lsr-vector-loops-on-x86-without-avx512";
  return name;
}

} // namespace uwjit::engine::detail
