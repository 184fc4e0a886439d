// A Simulation on a CUDA device: the device opened, every kernel's PTX requested and loaded, the
// state and static arrays put in device memory, and the step: halos filled on the device (or,
// sharded, exchanged through the host's copies), the kernel launched, its integrals read back.
#include "runtime_log.hpp"
#include "simulation_impl.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/runtime/node_kernels.hpp>

#include <algorithm>
#include <chrono>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {
using Clock = std::chrono::steady_clock;
} // namespace

void Simulation::Impl::open_device(const SimulationOptions& options) {
  const DeviceChoice choice = parse_device(options.device);
  if (!choice.cuda) {
    return;
  }
  if (checked) {
    throw Error(ErrorKind::usage, format("simulation: checked mode runs on CPUs only; drop "
                                         "SimulationOptions::checked (and UWJIT_CHECK) or run on "
                                         "\"cpu\" instead of \"{}\"",
                                         options.device));
  }
  cuda.emplace(device_ordinal(choice, decomposition ? decomposition->comm : nullptr));
  logger().info("running on {}", cuda->description());
}

void Simulation::Impl::request_on_device(std::vector<Emitted>& emitted,
                                         const SimulationOptions& options) {
  std::vector<codegen::KernelSource> sources;
  for (const auto& e : emitted) {
    sources.push_back(e.source);
  }
  // The halo kernels of each dtype of a state field with halos: the one that fills them and,
  // sharded, the one that packs their layers for the exchange through the host.
  std::vector<codegen::Dtype> dtypes;
  for (const auto& s : states) {
    for (const codegen::Dtype dtype : halo_dtypes(*s.node)) {
      if (std::find(dtypes.begin(), dtypes.end(), dtype) == dtypes.end()) {
        dtypes.push_back(dtype);
      }
    }
  }
  for (const codegen::Dtype dtype : dtypes) {
    sources.push_back(halo_fill_kernel(dtype));
    if (decomposition) {
      sources.push_back(halo_layers_kernel(dtype));
    }
  }
  std::vector<engine::PtxKernel> ptx;
  if (options.comm != nullptr) {
    ptx = engine->ptx(sources, cuda->target(), options.comm);
  } else {
    for (const auto& source : sources) {
      ptx.push_back(engine->ptx(source, cuda->target()));
    }
  }
  std::vector<engine::KernelInfo> infos;
  device_code_.clear();
  // A driver that cannot load a module on some rank fails every rank alike.
  collectively(options, [&] {
    for (std::size_t k = 0; k < emitted.size(); ++k) {
      device_code_.push_back(cuda->load(*engine, ptx[k]));
      infos.push_back(*ptx[k].info);
      infos.back().load_ms = device_code_.back()->load_ms();
      logger().info("kernel {}: loaded {} in {} ms", ptx[k].info->key, device_code_.back()->from(),
                    device_code_.back()->load_ms());
    }
    std::size_t next = emitted.size();
    for (const codegen::Dtype dtype : dtypes) {
      cuda->use_halo_kernel(*engine, dtype, ptx[next++]);
      if (decomposition) {
        cuda->use_layers_kernel(*engine, dtype, ptx[next++]);
      }
    }
  });
  report_all(emitted, infos);
}

void Simulation::Impl::make_device_state(NodeState& s) {
  // A launch has one block row per cell along every axis but the last (cell_launch), and a grid
  // takes at most 65535 along y and z.
  const std::size_t rank = s.shard.extent.size();
  for (std::size_t d = 0; d + 1 < rank; ++d) {
    if (s.shard.extent[d] > k_max_grid_rows) {
      throw Error(ErrorKind::usage,
                  format("simulation: node \"{}\" has {} cells along axis {} ({}){}; on a GPU "
                         "every axis but the last may have at most {}: shard the domain along "
                         "it (SimulationOptions::shard_axes, --shard) or run on \"cpu\"",
                         s.node->name(), s.shard.extent[d], d, s.layout.axis_names[d],
                         decomposition ? " in this rank's shard" : "", k_max_grid_rows));
    }
  }
  std::size_t first = 0; // the node's first kernel in request order
  for (const auto& other : states) {
    if (&other == &s) {
      break;
    }
    first += other.stages.size();
  }
  for (std::size_t k = 0; k < s.stages.size(); ++k) {
    StageKernel& stage = s.stages[k];
    stage.device.emplace(
        cuda->stage(stage.binding, stage.binding.report.source->slots(), device_code_[first + k]));
  }
  s.device_current.clear();
  s.device_next.clear();
  for (std::size_t i = 0; i < s.current.size(); ++i) {
    s.device_current.push_back(cuda->copy_of(*s.current[i]));
    s.device_next.push_back(s.next[i] ? cuda->copy_of(*s.next[i]) : nullptr);
  }
  pulled_at = steps;
}

