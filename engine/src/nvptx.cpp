#include "nvptx.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/common/text.hpp>

#include "llvm.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <set>

namespace uwjit::engine::detail {

namespace {

// The libm functions (double; the float form adds "f") that NVPTX has no instruction for: their
// double and float forms need libdevice's __nv_NAME / __nv_NAMEf. sqrt, fabs, fmin, fmax, floor,
// ceil, trunc, round, copysign and fma lower to PTX instructions.
constexpr std::array<std::string_view, 29> k_libdevice_math{
    "exp",   "exp2", "expm1", "log",  "log2",  "log10",  "log1p",  "pow",  "sin",      "cos",
    "tan",   "asin", "acos",  "atan", "atan2", "sinh",   "cosh",   "tanh", "asinh",    "acosh",
    "atanh", "cbrt", "hypot", "erf",  "erfc",  "tgamma", "lgamma", "fmod", "remainder"};

bool is_libdevice_math(std::string_view name) {
  return std::find(k_libdevice_math.begin(), k_libdevice_math.end(), name) !=
         k_libdevice_math.end();
}

// The C name (e.g. "exp", "tanhf") of a declaration NVPTX needs libdevice for, or "".
std::string math_name(const llvm::Function& function) {
  const std::string name = function.getName().str();
  if (name.starts_with("llvm.")) {
    // llvm.exp.f64, llvm.pow.f32, ...: the forms -fno-math-errno gives.
    for (const auto& [suffix, c_suffix] :
         {std::pair<std::string_view, std::string_view>{".f64", ""}, {".f32", "f"}}) {
      if (name.ends_with(suffix)) {
        const std::string base = name.substr(5, name.size() - 5 - suffix.size());
        if (is_libdevice_math(base)) {
          return base + std::string(c_suffix);
        }
      }
    }
    return "";
  }
  if (is_libdevice_math(name)) {
    return name;
  }
  if (name.ends_with('f') && is_libdevice_math(std::string_view(name).substr(0, name.size() - 1))) {
    return name;
  }
  return "";
}

std::vector<std::string> ptx_names(std::string_view ptx, std::string_view directive) {
  std::vector<std::string> out;
  auto skip_spaces = [](std::string_view& text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
      text.remove_prefix(1);
    }
  };
  for (const auto& line : split_lines(std::string(ptx))) {
    const auto at = line.find(directive);
    if (at == std::string::npos) {
      continue;
    }
    // ".entry NAME(" or ".func NAME(" or ".func (.param ...) NAME(".
    std::string_view rest = std::string_view(line).substr(at + directive.size());
    skip_spaces(rest);
    if (!rest.empty() && rest.front() == '(') {
      const auto close = rest.find(')');
      rest = close == std::string_view::npos ? std::string_view() : rest.substr(close + 1);
      skip_spaces(rest);
    }
    const std::string_view name = rest.substr(0, rest.find_first_of("( \t;"));
    if (!name.empty()) {
      out.emplace_back(name);
    }
  }
  return out;
}

} // namespace

Libdevice load_libdevice() {
  Libdevice lib;
  lib.search = find_libdevice();
  lib.digest = "none";
  if (!lib.search.path) {
    return lib;
  }
  std::ifstream in(*lib.search.path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    throw Error(ErrorKind::io, format("libdevice \"{}\": cannot be read", *lib.search.path));
  }
  lib.digest = cache::sha256_hex(bytes);
  lib.bytes = std::make_shared<const std::string>(std::move(bytes));
  return lib;
}

void link_libdevice(llvm::Module& module, const Libdevice& libdevice, const Target& target) {
  std::vector<llvm::Function*> needed;
  std::set<std::string> names;
  for (llvm::Function& function : module) {
    if (function.isDeclaration() && !function.use_empty()) {
      if (auto name = math_name(function); !name.empty()) {
        needed.push_back(&function);
        names.insert(std::move(name));
      }
    }
  }
  if (needed.empty()) {
    return;
  }
  if (!libdevice.bytes) {
    throw Error(ErrorKind::compile,
                format("{}: {} on {} need{} CUDA's libdevice, which was not found (looked at: "
                       "{}); set UWJIT_CUDA_PATH to a CUDA installation, or use only sqrt, fabs, "
                       "fmin, fmax, floor and + - * / in GPU kernels",
                       codegen::k_buffer_name,
                       join(std::vector<std::string>(names.begin(), names.end()), ", "),
                       target.text(), names.size() == 1 ? "s" : "",
                       join(libdevice.search.looked_at, ", ")));
  }
  for (llvm::Function* function : needed) {
    const std::string name = math_name(*function);
    llvm::FunctionCallee callee =
        module.getOrInsertFunction("__nv_" + name, function->getFunctionType());
    function->replaceAllUsesWith(callee.getCallee());
    function->eraseFromParent();
  }
  std::set<std::string> defined;
  for (const llvm::GlobalValue& value : module.global_values()) {
    if (!value.isDeclaration()) {
      defined.insert(value.getName().str());
    }
  }
  auto parsed = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(*libdevice.bytes, *libdevice.search.path), module.getContext());
  if (!parsed) {
    throw Error(ErrorKind::compile,
                format("libdevice \"{}\" is not LLVM bitcode: {}", *libdevice.search.path,
                       take_message(parsed.takeError())));
  }
  std::unique_ptr<llvm::Module> lib = std::move(*parsed);
  lib->setTargetTriple(module.getTargetTriple());
  lib->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(lib), llvm::Linker::Flags::LinkOnlyNeeded)) {
    throw Error(ErrorKind::compile,
                format("libdevice \"{}\" could not be linked", *libdevice.search.path));
  }
  // What came from libdevice is the kernel's own: internal, so that it is inlined and the rest
  // dropped, and the PTX shows only the kernel's entries.
  for (llvm::GlobalValue& value : module.global_values()) {
    if (!value.isDeclaration() && !defined.contains(value.getName().str())) {
      value.setLinkage(llvm::GlobalValue::InternalLinkage);
    }
  }
}

void reject_undefined_calls(const llvm::Module& module, const Target& target) {
  std::vector<std::string> undefined;
  for (const llvm::Function& function : module) {
    if (function.isDeclaration() && !function.isIntrinsic() && !function.use_empty()) {
      undefined.push_back(function.getName().str());
    }
  }
  if (!undefined.empty()) {
    throw Error(ErrorKind::compile,
                format("{}: the kernel calls {}, which {} not defined on {}: a GPU kernel may "
                       "call only functions it defines, the uwm:: math and the __nvvm builtins",
                       codegen::k_buffer_name, join(undefined, ", "),
                       undefined.size() == 1 ? "is" : "are", target.text()));
  }
}

std::vector<std::string> ptx_entries(std::string_view ptx) {
  return ptx_names(ptx, ".entry ");
}

std::vector<std::string> ptx_functions(std::string_view ptx) {
  return ptx_names(ptx, ".func ");
}

} // namespace uwjit::engine::detail
