// The kernels a node emits, written without building a simulation (e.g. for a GPU target on a
// machine without a GPU).
#pragma once

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/runtime/node.hpp>

#include <vector>

namespace uwjit::runtime {

/// One kernel as a node emitted it: the writer's declarations (buffers with their padded layouts,
/// extents, params and integrals, each in slot order: what a caller binds) and the source.
struct NodeKernel {
  codegen::KernelWriter writer;
  codegen::KernelSource source;
};

/// The kernels `node` emits for a serial run with its own static data, one per stage in order,
/// written for a GPU (KernelWriter::gpu) when `gpu` is set: the texts, and so the keys, that a
/// Simulation of that node alone requests. Nothing is allocated for state and nothing runs, so a
/// machine without a GPU can compile a GPU run's kernels into a shared cache (`uwjit warm
/// --target cuda:sm_XX`). Throws what emission throws: Error(usage) naming the node when its
/// layout or kernel is invalid, when a kernel cannot run on a GPU (it writes its own loops with
/// KernelWriter::body()), or when the node reads other nodes' fields (NodeLayout::inputs: emit
/// those with the simulation that holds the other nodes).
[[nodiscard]] std::vector<NodeKernel> node_kernels(const Node& node, bool gpu);

} // namespace uwjit::runtime
