// One call of a node's kernel outside a simulation, for the tests that compare a kernel's forms
// (CPU loops, the GPU form emulated on the CPU, the GPU form on a GPU): the buffers the writer
// declared, filled the same way from a seed, and the argument struct that points at them.
#pragma once

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/runtime/node_kernels.hpp>
#include <uwjit/runtime/static_data.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace uwjit_test {

/// One buffer's memory, halo-padded as the writer declared it, 64-byte aligned as the runtime's
/// (kernels written by a KernelWriter assume it).
struct Buffer {
  std::shared_ptr<unsigned char> data;
  std::size_t bytes = 0;
  uwjit::codegen::Dtype dtype = uwjit::codegen::Dtype::f64;
};

/// The real value at byte `at` of `buffer` (f64 or f32), as a double.
inline double real_at(const Buffer& buffer, std::size_t at) {
  if (buffer.dtype == uwjit::codegen::Dtype::f32) {
    float v = 0;
    std::memcpy(&v, buffer.data.get() + at, sizeof v);
    return v;
  }
  double v = 0;
  std::memcpy(&v, buffer.data.get() + at, sizeof v);
  return v;
}

inline Buffer aligned_buffer(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64 + 64;
  return {std::shared_ptr<unsigned char>(
              static_cast<unsigned char*>(std::aligned_alloc(64, rounded)), std::free),
          bytes};
}

/// The buffers and arguments of one call on the box [begin, end) of the node's domain. Inputs
/// hold values of their dtype drawn from `seed` (0 or 1 for integers: the nodes' masks), outputs
/// a sentinel; a static array of indices the node provides in `bound` (fvm's face graph, read
/// with indirect addressing) keeps its contents. Integrals start at 0. Not copyable: `args`
/// points into it.
struct KernelCall {
  KernelCall(const uwjit::runtime::NodeKernel& kernel, std::uint64_t seed,
             const std::vector<std::int64_t>& begin, const std::vector<std::int64_t>& end,
             const uwjit::runtime::StaticData& bound) {
    using uwjit::codegen::BufferRole;
    using uwjit::codegen::Dtype;
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<double> real(0.5, 1.5);
    for (const uwjit::codegen::BufferDecl& b : kernel.writer.buffers()) {
      std::size_t count = 1;
      const auto shape = kernel.writer.interior_shape(b);
      for (std::size_t d = 0; d < shape.size(); ++d) {
        count *= static_cast<std::size_t>(shape[d] + 2 * b.axes[d].halo);
      }
      const std::size_t size = uwjit::codegen::size_of(b.dtype);
      Buffer buffer = aligned_buffer(count * size);
      buffer.dtype = b.dtype;
      unsigned char* bytes = buffer.data.get();
      const bool halos =
          std::any_of(b.axes.begin(), b.axes.end(), [](const auto& a) { return a.halo > 0; });
      const auto* array = bound.array(b.name);
      if (b.role == BufferRole::statics && !halos && array != nullptr &&
          (b.dtype == Dtype::i32 || b.dtype == Dtype::i64)) {
        std::memcpy(bytes, array->data(), buffer.bytes);
      } else {
        for (std::size_t i = 0; i < count; ++i) {
          if (b.role == BufferRole::state_out) {
            const double sentinel = -7.25;
            std::memcpy(bytes + i * size, &sentinel, std::min<std::size_t>(size, 8));
          } else if (b.dtype == Dtype::f64) {
            const double v = real(random);
            std::memcpy(bytes + i * size, &v, 8);
          } else if (b.dtype == Dtype::f32) {
            const auto v = static_cast<float>(real(random));
            std::memcpy(bytes + i * size, &v, 4);
          } else {
            std::memset(bytes + i * size, 0, size);
            bytes[i * size] = static_cast<unsigned char>(random() % 2);
          }
        }
      }
      (b.role == BufferRole::state_in    ? in
       : b.role == BufferRole::state_out ? out
                                         : statics)
          .push_back(std::move(buffer));
    }
    for (auto& b : in) {
      in_ptr.push_back(b.data.get());
    }
    for (auto& b : out) {
      out_ptr.push_back(b.data.get());
    }
    for (auto& b : statics) {
      static_ptr.push_back(b.data.get());
    }
    extents = kernel.writer.runtime_extent_values();
    params = kernel.writer.param_values();
    for (const auto& e : kernel.writer.extents()) {
      if (e.domain_axis >= 0) {
        args.shard_extent[e.domain_axis] = e.value;
        args.global_extent[e.domain_axis] = e.value;
      }
    }
    integrals.assign(kernel.writer.integrals().size(), 0.0);
    args.state_in = in_ptr.data();
    args.state_out = out_ptr.data();
    args.statics = static_ptr.data();
    args.extents = extents.data();
    args.params = params.data();
    args.integrals = integrals.data();
    args.dt = 0.0625;
    for (std::size_t d = 0; d < begin.size(); ++d) {
      args.update_begin[d] = begin[d];
      args.update_end[d] = end[d];
    }
  }
  KernelCall(const KernelCall&) = delete;
  KernelCall& operator=(const KernelCall&) = delete;

