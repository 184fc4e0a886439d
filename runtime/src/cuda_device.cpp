#include "cuda_device.hpp"

#include "face_fill.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/comm/comm.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/cuda/probe.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>

namespace uwjit::runtime::detail {

namespace {

const cuda::Driver& driver() {
  return cuda::Driver::get();
}

} // namespace

DeviceChoice parse_device(std::string_view text, std::string_view who) {
  if (text == "cpu") {
    return {};
  }
  if (text == "cuda") {
    return {true, -1};
  }
  if (text.starts_with("cuda:")) {
    const std::string_view number = text.substr(5);
    int ordinal = -1;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), ordinal);
    if (ec == std::errc{} && end == number.data() + number.size() && ordinal >= 0) {
      return {true, ordinal};
    }
  }
  throw Error(ErrorKind::usage,
              format("{}: device \"{}\": expected \"cpu\", \"cuda\" (device 0, or under MPI the "
                     "rank's place on its node) or \"cuda:N\" (device N)",
                     who, text));
}

int device_ordinal(const DeviceChoice& choice, const comm::Comm* ranks) {
  if (choice.ordinal >= 0 || ranks == nullptr) {
    return std::max(choice.ordinal, 0);
  }
  const cuda::DriverProbe probe = cuda::probe();
  if (probe.usable && !probe.devices.empty()) {
    return ranks->node_rank() % static_cast<int>(probe.devices.size());
  }
  return 0;
}

LoadedModule::LoadedModule(const engine::PtxKernel& ptx, const engine::CudaImage& image)
    : m_from(!image.cubin             ? "its PTX (" + image.from + ")"
             : image.from == "linked" ? std::string("its cubin, linked now")
             : image.from == "disk"   ? std::string("its cubin, from the disk cache")
                                      : "its cubin, from " + image.from) {
  const auto start = std::chrono::steady_clock::now();
  driver().check(
      driver().api().cuModuleLoadDataEx(&m_module, image.bytes->data(), 0, nullptr, nullptr),
      format("cuModuleLoadDataEx of the {} of key {}", image.cubin ? "cubin" : "PTX",
             ptx.info->key),
      ErrorKind::jit);
  m_load_ms =
      image.link_ms +
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const cuda::Result found =
      driver().api().cuModuleGetFunction(&m_function, m_module, ptx.info->entry.c_str());
  if (found != cuda::k_success) {
    (void)driver().api().cuModuleUnload(m_module);
    driver().check(found, format("cuModuleGetFunction of {}", ptx.info->entry), ErrorKind::jit);
  }
}

LoadedModule::~LoadedModule() {
  (void)driver().api().cuModuleUnload(m_module);
}

CudaDevice::CudaDevice(int ordinal) {
  (void)driver(); // Error(usage) saying why there is no driver
  const cuda::DriverProbe probe = cuda::probe();
  if (ordinal >= static_cast<int>(probe.devices.size())) {
    throw Error(ErrorKind::usage,
                format("simulation: device cuda:{} was asked for, but the NVIDIA driver lists {} "
                       "CUDA device{} (see nvidia-smi and CUDA_VISIBLE_DEVICES)",
                       ordinal, probe.devices.size(), probe.devices.size() == 1 ? "" : "s"));
  }
  const cuda::DeviceReport& device = probe.devices[static_cast<std::size_t>(ordinal)];
  m_context = cuda::make_current(ordinal);
  m_arch = device.arch();
  try {
    m_target = engine::Target::parse("cuda:" + device.arch());
  } catch (const Error&) {
    m_target = engine::Target::parse("cuda:sm_90"); // newer GPUs load sm_90 PTX
  }
  m_description = format("cuda:{} ({}, {})", ordinal, device.name, device.arch());
}

void CudaDevice::bind() const {
  driver().check(driver().api().cuCtxSetCurrent(m_context), "cuCtxSetCurrent", ErrorKind::usage);
}

