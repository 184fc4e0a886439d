#include "args.hpp"
#include "commands.hpp"
#include "text.hpp"

#include <uwjit/cache/store.hpp>
#include <uwjit/common/env_variables.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/driver/node_kind.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node_kernels.hpp>

#include <nlohmann/json.hpp>

#include <iostream>

namespace uwjit::tools {

namespace {

ArgSpec warm_spec() {
  ArgSpec spec("warm", "Warms the kernel cache for a built-in node: builds the node as 'uwjit run' "
                       "would with the same\n--size and --set, and requests its kernels from the "
                       "engine (compiled and published, or\nfound in the cache) without taking a "
                       "step. A later 'uwjit run' with the same arguments\nfinds every kernel on "
                       "disk.");
  spec.option("--size", "N|NXxNYxNZ", "the grid, as for uwjit run")
      .option("--set", "NAME=VALUE",
              "set a node param, as for uwjit run (repeatable; --set help lists them)")
      .option("--target", "host|cuda:sm_XX",
              "the kernels for this CPU, or the node's GPU kernels as PTX for an NVIDIA GPU "
              "(no GPU needed)",
              "host")
      .flag("--json", "print the report as JSON on stdout")
      .positional("NODE", "heat, pipe-flow, fvm or mlp")
      .epilog("Exit codes: 0 every kernel is in the cache, 1 a kernel could not be published "
              "(the report\nsays why: the disk cache is off, the directory is refused or "
              "unwritable), was evicted\nagain by the cache's size limit or did not compile, 2 bad "
              "usage. Example, in a job script before "
              "the run:\n"
              "  UWJIT_CACHE_DIR=/site/cache uwjit warm pipe-flow --size 64\n"
              "For a GPU job, on a login node without a GPU:\n"
              "  UWJIT_CACHE_DIR=/site/cache uwjit warm heat --size 256 --target cuda:sm_90");
  return spec;
}

} // namespace

int warm_command(const std::vector<std::string>& argv) {
  const ArgSpec spec = warm_spec();
  const Args args = Args::parse(spec, argv);
  if (args.wants_help()) {
    std::cout << spec.help();
    return 0;
  }
  const std::string type = args.positional().at(0);
  runtime::Params params = args.get("--size")
                               ? nodes::sized_params(type, parse_size(*args.get("--size"), "warm"))
                               : nodes::default_params(type);
  if (driver::wants_params_help(args.all("--set"))) {
    std::cout << driver::params_help(driver::find_kind(nodes::kinds(), type), params);
    return 0;
  }
  apply_sets(params, args.all("--set"), "warm");
  engine::Target target;
  try {
    target = engine::Target::parse(args.value("--target"));
  } catch (const Error& error) {
    spec.fail(format("--target: {}", error.what()));
  }
  const auto node = nodes::make(type, type, params);

  engine::Engine engine;
  // The kernels from the node alone, as a run writes them: their keys depend on the layout and
  // the static arrays' shapes, never on the state or the arrays' contents, so nothing of the
  // size of the grid is allocated (no GPU is needed to write and compile a GPU's kernels).
  std::vector<engine::KernelInfo> infos;
  if (target.is_host()) {
    // What a serial run requests: checked kernels under UWJIT_CHECK, as a Simulation would.
    for (const auto& kernel :
         runtime::node_kernels(*node, false, env::get_bool(env::vars::checked))) {
      infos.push_back(engine.kernel(kernel.source).info());
      if (kernel.first_step_check) {
        infos.push_back(engine.kernel(*kernel.first_step_check).info());
      }
    }
  } else {
    for (const auto& kernel : runtime::node_kernels(*node, true)) {
      infos.push_back(*engine.ptx(kernel.source, target).info);
    }
    // What a run on a CUDA device launches besides: the halo kernels of its fields.
    for (const codegen::Dtype dtype : runtime::halo_dtypes(*node)) {
      infos.push_back(*engine.ptx(runtime::halo_fill_kernel(dtype), target).info);
    }
  }
  const auto dir = engine.cache_dir();
  // Asked after every kernel was published: a later one may have evicted an earlier (a size
  // limit that holds fewer than the node's kernels), and a warm cache is one that holds them all.
  const auto evicted = [&](const engine::KernelInfo& info) {
    if (!dir || (info.tier == engine::Tier::disk && info.served_from != dir->string())) {
      return false; // a site cache's entry, read-only
    }
    const auto key = cache::Key::parse(info.key);
    return key && !cache::Store::open(*dir).read_manifest(*key).has_value();
  };
  bool all_cached = true;
  nlohmann::json kernels = nlohmann::json::array();
  Table table({"node", "key", "tier", "cache"});
  for (const auto& info : infos) {
    const bool gone = info.publication != engine::Publication::not_published &&
                      info.tier != engine::Tier::memory && evicted(info);
    const bool cached = info.publication != engine::Publication::not_published &&
                        info.tier != engine::Tier::memory && !gone;
    all_cached = all_cached && cached;
    std::string cache;
    if (gone) {
      cache = format("evicted again by the cache's size limit ({} bytes, UWJIT_CACHE_MAX_SIZE)",
                     cache::max_cache_size());
    } else if (info.publication == engine::Publication::published) {
      cache = "published to " + dir->string();
    } else if (info.publication == engine::Publication::not_published) {
      cache = "not published: " + info.not_published_because;
    } else if (info.tier == engine::Tier::disk) {
      cache = "already in " + info.served_from; // the cache directory, or a site cache
    } else {
      cache = "memory only";
    }
    table.add({type, info.key, engine::to_string(info.tier), cache});
    nlohmann::json one = {{"node", type},
                          {"key", info.key},
                          {"tier", engine::to_string(info.tier)},
                          {"publication", engine::to_string(info.publication)},
                          {"served_from", info.served_from.empty()
                                              ? nlohmann::json(nullptr)
                                              : nlohmann::json(info.served_from)},
                          {"request_ms", info.request_ms},
                          {"in_cache", cached}};
    if (info.publication == engine::Publication::not_published) {
      one["not_published_because"] = info.not_published_because;
    }
    kernels.push_back(std::move(one));
  }
  if (args.has("--json")) {
    const nlohmann::json report = {
        {"ok", all_cached},
        {"node", type},
        {"target", target.text()},
        {"cache_dir", dir ? nlohmann::json(dir->string()) : nlohmann::json(nullptr)},
        {"kernels", std::move(kernels)},
    };
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << "uwjit warm " << type << ": " << infos.size() << " kernel"
              << (infos.size() == 1 ? "" : "s") << " for " << target.text() << ", cache "
              << (dir ? dir->string() : "none") << "\n"
              << table.render();
  }
  return all_cached ? 0 : 1;
}

} // namespace uwjit::tools