void Simulation::Impl::push_state() {
  if (!cuda) {
    return;
  }
  cuda->bind();
  for (auto& s : states) {
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      cuda->upload(*s.current[i], *s.device_current[i]);
      if (s.next[i]) {
        cuda->upload(*s.next[i], *s.device_next[i]);
      }
    }
  }
  pulled_at = steps;
}

void Simulation::Impl::pull_state() {
  if (!cuda || pulled_at == steps) {
    return;
  }
  cuda->bind();
  for (auto& s : states) {
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      cuda->download(*s.device_current[i], *s.current[i]);
    }
  }
  pulled_at = steps;
}

// Node `s`'s coupled inputs on the device: each owner's current field there, its halos filled
// serially by the halo kernel with the owner's boundaries, sharded through the host as a node's
// own fields are (the layers next to the faces down, the exchange over the owner's plans, the
// halos up). The owner refills its own halos before it reads them, so this changes nothing it
// computes. `attempt` runs device work (holding a failure, sharded, to the stage's end).
template <class Attempt>
void Simulation::Impl::fill_inputs_on_device(NodeState& s, Attempt& attempt) {
  if (s.layout.inputs.empty()) {
    return;
  }
  point_inputs(s);
  auto device_field = [&](const Input& input) -> cuda::DeviceMemory& {
    return *states[input.owner].device_current[input.owner_field];
  };
  const auto& inputs = s.layout.inputs;
  if (!decomposition) {
    attempt([&] {
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        cuda->fill_halos(device_field(inputs[k]), *s.input_fields[k],
                         states[inputs[k].owner].boundaries[inputs[k].owner_field]);
      }
    });
    return;
  }
  attempt([&] {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      cuda->download_faces(device_field(inputs[k]), *s.input_fields[k]);
    }
  });
  exchange_inputs(s);
  attempt([&] {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      cuda->upload_halos(*s.input_fields[k], device_field(inputs[k]));
    }
  });
}

