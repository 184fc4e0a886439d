#include "run_report.hpp"

#include <uwjit/common/text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>

namespace uwjit::driver {

namespace {

nlohmann::json to_json(const runtime::Value& value) {
  const auto& v = value.variant();
  switch (v.index()) {
  case 0:
    return std::get<0>(v);
  case 1:
    return std::get<1>(v);
  case 2:
    return std::get<2>(v);
  default: {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& item : std::get<3>(v)) {
      items.push_back(to_json(item));
    }
    return items;
  }
  }
}

// The run's simulated time at its last step.
double simulated_time(const RunReport& r) {
  return static_cast<double>(r.simulation->steps_taken()) * r.dt;
}

} // namespace

void print_json(const RunReport& r, std::ostream& out) {
  const double time = simulated_time(r);
  const auto integral_names = r.node->layout().integrals;
  const auto integrals = r.simulation->integrals(std::size_t{0});
  nlohmann::json report;
  report["node"] = r.type;
  nlohmann::json params_json = nlohmann::json::object();
  for (const auto& [key, value] : r.node->params().values()) {
    params_json[key] = to_json(value);
  }
  report["params"] = params_json;
  report["compiles"] = r.compiles;
  report["ranks"] = r.ranks;
  report["shard"] = r.shard;
  report["exchange"] = r.exchange;
  report["halo_seconds"] = r.halo_seconds;
  // The same on every rank: the ranks agree on whether and where to overlap.
  report["overlapped_steps"] = r.exchange_stats.overlapped;
  report["threads"] = r.simulation->threads();
  report["device"] = r.simulation->device();
  report["checked"] = r.simulation->checked();
  report["kernels"] = nlohmann::json::array();
  for (const auto& k : r.simulation->kernel_reports()) {
    report["kernels"].push_back(
        {{"node", k.node},
         {"key", k.info.key},
         {"tier", engine::to_string(k.info.tier)},
         {"served_from", k.info.served_from.empty() ? nlohmann::json(nullptr)
                                                    : nlohmann::json(k.info.served_from)},
         {"request_ms", k.info.request_ms},
         {"frontend_ms", k.info.compile.frontend_ms},
         {"optimise_ms", k.info.compile.optimise_ms},
         {"codegen_ms", k.info.compile.codegen_ms},
         {"load_ms", k.info.load_ms},
         {"first_step_check",
          k.first_step_check ? nlohmann::json{{"key", k.first_step_check->key},
                                              {"tier", engine::to_string(k.first_step_check->tier)},
                                              {"request_ms", k.first_step_check->request_ms}}
                             : nlohmann::json()}});
  }
  report["steps"] = r.taken;
  report["steps_requested"] = r.steps;
  report["steps_total"] = r.simulation->steps_taken();
  report["interrupted"] = r.interrupted.empty() ? nlohmann::json() : nlohmann::json(r.interrupted);
  report["dt"] = r.dt;
  report["time"] = time;
  report["seconds"] = r.seconds;
  report["updates_per_step"] = r.updates_per_step;
  report["mlups"] = r.mlups;
  nlohmann::json integrals_json = nlohmann::json::object();
  for (std::size_t i = 0; i < integral_names.size(); ++i) {
    integrals_json[integral_names[i]] = integrals[i];
  }
  report["integrals"] = integrals_json;
  nlohmann::json measurements = nlohmann::json::array();
  for (const auto& m : r.verdict.measurements) {
    measurements.push_back({{"name", m.name},
                            {"metric", m.metric},
                            {"value", m.value},
                            {"limit", m.limit},
                            {"passed", m.passed}});
  }
  report["check"] = {{"passed", r.verdict.passed},           {"judged", r.verdict.judged()},
                     {"needs_steps", r.verdict.needs_steps}, {"not_judged", r.verdict.not_judged},
                     {"measurements", measurements},         {"notes", r.verdict.notes}};
  auto strings = [](const std::vector<std::filesystem::path>& paths) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& path : paths) {
      list.push_back(path.string());
    }
    return list;
  };
  report["outputs"] = strings(r.outputs);
  nlohmann::json series_json = nlohmann::json::array();
  for (const auto& entry : r.series) {
    series_json.push_back((r.output_dir / entry.file).string());
  }
  report["series"] = {{"collection", r.collection ? r.collection->string() : ""},
                      {"files", series_json}};
  report["plots"] = strings(r.plots);
  report["checkpoint"] = r.checkpoint;
  report["errors"] = r.errors;
  out << report.dump(2) << "\n";
}

