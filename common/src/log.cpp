#include <uwjit/common/log.hpp>

#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <map>
#include <mutex>

namespace uwjit::log {

struct Logger::Impl {
  std::shared_ptr<spdlog::logger> logger;
};

namespace {

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
  case Level::trace:
    return spdlog::level::trace;
  case Level::debug:
    return spdlog::level::debug;
  case Level::info:
    return spdlog::level::info;
  case Level::warn:
    return spdlog::level::warn;
  case Level::error:
    return spdlog::level::err;
  case Level::off:
    return spdlog::level::off;
  }
  return spdlog::level::warn;
}

// The loggers live here and not in spdlog's registry, so that a host's own spdlog set-up
// (default logger, registry-wide levels or patterns) neither affects nor is affected by uwjit.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Logger::Impl>, std::less<>> loggers;
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> sink =
      std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  Level level = env::get_choice<Level>(env::vars::log_level, {{"trace", Level::trace},
                                                              {"debug", Level::debug},
                                                              {"info", Level::info},
                                                              {"warn", Level::warn},
                                                              {"error", Level::error},
                                                              {"off", Level::off}});
  std::string pattern = "[%n] [%l] %v";
};

Registry& registry() {
  static Registry instance;
  return instance;
}

} // namespace

bool Logger::enabled(Level level) const noexcept {
  return m_impl->logger->should_log(to_spdlog(level));
}

void Logger::write(Level level, std::string_view message) const {
  m_impl->logger->log(to_spdlog(level), "{}", message);
}

Logger get(std::string_view name) {
  auto& reg = registry();
  std::lock_guard lock(reg.mutex);
  if (auto found = reg.loggers.find(name); found != reg.loggers.end()) {
    return Logger(found->second);
  }
  auto impl = std::make_shared<Logger::Impl>();
  impl->logger = std::make_shared<spdlog::logger>(std::string(name), reg.sink);
  impl->logger->set_level(to_spdlog(reg.level));
  impl->logger->set_pattern(reg.pattern);
  reg.loggers.emplace(std::string(name), impl);
  return Logger(impl);
}

void set_level(Level level) {
  auto& reg = registry();
  std::lock_guard lock(reg.mutex);
  reg.level = level;
  for (auto& [name, impl] : reg.loggers) {
    impl->logger->set_level(to_spdlog(level));
  }
}

void set_rank(int rank, int size) {
  auto& reg = registry();
  std::lock_guard lock(reg.mutex);
  reg.pattern =
      size > 1 ? "[%n] [rank " + std::to_string(rank) + "/" + std::to_string(size) + "] [%l] %v"
               : "[%n] [%l] %v";
  for (auto& [name, impl] : reg.loggers) {
    impl->logger->set_pattern(reg.pattern);
  }
}

} // namespace uwjit::log
