// Nodes: uwjit.Node (subclassed in Python through a trampoline), its layout types and the
// built-in nodes by type name; the KernelWriter a node writes its kernel with is kernel_writer.cpp.
//
// The runtime may call a node from its compile threads while the thread that built the
// Simulation waits with the GIL released: every call into Python takes the GIL first.
#include "kernel.hpp"
#include "kernel_writer.hpp"

#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/nodes/builtin.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/node_kernels.hpp>

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

namespace uwjit::python {
namespace {

using codegen::ExtentMode;
using codegen::KernelWriter;
using runtime::Boundary;

using runtime::BoundaryFace;

// A boundary argument: "edge" or "periodic", a BoundaryFace (both faces alike) or a Boundary.
Boundary boundary_arg(const py::handle& value) {
  if (py::isinstance<Boundary>(value)) {
    return value.cast<Boundary>();
  }
  if (py::isinstance<BoundaryFace>(value)) {
    return Boundary::both(value.cast<BoundaryFace>());
  }
  if (py::isinstance<py::str>(value)) {
    const auto text = value.cast<std::string>();
    if (text == "edge") {
      return Boundary::edge;
    }
    if (text == "periodic") {
      return Boundary::periodic;
    }
    throw py::value_error("unknown boundary \"" + text +
                          "\" (accepted: edge, periodic, a BoundaryFace or a Boundary)");
  }
  throw py::type_error("boundary: expected \"edge\", \"periodic\", a uwjit.BoundaryFace or a "
                       "uwjit.Boundary, got " +
                       type_name(value));
}

std::string face_repr(const BoundaryFace& face) {
  std::string text = "BoundaryFace." + std::string(to_string(face.kind)) + "(";
  if (face.computed()) {
    text += py::repr(py::float_(face.value)).cast<std::string>();
  }
  return text + ")";
}

// Reprs that show what a value holds, in the spelling that makes it again.
std::string boundary_repr(const Boundary& boundary) {
  if (boundary == Boundary::periodic) {
    return "Boundary.periodic()";
  }
  if (boundary == Boundary::edge) {
    return "Boundary.edge()";
  }
  return "Boundary(low=" + face_repr(boundary.low) + ", high=" + face_repr(boundary.high) + ")";
}

std::string quoted(const std::string& text) {
  return py::repr(py::str(text)).cast<std::string>();
}

std::string domain_axis_repr(const runtime::DomainAxis& axis) {
  std::string text = "DomainAxis(" + std::to_string(axis.cells) +
                     ", halo=" + std::to_string(axis.halo) +
                     ", boundary=" + boundary_repr(axis.boundary);
  if (axis.extent != ExtentMode::compiled) {
    text += ", extent=" + quoted(std::string(to_string(axis.extent)));
  }
  if (!axis.name.empty()) {
    text += ", name=" + quoted(axis.name);
  }
  return text + ")";
}

std::string state_field_repr(const runtime::StateField& field) {
  std::string text =
      "StateField(" + quoted(field.name) + ", " + quoted(std::string(to_string(field.dtype)));
  if (!field.components.empty()) {
    text += ", components=" + py::repr(py::cast(field.components)).cast<std::string>();
  }
  if (!field.halo_axes.empty()) {
    text += ", halo_axes=" + py::repr(py::cast(field.halo_axes)).cast<std::string>();
  }
  return text + ")";
}

std::string node_input_repr(const runtime::NodeInput& input) {
  std::string text = "NodeInput(" + quoted(input.node) + ", " + quoted(input.field);
  if (!input.as.empty()) {
    text += ", as_=" + quoted(input.as);
  }
  return text + ")";
}

template <class T, class F> std::string list_repr(const std::vector<T>& items, F repr) {
  std::string text = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    text += (i ? ", " : "") + repr(items[i]);
  }
  return text + "]";
}

std::string layout_repr(const runtime::NodeLayout& layout) {
  std::string text = "Layout(" + list_repr(layout.axes, domain_axis_repr) + ", " +
                     list_repr(layout.fields, state_field_repr);
  if (!layout.integrals.empty()) {
    text += ", integrals=" + list_repr(layout.integrals, quoted);
  }
  if (layout.dt) {
    text += ", dt=" + py::repr(py::float_(*layout.dt)).cast<std::string>();
  }
  if (layout.stages != 1) {
    text += ", stages=" + std::to_string(layout.stages);
  }
  if (!layout.inputs.empty()) {
    text += ", inputs=" + list_repr(layout.inputs, node_input_repr);
  }
  return text + ")";
}

// A node's size: one int N, or a list of them (NX, NY, NZ).
std::vector<std::int64_t> size_arg(const py::handle& size, const std::string& what) {
  if (is_int(size)) {
    return {int_arg(size, what, 1)};
  }
  if (!py::isinstance<py::list>(size) && !py::isinstance<py::tuple>(size) &&
      !py::isinstance<py::array>(size)) {
    throw py::type_error(what + ": expected an int or a list of three ints, got " +
                         type_name(size));
  }
  return ints_arg(size, what, 1);
}

/// The bridge from runtime::Node's virtual functions to a Python subclass's methods.
class PyNode : public runtime::Node {
public:
  using runtime::Node::Node;

