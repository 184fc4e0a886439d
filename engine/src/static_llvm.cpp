// Compiled only with UWJIT_STATIC_LLVM. Debian builds LLVM with Polly linked into its tools, so
// its static clangCodeGen (BackendUtil) refers to getPollyPluginInfo(), while Polly itself ships
// only inside the shared libLLVM. uwjit never runs Clang's own pass pipeline (the frontend only
// emits IR; engine/src/compiler.cpp builds the pipeline) and does not use Polly: this plugin
// registers nothing, so that the static link closes.
#include "llvm.hpp"

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Polly (not in this build)", "0", [](llvm::PassBuilder&) {}};
}
