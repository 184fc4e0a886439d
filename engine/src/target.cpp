#include <uwjit/engine/target.hpp>

#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include "llvm.hpp"
#include "nvptx.hpp"

#include <algorithm>
#include <mutex>
#include <sys/stat.h>

namespace uwjit::engine {

namespace detail {

void initialise_nvptx_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

const std::vector<std::string>& nvptx_architectures() {
  static const std::vector<std::string> names = [] {
    initialise_nvptx_target();
    std::vector<std::string> out;
    std::string error;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(k_nvptx_triple, error);
    UWJIT_ASSERT(target != nullptr, "LLVM has no NVPTX target: " + error);
    const std::unique_ptr<llvm::MCSubtargetInfo> info(
        target->createMCSubtargetInfo(k_nvptx_triple, "sm_90", ""));
    for (const auto& cpu : info->getAllProcessorDescriptions()) {
      out.emplace_back(cpu.Key);
    }
    return out;
  }();
  return names;
}

} // namespace detail

namespace {

// The architectures a PTX ISA 8.5 module may name: sm_50 and later (older ones are gone from
// CUDA 12's ptxas).
bool supported(const std::string& sm) {
  const auto& known = detail::nvptx_architectures();
  if (std::find(known.begin(), known.end(), sm) == known.end()) {
    return false;
  }
  int number = 0;
  for (std::size_t i = 3; i < sm.size() && sm[i] >= '0' && sm[i] <= '9'; ++i) {
    number = number * 10 + (sm[i] - '0');
  }
  return number >= 50;
}

} // namespace

Target Target::parse(std::string_view text) {
  if (text == "host") {
    return {};
  }
  if (text.starts_with("cuda:sm_")) {
    std::string sm(text.substr(5));
    if (supported(sm)) {
      Target target;
      target.m_sm = std::move(sm);
      return target;
    }
  }
  std::vector<std::string> accepted;
  for (const auto& sm : detail::nvptx_architectures()) {
    if (supported(sm)) {
      accepted.push_back("cuda:" + sm);
    }
  }
  throw Error(ErrorKind::usage,
              format("target \"{}\": expected host or cuda:sm_XX (accepted: host, {})", text,
                     join(accepted, ", ")));
}

std::string Target::text() const {
  return is_host() ? std::string("host") : "cuda:" + m_sm;
}

CudaInstallation cuda_installation() {
  // The first place named is the only one: an installation asked for is never silently
  // replaced by another.
  if (const auto root = env::get_path(env::vars::cuda_path)) {
    return {*root, env::vars::cuda_path.name};
  }
  if (const auto home = env::get_path(env::vars::cuda_home)) {
    return {*home, env::vars::cuda_home.name};
  }
  return {"/usr/local/cuda", "the default"};
}

LibdeviceSearch find_libdevice() {
  LibdeviceSearch search;
  const CudaInstallation cuda = cuda_installation();
  const std::string file = cuda.root + "/nvvm/libdevice/libdevice.10.bc";
  search.looked_at.push_back(format("{} ({})", file, cuda.rule));
  struct stat status{};
  if (::stat(file.c_str(), &status) == 0 && S_ISREG(status.st_mode)) {
    search.path = file;
  }
  return search;
}

} // namespace uwjit::engine
