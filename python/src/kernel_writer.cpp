// uwjit.KernelWriter's binding: every method through the writer's checked get(), and the Source
// it finishes with its buffer declarations.
#include "kernel_writer.hpp"

#include <uwjit/common/error.hpp>

#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

namespace uwjit::python {

using codegen::ExtentMode;
using codegen::KernelWriter;

ExtentMode extent_arg(const std::string& text) {
  if (text == "compiled") {
    return ExtentMode::compiled;
  }
  if (text == "runtime") {
    return ExtentMode::runtime;
  }
  throw py::value_error("unknown extent mode \"" + text + "\" (accepted: compiled, runtime)");
}

std::string extent_repr(const codegen::Extent& extent) {
  return "Extent(id=" + std::to_string(extent.id) + ")";
}

namespace {

// An axis of `extent` and `halo_cells` more: a number where the extent is compiled in, the
// run-time extent's name (and the halos) otherwise.
ShapeAxis shape_axis(const codegen::ExtentDecl& extent, std::int64_t halo_cells) {
  if (extent.mode == ExtentMode::runtime) {
    return {.extent = extent.name, .count = halo_cells};
  }
  return {.extent = {}, .count = extent.value + halo_cells};
}

} // namespace

PySource declared_source(const KernelWriter& writer, codegen::KernelSource source) {
  BufferSpecs specs = specs_of_slots(source.slots());
  specs.integral_reductions = writer.integral_reductions();
  specs.separate_outputs = true;
  for (const auto& buffer : writer.buffers()) {
    auto& spec =
        specs.tables[static_cast<int>(buffer.role)].at(static_cast<std::size_t>(buffer.slot));
    spec.dtype = buffer.dtype;
    spec.aligned = codegen::assumes_aligned(buffer);
    std::vector<ShapeAxis> shape;
    for (const auto& axis : buffer.axes) {
      const auto& extent = writer.extents().at(static_cast<std::size_t>(axis.extent.id));
      shape.push_back(shape_axis(extent, 2 * std::int64_t{axis.halo}));
    }
    spec.shape = std::move(shape);
  }
  // The domain axes in axis order (each is declared once, from axis 0 on).
  for (int axis = 0; axis < UWJIT_MAX_AXES; ++axis) {
    for (const auto& extent : writer.extents()) {
      if (extent.domain_axis == axis) {
        specs.domain.push_back(shape_axis(extent, 0));
      }
    }
  }
  return PySource{std::move(source), std::move(specs)};
}

namespace {

codegen::Reduction reduction_arg(const std::string& text) {
  if (text == "sum") {
    return codegen::Reduction::sum;
  }
  if (text == "max") {
    return codegen::Reduction::max;
  }
  throw py::value_error("unknown reduction \"" + text + "\" (accepted: sum, max)");
}

// A binding of KernelWriter's member `method` on uwjit.KernelWriter: the same arguments, through
// the checked get().
template <class R, class... Args, bool E>
auto through(R (KernelWriter::*method)(Args...) noexcept(E)) {
  return [method](const PyKernelWriter& self, Args... args) -> R {
    return (self.get().*method)(std::forward<Args>(args)...);
  };
}
template <class R, class... Args, bool E>
auto through(R (KernelWriter::*method)(Args...) const noexcept(E)) {
  return [method](const PyKernelWriter& self, Args... args) -> R {
    return (self.get().*method)(std::forward<Args>(args)...);
  };
}

std::vector<codegen::Axis> axes_arg(const py::iterable& axes) {
  std::vector<codegen::Axis> out;
  for (const auto item : axes) {
    if (py::isinstance<codegen::Extent>(item)) {
      out.push_back({item.cast<codegen::Extent>(), 0});
    } else {
      out.push_back(item.cast<codegen::Axis>());
    }
  }
  return out;
}

PySource finish(const KernelWriter& writer) {
  return declared_source(writer, writer.finish());
}

} // namespace

void bind_kernel_writer(py::module_& m) {
  py::class_<codegen::Extent>(m, "Extent", "A handle on an extent declared on a KernelWriter.")
      .def_readonly("id", &codegen::Extent::id,
                    "The extent's index among its writer's extents, in declaration order.")
      .def("__repr__", &extent_repr);
  py::class_<codegen::Axis>(m, "Axis", R"doc(
One axis of a buffer a KernelWriter declares: Axis(extent, halo=0), an Extent (from
KernelWriter.extent, .domain or .constant) and the halo width, in cells on each side. Where a
writer takes axes, a bare Extent stands for Axis(extent, 0).)doc")
      .def(py::init([](codegen::Extent extent, int halo) { return codegen::Axis{extent, halo}; }),
           py::arg("extent"), py::arg("halo") = 0)
      .def_readonly("extent", &codegen::Axis::extent, "The Extent this axis spans.")
      .def_readonly("halo", &codegen::Axis::halo, "The halo width: cells on each side.")
      .def("__repr__", [](const codegen::Axis& a) {
        return "Axis(" + extent_repr(a.extent) + ", halo=" + std::to_string(a.halo) + ")";
      });

  py::class_<PyKernelWriter>(m, "KernelWriter", R"doc(
Writes one generated kernel: extents, buffers, integrals, then the node's text. A node's
emit_update receives one with the domain extents and the state inputs declared. Each buffer
gets an accessor NAME(i, j, k) in the text (state outputs: NAME_out(...), a reference); each
integral is a local sum the text adds to. Methods raise UsageError naming what is wrong. The
writer a node's emit_update or emit_stage is lent is for that call only: kept and used after it
has returned, every method and property raises UsageError.)doc")
      .def(py::init<std::string>(), py::arg("origin"))
      .def(
          "extent",
          [](const PyKernelWriter& self, std::string name, const py::handle& value,
             const std::string& mode) {
            auto& w = self.get();
            return w.extent(std::move(name), int_arg(value, "KernelWriter.extent: value"),
                            extent_arg(mode));
          },
          py::arg("name"), py::arg("value"), py::arg("mode") = "compiled",
          "Declares an extent (mode \"compiled\" or \"runtime\").")
      .def(
          "domain_extent",
          [](const PyKernelWriter& self, int axis, std::string name, const py::handle& value,
             const std::string& mode) {
            auto& w = self.get();
            return w.domain_extent(axis, std::move(name),
                                   int_arg(value, "KernelWriter.domain_extent: value"),
                                   extent_arg(mode));
          },
          py::arg("axis"), py::arg("name"), py::arg("value"), py::arg("mode") = "compiled",
          "Declares the extent of domain axis `axis` (0 to 2), named `name` in the text (a local "
          "NAME, and NAME_offset and NAME_global for sharded runs), as extent() does. UsageError "
          "if that axis is already declared.")
      .def(
          "constant",
          [](const PyKernelWriter& self, const py::handle& value) {
            auto& w = self.get();
            return w.constant(int_arg(value, "KernelWriter.constant: value"));
          },
          py::arg("value"),
          "An anonymous compiled-in extent, e.g. the 19 directions of a D3Q19 field.")
      .def("domain", through(&KernelWriter::domain), py::arg("axis"),
           "The extent of domain axis `axis`.")
      .def(
          "state_in",
          [](const PyKernelWriter& self, std::string field, const py::handle& dtype,
             const py::iterable& axes) {
            self.get().state_in(std::move(field), dtype_arg(dtype, "state_in"), axes_arg(axes));
          },
          py::arg("field"), py::arg("dtype"), py::arg("axes"),
          "Declares a state input `field` of `dtype` over `axes` (Axis or Extent each), read in "
          "the text through the accessor FIELD(i, j, ...).")
      .def(
          "state_out",
          [](const PyKernelWriter& self, std::string field, const py::object& dtype,
             const py::object& axes) {
            auto& w = self.get();
            if (dtype.is_none() && axes.is_none()) {
              w.state_out(std::move(field));
            } else {
              w.state_out(std::move(field), dtype_arg(dtype, "state_out"), axes_arg(axes));
            }
          },
          py::arg("field"), py::arg("dtype") = py::none(), py::arg("axes") = py::none(),
          "Declares that the kernel writes `field` (through the accessor FIELD_out(...)).")
      .def(
          "provide_static",
          [](const PyKernelWriter& self, std::string key, const py::handle& dtype,
             const py::handle& shape) {
            auto& w = self.get();
            w.provide_static(std::move(key), dtype_arg(dtype, "provide_static"),
                             ints_arg(shape, "provide_static: shape"));
          },
          py::arg("key"), py::arg("dtype"), py::arg("shape"),
          "Tells the writer the dtype and shape of a static array the caller will bind (the "
          "runtime does this for every array of a node's static data); a later static_array(key, "
          "...) is checked against it.")
      .def(
          "provided_shape",
          [](const PyKernelWriter& self, std::string_view key) -> py::object {
            const auto shape = self.get().provided_shape(key);
            return shape ? py::object(py::tuple(py::cast(*shape))) : py::object(py::none());
          },
          py::arg("key"), "The shape of the bound static array `key` (None if there is none).")
      .def(
          "provided_dtype",
          [](const PyKernelWriter& self, std::string_view key) -> py::object {
            const auto dtype = self.get().provided_dtype(key);
            return dtype ? py::object(py::str(std::string(to_string(*dtype))))
                         : py::object(py::none());
          },
          py::arg("key"), "The dtype of the bound static array `key` (None if there is none).")
      .def(
          "static_array",
          [](const PyKernelWriter& self, std::string key, const py::object& dtype,
             const py::object& axes) {
            auto& w = self.get();
            if (dtype.is_none() && axes.is_none()) {
              w.static_array(std::move(key));
            } else {
              w.static_array(std::move(key), dtype_arg(dtype, "static_array"), axes_arg(axes));
            }
          },
          py::arg("key"), py::arg("dtype") = py::none(), py::arg("axes") = py::none(),
          "Declares that the kernel reads static array `key` (by default with its bound dtype and "
          "shape, each axis compiled in).")
      .def("param", through(&KernelWriter::param), py::arg("name"), py::arg("value"), R"doc(
Declares a run-time parameter: the kernel text gets a local `const double name` read when the
kernel runs, and `value` is what the runtime passes. The value is never written into the text, so
kernels that differ only in it are one kernel (one key): sweeping it compiles nothing. Write a
value into the text instead where it shapes the code (counts, switches). A Kernel called directly
takes it as params={name: value}. Raises UsageError if `name` is not a free C identifier.)doc")
      .def_property_readonly(
          "checked", through(&KernelWriter::is_checked),
          "Whether the kernel is written in checked mode (the Simulation's checked option).")
      .def("update_box", through(&KernelWriter::update_box),
           "Declares that the kernel updates exactly the box args->update_begin .. update_end "
           "(the locals NAME_begin, NAME_end of each domain extent NAME) and sums its integrals "
           "over it, so that a runtime may call it on several boxes per step (threads, overlap).")
      .def(
          "integral",
          [](const PyKernelWriter& self, std::string name, const std::string& reduction) {
            self.get().integral(std::move(name), reduction_arg(reduction));
          },
          py::arg("name"), py::arg("reduction") = "sum",
          "Declares a domain integral `name`: with reduction \"sum\", a local sum the text adds "
          "to (name += x); with \"max\", a local maximum the text offers values to (name.max(x)), "
          "such as the largest abs(u_new - u_old) of the cells, the same bits for any split of the "
          "cells and -inf for none. Raises ValueError for another reduction.")
      .def("comment", through(&KernelWriter::comment), py::arg("line"),
           "Appends a `// line` comment at the top of the text (part of the key).")
      .def("helpers", through(&KernelWriter::helpers), py::arg("text"),
           "Appends text at namespace scope before the entry.")
      .def("body", through(&KernelWriter::body), py::arg("text"),
           "Appends text to the entry's body, after the accessors (the kernel's own loops: CPUs "
           "only).")
      .def(
          "for_each_cell",
          [](const PyKernelWriter& self, std::vector<std::string> indices, std::string_view text,
             bool masked_remainder) {
            self.get().for_each_cell(
                {.indices = std::move(indices), .masked_remainder = masked_remainder}, text);
          },
          py::arg("indices"), py::arg("text"), py::kw_only(), py::arg("masked_remainder") = false,
          R"doc(
The update of one cell, the writer owning the iteration: `text` runs once for each cell of the
update box (declared here if it was not), its indices the locals named `indices` (one per domain
axis, e.g. ["i", "j", "k"]), with every accessor, extent, param and integral in scope. On a CPU
the writer emits the loops (vectorised, sliced over threads); for a GPU, one thread per cell. The
text must not return, break or continue out of the cell. A kernel has either a body() or one
for_each_cell(); UsageError otherwise, or if the index count is not the domain's.
`masked_remainder`: fold the innermost loop's remainder into masked vector iterations (one copy
of a long cell's code instead of two) where masked moves are cheap (AVX-512, not AVX2). The text
sees the choice as the macro UWJIT_MASKED_MOVES (1 or 0).)doc")
      .def_property_readonly("cell_form", through(&KernelWriter::is_cell_form),
                             "Whether the kernel is written with for_each_cell().")
      .def_property_readonly("gpu", through(&KernelWriter::is_gpu),
                             "Whether the kernel is written for a GPU (only cell-form kernels "
                             "can be).")
      .def(
          "finish", [](const PyKernelWriter& self) { return finish(self.get()); },
          "The kernel as a Source (for Engine.kernel).")
      .def("__repr__", [](const PyKernelWriter& self) {
        try {
          return "KernelWriter(origin=" +
                 py::repr(py::str(self.get().origin())).cast<std::string>() + ")";
        } catch (const Error&) {
          return std::string("KernelWriter(ended)");
        }
      });
}

} // namespace uwjit::python
