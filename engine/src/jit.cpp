#include <uwjit/engine/jit.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>

#include "llvm.hpp"

#include <atomic>

namespace uwjit::engine {

struct Jit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::atomic<std::uint64_t> next_dylib{0};
  log::Logger logger = log::get("uwjit.engine");
};

namespace {

// LLJIT materialises on the thread that looks a symbol up, and reports the real cause (e.g.
// "Symbols not found: [ foo ]") through the session's error reporter rather than through the
// failing lookup: collect it per thread so load() can put it in its Error.
thread_local std::string t_session_errors;

// Unloads one object's JITDylib. Destructors must not throw: a failure is logged.
struct LoadedCode {
  std::shared_ptr<Jit::Impl> jit;
  llvm::orc::JITDylib* dylib = nullptr;

  LoadedCode(std::shared_ptr<Jit::Impl> owner, llvm::orc::JITDylib* lib)
      : jit(std::move(owner)), dylib(lib) {}
  LoadedCode(const LoadedCode&) = delete;
  LoadedCode& operator=(const LoadedCode&) = delete;
  ~LoadedCode() {
    if (auto error = jit->lljit->getExecutionSession().removeJITDylib(*dylib)) {
      jit->logger.warn("unloading a kernel failed: {}", detail::take_message(std::move(error)));
    }
  }
};

} // namespace

std::shared_ptr<Jit> Jit::create() {
  detail::initialise_native_target();
  auto impl = std::make_shared<Impl>();
  auto built = llvm::orc::LLJITBuilder().create();
  if (!built) {
    throw Error(ErrorKind::jit,
                "cannot create the JIT: " + detail::take_message(built.takeError()));
  }
  impl->lljit = std::move(*built);
  // Session errors (e.g. unresolved symbols) also come back through the failing call; log them
  // here instead of letting LLVM print to stderr.
  impl->lljit->getExecutionSession().setErrorReporter([logger = impl->logger](llvm::Error error) {
    const std::string message = detail::take_message(std::move(error));
    logger.debug("JIT session: {}", message);
    t_session_errors += t_session_errors.empty() ? "" : "; ";
    t_session_errors += message;
  });
  return std::shared_ptr<Jit>(new Jit(std::move(impl)));
}

Jit::~Jit() = default;

LoadedObject Jit::load(std::span<const char> object, std::string_view entry) {
  auto& lljit = *m_impl->lljit;
  const auto name = "uwjit.k" + std::to_string(m_impl->next_dylib++);
  auto dylib = lljit.createJITDylib(name);
  if (!dylib) {
    throw Error(ErrorKind::jit,
                "cannot create a JITDylib: " + detail::take_message(dylib.takeError()));
  }
  llvm::orc::JITDylib& lib = *dylib;
  // From here on the dylib is owned by `code`: any failure below unloads it.
  auto code = std::make_shared<LoadedCode>(m_impl, &lib);
  auto buffer =
      llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), name);
  if (auto error = lljit.addObjectFile(lib, std::move(buffer))) {
    throw Error(ErrorKind::jit, format("cannot load the kernel object: {}",
                                       detail::take_message(std::move(error))));
  }
  t_session_errors.clear();
  auto symbol = lljit.lookup(lib, llvm::StringRef(entry.data(), entry.size()));
  if (!symbol) {
    std::string why = detail::take_message(symbol.takeError());
    if (!t_session_errors.empty()) {
      why = t_session_errors + " (" + why + ")";
    }
    throw Error(ErrorKind::jit, format("cannot link kernel entry \"{}\": {}", entry, why));
  }
  LoadedObject loaded;
  loaded.entry = symbol->toPtr<uwjit_kernel_fn>();
  loaded.code = std::move(code);
  return loaded;
}

} // namespace uwjit::engine
