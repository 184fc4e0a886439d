// The engine's public front: options from the environment, construction, and each request
// handed to the request logic (request.cpp) or the collective protocol (collective_request.cpp).
#include "engine_impl.hpp"

#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <exception>
#include <future>

namespace uwjit::engine {

using detail::Loaded;
using detail::to_kernel;

EngineOptions EngineOptions::from_environment() {
  // Every variable, not only those read here, so that a bad one is refused whichever parts of
  // the library this process goes on to use (as `uwjit env` refuses it).
  env::vars::check_all();
  EngineOptions options;
  if (env::get_bool(env::vars::debug)) {
    options.compile.debug_info = DebugInfo::yes;
  }
  options.lock_timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(env::get_seconds(env::vars::lock_timeout) * 1000));
  if (const auto dir = env::get_path(env::vars::dump_dir)) {
    options.dump_dir = *dir;
  }
  return options;
}

Engine::Engine() : Engine(EngineOptions::from_environment()) {}

namespace {
// An engine refuses every bad variable up front, also when its options were not read from the
// environment: it goes on to read several (log level, cache, trust) at different moments.
EngineOptions checked(EngineOptions options) {
  env::vars::check_all();
  return options;
}
} // namespace

Engine::Engine(EngineOptions options)
    : m_impl(std::make_unique<Impl>(checked(std::move(options)))) {}

Engine::~Engine() {
  if (m_impl->store) {
    m_impl->store->flush_stats(m_impl->stats);
  }
}

const cache::Salt& Engine::salt() const noexcept {
  return m_impl->base.salt;
}

const cache::Salt& Engine::salt_of(const codegen::KernelSource& source) const {
  return m_impl->flavour(source).salt;
}

const Compiler& Engine::compiler() const noexcept {
  return m_impl->base.compiler;
}

cache::StatsSnapshot Engine::stats() const {
  return m_impl->stats.snapshot();
}

std::optional<std::filesystem::path> Engine::cache_dir() const {
  if (m_impl->store) {
    return m_impl->store->dir();
  }
  return std::nullopt;
}

std::vector<std::filesystem::path> Engine::site_cache_dirs() const {
  std::vector<std::filesystem::path> dirs;
  for (const auto& site : m_impl->sites) {
    dirs.push_back(site.dir());
  }
  return dirs;
}

cache::Key Engine::key_of(const codegen::KernelSource& source) const {
  return m_impl->flavour(source).key_of(source);
}

cache::Key Engine::key_of(const codegen::KernelSource& source, const Target& target) const {
  return m_impl->flavour(source, target).key_of(source);
}

const cache::Salt& Engine::salt_of(const codegen::KernelSource& source,
                                   const Target& target) const {
  return m_impl->flavour(source, target).salt;
}

namespace {
void require_gpu_target(const Target& target) {
  if (!target.is_cuda()) {
    throw Error(ErrorKind::usage, format("Engine::ptx: target \"{}\" is not a GPU target "
                                         "(expected cuda:sm_XX); host kernels come from kernel()",
                                         target.text()));
  }
}
} // namespace

PtxKernel Engine::ptx(const codegen::KernelSource& source, const Target& target) {
  require_gpu_target(target);
  auto ptx = m_impl->request_ptx(source, key_of(source, target), target);
  return PtxKernel{std::move(ptx.text), std::move(ptx.info)};
}

std::vector<PtxKernel> Engine::ptx(std::span<const codegen::KernelSource> sources,
                                   const Target& target, comm::Collectives* comm) {
  require_gpu_target(target);
  std::vector<PtxKernel> out;
  if (comm == nullptr) {
    for (const auto& source : sources) {
      out.push_back(ptx(source, target));
    }
    return out;
  }
  for (auto& got : m_impl->collective_ptx(sources, target, *comm)) {
    out.push_back(PtxKernel{std::move(got.text), std::move(got.info)});
  }
  return out;
}

Kernel Engine::kernel(const codegen::KernelSource& source, comm::Collectives* comm) {
  if (comm != nullptr) {
    return kernels(std::span(&source, 1), comm).front();
  }
  const Loaded loaded = m_impl->request(source, key_of(source));
  return to_kernel(loaded);
}

std::vector<Kernel> Engine::kernels(std::span<const codegen::KernelSource> sources,
                                    comm::Collectives* comm) {
  if (comm != nullptr) {
    return m_impl->collective(sources, *comm);
  }
  std::vector<std::future<Loaded>> pending;
  for (const auto& source : sources) {
    pending.push_back(std::async(
        std::launch::async, [this, &source] { return m_impl->request(source, key_of(source)); }));
  }
  std::vector<Kernel> out;
  std::exception_ptr failure;
  for (auto& future : pending) {
    try {
      const Loaded loaded = future.get();
      out.push_back(to_kernel(loaded));
    } catch (...) {
      failure = failure ? failure : std::current_exception();
    }
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  return out;
}

} // namespace uwjit::engine