// One step of node `s` on the device. Sharded, a failure on the device is held until the stage
// ends, so that every rank takes part in the exchange and raises the same error.
void Simulation::Impl::step_node_on_device(NodeState& s) {
  const std::size_t rank = s.layout.domain.size();
  for (std::size_t stage = 0; stage < s.stages.size(); ++stage) {
    StageKernel& k = s.stages[stage];
    std::exception_ptr failure;
    auto attempt = [&](auto&& work) {
      if (failure) {
        return;
      }
      try {
        work();
      } catch (const Error&) {
        if (!decomposition) {
          throw;
        }
        failure = std::current_exception();
      }
    };
    fill_inputs_on_device(s, attempt);
    // The stage's state tables, as on CPUs, but of device addresses.
    const std::size_t fields = s.current.size();
    for (std::size_t slot = 0; slot < k.binding.in_field.size(); ++slot) {
      const std::size_t i = k.binding.in_field[slot];
      if (i < fields) {
        k.in_ptrs[slot] = s.device_current[i]->as<const void>();
      } else {
        const Input& input = s.layout.inputs[i - fields];
        k.in_ptrs[slot] = states[input.owner].device_current[input.owner_field]->as<const void>();
      }
    }
    for (std::size_t slot = 0; slot < k.binding.out_field.size(); ++slot) {
      k.out_ptrs[slot] = s.device_next[k.binding.out_field[slot]]->as<void>();
    }
    k.args.step = steps;
    auto& sums = k.binding.kernel_integrals;
    std::fill(sums.begin(), sums.end(), 0.0);
    attempt([&] { cuda->clear_integrals(*k.device); });
    auto launch = [&] {
      attempt([&] { cuda->launch(*k.device, k.args, k.in_ptrs, k.out_ptrs, rank); });
    };
    // Sharded, the halos go through the host's copies: the layers next to each face down, the
    // exchange with the neighbours, the halos up.
    auto faces_down = [&] {
      attempt([&] {
        for (std::size_t i = 0; i < fields; ++i) {
          if (s.refills(stage, i)) {
            cuda->download_faces(*s.device_current[i], *s.current[i]);
          }
        }
      });
    };
    auto halos_up = [&] {
      attempt([&] {
        for (std::size_t i = 0; i < fields; ++i) {
          if (s.refills(stage, i)) {
            cuda->upload_halos(*s.current[i], *s.device_current[i]);
          }
        }
      });
    };
    const bool exchanges = decomposition && prepare_exchange(s, stage);
    const int axis = exchanges && k.updates_box() ? overlap_axis(s) : -1;
    if (axis >= 0) {
      step_overlapped_on_device(s, stage, static_cast<std::size_t>(axis), faces_down, halos_up,
                                launch);
    } else {
      if (exchanges) {
        const auto start = Clock::now();
        faces_down();
        k.exchanger->fill(k.halo_fields, exchange_mode);
        ++exchange.exchanges;
        halos_up();
        exchange.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      } else if (!decomposition) {
        for (std::size_t i = 0; i < fields; ++i) {
          if (s.refills(stage, i)) {
            cuda->fill_halos(*s.device_current[i], *s.current[i], s.boundaries[i]);
          }
        }
      }
      launch();
    }
    attempt([&] { cuda->read_integrals(*k.device, sums, k.binding.integral_reductions); });
    finish_stage(s, stage, UWJIT_KERNEL_OK, failure);
  }
}

// Overlap mode on the device, as step_overlapped on CPUs: the halos of every axis but `axis` go
// up first; the kernel is launched on the cells that read no halo of `axis` and runs on the
// device while the host exchanges that axis's layers with the neighbours (a launch returns at
// once); then those halos go up (the copy waits for the kernel: the device keeps launches and
// copies in order) and the two boundary slabs are launched. Every cell is the same code on the
// same inputs as in one launch, so the state is the same bit for bit.
template <class FacesDown, class HalosUp, class Launch>
void Simulation::Impl::step_overlapped_on_device(NodeState& s, std::size_t stage, std::size_t axis,
                                                 FacesDown& faces_down, HalosUp& halos_up,
                                                 Launch& launch) {
  StageKernel& k = s.stages[stage];
  uwjit_kernel_args& args = k.args;
  const auto start = Clock::now();
  faces_down();
  k.exchanger->start_fill(k.halo_fields, exchange_mode, s.plans.size() - 1 - axis);
  halos_up();
  const std::int64_t h = s.layout.halo[axis];
  const std::int64_t n = s.shard.extent[axis];
  args.update_begin[axis] = h;
  args.update_end[axis] = n - h;
  launch();
  const auto waiting = Clock::now();
  double exchanging = std::chrono::duration<double>(waiting - start).count();
  // Even after a failure: no transfer may outlive the step.
  k.exchanger->finish_fill(k.halo_fields);
  exchanging += std::chrono::duration<double>(Clock::now() - waiting).count();
  exchange.seconds += exchanging; // not the upload below, which waits for the kernel
  ++exchange.exchanges;
  ++exchange.overlapped;
  halos_up();
  args.update_begin[axis] = 0;
  args.update_end[axis] = h;
  launch();
  args.update_begin[axis] = n - h;
  args.update_end[axis] = n;
  launch();
  args.update_begin[axis] = 0;
  args.update_end[axis] = n;
}

} // namespace uwjit::runtime