  // Asked of Python once; the node keeps what it returned, as it keeps its static data, so that
  // everything reading the layout later (a simulation's integral names, a checkpoint, a
  // snapshot's domain) reads the one the simulation was built from.
  runtime::NodeLayout layout() const override {
    py::gil_scoped_acquire gil;
    if (m_layout) {
      return *m_layout;
    }
    const py::object layout = calling_python(where("layout"), [&] { return method("layout")(); });
    if (!py::isinstance<runtime::NodeLayout>(layout)) {
      // Not a cast error: pybind11 would report that as the caller's bad arguments.
      throw py::type_error("node \"" + name() + "\": layout() must return a uwjit.Layout, got " +
                           type_name(layout));
    }
    m_layout = layout.cast<runtime::NodeLayout>();
    return *m_layout;
  }

  // The fields' interiors as fresh numpy arrays (so nothing the node keeps can dangle), copied
  // into the state after the call.
  void initial_state(runtime::State& state) const override {
    py::gil_scoped_acquire gil;
    // uwjit.State: a dict of the fields, with the slab they hold.
    py::object arrays = py::module_::import("uwjit").attr("State")();
    arrays.attr("slab") = py::cast(state.slab());
    std::vector<py::array> views;
    for (const runtime::Field* field : state.fields()) {
      py::array array(numpy_dtype(field->dtype()), field->shape());
      std::memset(array.mutable_data(), 0, static_cast<std::size_t>(array.nbytes()));
      arrays[py::str(field->name())] = array;
      views.push_back(array);
    }
    calling_python(where("initial_state"), [&] { method("initial_state")(arrays); });
    for (std::size_t i = 0; i < views.size(); ++i) {
      runtime::Field& field = *state.fields()[i];
      const py::object array = arrays[py::str(field.name())];
      if (!array.is(views[i])) {
        throw py::value_error("node \"" + name() +
                              "\": initial_state must fill the arrays it is "
                              "given in place (state[\"" +
                              field.name() + "\"][...] = ...)");
      }
      const std::vector<std::int64_t> shape(views[i].shape(), views[i].shape() + views[i].ndim());
      if (shape != field.shape() || dtype_of(views[i].dtype()) != field.dtype()) {
        throw py::value_error(
            "node \"" + name() + "\": initial_state changed the shape or dtype of state[\"" +
            field.name() + "\"] to " + shape_text(shape) + " " +
            py::str(views[i].dtype()).cast<std::string>() + " (its layout's is " +
            shape_text(field.shape()) + " " + std::string(codegen::to_string(field.dtype())) +
            "): fill the array it is given, in place");
      }
      field.copy_interior_from(
          std::span<const std::byte>(static_cast<const std::byte*>(views[i].data()),
                                     static_cast<std::size_t>(views[i].nbytes())));
    }
  }

  void emit_update(KernelWriter& writer) const override {
    py::gil_scoped_acquire gil;
    const LentWriter lent(writer, where("emit_update"));
    calling_python(where("emit_update"), [&] { method("emit_update")(lent.object()); });
  }

