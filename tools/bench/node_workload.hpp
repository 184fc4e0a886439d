// A node's kernel outside the runtime: buffers laid out as its writer declares them, the node's
// initial state with its halos filled, its own static arrays, the whole interior as the box.
#pragma once

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/node_kernels.hpp>

#include <cstddef>
#include <vector>

namespace uwjit::bench {

/// The buffers and arguments of one call of `kernel` (written by `node`), host memory. Builds of
/// the same kernel (JIT, AOT) are called with the same arguments; a GPU copies them over.
struct NodeWorkload {
  NodeWorkload(const runtime::Node& node, const runtime::NodeKernel& kernel, double dt);
  NodeWorkload(const NodeWorkload&) = delete;
  NodeWorkload& operator=(const NodeWorkload&) = delete;

  /// Milliseconds of the fastest of `reps` calls of `fn`.
  double time(uwjit_kernel_fn fn, int reps);
  /// The outputs' bytes, to compare two builds' results.
  [[nodiscard]] std::vector<std::byte> output_bytes() const;
  /// Bytes of every buffer, over the interior cells: what one cell's update moves at least.
  [[nodiscard]] double bytes_per_cell() const;

  std::vector<runtime::Field> in;
  std::vector<runtime::Field> out;
  std::vector<runtime::Field> padded_statics;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  std::vector<const void*> static_ptrs;
  std::vector<std::size_t> static_bytes; ///< per statics slot
  std::vector<uw_i64> extents;
  std::vector<double> params;
  std::vector<double> integrals;
  uwjit_kernel_args args{};
  double cells = 0;
};

} // namespace uwjit::bench
