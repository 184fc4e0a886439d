// KernelWriter's cell form: the node gives one cell's update, and the writer owns the iteration
// around it, loops over the update box on a CPU or one thread per cell on a GPU, with the warp sums
// of the integrals a GPU kernel needs.
#include <uwjit/codegen/kernel_writer.hpp>

#include "cell_escape.hpp"
#include "cell_reads.hpp"

#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <iterator>

namespace uwjit::codegen {

void KernelWriter::for_each_cell(CellLoop loop, std::string_view text) {
  if (!m_cell.empty()) {
    fail("for_each_cell() is called twice (a kernel updates its cells once)");
  }
  if (!m_body.empty()) {
    fail("for_each_cell() after body(): a kernel has its own loops or the writer's, not both");
  }
  const auto domain_axes = static_cast<std::size_t>(
      std::count_if(std::begin(m_domain), std::end(m_domain), [](int id) { return id >= 0; }));
  if (loop.indices.size() != domain_axes || (domain_axes > 0 && m_domain[domain_axes - 1] < 0)) {
    fail(format("for_each_cell() names {} indices ({}) for {} domain axes", loop.indices.size(),
                (loop.indices.empty() ? std::string("none") : join(loop.indices)), domain_axes));
  }
  if (text.find_first_not_of(" \t\n") == std::string_view::npos) {
    fail("for_each_cell() was given no text");
  }
  if (const auto escape = detail::find_cell_escape(text)) {
    fail(format("for_each_cell(): \"{}\" at line {}, column {} of the cell's text leaves the "
                "cell: the text runs once for each cell and must reach its end (use if/else; "
                "break and continue only in a loop of the text's own)",
                escape->keyword, escape->line, escape->column));
  }
  if (!m_update_box) {
    update_box();
  }
  for (const auto& index : loop.indices) {
    claim(index, "cell index");
  }
  m_cell_loop = std::move(loop);
  m_cell = text;
  if (m_cell.back() != '\n') {
    m_cell += '\n';
  }
}

std::string_view to_string(HaloReads reads) noexcept {
  return reads == HaloReads::within ? "within" : "unknown";
}

HaloReads KernelWriter::halo_reads() const {
  return judge_reads();
}

HaloReads KernelWriter::judge_reads() const {
  if (m_cell.empty()) {
    return HaloReads::unknown;
  }
  std::vector<detail::AccessorAxes> accessors;
  for (const BufferDecl& b : m_buffers) {
    detail::AccessorAxes a{.accessor = b.accessor,
                           .writable = b.role == BufferRole::state_out,
                           .domain_axis = {},
                           .halo = {}};
    for (const Axis& axis : b.axes) {
      a.domain_axis.push_back(extent_of(axis.extent).domain_axis);
      a.halo.push_back(axis.halo);
    }
    accessors.push_back(std::move(a));
  }
  const detail::CellReads reads = detail::judge_cell_reads(m_cell, m_cell_loop.indices, accessors);
  if (!reads.conditional && !reads.beyond.empty()) {
    const detail::Reach& r = reads.beyond.front();
    const BufferDecl& b = m_buffers[r.accessor];
    const int axis = extent_of(b.axes[r.axis].extent).domain_axis;
    const std::string& axis_name = m_extents[static_cast<std::size_t>(m_domain[axis])].name;
    const std::int64_t cells = r.offset < 0 ? -r.offset : r.offset;
    const std::string where =
        format("{} at line {}, column {} of the cell's text", r.call, r.line, r.column);
    if (b.role == BufferRole::state_out) {
      fail(format("for_each_cell(): {} writes \"{}\" {} cell{} away from its own cell along "
                  "domain axis {} ({}): a cell's text writes only its own cell (each cell of the "
                  "update box is one run of the text, and the runs may be on other threads)",
                  where, b.name, cells, cells == 1 ? "" : "s", axis, axis_name));
    }
    const int halo = b.axes[r.axis].halo;
    const bool statics = b.role == BufferRole::statics;
    fail(format("for_each_cell(): {} reads {}\"{}\" {} cell{} beyond the interior along domain "
                "axis {} ({}), whose halo is {}: every cell runs the text, so the cells next to "
                "the {} face would read outside its layout. Declare a halo of at least {} on "
                "that axis ({})",
                where, statics ? "static array " : "", b.name, cells, cells == 1 ? "" : "s", axis,
                axis_name, halo, r.offset < 0 ? "low" : "high", cells,
                statics ? format("the array's Axis in static_array(\"{}\", ...) with halo {}",
                                 b.name, cells)
                        : format("DomainAxis::halo, NodeLayout::grid(cells, {}); in Python "
                                 "uwjit.grid(cells, halo={})",
                                 cells, cells)));
  }
  return reads.judged && reads.beyond.empty() ? HaloReads::within : HaloReads::unknown;
}

// The cell form on a CPU: loops over the update box, the last domain axis innermost.
std::pair<std::string, std::string> KernelWriter::cell_loops() const {
  const auto& indices = m_cell_loop.indices;
  std::string opening;
  std::string closing;
  std::string indent = "    ";
  for (std::size_t d = 0; d < indices.size(); ++d) {
    const std::string& n = m_extents[static_cast<std::size_t>(m_domain[d])].name;
    if (d + 1 == indices.size() && m_cell_loop.masked_remainder) {
      // Without masked moves the loop is still vectorised whatever the cost model says of the
      // run-time checks that run-time extents bring (a sharded axis), as the predicate pragma
      // implies where they are cheap.
      opening += "#if UWJIT_MASKED_MOVES\n"
                 "#pragma clang loop vectorize_predicate(enable)\n"
                 "#else\n"
                 "#pragma clang loop vectorize(enable)\n"
                 "#endif\n";
    }
    opening += format("{}for (uw_i64 {} = {}_begin; {} < {}_end; ++{}) {\n", indent, indices[d], n,
                      indices[d], n, indices[d]);
    closing = indent + "}\n" + closing;
    indent += "  ";
  }
  return {opening, closing};
}

// Before the text of a masked cell form: the choice of loop form per target, as the compiler's
// predefined macros give it (the text stays one for every target, and the key holds the target).
// Masked moves are cheap with AVX-512's mask registers and on other architectures (GPUs); AVX2's
// are microcoded on AMD's cores, so there the loop keeps a scalar remainder. On AMD's Zen 4,
// pipe-flow's kernel ran a fifth faster on one thread compiled for AVX2 with a remainder, but
// compiled twice as long (the remainder's scalar selects) and was no faster on two: not taken.
// On Zen 5 (AVX-512 on full-width units), pipe-flow 96×64×64 ran 15 % faster on 1 and 2 threads
// without masked iterations, with the same cold request (a remainder that never runs, as every
// row is whole vectors), but 25 % slower at 64×30×30, where each row's 6-cell remainder runs
// scalar (docs/explanation/performance.md): so there the unmasked loop is taken only where the
// innermost extent is compiled in and divides into whole vectors. The same holds on Zen 4 (AVX-512
// on half-width units): 96×64×64 ran 1.15× faster on 1 thread and 1.05× on 2 unmasked, with the
// same cold request and the same bits.
std::string KernelWriter::masked_form_text() const {
  std::string text = "#if defined(__AVX512F__) || !defined(__x86_64__)\n"
                     "#define UWJIT_MASKED_MOVES 1\n"
                     "#else\n"
                     "#define UWJIT_MASKED_MOVES 0\n"
                     "#endif\n";
  const int axis = m_domain[m_cell_loop.indices.size() - 1];
  const ExtentDecl& inner = m_extents[static_cast<std::size_t>(axis)];
  if (inner.mode == ExtentMode::compiled && inner.value % 16 == 0) {
    text += "// rows of whole vectors: Zen 4 and Zen 5 keep the unmasked loop\n"
            "#if defined(__znver4__) || defined(__znver5__)\n"
            "#undef UWJIT_MASKED_MOVES\n"
            "#define UWJIT_MASKED_MOVES 0\n"
            "#endif\n";
  }
  return text;
}

// The cell form on a GPU: one thread per cell of the update box, the last domain axis on the
// threads of x (ctaid.x * ntid.x + tid.x), the one before on ctaid.y, the first of three on
// ctaid.z. Threads beyond the box skip the cell but still take part in the integrals' warp sums.
std::pair<std::string, std::string> KernelWriter::cell_threads() const {
  const auto& indices = m_cell_loop.indices;
  const std::size_t rank = indices.size();
  std::string opening = "    // One thread per cell of the update box.\n";
  std::string inside;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::string& n = m_extents[static_cast<std::size_t>(m_domain[d])].name;
    const std::size_t from_last = rank - 1 - d;
    // In a batch, ctaid.x also counts the member: the block within the row is a local of its own.
    std::string thread;
    if (from_last != 0) {
      thread = format("static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_{}())",
                      from_last == 1 ? "y" : "z");
    } else {
      thread = format("{} * __nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x()",
                      m_batch ? "uwjit_row_block"
                              : "static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_x())");
    }
    opening += format("    const uw_i64 {} = {}_begin + {};\n", indices[d], n, thread);
    inside += format("{}{} < {}_end", d == 0 ? "" : " && ", indices[d], n);
  }
  opening += format("    if ({}) {\n", inside);
  return {opening, "    }\n"};
}

