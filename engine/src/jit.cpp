#include <uwjit/engine/jit.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>

#include "llvm.hpp"

#include <uwjit/common/env.hpp>

#include <atomic>
#include <filesystem>
#include <mutex>

#include <fcntl.h>
#include <unistd.h>

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

JitOptions JitOptions::from_environment() {
  JitOptions options;
  options.debugger =
      env::get_bool("UWJIT_DEBUG", false) ? DebuggerSupport::yes : DebuggerSupport::no;
  options.perf = env::get_bool("UWJIT_PERF", false) ? PerfSupport::yes : PerfSupport::no;
  return options;
}

namespace {

// LLVM 19 leaves the jitdump header's flags field (8 bytes at offset 32) uninitialised, and
// `perf inject --jit` rejects such a file. Find this process's dump among its open files and
// zero the field.
void repair_jitdump_header(const log::Logger& logger) {
  const std::string wanted = "jit-" + std::to_string(::getpid()) + ".dump";
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    const auto target = std::filesystem::read_symlink(fd.path(), link_ec);
    if (link_ec || target.filename() != wanted) {
      continue;
    }
    const int file = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    const char zeros[8] = {};
    if (file < 0 || ::pwrite(file, zeros, sizeof zeros, 32) != static_cast<ssize_t>(sizeof zeros)) {
      logger.warn("cannot repair the jitdump header of {}", target.string());
    } else {
      logger.info("perf jitdump: {}", target.string());
    }
    if (file >= 0) {
      ::close(file);
    }
    return;
  }
  logger.warn("perf support: no jitdump file found among this process's open files");
}

void add_perf_support(llvm::orc::LLJIT& lljit, const log::Logger& logger) {
  auto* linking = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&lljit.getObjLinkingLayer());
  auto process = lljit.getProcessSymbolsJITDylib();
  if (linking == nullptr || !process) {
    logger.warn("perf support unavailable: the JIT does not link with JITLink here");
    return;
  }
  auto plugin = llvm::orc::PerfSupportPlugin::Create(
      lljit.getExecutionSession().getExecutorProcessControl(), *process, true, true);
  if (!plugin) {
    logger.warn("perf support unavailable: {}", detail::take_message(plugin.takeError()));
    return;
  }
  linking->addPlugin(std::move(*plugin));
  repair_jitdump_header(logger);
}

} // namespace

std::shared_ptr<Jit> Jit::shared() {
  static std::mutex mutex;
  static std::shared_ptr<Jit> instance;
  std::lock_guard lock(mutex);
  if (!instance) {
    instance = create(JitOptions::from_environment());
  }
  return instance;
}

std::shared_ptr<Jit> Jit::create(JitOptions options) {
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
  if (options.debugger == DebuggerSupport::yes) {
    if (auto error = llvm::orc::enableDebuggerSupport(*impl->lljit)) {
      impl->logger.warn("debugger support unavailable: {}", detail::take_message(std::move(error)));
    }
  }
  if (options.perf == PerfSupport::yes) {
    add_perf_support(*impl->lljit, impl->logger);
  }
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