  // A subclass that defines emit_stage gets every stage; one that does not gets the C++
  // default (emit_update for stage 0).
  void emit_stage(KernelWriter& writer, int stage) const override {
    {
      py::gil_scoped_acquire gil;
      const py::function override =
          py::get_override(static_cast<const runtime::Node*>(this), "emit_stage");
      if (override) {
        const LentWriter lent(writer, where("emit_stage"));
        calling_python(where("emit_stage"), [&] { override(lent.object(), stage); });
        return;
      }
    }
    runtime::Node::emit_stage(writer, stage);
  }

protected:
  runtime::StaticData build_static_data() const override {
    py::gil_scoped_acquire gil;
    const py::function override =
        py::get_override(static_cast<const runtime::Node*>(this), "build_static_data");
    if (!override) {
      return {};
    }
    const py::object data = calling_python(where("build_static_data"), [&] { return override(); });
    return static_data_of(data, "node \"" + name() + "\" static data");
  }

private:
  // `node "NAME"'s METHOD`: where a Python exception or a lent writer came from.
  std::string where(std::string_view method) const {
    return "node \"" + name() + "\"'s " + std::string(method);
  }

  py::function method(const char* what) const {
    py::function override = py::get_override(static_cast<const runtime::Node*>(this), what);
    if (!override) {
      throw py::type_error("node \"" + name() + "\" (type \"" + type() +
                           "\"): a uwjit.Node subclass must define " + what +
                           "(), and the node object must stay alive while it is used");
    }
    return override;
  }

  mutable std::optional<runtime::NodeLayout> m_layout; // guarded by the GIL
};

} // namespace

