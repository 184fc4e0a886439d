#include "kernel_binding.hpp"

#include "face_fill.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <span>

namespace uwjit::runtime::detail {

using codegen::BufferDecl;
using codegen::BufferRole;
using codegen::KernelWriter;

std::vector<FollowsDomain> static_follows(const KernelWriter& writer) {
  std::vector<FollowsDomain> follows;
  for (const BufferDecl& buffer : writer.buffers()) {
    if (buffer.role != BufferRole::statics) {
      continue;
    }
    for (std::size_t a = 0; a < buffer.axes.size(); ++a) {
      const auto& extent = writer.extents()[static_cast<std::size_t>(buffer.axes[a].extent.id)];
      if (extent.domain_axis >= 0 && extent.mode == codegen::ExtentMode::runtime) {
        follows.push_back({buffer.name, static_cast<int>(a), extent.domain_axis});
      }
    }
  }
  return follows;
}

namespace {

// One stage's kernel.
Emitted emit_stage(const Node& node, const Layout& layout, const StaticData& bound,
                   const StaticData& whole, bool checked, bool gpu, bool batch, int stage) {
  KernelWriter writer(node.name());
  writer.checked(checked);
  writer.gpu(gpu);
  writer.batch(batch);
  if (layout.stages > 1) {
    // Also keeps two stages of the same text apart in the reports.
    writer.comment(format("stage {} of {}", stage, layout.stages));
  }
  for (std::size_t d = 0; d < layout.domain.size(); ++d) {
    (void)writer.domain_extent(static_cast<int>(d), layout.axis_names[d], layout.domain[d],
                               layout.modes[d]);
  }
  auto declare = [&](const StateField& f, const std::vector<int>& halo) {
    std::vector<codegen::Axis> axes;
    for (const std::int64_t c : f.components) {
      axes.push_back({writer.constant(c), 0});
    }
    for (std::size_t d = 0; d < layout.domain.size(); ++d) {
      axes.push_back({writer.domain(static_cast<int>(d)), halo[d]});
    }
    writer.state_in(f.name, f.dtype, std::move(axes));
  };
  std::vector<std::string> field_names;
  for (const auto& f : layout.fields) {
    declare(f, layout.halo);
    field_names.push_back(f.name);
  }
  for (const auto& input : layout.inputs) {
    declare(input.field, input.halo);
  }
  for (const auto& [key, entry] : bound.entries()) {
    if (const auto* array = std::get_if<StaticArray>(&entry)) {
      writer.provide_static(key, array->dtype(), array->shape());
    }
  }
  writer.restrict_outputs(field_names, layout.integrals);
  node.emit_stage(writer, stage);
  // Known only now that the kernel has declared the axes of its static arrays; a static array
  // that follows a run-time domain extent keeps that extent out of the key.
  writer.comment("static_data_hash " + static_data_hash(whole, static_follows(writer)));
  auto source = writer.finish().with_options(node.kernel_options());
  return Emitted{std::move(writer), std::move(source)};
}

} // namespace

std::vector<Probe> emit_probes(const Node& node, const Layout& layout, const StaticData& bound,
                               const StaticData& whole, const std::vector<Emitted>& emitted) {
  std::vector<Probe> probes;
  for (std::size_t stage = 0; stage < emitted.size(); ++stage) {
    if (emitted[stage].writer.halo_reads() == codegen::HaloReads::unknown) {
      // The node writes its stages again, checked; the text differs only by the checks.
      probes.push_back({stage, emit_stage(node, layout, bound, whole, true, false, false,
                                          static_cast<int>(stage))});
    }
  }
  return probes;
}

std::vector<Emitted> emit(const Node& node, const Layout& layout, const StaticData& bound,
                          const StaticData& whole, bool checked, bool gpu, bool batch) {
  std::vector<Emitted> stages;
  for (int stage = 0; stage < layout.stages; ++stage) {
    stages.push_back(emit_stage(node, layout, bound, whole, checked, gpu, batch, stage));
  }
  for (const auto& name : layout.integrals) {
    int computed = 0;
    for (const auto& e : stages) {
      const auto& declared = e.writer.integrals();
      computed += static_cast<int>(std::count(declared.begin(), declared.end(), name));
    }
    if (computed == 0) {
      node_error(node, format("declares domain integral \"{}\" but its kernel does not compute it "
                              "(writer.integral(\"{}\"))",
                              name, name));
    }
    if (computed > 1) {
      node_error(node, format("domain integral \"{}\" is computed by {} stages (each integral "
                              "by exactly one)",
                              name, computed));
    }
  }
  return stages;
}

StaticPadder serial_padder(const Layout& layout) {
  return [&layout](Field& field, const std::vector<int>& domain_axes) {
    std::vector<Boundary> boundaries;
    for (const int d : domain_axes) {
      boundaries.push_back(d >= 0 ? static_padding(layout.boundary[static_cast<std::size_t>(d)])
                                  : Boundary::edge);
    }
    field.fill_halos(boundaries);
  };
}

Binding bind_kernel(const Node& node, const Layout& layout, const KernelWriter& writer,
                    const StaticData& bound, const StaticPadder& pad) {
  Binding b;
  auto field_index = [&](const BufferDecl& buffer) {
    for (std::size_t i = 0; i < layout.fields.size(); ++i) {
      const StateField& f = layout.fields[i];
      if (f.name != buffer.name) {
        continue;
      }
      std::vector<int> halos;
      for (const auto& axis : buffer.axes) {
        halos.push_back(axis.halo);
      }
      if (buffer.dtype != f.dtype || writer.interior_shape(buffer) != layout.shape(f) ||
          halos != layout.halos(f)) {
        node_error(node, format("its kernel declares {} \"{}\" with another layout than the "
                                "state field ({} {} with halos per axis)",
                                codegen::to_string(buffer.role), buffer.name,
                                codegen::to_string(f.dtype), shape_text(layout.shape(f))));
      }
      return i;
    }
    for (std::size_t k = 0; k < layout.inputs.size(); ++k) {
      const StateField& f = layout.inputs[k].field;
      if (f.name != buffer.name || buffer.role != BufferRole::state_in) {
        continue;
      }
      std::vector<std::int64_t> shape = f.components;
      shape.insert(shape.end(), layout.domain.begin(), layout.domain.end());
      std::vector<int> halos(f.components.size(), 0);
      halos.insert(halos.end(), layout.inputs[k].halo.begin(), layout.inputs[k].halo.end());
      std::vector<int> declared;
      for (const auto& axis : buffer.axes) {
        declared.push_back(axis.halo);
      }
      if (buffer.dtype != f.dtype || writer.interior_shape(buffer) != shape || declared != halos) {
        node_error(node, format("its kernel declares input \"{}\" with another layout than the "
                                "field it reads ({} {} with halos per axis)",
                                buffer.name, codegen::to_string(f.dtype), shape_text(shape)));
      }
      return layout.fields.size() + k;
    }
    node_error(node, format("its kernel declares {} \"{}\", which is not a state field",
                            codegen::to_string(buffer.role), buffer.name));
  };
  for (const BufferDecl& buffer : writer.buffers()) {
    switch (buffer.role) {
    case BufferRole::state_in:
      b.in_field.push_back(field_index(buffer));
      break;
    case BufferRole::state_out:
      b.out_field.push_back(field_index(buffer));
      break;
    case BufferRole::statics: {
      const StaticArray* array = bound.array(buffer.name);
      if (array == nullptr) {
        node_error(node, format("its kernel reads static array \"{}\", which its static data "
                                "does not hold",
                                buffer.name));
      }
      const auto shape = writer.interior_shape(buffer);
      if (array->dtype() != buffer.dtype || array->shape() != shape) {
        node_error(node,
                   format("static array \"{}\" is {} {} but the kernel reads {} {}", buffer.name,
                          codegen::to_string(array->dtype()), shape_text(array->shape()),
                          codegen::to_string(buffer.dtype), shape_text(shape)));
      }
      b.held.push_back(*array);
      bool has_halo = false;
      std::vector<int> halos;
      std::vector<int> domain_axes;
      for (const auto& axis : buffer.axes) {
        has_halo = has_halo || axis.halo > 0;
        halos.push_back(axis.halo);
        domain_axes.push_back(
            writer.extents()[static_cast<std::size_t>(axis.extent.id)].domain_axis);
      }
      if (!has_halo) {
        b.statics.push_back(array->data()); // bound in place: the kernel reads the caller's data
        b.static_bytes.push_back(array->size_bytes());
        break;
      }
      // A halo-padded copy, made once here.
      auto padded = std::make_unique<Field>(buffer.name, array->dtype(), shape, halos);
      padded->copy_interior_from(std::span<const std::byte>(
          static_cast<const std::byte*>(array->data()), array->size_bytes()));
      pad(*padded, domain_axes);
      b.statics.push_back(padded->data());
      b.static_bytes.push_back(padded->size_bytes());
      b.padded.push_back(std::move(padded));
      break;
    }
    }
  }
  b.extents = writer.runtime_extent_values();
  b.params = writer.param_values();
  for (const auto& name : layout.integrals) {
    const auto& declared = writer.integrals();
    const auto at = std::find(declared.begin(), declared.end(), name);
    b.integral_slot.push_back(
        at == declared.end() ? k_no_slot : static_cast<std::size_t>(at - declared.begin()));
  }
  b.kernel_integrals.assign(writer.integrals().size(), 0.0);
  b.integral_reductions = writer.integral_reductions();
  return b;
}

} // namespace uwjit::runtime::detail
