// uwjit.Simulation: nodes stepped by the runtime, fields read back as numpy arrays, integrals,
// rebinding static arrays, checkpoints and VTK output. The GIL is released while the runtime
// works (construction, step, run, rebind, checkpoint, restore): a Python node's methods take it
// back when the runtime calls them, from whichever thread. Calls on one Simulation from several
// threads take turns (a lock per Simulation, waited for with the GIL released), and a long
// step() or run() looks for Ctrl-C between steps.
#include "kernel.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>

namespace uwjit::python {
namespace {

struct PySimulation {
  // Declared in the order they must outlive each other: the simulation is destroyed first.
  std::shared_ptr<engine::Engine> engine;
  py::list nodes; // the Python node objects (a Python subclass lives while its object does)
  std::shared_ptr<comm::Comm> comm;
  std::unique_ptr<runtime::Simulation> simulation;
  // Held by every call that touches `simulation` (see Turn). Recursive: a run() callback, on the
  // thread that holds it, may call the simulation again.
  mutable std::recursive_mutex busy;

  runtime::Simulation& get() const {
    if (!simulation) {
      throw py::value_error("the simulation is closed");
    }
    return *simulation;
  }
};

// One call's turn on a Simulation: its lock, held for the call. The wait happens with the GIL
// released, since the thread whose turn it is may need the GIL to go on (a Python node's methods,
// a run() callback).
class Turn {
public:
  explicit Turn(const PySimulation& self) : m_lock(self.busy, std::defer_lock) {
    if (!m_lock.try_lock()) {
      py::gil_scoped_release release;
      m_lock.lock();
    }
  }

private:
  std::unique_lock<std::recursive_mutex> m_lock;
};

// How often a long step() or run() without a callback looks for a signal (taking the GIL):
// often enough that Ctrl-C feels immediate, rarely enough to cost nothing measurable.
constexpr auto k_signal_interval = std::chrono::milliseconds(5);

// What stops a long step() or run() after a step: a Python exception (KeyboardInterrupt from
// Ctrl-C, or what a callback raised); none if `error` is null.
struct Stop {
  std::exception_ptr error;
  bool interrupt = false;
};

// Calls `body` with the GIL held; a Python exception it raises becomes the Stop.
template <class Body> Stop stop_if_raised(std::string_view where, Body&& body) {
  py::gil_scoped_acquire gil;
  try {
    body();
    return {};
  } catch (py::error_already_set& error) {
    const PythonError failure(where, std::move(error));
    return {std::make_exception_ptr(failure), failure.is_interrupt()};
  }
}

// Collective over the ranks of a sharded simulation, after a step of a long call: whether any
// rank stops, so that all stop after the same step. If some rank's callback failed, that rank
// raises its own exception and the others a UsageError naming it (comm::agree). If ranks were
// only interrupted, each raises its KeyboardInterrupt, and the others raise one too.
void agree_to_stop(comm::Comm& ranks, const Stop& stop) {
  std::uint64_t stopping[2] = {stop.error && stop.interrupt ? 1U : 0U,
                               stop.error && !stop.interrupt ? 1U : 0U};
  ranks.all_reduce_sum(stopping);
  if (stopping[1] != 0) {
    comm::agree(ranks, stop.error); // throws on every rank
  }
  if (stopping[0] == 0) {
    return;
  }
  if (stop.error) {
    std::rethrow_exception(stop.error);
  }
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) { // a signal of its own, if it arrived, as its handler says
    PyErr_SetNone(PyExc_KeyboardInterrupt);
  }
  throw py::error_already_set();
}

// Takes `count` steps, one at a time with the GIL released, calling callback(self_object) after
// each (unless None). Between steps it looks for a signal, so that Ctrl-C (KeyboardInterrupt, or
// whatever the handler raises) stops the call after the current step, as an exception from the
// callback does; steps_taken then says how far it got. Sharded over several ranks, the ranks agree
// after each step, so that every rank stops after the same one. The caller holds the Turn.
void take_steps(const PySimulation& self, const py::handle& self_object, std::int64_t count,
                const py::object& callback) {
  runtime::Simulation& simulation = self.get();
  comm::Comm* ranks = self.comm && self.comm->size() > 1 ? self.comm.get() : nullptr;
  const bool calls_back = !callback.is_none();
  py::gil_scoped_release release;
  auto next_look = std::chrono::steady_clock::now() + k_signal_interval;
  std::int64_t taken = 0;
  // run() checks the count once (sharded: the same on every rank, or an error on every rank).
  simulation.run(count, [&](const runtime::Simulation&) {
    const bool last = ++taken == count;
    Stop stop;
    if (calls_back) {
      stop = stop_if_raised("run callback", [&] { callback(self_object); });
    }
    const auto now = std::chrono::steady_clock::now();
    if (!stop.error && !last && (calls_back || now >= next_look)) {
      stop = stop_if_raised("a signal handler", [] {
        if (PyErr_CheckSignals() != 0) {
          throw py::error_already_set();
        }
      });
      next_look = now + k_signal_interval;
    }
    if (ranks != nullptr && (calls_back || !last)) {
      agree_to_stop(*ranks, stop);
    } else if (stop.error) {
      std::rethrow_exception(stop.error);
    }
  });
}

runtime::SimulationOptions options_of(const std::shared_ptr<comm::Comm>& comm,
                                      std::optional<std::vector<int>> shard_axes,
                                      const py::handle& threads, const std::string& exchange,
                                      bool checked, const std::string& device) {
  runtime::SimulationOptions options;
  options.comm = comm.get();
  options.checked = checked;
  options.device = device;
  if (shard_axes) {
    options.shard_axes = std::move(*shard_axes);
  }
  if (!threads.is_none()) {
    if (!is_int(threads)) {
      throw py::type_error("Simulation: threads: expected an int, got " + type_name(threads));
    }
    options.threads = runtime::parse_threads(
        py::str(py::int_(py::reinterpret_borrow<py::object>(threads))).cast<std::string>(),
        "Simulation: threads");
  }
  if (exchange == "sync") {
    options.exchange = runtime::ExchangeMode::sync;
  } else if (exchange == "overlap") {
    options.exchange = runtime::ExchangeMode::overlap;
  } else {
    throw py::value_error("Simulation: unknown exchange \"" + exchange +
                          "\" (accepted: sync, overlap)");
  }
  return options;
}

std::vector<std::shared_ptr<const runtime::Node>> nodes_of(const py::list& nodes) {
  std::vector<std::shared_ptr<const runtime::Node>> out;
  for (const auto item : nodes) {
    if (!py::isinstance<runtime::Node>(item)) {
      throw py::type_error("Simulation: nodes must be uwjit.Node objects, got " + type_name(item));
    }
    out.push_back(item.cast<std::shared_ptr<runtime::Node>>());
  }
  return out;
}

// A numpy view of a field's interior inside its halo-padded storage, owned by `owner`.
py::array interior_view(const runtime::Field& field, const py::handle& owner) {
  const auto item = static_cast<py::ssize_t>(codegen::size_of(field.dtype()));
  std::vector<py::ssize_t> strides;
  for (const auto s : field.strides()) {
    strides.push_back(s * item);
  }
  const std::vector<std::int64_t> origin(field.shape().size(), 0);
  const auto* data = static_cast<const std::byte*>(field.data()) + field.offset(origin) * item;
  py::array view(numpy_dtype(field.dtype()), field.shape(), strides, data, owner);
  view.attr("setflags")(py::arg("write") = false);
  return view;
}

} // namespace

