// What the engine and the kernel call share: a kernel source with the buffer declarations its
// caller gave, and a loaded kernel with them.
#pragma once

#include "bindings.hpp"

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/codegen/reduction.hpp>
#include <uwjit/engine/kernel.hpp>

#include <optional>
#include <string>
#include <vector>

namespace uwjit::python {

/// One axis of a declared shape: `count` elements, plus the value at the call of the run-time
/// extent named `extent` where one is named (an axis of a run-time extent with halos is that
/// extent plus twice the halo).
struct ShapeAxis {
  std::string extent; ///< empty: `count` alone
  std::int64_t count = 0;
};

/// One buffer slot: its name and, when declared, the dtype and shape a call must pass.
struct SlotSpec {
  std::string name;
  std::optional<codegen::Dtype> dtype;
  std::optional<std::vector<ShapeAxis>> shape;
  /// The kernel assumes the buffer 64-byte aligned (KernelWriter's state buffers do).
  bool aligned = false;
};

/// The buffer tables, in the ABI's order: state_in, state_out, statics; and the reduction of
/// each integral slot (empty: sums; a KernelWriter's kernel declares them).
struct BufferSpecs {
  std::vector<SlotSpec> tables[3];
  std::vector<codegen::Reduction> integral_reductions;
  /// The kernel assumes each state output apart from every other buffer it is given (a
  /// KernelWriter's does, and vectorises on it): a call that overlaps them is refused.
  bool separate_outputs = false;
  /// The extent of each domain axis, where the kernel declares them (a KernelWriter's): a call's
  /// domain (its update box) defaults to them and may not exceed them. Empty: not known (a
  /// kernel of the host's own text), and the call's domain is the host's to get right.
  std::vector<ShapeAxis> domain;
};

/// uwjit.Source: a kernel's text, entry and slots.
struct PySource {
  codegen::KernelSource source;
  BufferSpecs specs;
};

/// uwjit.Kernel: a loaded kernel and the declarations its calls are checked against.
struct PyKernel {
  engine::Kernel kernel;
  BufferSpecs specs;
};

/// The Source of engine.kernel's arguments (see Engine.kernel).
[[nodiscard]] PySource make_source(const std::string& text, const std::optional<std::string>& entry,
                                   const py::iterable& state_in, const py::iterable& state_out,
                                   const py::iterable& statics, const py::iterable& extents,
                                   const py::iterable& integrals);

/// Specs of a KernelSource made by a KernelWriter: the buffers it declared.
[[nodiscard]] BufferSpecs specs_of_slots(const codegen::SlotTables& slots);

/// KernelInfo as a Python object (uwjit.KernelInfo).
[[nodiscard]] py::object kernel_info(const engine::KernelInfo& info);

} // namespace uwjit::python
