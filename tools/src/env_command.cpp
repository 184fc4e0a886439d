#include "args.hpp"
#include "commands.hpp"
#include "text.hpp"

#include <uwjit/cache/directory.hpp>
#include <uwjit/cache/store.hpp>
#include <uwjit/common/env.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/version.hpp>
#include <uwjit/cuda/driver.hpp>
#include <uwjit/cuda/probe.hpp>
#include <uwjit/engine/compiler.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/jit.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

namespace uwjit::tools {

namespace {

std::string_view kind_name(env::Kind kind) {
  switch (kind) {
  case env::Kind::boolean:
    return "boolean";
  case env::Kind::size:
    return "size";
  case env::Kind::duration:
    return "duration";
  case env::Kind::choice:
    return "choice";
  case env::Kind::path:
    return "path";
  }
  return "?";
}

// One row of the table as this process sees it: the value as set, and the message the library
// would raise on it.
struct Reading {
  const env::Variable* variable;
  std::optional<std::string> value;
  std::optional<std::string> error;
};

// The driver as JSON: every field present, null where the driver could not tell.
nlohmann::json cuda_json(const cuda::DriverProbe& probe) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& device : probe.devices) {
    devices.push_back({
        {"ordinal", device.ordinal},
        {"name", device.name},
        {"arch", device.arch()},
        {"compute_capability", std::to_string(device.major) + "." + std::to_string(device.minor)},
        {"total_memory", device.total_memory},
    });
  }
  const auto version = [&](auto value) {
    return probe.version ? nlohmann::json(value(*probe.version)) : nlohmann::json(nullptr);
  };
  return {
      {"library", probe.library},
      {"loaded", probe.loaded},
      {"usable", probe.usable},
      {"driver_version", version([](int v) { return cuda::version_text(v); })},
      {"driver_version_number", version([](int v) { return v; })},
      {"problem", probe.usable ? nlohmann::json(nullptr) : nlohmann::json(probe.problem)},
      {"devices", devices},
  };
}

// "driver 12.4 (libcuda.so.1), 1 device" and a line per device; else why there is no driver to
// use.
std::string cuda_text(const cuda::DriverProbe& probe) {
  if (!probe.usable) {
    return probe.problem + "\n";
  }
  const std::size_t count = probe.devices.size();
  std::string text = "driver " + cuda::version_text(*probe.version) + " (" + probe.library + "), " +
                     std::to_string(count) + (count == 1 ? " device" : " devices") + "\n";
  for (const auto& device : probe.devices) {
    std::string label = "  device " + std::to_string(device.ordinal);
    label.resize(std::max<std::size_t>(label.size() + 1, 16), ' ');
    text +=
        label + device.name + ", " + device.arch() + ", " + human_size(device.total_memory) + "\n";
  }
  return text;
}

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds << " s";
  return out.str();
}

} // namespace

