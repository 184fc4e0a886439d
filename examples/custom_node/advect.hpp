// A node of your own: 2-D advection-diffusion of a concentration c by a shear flow, with upwind
// fluxes, a masked source, and the total mass as a domain integral. The velocity profile and the
// source mask are static arrays: bound to the kernel as buffers, never compiled into its text.
// advect_kind() describes it to the driver (uwjit::driver::run_main): its node params, what they
// mean, and the check of a run (the mass balance).
#pragma once

#include <uwjit/common/error.hpp>
#include <uwjit/driver/node_kind.hpp>
#include <uwjit/runtime/node.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace rt = uwjit::runtime;
using uwjit::codegen::Dtype;

class Advect final : public rt::Node {
public:
  // Node params: nx, ny (cells), diffusion (D), source (S). Refuses values out of range.
  Advect(std::string name, rt::Params params) : Node("advect", std::move(name), std::move(params)) {
    for (const char* n : {"nx", "ny"}) {
      if (this->params().get_int(n) < 4 || this->params().get_int(n) > 4096) {
        throw uwjit::Error(uwjit::ErrorKind::usage,
                           std::string("advect: param \"") + n + "\" must be in [4, 4096]");
      }
    }
    const double d = this->params().get_double("diffusion");
    if (!(d >= 0 && d <= 1)) {
      throw uwjit::Error(uwjit::ErrorKind::usage, "advect: param \"diffusion\" must be in [0, 1]");
    }
  }

  // x is periodic, y has walls (the halo copies the wall cell: no flux through it).
  rt::NodeLayout layout() const override {
    const auto& p = params();
    return {.axes = {{.cells = p.get_int("nx"), .halo = 1, .boundary = rt::Boundary::periodic},
                     {.cells = p.get_int("ny"), .halo = 1, .boundary = rt::Boundary::edge}},
            .fields = {{"c"}},
            .integrals = {"mass"},
            .dt = 0.2,
            .slab_initial_state = true};
  }

  // The cells of this rank's slab (the whole domain serially): index i is global offset + i.
  void initial_state(rt::State& state) const override {
    const rt::Slab& slab = state.slab();
    for (std::int64_t i = 0; i < slab.extent[0]; ++i) {
      for (std::int64_t j = 0; j < slab.extent[1]; ++j) {
        state["c"].at<double>(i, j) = (slab.offset[0] + i < domain()[0] / 2) ? 1.0 : 0.0;
      }
    }
  }

  // One step: c += dt (-d(u c)/dx + D laplacian(c) + S source), over the box it is given.
  void emit_update(uwjit::codegen::KernelWriter& w) const override {
    w.state_out("c");
    w.static_array("speed", Dtype::f64, {{w.domain(1)}});
    w.static_array("source", Dtype::u8, {{w.domain(0)}, {w.domain(1)}});
    w.integral("mass");
    // Run-time params: values the kernel reads when it runs (args->params), so other values
    // are the same kernel. They come from the node params here.
    w.param("D", params().get_double("diffusion"));
    w.param("S", params().get_double("source"));
    // One cell's update; the writer loops over the cells (one GPU thread per cell on a GPU).
    w.for_each_cell({.indices = {"i", "j"}}, R"(
      const double u = speed(j);
      const double east = u > 0 ? u * c(i, j) : u * c(i + 1, j);
      const double west = u > 0 ? u * c(i - 1, j) : u * c(i, j);
      const double laplacian = c(i + 1, j) + c(i - 1, j) + c(i, j + 1) + c(i, j - 1) - 4 * c(i, j);
      const double next = c(i, j) + args->dt * (west - east + D * laplacian + S * source(i, j));
      c_out(i, j) = next;
      mass += next;
)");
  }

  // The cells where the source mask is set: a square in the middle.
  static double source_cells(std::int64_t nx, std::int64_t ny) {
    return static_cast<double>((nx / 2 - nx / 4) * (ny / 2 - ny / 4));
  }

protected:
  // A shear flow u(y) and the source mask (sharded along x when a run is split over ranks).
  rt::StaticData build_static_data() const override {
    const std::int64_t nx = domain()[0], ny = domain()[1];
    std::vector<double> speed(ny);
    for (std::int64_t j = 0; j < ny; ++j) {
      speed[j] = std::sin(3.14159 * (j + 0.5) / ny);
    }
    std::vector<unsigned char> source(nx * ny, 0);
    for (std::int64_t i = nx / 4; i < nx / 2; ++i) {
      for (std::int64_t j = ny / 4; j < ny / 2; ++j) {
        source[i * ny + j] = 1;
      }
    }
    rt::StaticData data;
    data.add(rt::StaticArray::from_vector("speed", speed, {ny}));
    data.add(rt::StaticArray::from_vector("source", source, {nx, ny}, rt::Replication::shard, 0));
    return data;
  }
};

// The kind the driver runs: defaults, documentation, sizes, sharding and the check.
inline uwjit::driver::NodeKind advect_kind() {
  return {
      .type = "advect",
      .summary = "2-D advection-diffusion by a shear flow, with a source",
      .node_params = {{"nx", 64}, {"ny", 32}, {"diffusion", 0.1}, {"source", 0.01}},
      .param_docs = {{"nx", "cells along x (periodic)", "cells", "[4, 4096]"},
                     {"ny", "cells along y (walls)", "cells", "[4, 4096]"},
                     {"diffusion", "diffusion coefficient D", "cells^2 per unit time", "[0, 1]"},
                     {"source", "what the source adds per unit time in each of its cells"}},
      .make = [](const std::string&, const std::string& name,
                 const rt::Params& params) { return std::make_shared<const Advect>(name, params); },
      .sized =
          [](std::span<const std::int64_t> size) {
            rt::Params params = advect_kind().node_params;
            params.set("nx", size[0]).set("ny", size.size() > 1 ? size[1] : size[0] / 2);
            return params;
          },
      .size_help = "N for an N x N/2 grid, or NXxNYxNZ (NZ unused)",
      .shard_help = "x, alone or with y (the source mask is cut along x)",
      .shard_problem = [](std::span<const int> axes) -> std::string {
        return std::find(axes.begin(), axes.end(), 0) == axes.end()
                   ? "advect is sharded along x, alone or with y (its source mask is cut along x)"
                   : "";
      },
      .default_steps = [](const rt::Node&) -> std::int64_t { return 200; },
      // The fluxes cancel between neighbours: the mass changes only by what the source adds.
      .check =
          [](const rt::Node& node, const rt::Snapshot& snapshot, const uwjit::driver::Trace&) {
            const auto& p = node.params();
            const std::int64_t nx = p.get_int("nx"), ny = p.get_int("ny");
            const double expected = static_cast<double>(nx / 2 * ny) +
                                    static_cast<double>(snapshot.steps_taken()) * node.dt() *
                                        p.get_double("source") * Advect::source_cells(nx, ny);
            uwjit::driver::Verdict verdict;
            verdict.add("mass balance", "|mass / (initial + sources) - 1|",
                        std::abs(snapshot.integrals(node.name())[0] / expected - 1), 1e-12);
            return verdict;
          },
  };
}
