// NodeKind: a kind of node that a program runs from its command line (run_main): its type name,
// its node params and what they mean, how to make one, and what a run of it is checked against.
#pragma once

#include <uwjit/driver/check.hpp>
#include <uwjit/driver/figures.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/snapshot.hpp>
#include <uwjit/runtime/value.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::driver {

/// What one node param means, for people (`--set help`).
struct ParamDoc {
  std::string name;
  std::string meaning;
  std::string unit = {};  ///< e.g. "cells", "lattice units"; "" for a pure number or a choice
  std::string range = {}; ///< the accepted values, e.g. "[3, 16384]", "insulating, periodic"
};

/// A kind of node a program can run. The node params (runtime::Params: what a node is built
/// from and what a checkpoint stores) are the construction values set with --set; they are not
/// a kernel's run-time params (KernelWriter::param: values a kernel reads when it runs).
///
/// Required: type, summary, node_params, make. The rest is optional: a kind without `sized`
/// refuses --size, one without `shard_help` refuses --shard, one without `default_steps` needs
/// --steps, one without `check` is reported as not judged (exit 0).
struct NodeKind {
  /// The node type (runtime::Node::type(), what a checkpoint records): the NODE argument. A
  /// safe file name (is_safe_name): it also names the run's output files.
  std::string type;
  /// One line: what the node simulates (--help, the report's first line).
  std::string summary;
  /// The default node params, complete: --set may change only these, and a value keeps the
  /// type it has here (an integer, a number, a string).
  runtime::Params node_params;
  /// What each node param means, in the order `--set help` lists them.
  std::vector<ParamDoc> param_docs = {};
  /// Makes a node of this kind: (type, name, node params) → node. Throws Error(usage) naming a
  /// param whose value it refuses. Also what restores a checkpoint (factory()).
  runtime::NodeFactory make;

  /// The node params for a --size of one number N or three NX, NY, NZ (what follows from the
  /// size follows it); Error(usage) for a size it does not take. Empty: --size is refused.
  std::function<runtime::Params(std::span<const std::int64_t> size)> sized = {};
  /// What --size means, for --help (e.g. "N for an N^3 grid, or NXxNYxNZ").
  std::string size_help = {};
  /// The domain axes --shard may split it along, for --help (e.g. "x, alone or with y and/or
  /// z"); "": it cannot be sharded.
  std::string shard_help = {};
  /// What is wrong with sharding it along `axes` (0 x, 1 y, 2 z), or ""; empty: any axes the
  /// Simulation accepts.
  std::function<std::string(std::span<const int> axes)> shard_problem = {};

  /// The steps a run takes without --steps (e.g. enough to reach a steady state); empty: --steps
  /// is required.
  std::function<std::int64_t(const runtime::Node& node)> default_steps = {};
  /// Cell updates per step, for the throughput (MLUPS); empty: the node's domain cells.
  std::function<std::int64_t(const runtime::Node& node)> updates_per_step = {};
  /// The physics check of a run: the node's state in `snapshot` (the whole domain) and its
  /// integrals as `trace` recorded them (since the run, or its restore, began). Empty: the
  /// report says the run was not judged.
  std::function<Verdict(const runtime::Node& node, const runtime::Snapshot& snapshot,
                        const Trace& trace)>
      check = {};
  /// Whether `check` and `figures` take a snapshot of one rank's slab: they read
  /// Snapshot::slab(node) and add up over the ranks what they measure or draw over the slab
  /// (Snapshot::sum_over_ranks and max_over_ranks for a verdict, total_over_ranks for a picture),
  /// so that a sharded run hands them Simulation::local_snapshot() on every rank and gathers
  /// nothing; every rank gets the same verdict. False: they get the whole domain, gathered on
  /// every rank (the memory of a serial run, on each). The built-in kinds read slabs.
  bool reads_slabs = false;
  /// The pictures --plot draws; empty: default_figures.
  std::function<Figures(const runtime::Node& node, const runtime::Snapshot& snapshot)> figures = {};
};

/// The kind of type `type` among `kinds`. Throws Error(usage) `unknown node type "T" (known: A,
/// B)` with a "did you mean" for a near miss.
[[nodiscard]] const NodeKind& find_kind(std::span<const NodeKind> kinds, std::string_view type);

/// What `--set help` prints: each node param of `kind` with its value in `params` (the defaults
/// for the run's --size), its unit, accepted values and meaning, in the order of param_docs, then
/// any param the kind does not document.
[[nodiscard]] std::string params_help(const NodeKind& kind, const runtime::Params& params);

/// Whether `sets` (the values of --set) ask for the params' help: one of them is "help".
[[nodiscard]] bool wants_params_help(std::span<const std::string> sets);

/// The node params of `kind` for a --size (kind.sized). Throws Error(usage) for a kind that
/// takes no size, or a size it refuses.
[[nodiscard]] runtime::Params sized_params(const NodeKind& kind,
                                           std::span<const std::int64_t> size);

/// A node of `kind` named `name` with `node_params` (complete: start from kind.node_params).
/// Throws Error(usage) for a param the kind does not have (naming those it has), what kind.make
/// throws, and `TYPE: out of memory while building the node` for a std::bad_alloc.
[[nodiscard]] std::shared_ptr<const runtime::Node> make_node(const NodeKind& kind, std::string name,
                                                             const runtime::Params& node_params);

/// A NodeFactory for Simulation::restore that builds each node with make_node of the kind of its
/// type (Error(usage) for a type that is not one of them). Keeps a copy of `kinds`.
[[nodiscard]] runtime::NodeFactory factory(std::span<const NodeKind> kinds);

} // namespace uwjit::driver