// The entry of a batch on a GPU, up to `args`: the block's member from ctaid.x, each member a
// run of the same number of blocks along x (the members share the update box, the batch's own),
// and the block within that member's row (uwjit_row_block, which cell_threads reads). A whole
// block beyond the members returns before any warp sums.
std::string KernelWriter::gpu_batch_head() const {
  const auto& indices = m_cell_loop.indices;
  const ExtentDecl& last = m_extents[static_cast<std::size_t>(m_domain[indices.size() - 1])];
  std::string text = format("extern \"C\" __attribute__((nvptx_kernel)) void {}(const "
                            "uwjit_kernel_args uwjit_batch) {\n",
                            k_entry_placeholder);
  text += format("  const uw_i64 uwjit_row = uwjit_batch.update_end[{}] - "
                 "uwjit_batch.update_begin[{}];\n",
                 last.domain_axis, last.domain_axis);
  text += "  const uw_i64 uwjit_threads = __nvvm_read_ptx_sreg_ntid_x();\n"
          "  const uw_i64 uwjit_row_blocks = (uwjit_row + uwjit_threads - 1) / uwjit_threads;\n"
          "  const uw_i64 uwjit_block = __nvvm_read_ptx_sreg_ctaid_x();\n"
          "  if (uwjit_row_blocks == 0 || uwjit_block >= uwjit_row_blocks * uwjit_batch.n_members) "
          "{\n"
          "    return;\n"
          "  }\n"
          "  const uw_i64 uwjit_row_block = uwjit_block % uwjit_row_blocks;\n"
          "  const uwjit_kernel_args* const args = &uwjit_batch.members[uwjit_block / "
          "uwjit_row_blocks];\n";
  return text;
}

// A warp's 32 partial sums folded into lane 0 by shuffles (a double as two 32-bit halves), then
// one atomic addition per warp: the order of the warps' additions varies from run to run, so an
// integral's last bits may too (integrals are reassociated anyway).
CellLaunch cell_launch(const uwjit_kernel_args& args, std::size_t rank,
                       unsigned most_threads) noexcept {
  auto box = [&](std::size_t d) {
    return static_cast<unsigned>(args.update_end[d] - args.update_begin[d]);
  };
  constexpr unsigned k_warp = 32;
  const unsigned most = std::max(k_warp, most_threads / k_warp * k_warp);
  const unsigned row = box(rank - 1);
  const unsigned blocks = (row + most - 1) / most;
  const unsigned threads =
      blocks == 0 ? most : ((row + blocks - 1) / blocks + k_warp - 1) / k_warp * k_warp;
  return {{blocks, rank > 1 ? box(rank - 2) : 1U, rank > 2 ? box(0) : 1U}, threads};
}

} // namespace uwjit::codegen
