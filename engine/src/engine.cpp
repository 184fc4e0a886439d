#include <uwjit/engine/engine.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/log.hpp>
#include <uwjit/common/version.hpp>
#include <uwjit/engine/jit.hpp>

#include <chrono>
#include <future>
#include <map>
#include <mutex>

namespace uwjit::engine {

namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Loaded {
  uwjit_kernel_fn entry;
  std::shared_ptr<const void> code;
  std::shared_ptr<const KernelInfo> info;
};

std::string join_features(const std::vector<std::string>& features) {
  std::string out;
  for (const auto& feature : features) {
    out += out.empty() ? "" : ",";
    out += feature;
  }
  return out;
}
} // namespace

struct Engine::Impl {
  explicit Impl(EngineOptions options) : compiler(std::move(options.compile)), jit(Jit::create()) {
    const TargetInfo& target = host_target();
    salt.add("uwjit", k_version)
        .add("format", std::to_string(cache::k_entry_format))
        .add("abi", std::to_string(UWJIT_KERNEL_ABI_VERSION))
        .add("llvm", target.llvm_version)
        .add("triple", target.triple)
        .add("cpu", target.cpu)
        .add("features", join_features(target.features))
        .add("opt", std::to_string(compiler.options().opt_level))
        .add("flags", compiler.flags());
  }

  Loaded build(const codegen::KernelSource& source, const cache::Key& key) {
    const auto start = Clock::now();
    auto info = std::make_shared<KernelInfo>();
    info->key = key.hex();
    info->entry = source.entry_symbol(key.hex());
    info->origin = source.origin();
    info->slots = source.slots();
    info->tier = Tier::compiled;
    const auto object = compiler.compile(source.instantiate(info->entry, "uwjit_mod_" + key.hex()));
    info->compile = object.timings;
    info->warnings = object.warnings;
    info->object_size = object.bytes.size();
    const auto load_start = Clock::now();
    auto loaded = jit->load(object.bytes, info->entry);
    info->load_ms = ms_since(load_start);
    info->request_ms = ms_since(start);
    logger.info("compiled key={} origin={} in {} ms (frontend {} ms, optimise {} ms, codegen {} "
                "ms, load {} ms)",
                key.hex(), source.origin(), info->request_ms, object.timings.frontend_ms,
                object.timings.optimise_ms, object.timings.codegen_ms, info->load_ms);
    return Loaded{loaded.entry, std::move(loaded.code), std::move(info)};
  }

  Compiler compiler;
  std::shared_ptr<Jit> jit;
  cache::Salt salt;
  log::Logger logger = log::get("uwjit.engine");
  std::mutex mutex;
  // One slot per key: the first request fills it, later ones share the result (single-flight).
  std::map<cache::Key, std::shared_future<Loaded>> loaded;
};

Engine::Engine(EngineOptions options) : m_impl(std::make_unique<Impl>(std::move(options))) {}

Engine::~Engine() = default;

const cache::Salt& Engine::salt() const noexcept {
  return m_impl->salt;
}

const Compiler& Engine::compiler() const noexcept {
  return m_impl->compiler;
}

cache::Key Engine::key_of(const codegen::KernelSource& source) const {
  return cache::Key::of(source.canonical(), m_impl->salt);
}

Kernel Engine::kernel(const codegen::KernelSource& source) {
  const auto start = Clock::now();
  const cache::Key key = key_of(source);
  std::shared_future<Loaded> pending;
  std::promise<Loaded> promise;
  bool owner = false;
  {
    std::lock_guard lock(m_impl->mutex);
    auto [slot, inserted] = m_impl->loaded.try_emplace(key);
    if (inserted) {
      slot->second = promise.get_future().share();
      owner = true;
    }
    pending = slot->second;
  }
  if (owner) {
    try {
      promise.set_value(m_impl->build(source, key));
    } catch (...) {
      // Waiters get the same error; the slot goes, so a later request tries again.
      promise.set_exception(std::current_exception());
      std::lock_guard lock(m_impl->mutex);
      m_impl->loaded.erase(key);
      throw;
    }
    const Loaded& fresh = pending.get();
    return Kernel(fresh.entry, fresh.code, fresh.info);
  }
  const Loaded& hit = pending.get();
  auto info = std::make_shared<KernelInfo>(*hit.info);
  info->tier = Tier::memory;
  info->compile = {};
  info->warnings.clear();
  info->load_ms = 0;
  info->request_ms = ms_since(start);
  m_impl->logger.debug("memory hit key={} origin={}", key.hex(), source.origin());
  return Kernel(hit.entry, hit.code, std::move(info));
}

} // namespace uwjit::engine