std::shared_ptr<const LoadedModule> CudaDevice::load(engine::Engine& engine,
                                                     const engine::PtxKernel& ptx) {
  auto& slot = m_modules[ptx.info->key];
  if (auto loaded = slot.lock()) {
    return loaded;
  }
  auto loaded = std::make_shared<const LoadedModule>(ptx, engine.cuda_image(ptx, m_arch));
  slot = loaded;
  return loaded;
}

void CudaDevice::use_halo_kernel(engine::Engine& engine, codegen::Dtype dtype,
                                 const engine::PtxKernel& ptx) {
  m_halo_kernels[dtype] = load(engine, ptx);
}

DeviceStage CudaDevice::stage(const Binding& binding, const codegen::SlotTables& slots,
                              std::shared_ptr<const LoadedModule> code) {
  DeviceStage stage;
  stage.code = std::move(code);
  stage.slots = slots;
  std::vector<cuda::DevicePtr> table;
  for (std::size_t slot = 0; slot < binding.statics.size(); ++slot) {
    stage.statics.push_back(
        std::make_unique<cuda::DeviceMemory>(binding.statics[slot], binding.static_bytes[slot]));
    table.push_back(stage.statics.back()->pointer());
  }
  stage.static_table =
      std::make_unique<cuda::DeviceMemory>(table.data(), table.size() * sizeof(cuda::DevicePtr));
  stage.extents = std::make_unique<cuda::DeviceMemory>(binding.extents.data(),
                                                       binding.extents.size() * sizeof(uw_i64));
  stage.params = std::make_unique<cuda::DeviceMemory>(binding.params.data(),
                                                      binding.params.size() * sizeof(double));
  stage.integrals =
      std::make_unique<cuda::DeviceMemory>(binding.kernel_integrals.size() * sizeof(double));
  stage.read_back.assign(binding.kernel_integrals.size(), 0.0);
  return stage;
}

void CudaDevice::refresh(DeviceStage& stage, const Binding& binding) {
  UWJIT_ASSERT(stage.statics.size() == binding.statics.size() &&
                   stage.read_back.size() == binding.kernel_integrals.size(),
               "refresh: a binding of another layout");
  for (std::size_t slot = 0; slot < binding.statics.size(); ++slot) {
    UWJIT_ASSERT(stage.statics[slot]->bytes() == binding.static_bytes[slot],
                 "refresh: a static array of another size");
    stage.statics[slot]->upload(binding.statics[slot]);
  }
  stage.extents->upload(binding.extents.data());
  stage.params->upload(binding.params.data());
}

std::pair<double, double> CudaDevice::memory() const {
  std::size_t free = 0;
  std::size_t total = 0;
  driver().check(driver().api().cuMemGetInfo_v2(&free, &total), "cuMemGetInfo_v2",
                 ErrorKind::usage);
  return {static_cast<double>(free), static_cast<double>(total)};
}

std::unique_ptr<cuda::DeviceMemory> CudaDevice::copy_of(const Field& field) {
  return std::make_unique<cuda::DeviceMemory>(field.data(), field.size_bytes());
}

void CudaDevice::upload(const Field& field, const cuda::DeviceMemory& to) {
  driver().check(driver().api().cuMemcpyHtoD_v2(to.pointer(), field.data(), field.size_bytes()),
                 format("cuMemcpyHtoD_v2 of field \"{}\"", field.name()), ErrorKind::io);
}

void CudaDevice::download(const cuda::DeviceMemory& from, Field& field) {
  driver().check(driver().api().cuMemcpyDtoH_v2(field.data(), from.pointer(), field.size_bytes()),
                 format("cuMemcpyDtoH_v2 of field \"{}\"", field.name()), ErrorKind::kernel);
}

void CudaDevice::run(cuda::Function function, const uwjit_kernel_args& args,
                     std::array<unsigned, 3> grid, unsigned block) {
  uwjit_kernel_args by_value = args;
  void* arguments[] = {&by_value};
  driver().check(driver().api().cuLaunchKernel(function, grid[0], grid[1], grid[2], block, 1, 1, 0,
                                               nullptr, arguments, nullptr),
                 "cuLaunchKernel", ErrorKind::kernel);
}