void bind_nodes(py::module_& m) {
  m.def(
      "node_kernels",
      [](const std::shared_ptr<runtime::Node>& node, bool gpu) {
        std::vector<runtime::NodeKernel> kernels;
        {
          py::gil_scoped_release release; // a Python node's methods take it back
          kernels = runtime::node_kernels(*node, gpu);
        }
        py::list out;
        for (auto& kernel : kernels) {
          out.append(declared_source(kernel.writer, std::move(kernel.source)));
        }
        return out;
      },
      py::arg("node").none(false), py::arg("gpu") = false, R"doc(
The kernels `node` emits for a serial run with its own static data, one Source per stage: the
keys a Simulation of that node alone requests, without building it. gpu=True writes them for a
GPU (one thread per cell), to compile with Engine.ptx on a machine without one. Raises
UsageError naming the node when a kernel cannot run on a GPU (it writes its own loops with
body()) or the node reads other nodes' fields.)doc");

  bind_kernel_writer(m);

  py::class_<BoundaryFace>(m, "BoundaryFace", R"doc(
What the halo beyond one face (the low or the high end) of a domain axis holds; made by
BoundaryFace.periodic(), .edge(), .dirichlet(value) or .neumann(gradient). The rules are the
C++ BoundaryFace's (the manual, how-to/boundaries-stages-coupling): edge repeats the outermost cell, dirichlet holds
2 value - mirror (the face value, the mean of the two cells beside it, is `value`), neumann
mirror + gradient (2k - 1) at distance k (`gradient` per cell along the outward normal).
Dirichlet and neumann take floating-point fields only. Equal faces compare equal.)doc")
      .def_static("periodic", &BoundaryFace::periodic, "The face wraps (both faces must).")
      .def_static("edge", &BoundaryFace::edge, "The halo repeats the outermost interior cell.")
      .def_static("dirichlet", &BoundaryFace::dirichlet, py::arg("value"),
                  "The face value is `value` (the halo is its antisymmetric reflection).")
      .def_static("neumann", &BoundaryFace::neumann, py::arg("gradient"),
                  "The gradient along the outward normal is `gradient` per cell.")
      .def_property_readonly(
          "kind", [](const BoundaryFace& f) { return std::string(to_string(f.kind)); },
          "\"periodic\", \"edge\", \"dirichlet\" or \"neumann\".")
      .def_readonly("value", &BoundaryFace::value,
                    "Dirichlet: the face value; neumann: the gradient; else 0.")
      .def(py::self == py::self)
      .def("__hash__",
           [](const BoundaryFace& f) {
             return py::hash(py::make_tuple(static_cast<int>(f.kind), f.value));
           })
      .def("__str__", [](const BoundaryFace& f) { return runtime::to_string(f); })
      .def("__repr__", &face_repr);
  py::class_<Boundary>(m, "Boundary", R"doc(
How the halos of one domain axis are filled: a BoundaryFace per end.

Boundary(low=BoundaryFace.edge(), high=BoundaryFace.edge()); Boundary.both(face);
Boundary.periodic(); Boundary.edge(). Wherever a boundary is taken (DomainAxis, grid) the
strings "edge" and "periodic" and a single BoundaryFace (both ends alike) are accepted too.
Periodic must be on both faces or neither, and a periodic, dirichlet or neumann halo must not be
wider than the axis: a Simulation raises UsageError naming the node and axis otherwise.)doc")
      .def(py::init([](BoundaryFace low, BoundaryFace high) { return Boundary{low, high}; }),
           py::arg("low") = BoundaryFace::edge(), py::arg("high") = BoundaryFace::edge())
      .def_static("both", &Boundary::both, py::arg("face"), "Both faces alike.")
      .def_static(
          "periodic", [] { return Boundary::periodic; }, "Both faces wrap.")
      .def_static(
          "edge", [] { return Boundary::edge; }, "Both faces repeat the outermost cell.")
      .def_readonly("low", &Boundary::low, "The BoundaryFace of the axis's low end (index -1).")
      .def_readonly("high", &Boundary::high, "The BoundaryFace of the axis's high end (index n).")
      .def(py::self == py::self)
      .def("__hash__",
           [](const Boundary& b) {
             return py::hash(py::make_tuple(static_cast<int>(b.low.kind), b.low.value,
                                            static_cast<int>(b.high.kind), b.high.value));
           })
      .def("__str__", [](const Boundary& b) { return runtime::to_string(b); })
      .def("__repr__", &boundary_repr);

  py::class_<runtime::DomainAxis>(m, "DomainAxis", R"doc(
One domain axis of a node: interior cells, halo width, how the halo is filled (boundary: "edge",
"periodic", a BoundaryFace for both ends or a Boundary), whether the extent is "compiled" into
the kernel or read at "runtime", and the kernel's name for it ("": nx, ny, nz).)doc")
      .def(py::init([](const py::handle& cells, int halo, const py::object& boundary,
                       const std::string& extent, std::string name) {
             return runtime::DomainAxis{int_arg(cells, "DomainAxis: cells"), halo,
                                        boundary_arg(boundary), extent_arg(extent),
                                        std::move(name)};
           }),
           py::arg("cells"), py::arg("halo") = 0, py::arg("boundary") = "edge",
           py::arg("extent") = "compiled", py::arg("name") = "")
      .def_readonly("cells", &runtime::DomainAxis::cells, "The interior cells (>= 1).")
      .def_readonly("halo", &runtime::DomainAxis::halo, "The halo width: cells on each side.")
      .def_readonly("boundary", &runtime::DomainAxis::boundary,
                    "How the halos are filled: a Boundary.")
      .def_readonly("name", &runtime::DomainAxis::name,
                    "The kernel's name for the extent (\"\": nx, ny, nz by position).")
      .def("__repr__", &domain_axis_repr);
  py::class_<runtime::Slab>(m, "Slab", R"doc(
Which cells of the domain a node's initial_state fills, per domain axis: offset (the global index
of the first cell), extent (how many) and global_extent (the whole domain's). A field's index i on
domain axis d is the global cell offset[d] + i. The whole domain serially, and sharded unless the
node's Layout says slab_initial_state=True.)doc")
      .def_property_readonly(
          "offset", [](const runtime::Slab& s) { return py::tuple(py::cast(s.offset)); },
          "The global index of the slab's first cell, per domain axis.")
      .def_property_readonly(
          "extent", [](const runtime::Slab& s) { return py::tuple(py::cast(s.extent)); },
          "The slab's cells, per domain axis.")
      .def_property_readonly(
          "global_extent", [](const runtime::Slab& s) { return py::tuple(py::cast(s.global)); },
          "The whole domain's cells, per domain axis.")
      .def("__repr__", [](const runtime::Slab& s) {
        return "Slab(offset=" + shape_text(s.offset) + ", extent=" + shape_text(s.extent) +
               ", global_extent=" + shape_text(s.global) + ")";
      });
  py::class_<runtime::StateField>(m, "StateField", R"doc(
A state field of a node: StateField(name, dtype="f64", components=(), halo_axes=()). `name` is a
C identifier (the kernel reads it as NAME(...) and writes NAME_out(...)), `dtype` one of "f64",
"f32", "i64", "i32", "i8", "u8" (or its numpy dtype), and `components` the extents of leading
component axes, e.g. [19] for the D3Q19 populations; the domain axes follow. `halo_axes`, one
int per component (components flattened row-major; one for a scalar field), says which halos the
kernels read: bit d for domain axis d (a corner needs the bits of its axes), e.g. [0b01, 0b10]
for a component read across axis 0 only and one read across axis 1 only. Only those halos are
filled each step; empty: every halo. Checked mode fills every halo.)doc")
      .def(py::init([](std::string name, const py::handle& dtype, const py::handle& components,
                       const py::handle& halo_axes) {
             std::vector<std::uint32_t> masks;
             for (const std::int64_t mask :
                  ints_arg(halo_axes, "StateField: halo_axes", 0, 0xffffffffLL)) {
               masks.push_back(static_cast<std::uint32_t>(mask));
             }
             return runtime::StateField{std::move(name), dtype_arg(dtype, "StateField"),
                                        ints_arg(components, "StateField: components"),
                                        std::move(masks)};
           }),
           py::arg("name"), py::arg("dtype") = "f64", py::arg("components") = py::tuple(),
           py::arg("halo_axes") = py::tuple())
      .def_readonly("name", &runtime::StateField::name, "The field's name.")
      .def_property_readonly(
          "halo_axes",
          [](const runtime::StateField& f) { return py::tuple(py::cast(f.halo_axes)); },
          "The halos the kernels read: a mask of domain axes per component; () for every halo.")
      .def("__repr__", &state_field_repr);
  py::class_<runtime::NodeInput>(m, "NodeInput", R"doc(
A state field of another node that this node's kernels read (coupling): NodeInput(node, field,
as_=""). The kernel reads it as a state input named `as_` (default: `field`), over the owner's
layout of it, halos filled as the owner's boundaries say. A node reads a node before it in the
Simulation's order after that node's step, one after it as it was before this step (the manual,
how-to/boundaries-stages-coupling). Both nodes must have the same domain cells; a Simulation raises
UsageError naming both otherwise, or if the owner or field does not exist.)doc")
      .def(py::init([](std::string node, std::string field, std::string as) {
             return runtime::NodeInput{std::move(node), std::move(field), std::move(as)};
           }),
           py::arg("node"), py::arg("field"), py::arg("as_") = "")
      .def_readonly("node", &runtime::NodeInput::node, "The owning node's name.")
      .def_readonly("field", &runtime::NodeInput::field, "The owner's state field.")
      .def_readonly("as_", &runtime::NodeInput::as,
                    "The kernel's name for it (\"\": the field's name).")
      .def("__repr__", &node_input_repr);
  py::class_<runtime::NodeLayout>(m, "Layout", R"doc(
What a node declares about its data: domain axes (1 to 3), state fields (at least one), the
domain integrals its kernels compute, the time step (None: the param "dt", else 1.0), the other
nodes' fields its kernels read (inputs: NodeInput) and the kernels of a step (stages >= 1, each
written by Node.emit_stage(writer, stage)).)doc")
      .def(py::init([](std::vector<runtime::DomainAxis> axes,
                       std::vector<runtime::StateField> fields, std::vector<std::string> integrals,
                       std::optional<double> dt, int stages, std::vector<runtime::NodeInput> inputs,
                       bool slab_initial_state) {
             if (dt) {
               runtime::check_dt(*dt, "Layout: dt");
             }
             return runtime::NodeLayout{.axes = std::move(axes),
                                        .fields = std::move(fields),
                                        .integrals = std::move(integrals),
                                        .dt = dt,
                                        .inputs = std::move(inputs),
                                        .stages = stages,
                                        .slab_initial_state = slab_initial_state};
           }),
           py::arg("axes"), py::arg("fields"), py::arg("integrals") = std::vector<std::string>{},
           py::arg("dt") = py::none(), py::arg("stages") = 1,
           py::arg("inputs") = std::vector<runtime::NodeInput>{},
           py::arg("slab_initial_state") = false)
      .def_readonly("axes", &runtime::NodeLayout::axes, "The domain axes: DomainAxis each.")
      .def_readonly("fields", &runtime::NodeLayout::fields, "The state fields: StateField each.")
      .def_readonly("integrals", &runtime::NodeLayout::integrals,
                    "The names of the domain integrals the kernels compute.")
      .def_readonly("dt", &runtime::NodeLayout::dt,
                    "The time step (args->dt), or None: the node param \"dt\", else 1.0.")
      .def_readonly("stages", &runtime::NodeLayout::stages, "The kernels of a step (>= 1).")
      .def_readonly("inputs", &runtime::NodeLayout::inputs,
                    "Other nodes' state fields the kernels read: NodeInput each.")
      .def_readonly("slab_initial_state", &runtime::NodeLayout::slab_initial_state,
                    "Whether initial_state fills the slab its State holds (sharded: each rank "
                    "is handed its own slab only), not the whole domain.")
      .def("__repr__", &layout_repr);
  m.def(
      "grid",
      [](const py::handle& cells, int halo, const py::object& boundary, const std::string& extent) {
        return runtime::NodeLayout::grid(ints_arg(cells, "grid: cells"), halo,
                                         boundary_arg(boundary), extent_arg(extent));
      },
      py::arg("cells"), py::arg("halo") = 0, py::arg("boundary") = "edge",
      py::arg("extent") = "compiled", R"doc(
The domain axes of a grid: one DomainAxis per entry of `cells` (1 to 3 ints), named nx, ny, nz
in kernel text, each with the same halo width, boundary and extent mode; pass the list as
Layout's `axes`.

`cells` are the interior cells of each axis, e.g. [64, 64]. `halo` is the halo width, cells on
each side of each axis (0: the kernel reads no neighbour). `boundary` says how the halos at the
domain's faces are filled: "edge" (repeat the outermost cell), "periodic" (wrap), a
BoundaryFace for both ends (BoundaryFace.dirichlet(v), .neumann(g)) or a Boundary(low=...,
high=...). `extent` is "compiled" (the extents are constants in the kernel: one kernel per
size) or "runtime" (read when the kernel runs: one kernel for every size; sharded axes always
are).

Example: uwjit.grid([64, 64], halo=1, boundary="periodic"). For axes that differ, make each
DomainAxis yourself.)doc");

  py::class_<runtime::Node, PyNode, std::shared_ptr<runtime::Node>>(m, "Node", R"doc(
A simulation node. Subclass it in Python:

    class Decay(uwjit.Node):
        def __init__(self, name, n, rate):
            super().__init__("decay", name, {"n": n, "rate": rate})
        def layout(self):                      # -> uwjit.Layout
            return uwjit.Layout(uwjit.grid([self.params["n"]]), [uwjit.StateField("u")],
                                integrals=["total"])
        def build_static_data(self):           # optional: key -> StaticArray or scalar
            return {"w": uwjit.StaticArray(numpy.ones(self.params["n"]))}
        def initial_state(self, state):        # state: field name -> numpy array (interior)
            state["u"][...] = 1.0
        def emit_update(self, writer):         # writer: uwjit.KernelWriter
            writer.state_out("u"); writer.static_array("w"); writer.integral("total")
            writer.body("for (uw_i64 i = 0; i < nx; ++i) { ... }")

A node of several kernels per step (Layout(..., stages=N)) defines emit_stage(writer, stage)
instead of emit_update; the default emit_stage calls emit_update for stage 0.

Node(type, name, node_params=None): type names the kind of node (what a restore factory is
asked for), name this instance; node_params (a dict of int, float, str, tuple; the keyword's
former name params= is deprecated) is everything needed to rebuild it: the node's construction
values, read back as Node.params and stored in checkpoints. They are not a kernel's run-time
params (KernelWriter.param), values a kernel reads when it runs. The methods may be called from uwjit's compile threads (with the GIL held). Keep
the node object alive while a Simulation uses it (the Simulation holds a reference). uwjit asks
layout() once and keeps what it returned (as it keeps the static data): a node's layout is fixed
from its first use, and a node of another layout is a new node.)doc")
      .def(py::init([](std::string type, std::string name, const py::object& node_params,
                       const py::object& params) {
             if (!params.is_none()) {
               if (!node_params.is_none()) {
                 throw py::type_error("Node: give node_params, not also params (its deprecated "
                                      "name)");
               }
               if (PyErr_WarnEx(PyExc_DeprecationWarning,
                                "Node(params=...) is deprecated (removed in the next release): "
                                "use node_params=",
                                1) < 0) {
                 throw py::error_already_set();
               }
               return std::make_shared<PyNode>(std::move(type), std::move(name),
                                               to_params(params, "Node"));
             }
             return std::make_shared<PyNode>(std::move(type), std::move(name),
                                             to_params(node_params, "Node"));
           }),
           py::arg("type"), py::arg("name"), py::arg("node_params") = py::none(), py::kw_only(),
           py::arg("params") = py::none())
      .def_property_readonly("type", &runtime::Node::type,
                             "The kind of node, what a checkpoint's factory is asked for.")
      .def_property_readonly("name", &runtime::Node::name,
                             "This node's name, unique within a Simulation.")
      .def_property_readonly(
          "params", [](const runtime::Node& n) { return from_params(n.params()); },
          "The node params: everything needed to rebuild the node (a new dict each time).")
      .def_property_readonly(
          "updates_per_step",
          [](const runtime::Node& n) -> std::int64_t {
            if (const auto* builtin = dynamic_cast<const nodes::BuiltinNode*>(&n)) {
              return builtin->updates_per_step();
            }
            std::int64_t cells = 1;
            for (const auto c : n.domain()) {
              cells *= c;
            }
            return cells;
          },
          "Cell updates per step, for throughput (MLUPS): the domain's cells, or what a "
          "built-in node counts (e.g. the fluid sites of a pipe).")
      .def(
          "emit_stage",
          [](const runtime::Node& n, const PyKernelWriter& writer, int stage) {
            n.runtime::Node::emit_stage(writer.get(), stage);
          },
          py::arg("writer"), py::arg("stage"),
          "Writes the kernel of stage `stage` of a step (override it for Layout(stages=N)); the "
          "default calls emit_update(writer) for stage 0 and raises UsageError for others.")
      .def(
          "layout", [](const runtime::Node& n) { return n.layout(); },
          "The node's domain axes, state fields, integrals, time step, inputs and stages (a "
          "Layout); a subclass defines it.")
      .def("static_data_hash", &runtime::Node::static_data_hash,
           "static_data_hash of the node's static data (built once, on first use).")
      .def("__repr__", [](const runtime::Node& n) {
        return "Node(type=\"" + n.type() + "\", name=\"" + n.name() + "\")";
      });

  m.def(
      "node",
      [](const std::string& type, std::optional<std::string> name, const py::handle& size,
         const py::kwargs& params) {
        const std::string what = "node \"" + type + "\"";
        runtime::Params values = nodes::default_params(type);
        std::vector<std::string> by_size;
        if (!size.is_none()) {
          values = nodes::sized_params(type, size_arg(size, what + ": size"));
          by_size = nodes::size_params(type);
        }
        for (const auto [key, value] : params) {
          const auto k = key.cast<std::string>();
          if (!values.contains(k)) {
            std::vector<std::string> known;
            for (const auto& [p, _] : values.values()) {
              known.push_back(p);
            }
            throw Error(ErrorKind::usage,
                        what + ": unknown param \"" + k + "\" (known: " + join(known) + ")");
          }
          if (std::find(by_size.begin(), by_size.end(), k) != by_size.end()) {
            throw Error(ErrorKind::usage, what + ": param \"" + k +
                                              "\" is given twice: by size and by name (give "
                                              "one, or a size of three numbers)");
          }
          auto v = to_value(value, what + " param \"" + k + "\"");
          if (values.at(k).is_double() && v.is_int()) {
            v = runtime::Value(static_cast<double>(v.as_int()));
          }
          values.set(k, std::move(v));
        }
        auto node = nodes::make(type, name.value_or(type), values);
        return std::const_pointer_cast<runtime::Node>(
            std::static_pointer_cast<const runtime::Node>(node));
      },
      py::arg("type"), py::arg("name") = py::none(), py::arg("size") = py::none(), R"doc(
A built-in node by type name ("heat", "pipe-flow", "fvm", "mlp"), named `name` (default: the
type), with its default params (or those of `size`: one number N or a list of three NX, NY, NZ),
each keyword argument replacing one. Raises UsageError for an unknown type, size, param or param
value, and for a param given both by size and by name (nx, ny, nz; fvm: n); what a size only
derives (a pipe's radius) may be given.)doc");
  m.def(
      "node_types",
      [] {
        py::dict out;
        for (const auto& kind : nodes::kinds()) {
          out[py::str(std::string(kind.type))] = std::string(kind.summary);
        }
        return out;
      },
      "The built-in node types and what each simulates.");
  m.def(
      "default_params",
      [](const std::string& type) { return from_params(nodes::default_params(type)); },
      py::arg("type"),
      "The default node params of a built-in node type (those a size sets included), as a dict; "
      "UsageError listing the known types for an unknown one.");
}

} // namespace uwjit::python
