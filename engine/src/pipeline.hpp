// The optimisation pipeline uwjit compiles kernels with: LLVM's pipeline of the -O level, less
// the work these kernels do not gain from (pipeline.cpp says what and why).
#pragma once

#include "llvm.hpp"

#include <string>

namespace uwjit::engine::detail {

/// The module pipeline for optimisation level `level` (0-3), built by `builder`.
llvm::ModulePassManager kernel_pipeline(llvm::PassBuilder& builder, int level);

/// Code generation's share of the choice, set once per process before the first compile: it
/// leaves loop strength reduction to the pipeline. Throws Error(internal) if LLVM cannot be told.
void configure_code_generation();

/// A short name of the choice, part of every key's salt: another choice compiles anew.
const std::string& pipeline_name();

} // namespace uwjit::engine::detail