void CudaDevice::fill_halos(const cuda::DeviceMemory& data, const Field& layout,
                            std::span<const Boundary> boundaries) {
  const auto& shape = layout.shape();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const int h = layout.halo()[d];
    if (h == 0) {
      continue;
    }
    if (const auto problem = boundary_problem(boundaries[d], shape[d], h); !problem.empty()) {
      throw Error(ErrorKind::usage, format("field \"{}\": axis {}: {}", layout.name(), d, problem));
    }
    const auto kernel = m_halo_kernels.find(layout.dtype());
    UWJIT_ASSERT(kernel != m_halo_kernels.end(), "fill_halos: no halo kernel for the dtype");
    const AxisView view(layout, d); // as fill_face sees the array
    run_halo_kernel(
        *kernel->second,
        {{data.pointer(), 0},
         {view.outer, view.n, h, view.inner, static_cast<uw_i64>(boundaries[d].low.kind),
          static_cast<uw_i64>(boundaries[d].high.kind)},
         {boundaries[d].low.value, boundaries[d].high.value}},
        view.outer * 2 * h * view.inner);
  }
}

void CudaDevice::use_members_halo_kernel(engine::Engine& engine, codegen::Dtype dtype,
                                         const engine::PtxKernel& ptx) {
  m_members_halo_kernels[dtype] = load(engine, ptx);
}

// Per axis, one buffer on the device: the members' argument structs, then their tables, each
// struct pointing at its member's table there.
void CudaDevice::fill_members_halos(std::span<const MemberHalos> members, const Field& layout) {
  if (members.empty()) {
    return;
  }
  const auto kernel = m_members_halo_kernels.find(layout.dtype());
  UWJIT_ASSERT(kernel != m_members_halo_kernels.end(),
               "fill_members_halos: no members' halo kernel for the dtype");
  const auto& shape = layout.shape();
  const std::size_t count = members.size();
  const std::size_t args_bytes = count * sizeof(uwjit_kernel_args);
  const std::size_t bytes = args_bytes + count * sizeof(HaloTables);
  if (!m_members_halo_tables || m_members_halo_tables->bytes() < bytes) {
    m_members_halo_tables = std::make_unique<cuda::DeviceMemory>(bytes);
  }
  m_members_halo_bytes.resize(bytes);
  const cuda::DevicePtr base = m_members_halo_tables->pointer();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const int h = layout.halo()[d];
    if (h == 0) {
      continue;
    }
    const AxisView view(layout, d);
    for (std::size_t m = 0; m < count; ++m) {
      const Boundary& boundary = members[m].boundaries[d];
      if (const auto problem = boundary_problem(boundary, shape[d], h); !problem.empty()) {
        throw Error(ErrorKind::usage,
                    format("field \"{}\": axis {}: {}", layout.name(), d, problem));
      }
      const HaloTables tables{{members[m].data->pointer(), 0},
                              {view.outer, view.n, h, view.inner,
                               static_cast<uw_i64>(boundary.low.kind),
                               static_cast<uw_i64>(boundary.high.kind)},
                              {boundary.low.value, boundary.high.value}};
      const cuda::DevicePtr at = base + args_bytes + m * sizeof(HaloTables);
      uwjit_kernel_args args{};
      args.abi_version = UWJIT_KERNEL_ABI_VERSION;
      args.n_state_out = 2;
      args.n_extents = 6;
      args.n_params = 2;
      args.state_out = reinterpret_cast<void* const*>(at + offsetof(HaloTables, out));
      args.extents = reinterpret_cast<const uw_i64*>(at + offsetof(HaloTables, extents));
      args.params = reinterpret_cast<const double*>(at + offsetof(HaloTables, params));
      std::memcpy(m_members_halo_bytes.data() + m * sizeof args, &args, sizeof args);
      std::memcpy(m_members_halo_bytes.data() + args_bytes + m * sizeof tables, &tables,
                  sizeof tables);
    }
    driver().check(driver().api().cuMemcpyHtoD_v2(base, m_members_halo_bytes.data(), bytes),
                   "cuMemcpyHtoD_v2 of the members' halo tables", ErrorKind::io);
    const std::int64_t threads = view.outer * 2 * h * view.inner;
    // The grid's y takes at most 65535 members a launch.
    for (std::size_t first = 0; first < count && threads > 0;
         first += static_cast<std::size_t>(k_max_grid_rows)) {
      const std::size_t these = std::min(count - first, static_cast<std::size_t>(k_max_grid_rows));
      uwjit_kernel_args batch{};
      batch.abi_version = UWJIT_KERNEL_ABI_VERSION;
      batch.n_members = static_cast<uw_i64>(these);
      batch.members = reinterpret_cast<const uwjit_kernel_args*>(base) + first;
      run(kernel->second->function(), batch,
          {static_cast<unsigned>((threads + k_block_threads - 1) / k_block_threads),
           static_cast<unsigned>(these), 1},
          k_block_threads);
    }
  }
}

