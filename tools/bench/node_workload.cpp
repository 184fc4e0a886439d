#include "node_workload.hpp"

#include "bench.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/common/error.hpp>

#include <algorithm>
#include <span>

namespace uwjit::bench {

namespace {

std::size_t bytes_of(const runtime::Field& f) {
  return static_cast<std::size_t>(f.padded_count()) * codegen::size_of(f.dtype());
}

} // namespace

NodeWorkload::NodeWorkload(const runtime::Node& node, const runtime::NodeKernel& kernel,
                           double dt) {
  const auto layout = node.layout();
  std::vector<runtime::Boundary> boundaries;
  for (const auto& axis : layout.axes) {
    boundaries.push_back(axis.boundary);
  }
  const auto& writer = kernel.writer;
  auto field_of = [&](const codegen::BufferDecl& b) {
    std::vector<int> halo;
    for (const auto& axis : b.axes) {
      halo.push_back(axis.halo);
    }
    return runtime::Field(b.name, b.dtype, writer.interior_shape(b), halo);
  };
  for (const auto& b : writer.buffers()) {
    if (b.role == codegen::BufferRole::state_in) {
      in.push_back(field_of(b));
    } else if (b.role == codegen::BufferRole::state_out) {
      out.push_back(field_of(b));
    }
  }
  std::vector<runtime::Field*> fields;
  for (auto& f : in) {
    fields.push_back(&f);
  }
  runtime::State state(fields, runtime::Slab::whole(node.domain()));
  node.initial_state(state);
  for (auto& f : in) {
    // Component axes first, edge; then the domain's boundaries.
    std::vector<runtime::Boundary> per_axis(f.shape().size() - boundaries.size(),
                                            runtime::Boundary::edge);
    per_axis.insert(per_axis.end(), boundaries.begin(), boundaries.end());
    f.fill_halos(per_axis);
    in_ptrs.push_back(f.data());
  }
  for (auto& f : out) {
    out_ptrs.push_back(f.data());
  }
  for (const auto& b : writer.buffers()) {
    if (b.role != codegen::BufferRole::statics) {
      continue;
    }
    const auto& array = node.static_data().at(b.name);
    if (std::none_of(b.axes.begin(), b.axes.end(), [](const auto& a) { return a.halo > 0; })) {
      static_ptrs.push_back(array.data());
      static_bytes.push_back(array.size_bytes());
      continue;
    }
    auto& padded = padded_statics.emplace_back(field_of(b));
    padded.copy_interior_from(
        std::span(static_cast<const std::byte*>(array.data()), array.size_bytes()));
    padded.fill_halos(std::vector<runtime::Boundary>(b.axes.size(), runtime::Boundary::edge));
    static_ptrs.push_back(padded.data());
    static_bytes.push_back(bytes_of(padded));
  }
  extents = writer.runtime_extent_values();
  params = writer.param_values();
  for (const auto& e : writer.extents()) {
    if (e.domain_axis >= 0) {
      args.shard_extent[e.domain_axis] = e.value;
      args.global_extent[e.domain_axis] = e.value;
      args.update_end[e.domain_axis] = e.value;
    }
  }
  integrals.assign(writer.integrals().size(), 0.0);
  codegen::set_table_lengths(args, kernel.source.slots());
  args.state_in = in_ptrs.data();
  args.state_out = out_ptrs.data();
  args.statics = static_ptrs.data();
  args.extents = extents.data();
  args.params = params.data();
  args.integrals = integrals.data();
  args.dt = dt;
  cells = 1;
  for (const auto& axis : layout.axes) {
    cells *= static_cast<double>(axis.cells);
  }
}

double NodeWorkload::time(uwjit_kernel_fn fn, int reps) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    if (fn(&args) != UWJIT_KERNEL_OK) {
      throw Error(ErrorKind::internal, "benchmark: a node kernel failed");
    }
    const double ms = ms_since(start);
    best = r == 0 ? ms : std::min(best, ms);
  }
  return best;
}

std::vector<std::byte> NodeWorkload::output_bytes() const {
  std::vector<std::byte> bytes;
  for (const auto& f : out) {
    const auto* p = static_cast<const std::byte*>(f.data());
    bytes.insert(bytes.end(), p, p + bytes_of(f));
  }
  return bytes;
}

double NodeWorkload::bytes_per_cell() const {
  double total = 0;
  for (const auto& f : in) {
    total += static_cast<double>(bytes_of(f));
  }
  for (const auto& f : out) {
    total += static_cast<double>(bytes_of(f));
  }
  for (const auto b : static_bytes) {
    total += static_cast<double>(b);
  }
  return total / cells;
}

} // namespace uwjit::bench
