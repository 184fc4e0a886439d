// The report of a run: what it did, printed as text for people or as JSON.
#pragma once

#include <uwjit/driver/check.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/vtk.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace uwjit::driver {

/// Everything the report of one run says, on the rank that prints it.
struct RunReport {
  std::string type;                    ///< the node type, e.g. "heat"
  const runtime::Node* node = nullptr; ///< the node run
  std::int64_t updates_per_step = 0;   ///< cell updates per step (MLUPS)
  const runtime::Simulation* simulation = nullptr;
  int compiles = 0; ///< summed over the ranks
  int ranks = 1;
  std::string shard;                     ///< --shard, "" serially
  std::string exchange;                  ///< sync or overlap
  double halo_seconds = 0;               ///< mean per rank
  runtime::ExchangeStats exchange_stats; ///< this rank's
  std::int64_t taken = 0;                ///< steps taken by this run
  std::int64_t steps = 0;                ///< steps asked for
  std::string interrupted;               ///< "", "SIGINT" or "SIGTERM"
  double dt = 0;
  double seconds = 0;
  double mlups = 0;
  Verdict verdict;
  std::vector<std::filesystem::path> outputs;      ///< the final VTK files
  std::optional<std::filesystem::path> collection; ///< the .pvd of a time series
  std::filesystem::path output_dir;
  std::vector<runtime::VtkSeriesEntry> series;
  std::vector<std::filesystem::path> plots;
  std::string checkpoint;          ///< the checkpoint written, "" if none
  std::vector<std::string> errors; ///< files that could not be written
};

/// The JSON report (`--json`).
void print_json(const RunReport& report, std::ostream& out);
/// The report for people.
void print_text(const RunReport& report, std::ostream& out);

} // namespace uwjit::driver
