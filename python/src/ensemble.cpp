// uwjit.Ensemble: runtime::Ensemble for Python: members from a Python factory, sampled from a
// grid (vary), a list of dicts (samples) or a seeded random design, their results as numpy
// arrays.
#include "bindings.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/runtime/ensemble.hpp>
#include <uwjit/runtime/pipeline.hpp>

#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cmath>
#include <cstring>

namespace uwjit::python {

namespace {

// A Python ensemble: the engine and the factory it keeps alive, the memory sink it takes members
// from, and the ensemble. Python calls it with the GIL held throughout: a member's node is
// Python code, built when a slot is refilled, mid-step.
struct PyEnsemble {
  std::shared_ptr<engine::Engine> engine;
  py::object factory;
  std::shared_ptr<runtime::MemorySink> memory;
  std::shared_ptr<comm::Comm> comm;
  std::unique_ptr<runtime::Ensemble> ensemble; // or
  std::unique_ptr<runtime::Pipeline> pipeline; // whose stage on this rank is `stage()`
  bool busy = false;                           // a call holds it (see Hold)

  // This rank's ensemble: the ensemble, or the pipeline's stage.
  [[nodiscard]] const runtime::Ensemble& stage() const {
    return pipeline ? pipeline->ensemble() : *ensemble;
  }
  bool advance(std::int64_t steps) {
    return pipeline ? pipeline->advance(steps) : ensemble->advance(steps);
  }
};

// One call's hold on an ensemble, which takes one call at a time: a call made while another runs
// (from make(), which may let another thread take the GIL, or from that thread) is refused
// instead of stepping members twice or losing them. The GIL guards the flag.
class Hold {
public:
  Hold(PyEnsemble& self, std::string_view call) : m_self(self) {
    if (self.busy) {
      throw Error(ErrorKind::usage,
                  format("Ensemble.{}: called while another call of this ensemble runs (from "
                         "make(), or from another thread): an ensemble takes one call at a time",
                         call));
    }
    self.busy = true;
  }
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;
  ~Hold() { m_self.busy = false; }

private:
  PyEnsemble& m_self;
};

// A dict's key that names a param or an entry: a str, else TypeError naming `what`.
std::string key_of(const py::handle& key, std::string_view what) {
  if (!py::isinstance<py::str>(key)) {
    throw py::type_error(std::string(what) + ": keys are str, got " + type_name(key));
  }
  return key.cast<std::string>();
}

// Stop rules given as a list of str ("steps:100", ...): TypeError naming `what` otherwise.
std::vector<std::string> rules_of(const py::handle& rules, std::string_view what) {
  std::vector<std::string> out;
  if (py::isinstance<py::str>(rules) || !py::isinstance<py::iterable>(rules)) {
    throw py::type_error(std::string(what) + ": expected a list of stop rules (str), got " +
                         type_name(rules));
  }
  for (const auto rule : rules) {
    if (!py::isinstance<py::str>(rule)) {
      throw py::type_error(std::string(what) + ": a stop rule is a str (\"steps:100\"), got " +
                           type_name(rule));
    }
    out.push_back(rule.cast<std::string>());
  }
  return out;
}

// The stages after the first: [{"params": {...}, "until": [...]}, ...].
std::vector<runtime::PipelineStage> stages_of(const py::object& stages) {
  std::vector<runtime::PipelineStage> out;
  if (stages.is_none()) {
    return out;
  }
  for (const auto item : stages) {
    if (!py::isinstance<py::dict>(item)) {
      throw py::type_error("Ensemble: stages must be dicts {\"params\": {...}, \"until\": [...]}, "
                           "got " +
                           type_name(item));
    }
    const auto stage = item.cast<py::dict>();
    for (const auto& [key, value] : stage) {
      const auto name = key_of(key, "Ensemble: a stage");
      if (name != "params" && name != "until") {
        throw Error(ErrorKind::usage, format("Ensemble: stage {}: \"{}\" is not params or until",
                                             out.size() + 1, name));
      }
    }
    runtime::PipelineStage one;
    if (stage.contains("params")) {
      one.params = to_params(stage["params"], "Ensemble: a stage's params");
    }
    if (!stage.contains("until")) {
      throw Error(ErrorKind::usage,
                  format("Ensemble: stage {} has no until (its stop rules, e.g. [\"steps:100\"])",
                         out.size() + 1));
    }
    one.until = runtime::StopRule::parse(rules_of(stage["until"], "Ensemble: a stage's until"));
    out.push_back(std::move(one));
  }
  return out;
}

std::unique_ptr<runtime::MemberSampler>
sampler_of(const py::object& vary, const py::object& samples, const py::object& random) {
  if (vary.is_none() == samples.is_none()) {
    throw Error(ErrorKind::usage, "Ensemble: give either vary (a grid, or the ranges of random) "
                                  "or samples (a list of dicts), not both or neither");
  }
  if (!samples.is_none()) {
    // One member's values from a dict; the first dict names the params.
    auto row_of = [](const py::handle& item, std::vector<std::string>& names, std::size_t index) {
      if (!py::isinstance<py::dict>(item)) {
        throw py::type_error("Ensemble: samples must be dicts of param → number, got " +
                             type_name(item));
      }
      const auto row = item.cast<py::dict>();
      if (names.empty()) {
        for (const auto& [key, value] : row) {
          names.push_back(key_of(key, "Ensemble: samples"));
        }
      }
      std::vector<double> values;
      for (const auto& name : names) {
        if (!row.contains(name) || row.size() != names.size()) {
          throw Error(ErrorKind::usage,
                      format("Ensemble: sample {} does not set the params of the first ({})", index,
                             join(names, ", ")));
        }
        values.push_back(float_arg(row[py::str(name)], "Ensemble: a sample's value"));
      }
      return values;
    };
    std::vector<std::string> names;
    if (py::isinstance<py::list>(samples) || py::isinstance<py::tuple>(samples)) {
      std::vector<std::vector<double>> rows;
      for (const auto item : samples) {
        rows.push_back(row_of(item, names, rows.size()));
      }
      return std::make_unique<runtime::ListSampler>(std::move(names), std::move(rows));
    }
    // Any other iterable (a generator): each member drawn when a slot needs it, never ahead.
    auto iterator = std::make_shared<py::object>(py::iter(samples));
    auto draw = [iterator]() -> std::optional<py::object> {
      PyObject* item = PyIter_Next(iterator->ptr());
      if (item == nullptr) {
        if (PyErr_Occurred() != nullptr) {
          throw py::error_already_set();
        }
        return std::nullopt;
      }
      return py::reinterpret_steal<py::object>(item);
    };
    auto head = draw();
    if (!head) {
      throw Error(ErrorKind::usage, "Ensemble: samples gives no members");
    }
    std::optional<std::vector<double>> first = row_of(*head, names, 0);
    auto next = [draw, first, names, row_of,
                 index = std::size_t{1}]() mutable -> std::optional<std::vector<double>> {
      if (first) {
        auto row = std::move(*first);
        first.reset();
        return row;
      }
      const auto item = draw();
      if (!item) {
        return std::nullopt;
      }
      return row_of(*item, names, index++);
    };
    return std::make_unique<runtime::CallableSampler>(names, std::move(next));
  }
  std::vector<runtime::ParamRange> ranges;
  if (!py::isinstance<py::dict>(vary)) {
    throw py::type_error("Ensemble: vary: expected a dict of param → (low, high, count), got " +
                         type_name(vary));
  }
  for (const auto& [key, value] : vary.cast<py::dict>()) {
    runtime::ParamRange r;
    r.name = key_of(key, "Ensemble: vary");
    if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value)) {
      throw py::type_error("Ensemble: vary[\"" + r.name +
                           "\"]: expected (low, high, count) or (low, high), got " +
                           type_name(value));
    }
    const auto parts = value.cast<py::sequence>();
    if (parts.size() != 3 && parts.size() != 2) {
      throw Error(ErrorKind::usage, format("Ensemble: vary[\"{}\"]: expected (low, high, count), "
                                           "or (low, high) to draw from with random=",
                                           r.name));
    }
    // One parser of ranges, the same rules and messages as --vary (LOW:HIGH:COUNT, or LOW:HIGH for
    // a random design); the numbers written shortest and exact (Value::text), so that they parse
    // back to the same doubles.
    std::string text = format("{}={}:{}", r.name,
                              runtime::Value(float_arg(parts[0], "Ensemble: vary's low")).text(),
                              runtime::Value(float_arg(parts[1], "Ensemble: vary's high")).text());
    if (parts.size() == 3) {
      text += format(":{}", int_arg(parts[2], "Ensemble: vary's count"));
    }
    r = runtime::ParamRange::parse(text);
    ranges.push_back(std::move(r));
  }
  if (!random.is_none()) {
    const auto pair = random.cast<py::sequence>();
    if (pair.size() != 2) {
      throw Error(ErrorKind::usage, "Ensemble: random: expected (count, seed)");
    }
    return std::make_unique<runtime::RandomSampler>(
        std::move(ranges), int_arg(pair[0], "Ensemble: random's count", 0),
        static_cast<std::uint64_t>(int_arg(pair[1], "Ensemble: random's seed", 0)));
  }
  return std::make_unique<runtime::GridSampler>(std::move(ranges));
}