  /// Whether the outputs hold the same bytes as `other`'s.
  [[nodiscard]] bool same_outputs(const KernelCall& other) const {
    if (out.size() != other.out.size()) {
      return false;
    }
    for (std::size_t o = 0; o < out.size(); ++o) {
      if (std::memcmp(out[o].data.get(), other.out[o].data.get(), out[o].bytes) != 0) {
        return false;
      }
    }
    return true;
  }

  /// Whether the outputs agree with `other`'s within `relative` of max(|value|, 1), value by
  /// value: real ones; integer ones byte for byte.
  [[nodiscard]] bool outputs_within(const KernelCall& other, double relative) const {
    if (out.size() != other.out.size()) {
      return false;
    }
    for (std::size_t o = 0; o < out.size(); ++o) {
      const Buffer& a = out[o];
      const Buffer& b = other.out[o];
      if (a.dtype != uwjit::codegen::Dtype::f64 && a.dtype != uwjit::codegen::Dtype::f32) {
        if (std::memcmp(a.data.get(), b.data.get(), a.bytes) != 0) {
          return false;
        }
        continue;
      }
      const std::size_t size = uwjit::codegen::size_of(a.dtype);
      for (std::size_t at = 0; at < a.bytes; at += size) {
        const double x = real_at(a, at);
        const double y = real_at(b, at);
        if (!(std::abs(x - y) <= relative * std::max(std::abs(y), 1.0))) {
          return false;
        }
      }
    }
    return true;
  }

  std::vector<Buffer> in, out, statics;
  std::vector<const void*> in_ptr;
  std::vector<void*> out_ptr;
  std::vector<const void*> static_ptr;
  std::vector<uw_i64> extents;
  std::vector<double> params;
  std::vector<double> integrals;
  uwjit_kernel_args args{};
};

/// The extents of the domain axes `kernel` declares, in axis order.
inline std::vector<std::int64_t> domain_of(const uwjit::runtime::NodeKernel& kernel) {
  std::vector<std::int64_t> extent;
  for (const auto& e : kernel.writer.extents()) {
    if (e.domain_axis >= 0) {
      extent.push_back(e.value);
    }
  }
  return extent;
}

/// The boxes the tests call `cpu` (a kernel's CPU form) on: the whole interior, and, when it
/// honours the update box, a box inside it that starts off the origin (fvm's CPU form scatters
/// over every face, so the whole interior only).
inline std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>>
test_boxes(const uwjit::runtime::NodeKernel& cpu) {
  const auto extent = domain_of(cpu);
  std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> boxes = {
      {std::vector<std::int64_t>(extent.size(), 0), extent}};
  if (cpu.writer.updates_box()) {
    std::vector<std::int64_t> begin;
    std::vector<std::int64_t> end;
    for (std::size_t d = 0; d < extent.size(); ++d) {
      begin.push_back(1 + static_cast<std::int64_t>(d % 2));
      end.push_back(extent[d] - (d == 0 ? 1 : 0));
    }
    boxes.emplace_back(begin, end);
  }
  return boxes;
}

/// Whether `got` (a GPU form's call) wrote the outputs of `expected` (the CPU form's) bit for bit
/// (or, given `relative` > 0, within it: KernelCall::outputs_within) and its integrals agree
/// within 1e-12 (summed in another order), each of them nonzero.
inline bool same_results(const KernelCall& got, const KernelCall& expected, double relative = 0) {
  const bool outputs =
      relative > 0 ? got.outputs_within(expected, relative) : got.same_outputs(expected);
  if (!outputs || got.integrals.size() != expected.integrals.size()) {
    return false;
  }
  for (std::size_t i = 0; i < got.integrals.size(); ++i) {
    if (expected.integrals[i] == 0.0 || std::abs(got.integrals[i] - expected.integrals[i]) >
                                            1e-12 * std::abs(expected.integrals[i])) {
      return false;
    }
  }
  return true;
}

} // namespace uwjit_test
