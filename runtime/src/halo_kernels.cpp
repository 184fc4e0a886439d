// The GPU kernels of a state field's halos on a CUDA device: the one that fills an axis's halos
// (the same rules, and the same arithmetic, as fill_face in face_fill.hpp on the host), and the
// one that copies layers between the field and a contiguous buffer (sharded halos go through
// the host in such buffers).
#include <uwjit/runtime/node_kernels.hpp>

#include <string>
#include <string_view>

namespace uwjit::runtime {

namespace {

// A GPU kernel over a field of `dtype` (its elements are uwjit_cell), one thread per element
// it moves: `body` runs with `args` and the thread's index `t` in scope. For `members`, the
// launch's struct lists one struct per member (args->members) and ctaid.y picks the member.
codegen::KernelSource one_thread_per_element(std::string origin, codegen::Dtype dtype,
                                             std::string_view body, codegen::SlotTables slots,
                                             bool members = false) {
  const std::string type(codegen::c_type(dtype));
  std::string text = "typedef " + type + " uwjit_cell;\n";
  text += R"(extern "C" __attribute__((nvptx_kernel)) void __UWJIT_ENTRY__(
    const uwjit_kernel_args uwjit_args) {
)";
  text += members ? "  const uwjit_kernel_args* const args =\n"
                    "      &uwjit_args.members[__nvvm_read_ptx_sreg_ctaid_y()];\n"
                  : "  const uwjit_kernel_args* const args = &uwjit_args;\n";
  text += R"(  const uw_i64 t = static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_x()) *
                   __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
)";
  text += body;
  text += "}\n";
  return codegen::KernelSource::generated(std::move(origin) + " " + type, std::move(text),
                                          std::move(slots));
}

} // namespace

codegen::KernelSource halo_fill_kernel(codegen::Dtype dtype, bool members) {
  // Thread t fills element e of halo layer `layer` (0..2h-1: the low face's h layers, then the
  // high face's) of slab o; k is the layer's distance from the interior (1..h).
  codegen::SlotTables slots;
  slots.state_out = {"field"};
  slots.extents = {"outer", "n", "h", "inner", "low_kind", "high_kind"};
  slots.params = {"low_value", "high_value"};
  return one_thread_per_element(members ? "members' halo fill" : "halo fill", dtype,
                                R"(  const uw_i64 outer = args->extents[0];
  const uw_i64 n = args->extents[1];
  const uw_i64 h = args->extents[2];
  const uw_i64 inner = args->extents[3];
  if (t >= outer * 2 * h * inner) {
    return;
  }
  const uw_i64 e = t % inner;
  const uw_i64 layer = t / inner % (2 * h);
  const uw_i64 o = t / inner / (2 * h);
  const bool low = layer < h;
  const uw_i64 k = low ? layer + 1 : layer - h + 1;
  const uw_i64 kind = args->extents[low ? 4 : 5];
  const double value = args->params[low ? 0 : 1];
  uwjit_cell* const slab = static_cast<uwjit_cell*>(args->state_out[0]) + o * (n + 2 * h) * inner;
  const uw_i64 halo_cell = low ? h - k : h + n - 1 + k;
  uwjit_cell* const out = slab + halo_cell * inner + e;
  if (kind == 0) {
    *out = slab[(low ? halo_cell + n : halo_cell - n) * inner + e];
  } else if (kind == 1) {
    *out = slab[(low ? h : h + n - 1) * inner + e];
  } else {
    const uwjit_cell in = slab[(low ? h + k - 1 : h + n - k) * inner + e];
    if (kind == 2) {
      *out = static_cast<uwjit_cell>(2.0 * value) - in;
    } else {
      *out = in + static_cast<uwjit_cell>(value * static_cast<double>(2 * k - 1));
    }
  }
)",
                                std::move(slots), members);
}

codegen::KernelSource halo_layers_kernel(codegen::Dtype dtype) {
  // Thread t copies element e of layer l of slab o: buffer element t, array element
  // ((o * padded + first + l) * inner + e).
  codegen::SlotTables slots;
  slots.state_out = {"array", "buffer"};
  slots.extents = {"outer", "padded", "inner", "first", "count", "to_buffer"};
  return one_thread_per_element("halo layers", dtype, R"(  const uw_i64 outer = args->extents[0];
  const uw_i64 padded = args->extents[1];
  const uw_i64 inner = args->extents[2];
  const uw_i64 first = args->extents[3];
  const uw_i64 count = args->extents[4];
  if (t >= outer * count * inner) {
    return;
  }
  const uw_i64 e = t % inner;
  const uw_i64 l = t / inner % count;
  const uw_i64 o = t / inner / count;
  uwjit_cell* const array = static_cast<uwjit_cell*>(args->state_out[0]);
  uwjit_cell* const buffer = static_cast<uwjit_cell*>(args->state_out[1]);
  const uw_i64 at = (o * padded + first + l) * inner + e;
  if (args->extents[5] != 0) {
    buffer[t] = array[at];
  } else {
    array[at] = buffer[t];
  }
)",
                                std::move(slots));
}

} // namespace uwjit::runtime
