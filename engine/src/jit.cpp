#include <uwjit/engine/jit.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>

#include "llvm.hpp"

#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <mutex>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace uwjit::engine {

std::vector<std::string> defined_functions(std::span<const char> object) {
  auto parsed = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(object.data(), object.size()), "kernel.o"));
  if (!parsed) {
    throw Error(ErrorKind::jit,
                "cannot read the object: " + detail::take_message(parsed.takeError()));
  }
  std::vector<std::string> names;
  for (const llvm::object::SymbolRef& symbol : (*parsed)->symbols()) {
    auto flags = symbol.getFlags();
    auto type = symbol.getType();
    auto name = symbol.getName();
    if (!flags || !type || !name) {
      llvm::consumeError(flags.takeError());
      llvm::consumeError(type.takeError());
      llvm::consumeError(name.takeError());
      continue;
    }
    const bool defined = (*flags & llvm::object::SymbolRef::SF_Undefined) == 0;
    const bool global = (*flags & llvm::object::SymbolRef::SF_Global) != 0;
    if (defined && global && *type == llvm::object::SymbolRef::ST_Function) {
      names.push_back(name->str());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Jit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::atomic<std::uint64_t> next_dylib{0};
  // Perf support is on and the jitdump header still waits for its repair: checked after each
  // load until the header is on disk and repaired.
  std::atomic<bool> jitdump_unrepaired{false};
  std::mutex jitdump_mutex;
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
  options.debugger = env::get_bool(env::vars::debug) ? DebuggerSupport::yes : DebuggerSupport::no;
  options.perf = env::get_bool(env::vars::perf) ? PerfSupport::yes : PerfSupport::no;
  return options;
}

namespace {

// LLVM's jitdump: jit-PID.dump, in a directory of its own under $JITDUMPDIR (or $HOME)
// /.debug/jit. LLVM holds the file open while perf support runs, so this process's open files
// say where it is (and whether LLVM managed to start it).
std::vector<std::filesystem::path> open_jitdumps() {
  const std::string wanted = "jit-" + std::to_string(::getpid()) + ".dump";
  std::vector<std::filesystem::path> found;
  // Descriptors come and go while this runs (other threads): no step of it may throw.
  std::error_code ec;
  for (std::filesystem::directory_iterator fd("/proc/self/fd", ec), end; !ec && fd != end;
       fd.increment(ec)) {
    std::error_code link_ec;
    auto target = std::filesystem::read_symlink(fd->path(), link_ec);
    if (!link_ec && target.filename() == wanted &&
        std::find(found.begin(), found.end(), target) == found.end()) {
      found.push_back(std::move(target));
    }
  }
  return found;
}

enum class Repair { done, not_yet, failed };

constexpr std::uint32_t k_jitdump_magic = 0x4A695444; // "JiTD"

// LLVM 19 leaves two fields of the jitdump header uninitialised: pad1 (4 bytes at offset 16)
// and flags (8 bytes at offset 32); `perf inject --jit` rejects a file whose flags it does not
// know. The header waits in LLVM's stream buffer until the first code record is flushed, and a
// write before that would be overwritten: repair only a file that holds the header.
Repair repair_jitdump_header(const std::filesystem::path& path) {
  const int file = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (file < 0) {
    return Repair::failed;
  }
  std::uint32_t magic = 0;
  Repair outcome = Repair::not_yet;
  if (::pread(file, &magic, sizeof magic, 0) == static_cast<ssize_t>(sizeof magic) &&
      magic == k_jitdump_magic) {
    const char zeros[8] = {};
    const bool written = ::pwrite(file, zeros, 4, 16) == 4 && ::pwrite(file, zeros, 8, 32) == 8;
    outcome = written ? Repair::done : Repair::failed;
  }
  ::close(file);
  return outcome;
}

// Where LLVM will try to create the jitdump's directory, as LLVM 19 chooses it.
std::filesystem::path jitdump_base() {
  if (const auto dir = env::get_path(env::vars::jitdump_dir)) {
    return *dir;
  }
  if (const auto home = env::get("HOME"); home && !home->empty()) {
    return *home;
  }
  return ".";
}

// Returns whether perf support is on. LLVM's plugin cannot report a failed start: every later
// link would then fail ("PerfState not initialized"). So check the directory first, for a
// precise message, and afterwards that LLVM really opened the jitdump.
bool add_perf_support(llvm::orc::LLJIT& lljit, const log::Logger& logger) {
  auto* linking = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&lljit.getObjLinkingLayer());
  auto process = lljit.getProcessSymbolsJITDylib();
  if (linking == nullptr || !process) {
    logger.warn("perf support unavailable: the JIT does not link with JITLink here");
    return false;
  }
  const auto dir = jitdump_base() / ".debug" / "jit";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && ::access(dir.c_str(), W_OK | X_OK) != 0) {
    ec = std::error_code(errno, std::generic_category());
  }
  if (ec) {
    logger.warn("perf support unavailable: cannot write the jitdump in {}: {} (set JITDUMPDIR to "
                "a writable directory)",
                dir.string(), ec.message());
    return false;
  }
  // Unwind records are left out: LLVM 19 prints a line to stderr for each one.
  auto plugin = llvm::orc::PerfSupportPlugin::Create(
      lljit.getExecutionSession().getExecutorProcessControl(), *process, true, false);
  if (!plugin) {
    logger.warn("perf support unavailable: {}", detail::take_message(plugin.takeError()));
    return false;
  }
  if (open_jitdumps().empty()) {
    logger.warn("perf support unavailable: LLVM could not start a jitdump in {}", dir.string());
    return false;
  }
  // JITLink drops debug sections unless told to keep them; the perf plugin reads its line
  // records (for `perf annotate` with source lines, under UWJIT_DEBUG) from them.
  linking->addPlugin(std::make_unique<llvm::orc::DebugInfoPreservationPlugin>());
  linking->addPlugin(std::move(*plugin));
  return true;
}

void repair_jitdumps(Jit::Impl& jit) {
  std::lock_guard lock(jit.jitdump_mutex);
  if (!jit.jitdump_unrepaired.load()) {
    return;
  }
  bool pending = false;
  for (const auto& path : open_jitdumps()) {
    switch (repair_jitdump_header(path)) {
    case Repair::done:
      jit.logger.info("perf jitdump: {}", path.string());
      break;
    case Repair::not_yet:
      pending = true;
      break;
    case Repair::failed:
      jit.logger.warn("cannot repair the jitdump header of {}: perf inject --jit will reject it",
                      path.string());
      break;
    }
  }
  jit.jitdump_unrepaired.store(pending);
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
  if (options.perf == PerfSupport::yes && add_perf_support(*impl->lljit, impl->logger)) {
    impl->jitdump_unrepaired.store(true);
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
  // The lookup linked the object, and the perf plugin has flushed its code record.
  if (m_impl->jitdump_unrepaired.load()) {
    repair_jitdumps(*m_impl);
  }
  LoadedObject loaded;
  loaded.entry = symbol->toPtr<uwjit_kernel_fn>();
  loaded.code = std::move(code);
  return loaded;
}

} // namespace uwjit::engine