void print_text(const RunReport& r, std::ostream& out) {
  const double time = simulated_time(r);
  const auto integral_names = r.node->layout().integrals;
  const auto integrals = r.simulation->integrals(std::size_t{0});
  if (!r.interrupted.empty()) {
    out << "interrupted by " << r.interrupted << " after step " << r.simulation->steps_taken()
        << ": the report, output" << (r.checkpoint.empty() ? "" : " and checkpoint")
        << " are of that step\n";
  }
  out << "steps\n  " << r.taken << (r.taken != r.steps ? " of " + std::to_string(r.steps) : "")
      << " steps in " << fixed(r.seconds, 3) << " s: " << fixed(r.mlups, 2) << " MLUPS ("
      << r.updates_per_step << " cell updates per step); " << r.compiles << " compile"
      << (r.compiles == 1 ? "" : "s") << (r.ranks > 1 ? " for the job" : "") << "; "
      << (r.simulation->device() == "cpu"
              ? std::to_string(r.simulation->threads()) + " thread" +
                    (r.simulation->threads() == 1 ? "" : "s") + (r.ranks > 1 ? " per rank" : "")
              : (r.ranks > 1 ? "rank 0 on " : "on ") + r.simulation->device())
      << (r.simulation->checked() ? "; checked mode" : "") << "\n"
      << "  simulated time " << general(time) << " (step " << r.simulation->steps_taken() << ", dt "
      << general(r.dt) << ")\n";
  if (!r.shard.empty()) {
    out << "  " << r.ranks << " ranks, sharded along " << r.shard << ", halo exchange ("
        << r.exchange << ") " << fixed(r.halo_seconds, 3) << " s per rank";
    if (r.exchange == "overlap") {
      out << ", " << r.exchange_stats.overlapped << " of " << r.exchange_stats.exchanges
          << " steps with the interior updated during the transfers";
    }
    out << "\n";
  }
  out << "integrals (step " << r.simulation->steps_taken() << ")\n";
  for (std::size_t i = 0; i < integral_names.size(); ++i) {
    std::string name = integral_names[i];
    name.resize(std::max<std::size_t>(name.size(), 14), ' ');
    out << "  " << name << general(integrals[i]) << "\n";
  }
  if (r.verdict.judged()) {
    out << "check: " << (r.verdict.passed ? "PASS" : "FAIL") << "\n";
  } else if (!r.verdict.not_judged.empty()) {
    out << "check: not judged: " << r.verdict.not_judged << "\n";
  } else {
    out << "check: not judged: needs >= " << r.verdict.needs_steps << " steps (this run "
        << (r.simulation->steps_taken() == 1 ? "has 1"
                                             : "has " + std::to_string(r.simulation->steps_taken()))
        << "; run with --steps " << r.verdict.needs_steps << " or more, or without --steps)\n";
  }
  for (const auto& m : r.verdict.measurements) {
    std::string name = m.name;
    name.resize(std::max<std::size_t>(name.size(), 28), ' ');
    out << "  " << (m.passed ? "pass  " : "FAIL  ") << name << general(m.value) << "  (limit "
        << general(m.limit) << ")  " << m.metric << "\n";
  }
  for (const auto& note : r.verdict.notes) {
    out << "  note  " << note << "\n";
  }
  out << "output\n";
  for (const auto& path : r.outputs) {
    out << "  " << path.string() << "\n";
  }
  if (r.collection) {
    out << "  " << r.collection->string() << " (time series of " << r.series.size() << " files, "
        << r.series.front().file.string() << " to " << r.series.back().file.string() << ")\n";
  }
  for (const auto& path : r.plots) {
    out << "  " << path.string() << " (picture)\n";
  }
  if (!r.checkpoint.empty()) {
    out << "  " << r.checkpoint << " (checkpoint)\n";
  }
}

} // namespace uwjit::driver
