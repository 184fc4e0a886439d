// The kernels a node emits, written without building a simulation (e.g. for a GPU target on a
// machine without a GPU).
#pragma once

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/runtime/node.hpp>

#include <optional>
#include <vector>

namespace uwjit::runtime {

/// One kernel as a node emitted it: the writer's declarations (buffers with their padded layouts,
/// extents, params and integrals, each in slot order: what a caller binds) and the source.
struct NodeKernel {
  codegen::KernelWriter writer;
  codegen::KernelSource source;
  /// The checked copy that a Simulation runs for this kernel's first step (see
  /// KernelReport::first_step_check): set for a CPU kernel, unchecked, whose text does not show
  /// its reads within their halos (KernelWriter::halo_reads() unknown), so that warming a cache
  /// (`uwjit warm`) warms it too.
  std::optional<codegen::KernelSource> first_step_check = {};
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

/// As above, in checked mode when `checked` is set (KernelWriter::checked, as a Simulation in
/// checked mode writes them; Error(usage) as such a Simulation for a shard-mode static array
/// that is not sharded along a domain axis). The static arrays' contents are never read: only
/// their keys, dtypes and shapes reach the kernels, so computed arrays stay uncomputed.
[[nodiscard]] std::vector<NodeKernel> node_kernels(const Node& node, bool gpu, bool checked);

/// The GPU kernel a simulation on a CUDA device launches to fill the halos of a state field of
/// `dtype`, one launch per axis (both faces, as Field::fill_halos fills them: periodic, edge,
/// dirichlet, neumann, bit for bit), one thread per halo cell. Its argument struct is the kernel
/// ABI's: state_out[0] the field; extents the padded array seen as [outer][n + 2h][inner] (outer,
/// n, h, inner) and each face's kind (0 periodic, 1 edge, 2 dirichlet, 3 neumann); params the
/// two faces' values. A GPU run requests it with its nodes' kernels, so `uwjit warm --target`
/// compiles it too. With `members` (what an ensemble on a device launches), one launch fills an
/// axis of many members' fields: the launch's struct lists one such struct per member in
/// `members`, and the grid's y is the member.
[[nodiscard]] codegen::KernelSource halo_fill_kernel(codegen::Dtype dtype, bool members = false);

/// The GPU kernel a sharded simulation on a CUDA device launches to copy layers of a state
/// field of `dtype` between the field and a contiguous buffer (its halos go through the host in
/// such buffers): state_out[0] the field, state_out[1] the buffer; extents the padded array seen
/// as [outer][padded][inner], the first layer and the layer count, and the direction (1: to the
/// buffer, 0: from it); one thread per element, the buffer in [outer][count][inner] order.
[[nodiscard]] codegen::KernelSource halo_layers_kernel(codegen::Dtype dtype);

/// The dtypes of `node`'s state fields that have halos, each once, in field order: those whose
/// halo_fill_kernel a GPU run of the node requests. Error(usage) for an invalid layout.
[[nodiscard]] std::vector<codegen::Dtype> halo_dtypes(const Node& node);

} // namespace uwjit::runtime