int env_command(const std::vector<std::string>& argv) {
  ArgSpec spec("env",
               "Prints the configuration uwjit resolves on this machine: versions, target, "
               "CPU and features,\nClang's resource directory, the compile flags and pipeline, the "
               "cache, the CUDA driver and its devices\nand every UWJIT_* variable.\nExits "
               "2 after listing every variable "
               "that holds a value the library would refuse.");
  spec.flag("--json", "print it as JSON");
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  // Every row of the table read as the library reads it, so that each bad variable is reported,
  // not only the first one the library happens to read.
  std::vector<Reading> readings;
  bool any_error = false;
  for (const env::Variable* variable : env::vars::k_all) {
    Reading reading{variable, env::get(*variable), std::nullopt};
    try {
      env::check(*variable);
    } catch (const Error& error) {
      reading.error = error.what();
      any_error = true;
    }
    readings.push_back(std::move(reading));
  }
  const auto invalid = [&](const env::Variable& variable) {
    for (const auto& reading : readings) {
      if (reading.variable == &variable) {
        return reading.error.has_value();
      }
    }
    return false;
  };
  // The library reads several variables at once (EngineOptions::from_environment reads three):
  // the bad ones are removed from this process's environment, so that the rest of the
  // configuration is still resolved by the library itself, and what they feed shows as invalid.
  for (const auto& reading : readings) {
    if (reading.error) {
      ::unsetenv(std::string(reading.variable->name).c_str());
    }
  }

  const engine::TargetInfo& target = engine::host_target();
  const engine::EngineOptions options = engine::EngineOptions::from_environment();
  const engine::JitOptions jit_options = engine::JitOptions::from_environment();
  const engine::Compiler compiler(options.compile);
  const cache::CacheLocation location = cache::resolve_cache_location();
  const std::string cache_dir = location.dir ? location.dir->string() : "";
  const bool cache_exists = location.dir && std::filesystem::is_directory(*location.dir);
  const std::uint64_t max_size = cache::max_cache_size();
  const double lock_timeout_s = static_cast<double>(options.lock_timeout.count()) / 1000;
  const bool perf = jit_options.perf == engine::PerfSupport::yes;
  const bool trust_shared = env::get_bool(env::vars::cache_trust_shared);
  const std::string log_level(env::get_choice_name(env::vars::log_level));
  std::string features;
  for (const auto& feature : target.features) {
    if (feature.front() == '+') {
      features += (features.empty() ? "" : " ") + feature.substr(1);
    }
  }
  const bool flags_invalid = invalid(env::vars::debug);
  const bool cache_invalid = invalid(env::vars::cache);
  // Opens libcuda.so.1 if the machine has one; never fails.
  const cuda::DriverProbe gpu = cuda::probe();

  if (args.has("--json")) {
    // A field fed by a bad variable is null.
    const auto unless = [](bool bad, nlohmann::json value) {
      return bad ? nlohmann::json(nullptr) : std::move(value);
    };
    nlohmann::json variables = nlohmann::json::array();
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& reading : readings) {
      const env::Variable& variable = *reading.variable;
      variables.push_back({
          {"name", variable.name},
          {"kind", kind_name(variable.kind)},
          {"accepted", variable.accepted},
          {"default", variable.fallback},
          {"salt", variable.salt == env::Salt::yes},
          {"effect", variable.effect},
          {"value", reading.value ? nlohmann::json(*reading.value) : nlohmann::json(nullptr)},
          {"error", reading.error ? nlohmann::json(*reading.error) : nlohmann::json(nullptr)},
      });
      if (reading.error) {
        errors.push_back({{"variable", variable.name}, {"message", *reading.error}});
      }
    }
    nlohmann::json report = {
        {"uwjit_version", k_version},
        {"llvm_version", target.llvm_version},
        {"triple", target.triple},
        {"cpu", target.cpu},
        {"features", target.features},
        {"resource_dir", target.resource_dir},
        {"clang", target.clang_path},
        {"opt_level", compiler.options().opt_level},
        {"flags", unless(flags_invalid, compiler.flags())},
        {"pipeline", compiler.pipeline()},
        {"cache_dir", unless(cache_invalid, cache_dir)},
        {"cache_rule", unless(cache_invalid, location.rule)},
        {"cache_exists", unless(cache_invalid, cache_exists)},
        {"cache_max_size", unless(invalid(env::vars::cache_max_size), max_size)},
        {"lock_timeout_s", unless(invalid(env::vars::lock_timeout), lock_timeout_s)},
        {"dump_dir", options.dump_dir ? options.dump_dir->string() : ""},
        {"debug", unless(flags_invalid, options.compile.debug_info == engine::DebugInfo::yes)},
        {"perf", unless(invalid(env::vars::perf), perf)},
        {"cache_trust_shared", unless(invalid(env::vars::cache_trust_shared), trust_shared)},
        {"log_level", unless(invalid(env::vars::log_level), log_level)},
        {"cuda", cuda_json(gpu)},
        {"variables", variables},
        {"errors", errors},
    };
    std::cout << report.dump(2) << "\n";
  } else {
    constexpr std::string_view k_invalid = "invalid (see below)";
    const auto shown = [&](bool bad, const std::string& text) {
      return bad ? std::string(k_invalid) : text;
    };
    std::cout << "uwjit version   " << k_version << "\n"
              << "LLVM version    " << target.llvm_version << "\n"
              << "target triple   " << target.triple << "\n"
              << "CPU             " << target.cpu << "\n"
              << "CPU features    " << features << "\n"
              << "resource dir    " << target.resource_dir << "\n"
              << "clang driver    " << target.clang_path << "\n"
              << "opt level       " << compiler.options().opt_level << "\n"
              << "flags           " << shown(flags_invalid, compiler.flags()) << "\n"
              << "pipeline        " << compiler.pipeline() << "\n";
    if (cache_invalid) {
      std::cout << "cache dir       " << k_invalid << "\n";
    } else {
      std::cout << "cache dir       " << (cache_dir.empty() ? "(none)" : cache_dir)
                << (cache_exists || cache_dir.empty() ? "" : " (not created yet)") << "\n"
                << "  chosen by     " << location.rule << "\n";
    }
    std::cout << "cache max size  "
              << shown(invalid(env::vars::cache_max_size), human_size(max_size)) << "\n"
              << "lock timeout    "
              << shown(invalid(env::vars::lock_timeout), seconds_text(lock_timeout_s)) << "\n"
              << "perf support    " << shown(invalid(env::vars::perf), perf ? "on" : "off") << "\n"
              << "trust shared    "
              << shown(invalid(env::vars::cache_trust_shared), trust_shared ? "yes" : "no") << "\n"
              << "log level       " << shown(invalid(env::vars::log_level), log_level) << "\n";
    if (options.dump_dir) {
      std::cout << "dump dir        " << options.dump_dir->string() << "\n";
    }
    std::cout << "CUDA            " << cuda_text(gpu);
    std::cout << "variables set  ";
    bool any_set = false;
    for (const auto& reading : readings) {
      if (!reading.value) {
        continue;
      }
      std::cout << (any_set ? "                " : " ") << reading.variable->name << "="
                << *reading.value << (reading.error ? " (invalid)" : "")
                << (reading.variable->salt == env::Salt::yes ? " (changes the key's salt)" : "")
                << "\n";
      any_set = true;
    }
    if (!any_set) {
      std::cout << " (none)\n";
    }
  }
  for (const auto& reading : readings) {
    if (reading.error) {
      std::cerr << "uwjit: error: " << *reading.error << "\n";
    }
  }
  return any_error ? 2 : 0;
}

} // namespace uwjit::tools