py::dict integrals_of(const runtime::Node& node, std::span<const double> values) {
  const auto names = node.layout().integrals;
  py::dict out;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out[py::str(names[i])] = values[i];
  }
  return out;
}

py::array interior_copy(const runtime::Field& field) {
  py::array out(numpy_dtype(field.dtype()), field.shape());
  field.copy_interior_to(std::span<std::byte>(static_cast<std::byte*>(out.mutable_data()),
                                              static_cast<std::size_t>(out.nbytes())));
  return out;
}

void bind_simulation(py::module_& m) {
  py::class_<runtime::KernelReport>(m, "KernelReport", R"doc(
One kernel a simulation's node uses (Simulation.kernel_reports()): node (its name), stage (which
stage of the node's step, 0 for a node of one stage) and info (KernelInfo: key, tier, timings).
report["node"], report["stage"] and report["info"] read the same (the dicts kernel_reports()
gave before; deprecated).)doc")
      .def_readonly("node", &runtime::KernelReport::node, "The node's name.")
      .def_readonly("stage", &runtime::KernelReport::stage, "Which stage of the node's step.")
      .def_readonly("info", &runtime::KernelReport::info,
                    "What the engine did for it (a KernelInfo: key, tier, timings).")
      .def_property_readonly(
          "first_step_check",
          [](const runtime::KernelReport& r) -> py::object {
            return r.first_step_check ? py::cast(*r.first_step_check) : py::none();
          },
          "The KernelInfo of the checked copy that runs this kernel's first step when its text "
          "does not show its reads within their halos; None otherwise.")
      .def("__getitem__",
           [](const runtime::KernelReport& r, const std::string& key) -> py::object {
             if (key == "node") {
               return py::str(r.node);
             }
             if (key == "stage") {
               return py::int_(r.stage);
             }
             if (key == "info") {
               return py::cast(r.info);
             }
             if (key == "first_step_check") {
               return r.first_step_check ? py::cast(*r.first_step_check) : py::none();
             }
             throw py::key_error(key);
           })
      .def("__repr__", [](const runtime::KernelReport& r) {
        return "KernelReport(node=" + py::repr(py::str(r.node)).cast<std::string>() +
               ", stage=" + std::to_string(r.stage) + ", key=" + r.info.key +
               ", tier=" + std::string(engine::to_string(r.info.tier)) + ")";
      });

  py::class_<PySimulation>(m, "Simulation", R"doc(
Nodes stepped together: their kernels are requested from the engine up front (distinct ones
compiled in parallel), then each step fills the halos and calls every node's kernel.

Simulation(engine, nodes, comm=None, shard_axes=None, threads=None, exchange="sync",
           checked=False, device="cpu")

nodes: a list of uwjit.Node (built-in ones from uwjit.node(...), or your subclasses).
comm: None (serial) or an mpi4py communicator: the domain is split over its ranks along
shard_axes (default axis 0), and construction, step, run, gather, checkpoint and restore are
collective (every rank calls them in the same order). threads: threads that run each step's
kernels, 1 to 4096 as for uwjit run --threads (default: the cores this process may use).
exchange: "sync" or "overlap" (halo
transfers overlapped with the interior update). checked: checked mode, for people who write
nodes (also on when the environment sets UWJIT_CHECK=1): every accessor tests its indices, and a
read beyond a buffer's halo or a write outside the update box fails the step with KernelError
naming the node, step, field or static key and index; halos the runtime does not fill read as
NaN (the manual, how-to/checked-mode). device: "cpu", "cuda" (NVIDIA GPU 0; under MPI the rank's place on
its machine modulo the machine's GPUs) or "cuda:N": state and static arrays in device memory, the same
state bit for bit as on the CPU but where a kernel calls exp, log, pow, tanh and the like (the manual,
how-to/gpus); no driver or no such GPU is a
UsageError naming what is missing. Raises UsageError naming the node and what is
wrong, CompileError, JitError. The GIL is released while it works. Threads may share a
Simulation: its calls take turns, each whole (a step(n) or run(n) is not interleaved with another
thread's calls; a run() callback may call the simulation); a field() view still goes stale at the
next step, whichever thread takes it. step() and run() stop after the current step on Ctrl-C
(KeyboardInterrupt; steps_taken says how far they got), on every rank after the same step.)doc")
      .def(py::init([](std::shared_ptr<engine::Engine> engine, const py::list& nodes,
                       const py::object& comm, std::optional<std::vector<int>> shard_axes,
                       const py::object& threads, const std::string& exchange, bool checked,
                       const std::string& device) {
             auto self = std::make_unique<PySimulation>();
             self->engine = std::move(engine);
             // A list of its own: the caller may clear or change theirs; these node objects live
             // as long as the simulation.
             for (const auto node : nodes) {
               self->nodes.append(node);
             }
             self->comm = comm_of(comm);
             auto options =
                 options_of(self->comm, std::move(shard_axes), threads, exchange, checked, device);
             auto cpp_nodes = nodes_of(nodes);
             py::gil_scoped_release release;
             self->simulation = std::make_unique<runtime::Simulation>(
                 *self->engine, std::move(cpp_nodes), options);
             return self;
           }),
           py::arg("engine").none(false), py::arg("nodes"), py::arg("comm") = py::none(),
           py::arg("shard_axes") = py::none(), py::arg("threads") = py::none(),
           py::arg("exchange") = "sync", py::arg("checked") = false, py::arg("device") = "cpu")
      .def(
          "step",
          [](const py::object& self_object, const py::handle& count) {
            const auto& self = self_object.cast<const PySimulation&>();
            const Turn turn(self);
            take_steps(self, self_object, int_arg(count, "Simulation.step: count", 0), py::none());
          },
          py::arg("count") = 1, R"doc(
Takes `count` steps. Raises KernelError naming the node and step if a kernel fails, and
KeyboardInterrupt after the current step on Ctrl-C.)doc")
      .def(
          "run",
          [](const py::object& self_object, const py::handle& count, const py::object& callback) {
            const auto& self = self_object.cast<const PySimulation&>();
            const Turn turn(self);
            take_steps(self, self_object, int_arg(count, "Simulation.run: count", 0), callback);
          },
          py::arg("count"), py::arg("callback") = py::none(), R"doc(
Takes `count` steps, calling callback(simulation) after each (unless None). An exception from the
callback, or Ctrl-C (KeyboardInterrupt), stops it after the current step; sharded, every rank
stops after that step (a rank whose callback raised raises that, the others UsageError naming the
rank, or KeyboardInterrupt for Ctrl-C).)doc")
      .def_property_readonly(
          "steps_taken",
          [](const PySimulation& s) {
            const Turn turn(s);
            return s.get().steps_taken();
          },
          "Steps taken since the initial state (a restored simulation counts the checkpoint's).")
      .def_property_readonly(
          "threads",
          [](const PySimulation& s) {
            const Turn turn(s);
            return s.get().threads();
          },
          "The threads this rank steps its kernels on.")
      .def("__repr__",
           [](const PySimulation& s) {
             if (!s.simulation) {
               return std::string("Simulation(closed)");
             }
             const Turn turn(s);
             std::vector<std::string> names;
             for (const auto& node : s.simulation->nodes()) {
               names.push_back(node->name());
             }
             return "Simulation(nodes=" + py::repr(py::cast(names)).cast<std::string>() +
                    ", steps_taken=" + std::to_string(s.simulation->steps_taken()) +
                    ", device=" + py::repr(py::str(s.simulation->device())).cast<std::string>() +
                    ")";
           })
      .def_property_readonly(
          "device",
          [](const PySimulation& s) {
            const Turn turn(s);
            return s.get().device();
          },
          "Where the kernels run: \"cpu\", or the GPU, e.g. \"cuda:0 (NVIDIA H100 80GB HBM3, "
          "sm_90)\".")
      .def_property_readonly(
          "checked",
          [](const PySimulation& s) {
            const Turn turn(s);
            return s.get().checked();
          },
          "Whether the simulation runs in checked mode (checked=True or UWJIT_CHECK).")
      .def_property_readonly(
          "nodes", [](const PySimulation& s) { return py::list(s.nodes); },
          "The nodes, in order (a new list).")
      .def(
          "field",
          [](const py::object& self_object, std::string_view node, std::string_view field) {
            const auto& self = self_object.cast<const PySimulation&>();
            const Turn turn(self);
            return interior_view(self.get().field(node, field), self_object);
          },
          py::arg("node"), py::arg("field"), R"doc(
A read-only numpy VIEW of this rank's interior of state field `field` of node `node` (no copy).
It goes stale at the next step, run or rebind_static: the runtime steps on two buffers in
turn, so the view then shows the other buffer's contents, which the next step overwrites.
Copy it (.copy()) to keep it, or call field() again after each step. The view keeps the
Simulation alive. Raises UsageError naming what is missing.)doc")
      .def(
          "gather",
          [](const PySimulation& self, std::string_view node, std::string_view field) {
            const Turn turn(self);
            std::optional<runtime::Snapshot> snapshot;
            {
              py::gil_scoped_release release;
              snapshot.emplace(self.get().gathered());
            }
            return interior_copy(snapshot->field(node, field));
          },
          py::arg("node"), py::arg("field"),
          "A COPY of the whole domain of field `field` (gathered from every rank: collective); "
          "gathered().field(node, field).")
      .def(
          "gathered",
          [](const PySimulation& self) {
            const Turn turn(self);
            const auto& simulation = self.get();
            py::gil_scoped_release release;
            return simulation.gathered();
          },
          R"doc(
A Snapshot of the whole simulation at this step (every node's state gathered from the ranks:
collective when sharded), as C++ Simulation::gathered(): steps_taken, nodes, field(node, field),
integrals(node). Sharded, every rank then holds the whole state: local_snapshot() gathers
nothing.)doc")
      .def(
          "local_snapshot",
          [](const PySimulation& self) {
            const Turn turn(self);
            const auto& simulation = self.get();
            py::gil_scoped_release release;
            return simulation.local_snapshot();
          },
          R"doc(
A Snapshot of this rank's slab at this step (not collective, nothing gathered), as C++
Simulation::local_snapshot(): field(node, field) holds the cells slab(node) names; the integrals
are summed over the ranks. Serially, gathered().)doc")
      .def(
          "shard",
          [](const PySimulation& self, std::string_view node) {
            const Turn turn(self);
            const auto& info = self.get().shard(node);
            py::dict out;
            out["grid"] = py::tuple(py::cast(info.grid));
            out["coords"] = py::tuple(py::cast(info.coords));
            out["offset"] = py::tuple(py::cast(info.offset));
            out["extent"] = py::tuple(py::cast(info.extent));
            out["global"] = py::tuple(py::cast(info.global));
            return out;
          },
          py::arg("node"), R"doc(
Where this rank's shard of node `node` lies, per domain axis: "grid" (ranks), "coords" (this
rank's position), "offset" (global index of the first local cell), "extent" (local cells),
"global" (the whole domain). Serially: the whole domain on a 1-rank grid.)doc")
      .def(
          "integrals",
          [](const PySimulation& self, std::string_view node) {
            const Turn turn(self);
            const auto& simulation = self.get();
            return integrals_of(simulation.node(node), simulation.integrals(node));
          },
          py::arg("node"),
          "The domain integrals of the last step by name (zeros before the first; combined "
          "over the ranks: summed, or the maximum of an integral declared \"max\").")
      .def(
          "kernel_reports",
          [](const PySimulation& self) {
            const Turn turn(self);
            return self.get().kernel_reports();
          },
          R"doc(
One KernelReport per kernel the nodes use (node, stage, info), in node order and, within a node,
stage order: C++ Simulation::kernel_reports().)doc")
      .def(
          "kernels",
          [](const PySimulation& self) {
            if (PyErr_WarnEx(PyExc_DeprecationWarning,
                             "Simulation.kernels() is deprecated (removed in the next release): "
                             "use kernel_reports(), one KernelReport (node, stage, info) per "
                             "kernel",
                             1) < 0) {
              throw py::error_already_set();
            }
            const Turn turn(self);
            py::dict out;
            for (const auto& report : self.get().kernel_reports()) {
              if (report.stage == 0) {
                out[py::str(report.node)] = report.info;
              }
            }
            return out;
          },
          "Deprecated (removed in the next release): {node name: KernelInfo of its first stage}; "
          "use kernel_reports().")
      .def(
          "rebound_statics",
          [](const PySimulation& self, std::string_view node) {
            const Turn turn(self);
            return self.get().rebound_statics(node);
          },
          py::arg("node"), R"doc(
The keys (sorted) of node `node`'s static arrays that rebind_static replaced in the history of
this state: in this simulation, or in the run that wrote the checkpoint it was restored from
(restore binds the node's own arrays and warns: rebind them again). Raises UsageError if there
is no such node.)doc")
      .def(
          "rebind_static",
          [](PySimulation& self, std::string_view node, std::string key, const py::object& array) {
            auto cpp = static_array_of(array, std::move(key));
            const Turn turn(self);
            auto& simulation = self.get();
            std::optional<runtime::Simulation::Rebound> rebound;
            {
              py::gil_scoped_release release;
              rebound.emplace(simulation.rebind_static(node, std::move(cpp)));
            }
            py::dict out;
            out["new_kernel"] = rebound->new_kernel;
            out["info"] = rebound->report.info;
            out["stage"] = rebound->report.stage;
            return out;
          },
          py::arg("node"), py::arg("key"), py::arg("array"), R"doc(
Binds `array` (a StaticArray) in place of node `node`'s static array `key`. Same shape, dtype
and sharding: nothing is compiled (new_kernel False) and the next step reads the new array.
Otherwise the node emits its kernel again. Returns {"new_kernel": bool, "info": KernelInfo,
"stage": int} (the kernel of stage 0 for a node of several stages).
Serial only. On an error the simulation is unchanged.)doc")
      .def(
          "checkpoint",
          [](const PySimulation& self, const std::filesystem::path& path) {
            const Turn turn(self);
            const auto& simulation = self.get();
            py::gil_scoped_release release;
            simulation.checkpoint(path);
          },
          py::arg("path"),
          "Writes the state and params to `path`, atomically. Sharded: collective; each rank "
          "writes its slab into the one file (the bytes a serial run writes), so the ranks must "
          "share the file's directory.")
      .def_static(
          "restore",
          [](std::shared_ptr<engine::Engine> engine, const std::filesystem::path& path,
             const py::object& factory, const py::object& comm,
             std::optional<std::vector<int>> shard_axes, const py::object& threads,
             const std::string& exchange, bool checked, const std::string& device) {
            auto self = std::make_unique<PySimulation>();
            self->engine = std::move(engine);
            self->comm = comm_of(comm);
            auto options =
                options_of(self->comm, std::move(shard_axes), threads, exchange, checked, device);
            const auto builtin = nodes::factory();
            py::list made;
            runtime::NodeFactory both =
                [&](const std::string& type, const std::string& name,
                    const runtime::Params& params) -> std::shared_ptr<const runtime::Node> {
              if (!factory.is_none()) {
                py::gil_scoped_acquire gil;
                const py::object node = calling_python("Simulation.restore's factory", [&] {
                  return factory(type, name, from_params(params));
                });
                if (!node.is_none()) {
                  if (!py::isinstance<runtime::Node>(node)) {
                    throw py::type_error("Simulation.restore: factory: expected a uwjit.Node or "
                                         "None, got " +
                                         type_name(node));
                  }
                  made.append(node);
                  return node.cast<std::shared_ptr<runtime::Node>>();
                }
              }
              return builtin(type, name, params);
            };
            {
              py::gil_scoped_release release;
              self->simulation = std::make_unique<runtime::Simulation>(
                  runtime::Simulation::restore(*self->engine, path, both, options));
            }
            for (const auto& node : self->simulation->nodes()) {
              bool python_made = false;
              for (const auto item : made) {
                if (item.cast<std::shared_ptr<runtime::Node>>().get() == node.get()) {
                  self->nodes.append(item);
                  python_made = true;
                }
              }
              if (!python_made) {
                self->nodes.append(py::cast(std::const_pointer_cast<runtime::Node>(node)));
              }
              const auto rebound = self->simulation->rebound_statics(node->name());
              if (!rebound.empty()) {
                const auto message = "node \"" + node->name() +
                                     "\" ran with static arrays rebound (" + join(rebound) +
                                     ") when the checkpoint was written; restore bound the "
                                     "node's own arrays: call rebind_static again";
                if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) < 0) {
                  throw py::error_already_set(); // warnings filtered into errors
                }
              }
            }
            return self;
          },
          py::arg("engine").none(false), py::arg("path"), py::arg("factory") = py::none(),
          py::arg("comm") = py::none(), py::arg("shard_axes") = py::none(),
          py::arg("threads") = py::none(), py::arg("exchange") = "sync", py::arg("checked") = false,
          py::arg("device") = "cpu",
          R"doc(
A simulation rebuilt from a checkpoint: nodes from factory(type, name, params) (a Node, or None
for a built-in node), state and step count from the file. Stepping it on gives, bit for bit,
what the uninterrupted simulation gives. A node that ran with arrays given to rebind_static gets
its own arrays back: a RuntimeWarning names the node and keys (so does rebound_statics(node));
rebind them again. Raises IoError for an unreadable or corrupt file. With comm: collective; each
rank reads only its slab of each field (from a file written at any rank count, or serially).)doc")
      .def(
          "write_vtk",
          [](const PySimulation& self, const std::filesystem::path& directory,
             const std::string& stem) {
            const Turn turn(self);
            const auto& simulation = self.get();
            py::gil_scoped_release release;
            return simulation.write_vtk(directory, stem);
          },
          py::arg("directory"), py::arg("stem") = "", R"doc(
Writes every node's fields as VTK XML files in `directory` (made if missing) and returns their
paths: a node as its write_vtk writes it (built-in nodes as `uwjit run` writes them; others as
ImageData .vti, one cell array per state field, with step, time, dt, the kernel's key and the
params as FieldData), named NODE.vti, or STEM_NODE.vti with a `stem`. Collective when sharded,
and nothing is gathered: each rank writes the piece of its own slab (NODE/NODE_0000.vti, ...)
and rank 0 the index NODE.pvti, which ParaView opens as one dataset; every rank returns the same
paths or raises the same error. Raises IoError naming the directory or file that cannot be
written.)doc");
}

} // namespace uwjit::python
