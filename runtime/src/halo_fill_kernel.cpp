// The GPU kernel that fills one axis's halos of a state field on a CUDA device: the same rules,
// and the same arithmetic, as fill_face (face_fill.hpp) on the host.
#include <uwjit/runtime/node_kernels.hpp>

#include <string>

namespace uwjit::runtime {

codegen::KernelSource halo_fill_kernel(codegen::Dtype dtype) {
  const std::string type(codegen::c_type(dtype));
  // Thread t fills element e of halo layer `layer` (0..2h-1: the low face's h layers, then the
  // high face's) of slab o; k is the layer's distance from the interior (1..h).
  std::string body = "typedef " + type + " uwjit_cell;\n";
  body += R"(extern "C" __attribute__((nvptx_kernel)) void __UWJIT_ENTRY__(
    const uwjit_kernel_args uwjit_args) {
  const uwjit_kernel_args* const args = &uwjit_args;
  const uw_i64 outer = args->extents[0];
  const uw_i64 n = args->extents[1];
  const uw_i64 h = args->extents[2];
  const uw_i64 inner = args->extents[3];
  const uw_i64 t = static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_x()) *
                   __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();
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
}
)";
  codegen::SlotTables slots;
  slots.state_out = {"field"};
  slots.extents = {"outer", "n", "h", "inner", "low_kind", "high_kind"};
  slots.params = {"low_value", "high_value"};
  return codegen::KernelSource::generated("halo fill " + type, std::move(body), std::move(slots));
}

} // namespace uwjit::runtime