void CudaDevice::run_halo_kernel(const LoadedModule& kernel, const HaloTables& tables,
                                 std::int64_t threads) {
  if (threads == 0) {
    return;
  }
  std::array<char, sizeof(HaloTables)> key{};
  std::memcpy(key.data(), &tables, sizeof tables);
  auto& uploaded = m_halo_tables[key];
  if (!uploaded) {
    uploaded = std::make_unique<cuda::DeviceMemory>(&tables, sizeof tables);
  }
  uwjit_kernel_args args{};
  args.abi_version = UWJIT_KERNEL_ABI_VERSION;
  args.n_state_out = 2;
  args.n_extents = 6;
  args.n_params = 2;
  const cuda::DevicePtr base = uploaded->pointer();
  args.state_out = reinterpret_cast<void* const*>(base + offsetof(HaloTables, out));
  args.extents = reinterpret_cast<const uw_i64*>(base + offsetof(HaloTables, extents));
  args.params = reinterpret_cast<const double*>(base + offsetof(HaloTables, params));
  run(kernel.function(), args,
      {static_cast<unsigned>((threads + k_block_threads - 1) / k_block_threads), 1, 1},
      k_block_threads);
}

void CudaDevice::use_layers_kernel(engine::Engine& engine, codegen::Dtype dtype,
                                   const engine::PtxKernel& ptx) {
  m_layers_kernels[dtype] = load(engine, ptx);
}

const LoadedModule& CudaDevice::layers_kernel(codegen::Dtype dtype) const {
  const auto kernel = m_layers_kernels.find(dtype);
  UWJIT_ASSERT(kernel != m_layers_kernels.end(), "no halo layers kernel for the dtype");
  return *kernel->second;
}

std::vector<CudaDevice::Layers> CudaDevice::face_layers(const Field& field, bool interior) {
  std::vector<Layers> layers;
  for (std::size_t d = 0; d < field.shape().size(); ++d) {
    const AxisView v(field, d);
    if (v.h == 0) {
      continue;
    }
    // Low then high: the interior's first and last h layers, or the two halos.
    layers.push_back({v.outer, v.padded(), v.inner, interior ? v.h : 0, v.h});
    layers.push_back({v.outer, v.padded(), v.inner, interior ? v.n : v.n + v.h, v.h});
  }
  return layers;
}

CudaDevice::Staging& CudaDevice::staging_for(const cuda::DeviceMemory& data, std::size_t bytes) {
  Staging& staging = m_staging[data.pointer()];
  if (!staging.host || staging.host->bytes() < bytes) {
    staging.host = std::make_unique<cuda::PinnedMemory>(bytes);
    staging.device = std::make_unique<cuda::DeviceMemory>(bytes);
  }
  return staging;
}

