// Kernel binding: a node's kernel emitted through a KernelWriter set up from its layout, and the
// kernel's slots bound to the state fields, static arrays, run-time extents and integrals.
#pragma once

#include "node_layout.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/codegen/reduction.hpp>
#include <uwjit/engine/kernel.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/static_data.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace uwjit::runtime::detail {

// A node's kernel as emitted: the writer (its declarations, for binding) and the source.
struct Emitted {
  codegen::KernelWriter writer;
  codegen::KernelSource source;
};

/// Emits node `node`'s kernels, one per stage, over `layout` (its inputs resolved) with the
/// static arrays of `bound` provided; Error(usage) naming the node unless each declared integral
/// is computed by exactly one stage. The kernel text names the static_data_hash of `whole`, the
/// node's whole static data (also when `bound` holds a rank's slabs, so that every rank emits the
/// same text), with the axes the kernel declares over run-time domain extents recorded as
/// following them. `checked`: the kernels are written in checked mode (KernelWriter::checked);
/// `gpu`: for a GPU (KernelWriter::gpu); `batch`: as a batch of members (KernelWriter::batch).
std::vector<Emitted> emit(const Node& node, const Layout& layout, const StaticData& bound,
                          const StaticData& whole, bool checked, bool gpu = false,
                          bool batch = false);

/// A stage's first-step check: the stage's kernel written checked (KernelWriter::checked).
struct Probe {
  std::size_t stage = 0;
  Emitted checked;
};

/// The first-step checks of the stages in `emitted` (node `node`'s kernels, as emit wrote them
/// unchecked) whose text does not show their reads within their halos
/// (KernelWriter::halo_reads() unknown): each such stage written again, checked, in stage order.
/// Empty when every stage's reads are judged from its text.
[[nodiscard]] std::vector<Probe> emit_probes(const Node& node, const Layout& layout,
                                             const StaticData& bound, const StaticData& whole,
                                             const std::vector<Emitted>& emitted);

/// The axes of static arrays that `writer`'s kernel declares over run-time domain extents.
[[nodiscard]] std::vector<FollowsDomain> static_follows(const codegen::KernelWriter& writer);

// How one node's kernel is bound: buffer slots to fields, static pointers, run-time extents and
// integral slots. Built completely before it replaces a previous binding.
struct Binding {
  std::optional<engine::Kernel> kernel;
  KernelReport report;
  std::vector<std::size_t> in_field;          // state_in slot -> field index; from the field
                                              // count on: layout.inputs index + field count
  std::vector<std::size_t> out_field;         // state_out slot -> field index
  std::vector<const void*> statics;           // statics slot -> pointer
  std::vector<std::size_t> static_bytes;      // statics slot -> the bytes it points at
  std::vector<StaticArray> held;              // keeps the bound arrays alive
  std::vector<std::unique_ptr<Field>> padded; // halo-padded copies of static arrays
  std::vector<uw_i64> extents;                // run-time extents, slot order
  std::vector<double> params;                 // run-time parameters, slot order
  std::vector<std::size_t> integral_slot;     // declared integral -> kernel slot (k_no_slot:
                                              // another stage computes it)
  std::vector<double> kernel_integrals;       // kernel slot order: one step's integrals, a
                                              // maximum as its key (codegen/reduction.hpp)
  std::vector<codegen::Reduction> integral_reductions; // kernel slot order
};

inline constexpr std::size_t k_no_slot = static_cast<std::size_t>(-1);

/// The value of declared integral `i` that `binding`'s kernel computed (a maximum decoded); its
/// integral_slot[i] must not be k_no_slot.
[[nodiscard]] inline double integral_value(const Binding& binding, std::size_t i) noexcept {
  const std::size_t slot = binding.integral_slot[i];
  return codegen::value_of(binding.integral_reductions[slot], binding.kernel_integrals[slot]);
}

// Fills the halos of a padded static array; domain_axes[a] is the domain axis of its axis a
// (-1 for other axes).
using StaticPadder = std::function<void(Field&, const std::vector<int>& domain_axes)>;

/// Serial: the halos follow the node's boundaries (a periodic axis wraps, others repeat the
/// edge), so stencils may read one cell beyond the domain. `layout` must outlive the padder.
[[nodiscard]] StaticPadder serial_padder(const Layout& layout);

/// Binds the kernel `writer` declared to `layout`'s state fields and `bound`'s static arrays
/// (halo-padded copies made and padded with `pad` where the kernel reads halos); Error(usage)
/// naming the node when a declaration does not match. The kernel and report are left empty.
Binding bind_kernel(const Node& node, const Layout& layout, const codegen::KernelWriter& writer,
                    const StaticData& bound, const StaticPadder& pad);

} // namespace uwjit::runtime::detail
