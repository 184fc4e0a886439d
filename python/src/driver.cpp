// The driver from Python: uwjit.NodeKind (a kind of node, its node params and their ParamDocs,
// its make function, and what a run of it is checked against), Verdict, Measurement, Trace and
// Snapshot (what a check reads), and uwjit.run_cli, which runs a node kind from the command line
// exactly as `uwjit run` runs the built-in nodes (the C++ driver, uwjit::driver::run).
//
// The driver runs with the GIL released; every Python function of a kind takes it back when the
// driver calls it. run_cli handles SIGINT and SIGTERM itself while it runs (stop after the
// current step, exit code 130) and puts Python's handlers back afterwards.
#include "bindings.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/driver/args.hpp>
#include <uwjit/driver/run_main.hpp>
#include <uwjit/runtime/snapshot.hpp>

#if UWJIT_PYTHON_MPI
#include <uwjit/mpi.hpp>
#endif

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

namespace uwjit::python {
namespace {

// A Python callable, kept with its GIL: copies and the last release take the GIL (a
// std::function holding it is copied and destroyed by the driver with the GIL released).
class Callable {
public:
  explicit Callable(py::object f) : m_f(std::make_shared<py::object>(std::move(f))) {}
  Callable(const Callable&) = default;
  Callable& operator=(const Callable&) = default;
  ~Callable() {
    if (m_f.use_count() == 1 && Py_IsInitialized() != 0) {
      py::gil_scoped_acquire gil;
      m_f.reset();
    }
  }
  [[nodiscard]] const py::object& get() const { return *m_f; }

private:
  std::shared_ptr<py::object> m_f;
};

// The Python objects of the nodes the kinds' make functions made during the run_cli call in
// progress, kept alive while the run uses them (a Python subclass's methods live in its object).
// Set by run_cli (RunNodes), read with the GIL held.
py::list* g_run_nodes = nullptr;

class RunNodes {
public:
  explicit RunNodes(py::list& nodes) : m_saved(g_run_nodes) { g_run_nodes = &nodes; }
  ~RunNodes() { g_run_nodes = m_saved; }
  RunNodes(const RunNodes&) = delete;
  RunNodes& operator=(const RunNodes&) = delete;

private:
  py::list* m_saved;
};

// What a kind's functions are called with, with the GIL held: the node as its Python object.
py::object node_object(const runtime::Node& node) {
  // The node's own object for one made in Python (pybind11 finds the registered instance).
  return py::cast(const_cast<runtime::Node*>(&node), py::return_value_policy::reference);
}

std::string where(const std::string& type, std::string_view function) {
  return "node kind \"" + type + "\"'s " + std::string(function);
}

runtime::NodeFactory make_of(const std::string& type, const Callable& make) {
  return [type, make](const std::string& node_type, const std::string& name,
                      const runtime::Params& node_params) -> std::shared_ptr<const runtime::Node> {
    py::gil_scoped_acquire gil;
    const py::object node = calling_python(
        where(type, "make"), [&] { return make.get()(node_type, name, from_params(node_params)); });
    if (!py::isinstance<runtime::Node>(node)) {
      throw Error(ErrorKind::usage,
                  where(type, "make") + ": expected a uwjit.Node, got " + type_name(node));
    }
    if (g_run_nodes != nullptr) {
      g_run_nodes->append(node);
    }
    return node.cast<std::shared_ptr<runtime::Node>>();
  };
}

std::int64_t steps_of(const std::string& type, const py::object& value, std::string_view what) {
  return int_arg(value, where(type, what), 0);
}

driver::NodeKind make_kind(std::string type, std::string summary, const py::handle& node_params,
                           const py::object& make, std::vector<driver::ParamDoc> param_docs,
                           const py::object& sized, std::string size_help, std::string shard_help,
                           const py::object& default_steps, const py::object& updates_per_step,
                           const py::object& check, bool reads_slabs) {
  if (!is_safe_name(type)) {
    throw Error(ErrorKind::usage,
                "NodeKind: type \"" + printable(type) +
                    "\" is not a safe name (1 to 64 letters, digits, '_', '-', '.'; it names "
                    "the run's files)");
  }
  if (!PyCallable_Check(make.ptr())) {
    throw py::type_error("NodeKind: make: expected a callable (type, name, node_params) -> Node, "
                         "got " +
                         type_name(make));
  }
  driver::NodeKind kind{
      .type = type,
      .summary = std::move(summary),
      .node_params = to_params(node_params, "NodeKind: node_params"),
      .param_docs = std::move(param_docs),
      .make = make_of(type, Callable(make)),
      .reads_slabs = reads_slabs,
  };
  if (!sized.is_none()) {
    const Callable f(sized);
    const runtime::Params defaults = kind.node_params;
    kind.sized = [type, f, defaults](std::span<const std::int64_t> size) {
      py::gil_scoped_acquire gil;
      const py::object given = calling_python(where(type, "sized"), [&] {
        return f.get()(py::tuple(py::cast(std::vector<std::int64_t>(size.begin(), size.end()))));
      });
      runtime::Params params = defaults;
      const runtime::Params by_size = to_params(given, where(type, "sized") + "'s result");
      for (const auto& [key, value] : by_size.values()) {
        params.set(key, value);
      }
      return params;
    };
  }
  kind.size_help = std::move(size_help);
  kind.shard_help = std::move(shard_help);
  if (!default_steps.is_none()) {
    if (PyCallable_Check(default_steps.ptr()) != 0) {
      const Callable f(default_steps);
      kind.default_steps = [type, f](const runtime::Node& node) {
        py::gil_scoped_acquire gil;
        const py::object steps = calling_python(where(type, "default_steps"),
                                                [&] { return f.get()(node_object(node)); });
        return steps_of(type, steps, "default_steps");
      };
    } else {
      const std::int64_t steps = steps_of(type, default_steps, "default_steps");
      kind.default_steps = [steps](const runtime::Node&) { return steps; };
    }
  }
  if (!updates_per_step.is_none()) {
    const Callable f(updates_per_step);
    kind.updates_per_step = [type, f](const runtime::Node& node) {
      py::gil_scoped_acquire gil;
      const py::object count = calling_python(where(type, "updates_per_step"),
                                              [&] { return f.get()(node_object(node)); });
      return steps_of(type, count, "updates_per_step");
    };
  }
  if (!check.is_none()) {
    const Callable f(check);
    kind.check = [type, f](const runtime::Node& node, const runtime::Snapshot& snapshot,
                           const driver::Trace& trace) {
      py::gil_scoped_acquire gil;
      const py::object verdict = calling_python(where(type, "check"), [&] {
        return f.get()(node_object(node), py::cast(snapshot), py::cast(trace));
      });
      if (!py::isinstance<driver::Verdict>(verdict)) {
        throw Error(ErrorKind::usage,
                    where(type, "check") + ": expected a uwjit.Verdict, got " + type_name(verdict));
      }
      return verdict.cast<driver::Verdict>();
    };
  }
  return kind;
}

std::vector<driver::NodeKind> kinds_of(const py::handle& kinds) {
  if (py::isinstance<driver::NodeKind>(kinds)) {
    return {kinds.cast<driver::NodeKind>()};
  }
  if (py::isinstance<py::str>(kinds) || !py::isinstance<py::iterable>(kinds)) {
    throw py::type_error("run_cli: kinds: expected a uwjit.NodeKind or a list of them, got " +
                         type_name(kinds));
  }
  std::vector<driver::NodeKind> out;
  for (const auto item : kinds) {
    if (!py::isinstance<driver::NodeKind>(item)) {
      throw py::type_error("run_cli: kinds: expected uwjit.NodeKind items, got " + type_name(item));
    }
    out.push_back(item.cast<driver::NodeKind>());
  }
  if (out.empty()) {
    throw Error(ErrorKind::usage, "run_cli: kinds: no node kinds to run");
  }
  return out;
}

#if UWJIT_PYTHON_MPI
// --shard from Python: mpi4py initialises MPI (and finalises it at exit), uwjit's job joins it.
class PythonJob final : public comm::Job {
public:
  std::unique_ptr<comm::Comm> start() override {
    {
      py::gil_scoped_acquire gil;
      calling_python("run_cli --shard (import mpi4py.MPI)",
                     [] { return py::module_::import("mpi4py.MPI"); });
    }
    return mpi::job().start();
  }
  void end_on_error(std::string_view program, std::string_view message, int code) override {
    mpi::job().end_on_error(program, message, code);
  }
  void finish() override { mpi::job().finish(); }
};
#endif

std::string repr_text(const std::string& text) {
  return py::repr(py::str(text)).cast<std::string>();
}

} // namespace

void bind_driver(py::module_& m) {
  py::class_<driver::ParamDoc>(m, "ParamDoc", R"doc(
What one node param means, for people (`--set help`): ParamDoc(name, meaning, unit="", range="").
unit: e.g. "cells" ("" for a pure number or a choice); range: the accepted values, e.g.
"[4, 4096]" or "insulating, periodic".)doc")
      .def(py::init([](std::string name, std::string meaning, std::string unit, std::string range) {
             return driver::ParamDoc{std::move(name), std::move(meaning), std::move(unit),
                                     std::move(range)};
           }),
           py::arg("name"), py::arg("meaning"), py::arg("unit") = "", py::arg("range") = "")
      .def_readonly("name", &driver::ParamDoc::name, "The node param's name.")
      .def_readonly("meaning", &driver::ParamDoc::meaning, "What it means.")
      .def_readonly("unit", &driver::ParamDoc::unit, "Its unit (\"\" for none).")
      .def_readonly("range", &driver::ParamDoc::range, "The values it accepts, for people.")
      .def("__repr__", [](const driver::ParamDoc& d) {
        return "ParamDoc(" + repr_text(d.name) + ", " + repr_text(d.meaning) +
               (d.unit.empty() ? "" : ", unit=" + repr_text(d.unit)) +
               (d.range.empty() ? "" : ", range=" + repr_text(d.range)) + ")";
      });

  py::class_<driver::Measurement>(m, "Measurement", R"doc(
One quantitative test of a run (in Verdict.measurements): `value` must not exceed `limit`.)doc")
      .def_readonly("name", &driver::Measurement::name, "What is measured.")
      .def_readonly("metric", &driver::Measurement::metric, "What `value` is, as a formula.")
      .def_readonly("value", &driver::Measurement::value, "The measured value.")
      .def_readonly("limit", &driver::Measurement::limit, "The most `value` may be.")
      .def_readonly("passed", &driver::Measurement::passed, "value <= limit.")
      .def("__repr__", [](const driver::Measurement& x) {
        return "Measurement(" + repr_text(x.name) +
               ", value=" + py::repr(py::float_(x.value)).cast<std::string>() +
               ", limit=" + py::repr(py::float_(x.limit)).cast<std::string>() +
               ", passed=" + (x.passed ? "True" : "False") + ")";
      });

  py::class_<driver::Verdict>(m, "Verdict", R"doc(
The outcome of a node kind's check: Verdict(), then add(name, metric, value, limit) per
measurement (passed while value <= limit; a NaN fails) and notes.append(text) for what could not
be checked. needs_steps: the steps a run too short to judge needs (then it passes, not judged).)doc")
      .def(py::init<>())
      .def("add", &driver::Verdict::add, py::arg("name"), py::arg("metric"), py::arg("value"),
           py::arg("limit"), "Adds a measurement; the verdict fails if value > limit or NaN.")
      .def_readonly("passed", &driver::Verdict::passed,
                    "Whether every measurement passed (True for a run not judged).")
      .def_readonly("measurements", &driver::Verdict::measurements,
                    "The measurements added, in order (Measurement).")
      .def_readwrite("notes", &driver::Verdict::notes,
                     "What could not be checked, for people (a list of str).")
      .def_readwrite("needs_steps", &driver::Verdict::needs_steps,
                     "Non-zero: the run was too short to judge; the steps it needs.")
      .def_property_readonly("judged", &driver::Verdict::judged,
                             "Whether the check judged the run.")
      .def("__repr__", [](const driver::Verdict& v) {
        return std::string("Verdict(passed=") + (v.passed ? "True" : "False") +
               ", measurements=" + std::to_string(v.measurements.size()) +
               (v.judged() ? "" : ", judged=False") + ")";
      });

  py::class_<driver::Trace>(m, "Trace", R"doc(
A node's domain integrals as a run recorded them, step by step (what a check reads): names (the
layout's integrals), steps (the step count after each record) and series(name).)doc")
      .def_readonly("names", &driver::Trace::names, "The node's integrals, in layout order.")
      .def_readonly("steps", &driver::Trace::steps, "The step count after each record.")
      .def("series", &driver::Trace::series, py::arg("name"),
           "The values of integral `name`, one per record (UsageError if it is not one).")
      .def("__repr__", [](const driver::Trace& t) {
        return "Trace(names=" + py::repr(py::cast(t.names)).cast<std::string>() +
               ", records=" + std::to_string(t.steps.size()) + ")";
      });

  py::class_<runtime::Snapshot>(m, "Snapshot", R"doc(
The state of a simulation at one step: of the whole domain (Simulation.gathered(); what a
NodeKind's check reads) or of one rank's slab (Simulation.local_snapshot()): steps_taken, nodes,
field(node, field) (a copy of the cells slab(node) names), integrals(node).)doc")
      .def_property_readonly("steps_taken", &runtime::Snapshot::steps_taken,
                             "Steps taken since the initial state.")
      .def_property_readonly(
          "nodes",
          [](const runtime::Snapshot& s) {
            py::list out;
            for (const auto& node : s.nodes()) {
              out.append(py::cast(std::const_pointer_cast<runtime::Node>(node)));
            }
            return out;
          },
          "The nodes, in order (a new list).")
      .def(
          "field",
          [](const runtime::Snapshot& s, std::string_view node, std::string_view field) {
            return interior_copy(s.field(node, field));
          },
          py::arg("node"), py::arg("field"),
          "A COPY of state field `field` of node `node` over the cells slab(node) names.")
      .def(
          "slab",
          [](const runtime::Snapshot& s, std::string_view node) {
            const auto& slab = s.slab(node);
            py::dict out;
            out["offset"] = py::tuple(py::cast(slab.offset));
            out["extent"] = py::tuple(py::cast(slab.extent));
            out["global"] = py::tuple(py::cast(slab.global));
            return out;
          },
          py::arg("node"),
          "The cells of node `node` this snapshot holds, per domain axis: {'offset', 'extent', "
          "'global'} (tuples); the whole domain for Simulation.gathered().")
      .def(
          "sum_over_ranks",
          [](const runtime::Snapshot& s, std::vector<double> values) {
            py::gil_scoped_release release;
            s.sum_over_ranks(values);
            return values;
          },
          py::arg("values"),
          "The sums over the ranks of `values` (this rank's partial sums over its slab), as a new "
          "list: for Simulation.local_snapshot() of a sharded simulation, collective (every rank "
          "calls it alike, with as many values), the partials added in rank order so that every "
          "rank gets the same bits; for a snapshot of the whole domain, the values themselves.")
      .def(
          "max_over_ranks",
          [](const runtime::Snapshot& s, double value) {
            py::gil_scoped_release release;
            return s.max_over_ranks(value);
          },
          py::arg("value"), "The largest `value` over the ranks, as sum_over_ranks (NaN wins).")
      .def(
          "integrals",
          [](const runtime::Snapshot& s, std::string_view node) {
            return integrals_of(s.node(node), s.integrals(node));
          },
          py::arg("node"), "The node's domain integrals of the last step, by name.")
      .def("__repr__", [](const runtime::Snapshot& s) {
        return "Snapshot(steps_taken=" + std::to_string(s.steps_taken()) +
               ", nodes=" + std::to_string(s.nodes().size()) + ")";
      });

  py::class_<driver::NodeKind>(m, "NodeKind", R"doc(
A kind of node that run_cli runs from the command line, as `uwjit run` runs the built-in nodes.
Built as::

    NodeKind(type, summary, node_params, make, *, param_docs=(), sized=None, size_help="",
             shard_help="", default_steps=None, updates_per_step=None, check=None,
             reads_slabs=False)

type: the node type (a safe file name: it names the output files); summary: one line.
node_params: the default node params, complete (a dict of int, float, str): --set changes them,
each value read as the type it has here. These are the node's construction values (Node.params,
stored in checkpoints), not a kernel's run-time params (KernelWriter.param).
make(type, name, node_params) -> Node: builds a node (also when --restore reads a checkpoint).
param_docs: ParamDoc per param, for --set help. sized(size) -> dict: the node params a --size
of one int N or three (NX, NY, NZ) gives (they replace the defaults); None: --size is refused.
shard_help: the axes --shard may split it along, for --help ("" : it cannot be sharded).
default_steps: an int or default_steps(node) -> int (None: --steps is required).
updates_per_step(node) -> int: cell updates per step (default: the domain's cells).
check(node, snapshot, trace) -> Verdict: the physics check (None: the run is not judged).
reads_slabs: whether check judges a snapshot of one rank's slab (Snapshot.slab(node), what it
measures added up with Snapshot.sum_over_ranks / max_over_ranks, which every rank calls alike), so
that a sharded run gathers nothing for it; False: check gets the whole domain, gathered on every
rank.)doc")
      .def(py::init(&make_kind), py::arg("type"), py::arg("summary"), py::arg("node_params"),
           py::arg("make"), py::kw_only(), py::arg("param_docs") = std::vector<driver::ParamDoc>{},
           py::arg("sized") = py::none(), py::arg("size_help") = "", py::arg("shard_help") = "",
           py::arg("default_steps") = py::none(), py::arg("updates_per_step") = py::none(),
           py::arg("check") = py::none(), py::arg("reads_slabs") = false)
      .def_readonly("reads_slabs", &driver::NodeKind::reads_slabs,
                    "Whether check judges a snapshot of one rank's slab.")
      .def_readonly("type", &driver::NodeKind::type, "The node type (the NODE argument).")
      .def_readonly("summary", &driver::NodeKind::summary, "One line: what the node simulates.")
      .def_property_readonly(
          "node_params", [](const driver::NodeKind& k) { return from_params(k.node_params); },
          "The default node params (a new dict each time).")
      .def_readonly("param_docs", &driver::NodeKind::param_docs,
                    "What each node param means (ParamDoc), for --set help.")
      .def_readonly("size_help", &driver::NodeKind::size_help, "What --size means.")
      .def_readonly("shard_help", &driver::NodeKind::shard_help,
                    "The axes --shard may split it along (\"\": it cannot be sharded).")
      .def("__repr__", [](const driver::NodeKind& k) {
        return "NodeKind(type=" + repr_text(k.type) + ", summary=" + repr_text(k.summary) + ")";
      });

  m.def(
      "run_cli",
      [](const py::object& kinds, const py::object& argv, const py::object& program,
         std::string summary, std::string epilog) {
        const auto cpp_kinds = kinds_of(kinds);
        const py::module_ sys = py::module_::import("sys");
        std::vector<std::string> args;
        if (argv.is_none()) {
          const auto all = sys.attr("argv").cast<std::vector<std::string>>();
          args.assign(all.begin() + std::min<std::ptrdiff_t>(1, std::ssize(all)), all.end());
        } else {
          if (py::isinstance<py::str>(argv)) {
            throw py::type_error("run_cli: argv: expected a list of str, got a str");
          }
          if (!py::isinstance<py::iterable>(argv)) {
            throw py::type_error("run_cli: argv: expected a list of str, got " + type_name(argv));
          }
          for (const auto arg : argv) {
            if (!py::isinstance<py::str>(arg)) {
              throw py::type_error("run_cli: argv: expected a list of str, got an item of type " +
                                   type_name(arg));
            }
            args.push_back(arg.cast<std::string>());
          }
        }
        driver::Program cpp_program;
        if (!program.is_none()) {
          cpp_program.name = program.cast<std::string>();
        } else {
          const auto all = sys.attr("argv").cast<std::vector<std::string>>();
          cpp_program.name = all.empty() ? std::string("run_cli")
                                         : std::filesystem::path(all[0]).filename().string();
          if (cpp_program.name.empty() || cpp_program.name == "-c") {
            cpp_program.name = "run_cli";
          }
        }
        cpp_program.summary = std::move(summary);
        cpp_program.epilog = std::move(epilog);
#if UWJIT_PYTHON_MPI
        PythonJob job;
        cpp_program.job = &job;
#endif
        // What Python printed first comes first.
        for (const char* stream : {"stdout", "stderr"}) {
          const py::object file = sys.attr(stream);
          if (!file.is_none()) {
            file.attr("flush")();
          }
        }
        int code = 0;
        py::list made; // the nodes of this run, released (with the GIL) after it
        const RunNodes keep(made);
        {
          py::gil_scoped_release release;
          try {
            code = driver::run(cpp_program, cpp_kinds, args);
          } catch (const PythonError& error) {
            // A node's or a kind's own Python code raised. A uwjit.Error (a UsageError for a
            // node param it refuses) is reported as the driver's own errors are; anything else
            // is raised again as itself (a job of several ranks ends every rank first, as for
            // any error that may have reached one rank only).
            std::optional<ErrorKind> kind;
            {
              py::gil_scoped_acquire gil;
              kind = error_kind_of(error);
            }
            if (!kind) {
              if (cpp_program.job != nullptr) {
                cpp_program.job->end_on_error(cpp_program.name, error.what(), 1);
              }
              std::fflush(stdout);
              throw;
            }
            code = driver::report_error(cpp_program, Error(*kind, error.what()));
          } catch (const std::exception& error) {
            code = driver::report_error(cpp_program, error);
          }
          std::cout.flush();
          std::fflush(stdout);
        }
        if (cpp_program.job != nullptr) {
          cpp_program.job->finish();
        }
        return code;
      },
      py::arg("kinds"), py::arg("argv") = py::none(), py::kw_only(),
      py::arg("program") = py::none(), py::arg("summary") = "", py::arg("epilog") = "", R"doc(
Runs a node of `kinds` (a NodeKind or a list of them) as `uwjit run` runs the built-in nodes,
with the command line `argv` (default: sys.argv[1:]) and returns the exit code, for
sys.exit(uwjit.run_cli(...)): NODE (optional with one kind), --size, --set NAME=VALUE and
--set help, --steps, --threads, --device, --shard x[,y[,z]] (under mpiexec, with mpi4py),
--output DIR, --output-every N (NODE_000000.vti ... and NODE.pvd), --checkpoint FILE and
--restore FILE (restored through the kinds' make), --plot, --json, --help. The report goes to
the process's stdout (file descriptor 1) and errors to stderr as "PROGRAM: error: ...";
usage errors return 2, other errors 1, a failed check 1, Ctrl-C (SIGINT) or SIGTERM stops the
run after the current step and returns 130. program: the name in messages (default: the
script's file name). An exception raised by a node's or a kind's Python code is raised again.
The GIL is released while the run works.)doc");
}

} // namespace uwjit::python