// The layers next to every face of the field at `data` travel packed: on the device the layers
// kernel packs (or unpacks) each range into one buffer, one copy moves it between the device
// and page-locked memory, and the host unpacks it into (or packs it from) `host`, each range
// [outer][count][inner] in turn. Down: the interior's layers; up: the halos.
void CudaDevice::move_face_layers(const cuda::DeviceMemory& data, Field& host, bool down) {
  const auto layers = face_layers(host, down);
  const std::size_t size = codegen::size_of(host.dtype());
  std::size_t bytes = 0;
  for (const Layers& l : layers) {
    bytes += static_cast<std::size_t>(l.outer * l.count * l.inner) * size;
  }
  Staging& staging = staging_for(data, bytes);
  const LoadedModule& kernel = layers_kernel(host.dtype());
  auto on_device = [&] {
    std::size_t at = 0;
    for (const Layers& l : layers) {
      run_halo_kernel(kernel,
                      {{data.pointer(), staging.device->pointer() + at},
                       {l.outer, l.padded, l.inner, l.first, l.count, down ? 1 : 0},
                       {0, 0}},
                      l.outer * l.count * l.inner);
      at += static_cast<std::size_t>(l.outer * l.count * l.inner) * size;
    }
  };
  auto on_host = [&] {
    auto* field = static_cast<char*>(host.data());
    auto* packed = static_cast<char*>(staging.host->data());
    for (const Layers& l : layers) {
      const std::size_t row = static_cast<std::size_t>(l.inner) * size;
      for (std::int64_t o = 0; o < l.outer; ++o) {
        for (std::int64_t k = 0; k < l.count; ++k) {
          char* in_field = field + static_cast<std::size_t>(o * l.padded + l.first + k) * row;
          std::memcpy(down ? in_field : packed, down ? packed : in_field, row);
          packed += row;
        }
      }
    }
  };
  if (down) {
    on_device();
    const auto copied =
        driver().api().cuMemcpyDtoH_v2(staging.host->data(), staging.device->pointer(), bytes);
    if (copied != cuda::k_success) { // the message is made only when it is needed
      driver().check(copied, format("cuMemcpyDtoH_v2 of field \"{}\"'s face layers", host.name()),
                     ErrorKind::kernel);
    }
    on_host();
  } else {
    on_host();
    const auto copied =
        driver().api().cuMemcpyHtoD_v2(staging.device->pointer(), staging.host->data(), bytes);
    if (copied != cuda::k_success) {
      driver().check(copied, format("cuMemcpyHtoD_v2 of field \"{}\"'s halos", host.name()),
                     ErrorKind::io);
    }
    on_device();
  }
}

void CudaDevice::download_faces(const cuda::DeviceMemory& data, Field& host) {
  move_face_layers(data, host, true);
}

void CudaDevice::upload_halos(Field& host, const cuda::DeviceMemory& data) {
  move_face_layers(data, host, false);
}

void CudaDevice::clear_integrals(DeviceStage& stage) {
  if (!stage.read_back.empty()) {
    driver().check(driver().api().cuMemsetD8_v2(stage.integrals->pointer(), 0,
                                                stage.read_back.size() * sizeof(double)),
                   "cuMemsetD8_v2 of the integrals", ErrorKind::kernel);
  }
}

uwjit_kernel_args CudaDevice::device_args(DeviceStage& stage, const uwjit_kernel_args& args,
                                          std::span<const void* const> in,
                                          std::span<void* const> out, double* integrals) {
  auto table = std::find_if(stage.state_tables.begin(), stage.state_tables.end(), [&](auto& t) {
    return t.first.size() == in.size() + out.size() &&
           std::equal(in.begin(), in.end(), t.first.begin()) &&
           std::equal(out.begin(), out.end(), t.first.begin() + in.size());
  });
  if (table == stage.state_tables.end()) {
    std::vector<const void*> pointers(in.begin(), in.end());
    pointers.insert(pointers.end(), out.begin(), out.end());
    auto uploaded =
        std::make_unique<cuda::DeviceMemory>(pointers.data(), pointers.size() * sizeof(void*));
    stage.state_tables.emplace_back(std::move(pointers), std::move(uploaded));
    table = std::prev(stage.state_tables.end());
  }
  const cuda::DevicePtr tables = table->second->pointer();
  uwjit_kernel_args device_args = args;
  codegen::set_table_lengths(device_args, stage.slots);
  device_args.state_in = reinterpret_cast<const void* const*>(tables);
  device_args.state_out = reinterpret_cast<void* const*>(tables + in.size() * sizeof(void*));
  device_args.statics = stage.static_table->as<const void* const>();
  device_args.extents = stage.extents->as<const uw_i64>();
  device_args.params = stage.params->as<const double>();
  device_args.integrals = integrals != nullptr ? integrals : stage.integrals->as<double>();
  device_args.check = nullptr;
  return device_args;
}