py::dict result_dict(const runtime::Ensemble& e, const runtime::MemberResult& m) {
  py::dict params;
  for (std::size_t i = 0; i < e.varied().size() && i < m.values.size(); ++i) {
    params[py::str(e.varied()[i])] = m.values[i];
  }
  py::dict integrals;
  for (std::size_t i = 0; i < e.integrals().size() && i < m.integrals.size(); ++i) {
    integrals[py::str(e.integrals()[i])] = m.integrals[i];
  }
  py::dict out;
  out["id"] = m.id;
  out["params"] = params;
  out["steps"] = m.steps;
  out["status"] = std::string(runtime::to_string(m.status));
  out["reason"] = m.reason;
  out["integrals"] = integrals;
  if (!m.fields.empty()) {
    py::dict fields;
    for (const auto& f : m.fields) {
      py::array a(numpy_dtype(f.dtype), f.shape);
      std::memcpy(a.mutable_data(), f.data.data(), f.data.size());
      fields[py::str(f.name)] = a;
    }
    out["fields"] = fields;
  }
  return out;
}

} // namespace

void bind_ensemble(py::module_& m) {
  py::class_<PyEnsemble>(m, "Ensemble", R"doc(
Many members of one node type, differing in node params, stepped as one batch: one kernel call
per step covers every member (one compile for any sweep), each member's results bit for bit those
of its node run alone. Each member stops by the rule `until`, leaves with its final state, and
the sampler's next member takes its slot.

Ensemble(engine, make, params, vary=None, samples=None, random=None, until=..., batch=0,
         threads=None, output=None, keep=True, capacity=None, comm=None, resume=None,
         vtk=None, stages=None, mode="async_recv", buffer=0, device="cpu")

make(params) -> Node builds a member from its node params (a dict: `params` with the member's
values set), e.g. ``lambda p: uwjit.node("heat", "heat", **p)`` or your own Node subclass. vary:
{name: (low, high, count)}, every combination (the last name fastest), or {name: (low, high)}
with random=(count, seed): that many members drawn uniformly in [low, high). samples: a list of dicts {name: value},
one per member, or an iterator of them (a generator), drawn as slots free up. until: stop rules
as `uwjit ensemble --until` takes them, e.g. ["change:heat<1e-9", "steps:5000"] (a step cap is
required). batch: members stepped together (0:
what the threads step from their caches, at most what fits in memory). keep: members are kept in memory for take() (at most `capacity` at a time, when
given: a member then waits in the batch until take() makes room); output: also (or, with
keep=False, only) an HDF5 file, which must not exist yet. comm: None, or an mpi4py
communicator to spread the members over (collective: every rank makes the ensemble with the same
arguments and steps it alike; members that stop go to rank 0, whose take() and output get them).
resume: a checkpoint (Ensemble.checkpoint) to go on from, bit for bit, made by an ensemble of the
same arguments (checked); output then appends the members its file does not hold yet. vtk: a
directory where each member that leaves is also written for ParaView (NODE_ID.vti).
stages: a pipeline, one stage per rank of comm: the first stage is `until` (and `params`),
each later one a dict {"params": {name: value}, "until": [rules]}; a member that stops in a
stage goes on in the next from its state there, with that stage's params (its varied values
stay its own) and rules. mode: "sync", "async_recv" or "fully_async" (when transfers are waited
for); buffer: the most members a stage sends on per step round (0: the batch). The last rank
holds the sinks (its take() and output get the members). device: "cpu", "cuda" or "cuda:N":
on a CUDA device every member's state stays in device memory while it steps and a stage of a
step is one launch for all of them (the default batch then from the device's free memory).
Raises UsageError naming what is wrong:
an unknown param, an empty range, a rule naming no integral, an output that cannot be written,
members whose layouts or kernels differ. The GIL is held while it runs (members are Python code).)doc")
      .def(py::init([](std::shared_ptr<engine::Engine> engine, py::object make,
                       const py::handle& params, const py::object& vary, const py::object& samples,
                       const py::object& random, const std::vector<std::string>& until,
                       const py::handle& batch, const py::object& threads, const py::object& output,
                       bool keep, const py::object& capacity, const py::object& comm,
                       const py::object& resume, const py::object& vtk, const py::object& stages,
                       const std::string& mode, const py::handle& buffer,
                       const std::string& device) {
             auto self = std::make_unique<PyEnsemble>();
             self->engine = std::move(engine);
             self->factory = make;
             runtime::EnsembleOptions options;
             self->comm = comm_of(comm);
             options.comm = self->comm.get();
             if (!resume.is_none()) {
               options.resume = resume.cast<std::filesystem::path>();
             }
             if (!vtk.is_none()) {
               options.vtk = vtk.cast<std::filesystem::path>();
             }
             options.until = runtime::StopRule::parse(until);
             std::vector<runtime::PipelineStage> later = stages_of(stages);
             const auto pipe_mode = runtime::parse_pipeline_mode(mode);
             const std::int64_t pipe_buffer = int_arg(buffer, "Ensemble: buffer", 0);
             // The rank that holds the sinks: rank 0, or a pipeline's last stage.
             const int holder =
                 !later.empty() && self->comm != nullptr ? self->comm->size() - 1 : 0;
             options.batch = int_arg(batch, "Ensemble: batch", 0);
             options.device = device;
             if (!threads.is_none()) {
               options.threads = static_cast<int>(int_arg(threads, "Ensemble: threads", 1, 4096));
             }
             std::vector<std::shared_ptr<runtime::MemberSink>> sinks;
             if (keep) {
               self->memory = std::make_shared<runtime::MemorySink>(
                   capacity.is_none()
                       ? std::size_t{1} << 40
                       : static_cast<std::size_t>(int_arg(capacity, "Ensemble: capacity", 1)));
               sinks.push_back(self->memory);
             }
             if (!output.is_none()) {
               // The holder's file: a path it refuses is an error on every rank.
               const auto path = output.cast<std::filesystem::path>();
               auto open = [&] {
                 if (self->comm == nullptr || self->comm->rank() == holder) {
                   sinks.push_back(std::make_shared<runtime::FileSink>(
                       path, -1,
                       options.resume.empty() ? runtime::FileSink::Open::create
                                              : runtime::FileSink::Open::append));
                 }
               };
               if (self->comm != nullptr) {
                 comm::together(*self->comm, open);
               } else {
                 open();
               }
             }
             if (sinks.empty()) {
               throw Error(ErrorKind::usage,
                           "Ensemble: keep=False and no output: the members would go nowhere");
             }
             py::object factory = make;
             runtime::MemberFactory member = [factory](const runtime::Params& p) {
               py::object node;
               try {
                 node = factory(from_params(p));
               } catch (py::error_already_set& raised) {
                 // A uwjit.Error the factory raised (UsageError: the member's params refused)
                 // makes that member fail; anything else is the factory's own failure.
                 const PythonError error("Ensemble: make", std::move(raised));
                 if (const auto kind = error_kind_of(error)) {
                   throw Error(*kind, error.what());
                 }
                 throw error;
               }
               if (!py::isinstance<runtime::Node>(node)) {
                 throw py::type_error("Ensemble: make(params) must return a uwjit.Node, got " +
                                      type_name(node));
               }
               // The member holds its Python object (a subclass's methods live there) until
               // it leaves; the last reference is dropped with the GIL.
               auto cpp = node.cast<std::shared_ptr<runtime::Node>>();
               auto* raw = cpp.get();
               auto held = std::make_shared<py::object>(std::move(node));
               return std::shared_ptr<const runtime::Node>(
                   raw,
                   [cpp = std::move(cpp), held = std::move(held)](const runtime::Node*) mutable {
                     py::gil_scoped_acquire gil;
                     held.reset();
                     cpp.reset();
                   });
             };
             if (!later.empty()) {
               later.insert(later.begin(), runtime::PipelineStage{{}, options.until});
               self->pipeline = std::make_unique<runtime::Pipeline>(
                   *self->engine, std::move(member), to_params(params, "Ensemble: params"),
                   sampler_of(vary, samples, random), std::move(sinks),
                   runtime::PipelineOptions{.stages = std::move(later),
                                            .mode = pipe_mode,
                                            .buffer = pipe_buffer,
                                            .batch = options.batch,
                                            .memory_fraction = options.memory_fraction,
                                            .threads = options.threads,
                                            .device = options.device,
                                            .comm = options.comm,
                                            .vtk = options.vtk,
                                            .resume = options.resume});
               return self;
             }
             self->ensemble = std::make_unique<runtime::Ensemble>(
                 *self->engine, std::move(member), to_params(params, "Ensemble: params"),
                 sampler_of(vary, samples, random), std::move(sinks), std::move(options));
             return self;
           }),
           py::arg("engine").none(false), py::arg("make"), py::arg("params"),
           py::arg("vary") = py::none(), py::arg("samples") = py::none(),
           py::arg("random") = py::none(), py::arg("until") = std::vector<std::string>{},
           py::arg("batch") = 0, py::arg("threads") = py::none(), py::arg("output") = py::none(),
           py::arg("keep") = true, py::arg("capacity") = py::none(), py::arg("comm") = py::none(),
           py::arg("resume") = py::none(), py::arg("vtk") = py::none(),
           py::arg("stages") = py::none(), py::arg("mode") = "async_recv", py::arg("buffer") = 0,
           py::arg("device") = "cpu")
      .def(
          "step",
          [](PyEnsemble& self) {
            const Hold hold(self, "step");
            return self.advance(1);
          },
          "One step of every member still stepping; the members that stop leave, their slots "
          "refilled. Returns whether members remain.")
      .def(
          "run",
          [](PyEnsemble& self, const py::object& callback) {
            // Over ranks, a callback that raises on one rank stops every rank after the same
            // round (that rank raises its own exception, the others a UsageError naming it).
            auto after = [&] {
              if (callback.is_none()) {
                return;
              }
              if (self.comm != nullptr) {
                comm::together(*self.comm, [&] { callback(); });
              } else {
                callback();
              }
            };
            const auto round = [&] {
              const Hold hold(self, "run");
              return self.advance(runtime::Ensemble::round_steps);
            };
            while (round()) {
              after();
            }
            after();
          },
          py::arg("callback") = py::none(),
          "Steps until every member has left, in rounds of up to 16 steps, calling callback() "
          "after each round; under MPI, a callback that raises on one rank stops every rank "
          "after the same round.")
      .def(
          "checkpoint",
          [](PyEnsemble& self, const std::filesystem::path& path) {
            const Hold hold(self, "checkpoint");
            if (self.pipeline) {
              self.pipeline->checkpoint(path);
            } else {
              self.ensemble->checkpoint(path);
            }
          },
          py::arg("path"),
          "Writes what Ensemble(..., resume=path) needs to go on from here (atomically): the "
          "sampler's position, every member in the batch with its state, the members that left "
          "and those waiting. Members already taken from memory are not kept.")
      .def(
          "advance",
          [](PyEnsemble& self, const py::handle& steps) {
            const std::int64_t count = int_arg(steps, "Ensemble.advance: steps", 1);
            const Hold hold(self, "advance");
            return self.advance(count);
          },
          py::arg("steps"),
          "Up to `steps` steps of every member still stepping, in one round (members are judged "
          "after each step; those that stop leave when the round ends). Returns whether members "
          "remain.")
      .def(
          "take",
          [](PyEnsemble& self) {
            const Hold hold(self, "take");
            py::list out;
            if (self.memory) {
              for (const auto& r : self.memory->take()) {
                out.append(result_dict(self.stage(), r));
              }
            }
            return out;
          },
          "The members kept in memory since the last take(), in the order they left: dicts with "
          "id, params, steps, status, reason, integrals and fields (numpy arrays of the "
          "interiors).")
      .def_property_readonly(
          "summaries",
          [](PyEnsemble& self) {
            const Hold hold(self, "summaries");
            py::list out;
            for (const auto& r : self.stage().summaries()) {
              out.append(result_dict(self.stage(), r));
            }
            return out;
          },
          "Every member that has left (a pipeline's stage: left this rank's stage), without its "
          "fields.")
      .def_property_readonly(
          "batch_size", [](const PyEnsemble& self) { return self.stage().batch_size(); },
          "Members stepped together.")
      .def_property_readonly(
          "batch_reason", [](const PyEnsemble& self) { return self.stage().batch_reason(); },
          "Why the batch is that size (set, the threads' caches, memory, or the sampler's "
          "members).")
      .def_property_readonly(
          "device", [](const PyEnsemble& self) { return self.stage().device(); },
          "Where the batch runs: \"cpu\", or the CUDA device it runs on.")
      .def_property_readonly(
          "finished",
          [](const PyEnsemble& self) {
            return self.pipeline ? self.pipeline->finished() : self.ensemble->finished();
          },
          "Members that have left (over every rank under MPI; a pipeline's last stage).")
      .def_property_readonly(
          "active", [](const PyEnsemble& self) { return self.stage().active(); },
          "Members in this process's batch now.")
      .def_property_readonly(
          "waiting", [](const PyEnsemble& self) { return self.stage().waiting(); },
          "Members that stopped and wait for room in a sink.")
      .def_property_readonly(
          "member_steps",
          [](const PyEnsemble& self) {
            return self.pipeline ? self.pipeline->member_steps() : self.ensemble->member_steps();
          },
          "Member-steps taken in all (over every rank under MPI).")
      .def_property_readonly(
          "varied", [](const PyEnsemble& self) { return self.stage().varied(); },
          "The varied params, in the order of each member's params.")
      .def_property_readonly(
          "integrals", [](const PyEnsemble& self) { return self.stage().integrals(); },
          "The node's integrals, in the order of each member's integrals.")
      .def_property_readonly(
          "kernel_reports", [](const PyEnsemble& self) { return self.stage().kernel_reports(); },
          "The batch kernels (one per stage of the node's step) and what the engine did for them.")
      .def("__repr__", [](const PyEnsemble& self) {
        const auto& e = self.stage();
        return "Ensemble(node=" + e.node_type() + ", batch=" + std::to_string(e.batch_size()) +
               ", finished=" + std::to_string(e.finished()) + ")";
      });
}

} // namespace uwjit::python