void CudaDevice::launch(DeviceStage& stage, const uwjit_kernel_args& args,
                        std::span<const void* const> in, std::span<void* const> out,
                        std::size_t rank) {
  const uwjit_kernel_args on_device = device_args(stage, args, in, out);
  const auto launch = codegen::cell_launch(on_device, rank, k_block_threads);
  if (launch.grid[0] == 0 || launch.grid[1] == 0 || launch.grid[2] == 0) {
    return; // an empty box
  }
  run(stage.code->function(), on_device, launch.grid, launch.block);
}

void CudaDevice::launch_batch(const LoadedModule& code, std::span<const uwjit_kernel_args> members,
                              std::size_t rank) {
  if (members.empty()) {
    return;
  }
  const std::size_t bytes = members.size() * sizeof(uwjit_kernel_args);
  if (!m_batch_table || m_batch_table->bytes() < bytes) {
    m_batch_table = std::make_unique<cuda::DeviceMemory>(bytes);
  }
  driver().check(driver().api().cuMemcpyHtoD_v2(m_batch_table->pointer(), members.data(), bytes),
                 "cuMemcpyHtoD_v2 of a batch's members", ErrorKind::io);
  uwjit_kernel_args batch{};
  batch.abi_version = UWJIT_KERNEL_ABI_VERSION;
  std::copy(std::begin(members[0].update_begin), std::end(members[0].update_begin),
            std::begin(batch.update_begin));
  std::copy(std::begin(members[0].update_end), std::end(members[0].update_end),
            std::begin(batch.update_end));
  batch.n_members = static_cast<uw_i64>(members.size());
  batch.members = m_batch_table->as<const uwjit_kernel_args>();
  auto launch = codegen::cell_launch(members[0], rank, k_block_threads);
  if (launch.grid[0] == 0 || launch.grid[1] == 0 || launch.grid[2] == 0) {
    return; // an empty box
  }
  // The members' runs of blocks side by side along x, whose grid takes at most 2^31 - 1.
  constexpr std::uint64_t k_most_blocks_x = (std::uint64_t{1} << 31) - 1;
  const std::uint64_t blocks = std::uint64_t{launch.grid[0]} * members.size();
  if (blocks > k_most_blocks_x) {
    throw Error(ErrorKind::usage,
                format("ensemble: {} members of {} blocks each exceed a GPU grid's {} blocks "
                       "along x: a smaller batch",
                       members.size(), launch.grid[0], k_most_blocks_x));
  }
  launch.grid[0] = static_cast<unsigned>(blocks);
  run(code.function(), batch, launch.grid, launch.block);
}

void CudaDevice::read_integrals(DeviceStage& stage, std::span<double> sums,
                                std::span<const codegen::Reduction> reductions) {
  if (sums.empty()) {
    return;
  }
  std::vector<double>& partial = stage.read_back; // sized when the stage was made
  driver().check(driver().api().cuMemcpyDtoH_v2(partial.data(), stage.integrals->pointer(),
                                                sums.size() * sizeof(double)),
                 "the kernel (or cuMemcpyDtoH_v2 of its integrals)", ErrorKind::kernel);
  codegen::combine(sums, partial, reductions);
}

void CudaDevice::synchronize() {
  driver().check(driver().api().cuCtxSynchronize(), "the kernels (cuCtxSynchronize)",
                 ErrorKind::kernel);
}

} // namespace uwjit::runtime::detail
