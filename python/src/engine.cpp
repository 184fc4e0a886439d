// uwjit.Engine, uwjit.Source and uwjit.KernelInfo: kernel requests through the three tiers.
#include "kernel.hpp"

#include <uwjit/cache/stats.hpp>
#include <uwjit/common/env.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <cmath>

namespace uwjit::python {
namespace {

SlotSpec slot_spec(const py::handle& item, std::string_view table) {
  if (py::isinstance<py::str>(item)) {
    return {item.cast<std::string>(), std::nullopt, std::nullopt};
  }
  if (!py::isinstance<py::tuple>(item) || py::len(item) != 3) {
    throw py::type_error(std::string(table) +
                         ": each slot is a name or a tuple (name, dtype, shape), got " +
                         py::repr(item).cast<std::string>());
  }
  const auto entry = item.cast<py::tuple>();
  if (!py::isinstance<py::str>(entry[0])) {
    throw py::type_error(std::string(table) + ": a slot's name is a str, got " +
                         type_name(entry[0]));
  }
  SlotSpec spec;
  spec.name = entry[0].cast<std::string>();
  spec.dtype = dtype_arg(entry[1], std::string(table) + " \"" + spec.name + "\"");
  if (!py::isinstance<py::iterable>(entry[2]) || py::isinstance<py::str>(entry[2])) {
    throw py::type_error(std::string(table) + " \"" + spec.name +
                         "\": the shape is a sequence of ints and run-time extent names, got " +
                         type_name(entry[2]));
  }
  std::vector<ShapeAxis> shape;
  for (const auto axis : entry[2].cast<py::iterable>()) {
    if (py::isinstance<py::str>(axis)) {
      shape.push_back({.extent = axis.cast<std::string>(), .count = 0});
    } else {
      shape.push_back(
          {.extent = {},
           .count = int_arg(axis, std::string(table) + " \"" + spec.name + "\": shape", 1)});
    }
  }
  spec.shape = std::move(shape);
  return spec;
}

std::vector<std::string> names(const py::iterable& items, std::string_view table) {
  std::vector<std::string> out;
  for (const auto item : items) {
    if (!py::isinstance<py::str>(item)) {
      throw py::type_error(std::string(table) + ": names are str, got " +
                           py::repr(item).cast<std::string>());
    }
    out.push_back(item.cast<std::string>());
  }
  return out;
}

codegen::KernelSource source_arg(const py::handle& source) {
  return source.cast<const PySource&>().source;
}

} // namespace

PySource make_source(const std::string& text, const std::optional<std::string>& entry,
                     const py::iterable& state_in, const py::iterable& state_out,
                     const py::iterable& statics, const py::iterable& extents,
                     const py::iterable& integrals) {
  BufferSpecs specs;
  codegen::SlotTables slots;
  const py::iterable tables[3] = {state_in, state_out, statics};
  const char* table_names[3] = {"state_in", "state_out", "statics"};
  std::vector<std::string>* slot_tables[3] = {&slots.state_in, &slots.state_out, &slots.statics};
  for (int t = 0; t < 3; ++t) {
    for (const auto item : tables[t]) {
      specs.tables[t].push_back(slot_spec(item, table_names[t]));
      slot_tables[t]->push_back(specs.tables[t].back().name);
    }
  }
  slots.extents = names(extents, "extents");
  slots.integrals = names(integrals, "integrals");
  auto source = entry ? codegen::KernelSource::from_text(text, *entry, std::move(slots))
                      : codegen::KernelSource::generated("python", text, std::move(slots));
  return PySource{std::move(source), std::move(specs)};
}

BufferSpecs specs_of_slots(const codegen::SlotTables& slots) {
  BufferSpecs specs;
  const std::vector<std::string>* tables[3] = {&slots.state_in, &slots.state_out, &slots.statics};
  for (int t = 0; t < 3; ++t) {
    for (const auto& name : *tables[t]) {
      specs.tables[t].push_back({name, std::nullopt, std::nullopt});
    }
  }
  return specs;
}

py::object kernel_info(const engine::KernelInfo& info) {
  return py::cast(info);
}

void bind_engine(py::module_& m) {
  py::class_<engine::KernelInfo>(m, "KernelInfo", "What a kernel request did and what it cost.")
      .def_readonly("key", &engine::KernelInfo::key, "The cache key (16 hex digits).")
      .def_readonly("entry", &engine::KernelInfo::entry, "The entry symbol.")
      .def_readonly("origin", &engine::KernelInfo::origin,
                    "The node that emitted it, or \"source\".")
      .def_property_readonly(
          "tier", [](const engine::KernelInfo& i) { return std::string(to_string(i.tier)); },
          "Which tier served it: \"memory\", \"disk\", \"compiled\" or \"received\".")
      .def_property_readonly(
          "compile_ms",
          [](const engine::KernelInfo& i) {
            py::dict d;
            d["frontend"] = i.compile.frontend_ms;
            d["optimise"] = i.compile.optimise_ms;
            d["codegen"] = i.compile.codegen_ms;
            d["total"] = i.compile.total_ms();
            return d;
          },
          "Compile timings in ms (zero unless tier == \"compiled\").")
      .def_readonly("load_ms", &engine::KernelInfo::load_ms,
                    "The JIT link of the object into the process, in ms.")
      .def_readonly("request_ms", &engine::KernelInfo::request_ms,
                    "The whole request, from the call to a callable kernel, in ms.")
      .def_readonly("object_size", &engine::KernelInfo::object_size,
                    "The size of the object (or PTX) in bytes.")
      .def_readonly("warnings", &engine::KernelInfo::warnings,
                    "The compiler's warnings as printed (replayed from the entry on a disk "
                    "hit); \"\" when there were none.")
      .def_property_readonly(
          "publication",
          [](const engine::KernelInfo& i) { return std::string(to_string(i.publication)); },
          "\"not_needed\", \"published\" or \"not_published\".")
      .def_readonly("not_published_because", &engine::KernelInfo::not_published_because,
                    "Why a compiled kernel was not published to the disk cache (UWJIT_CACHE=0, "
                    "an unusable directory, a failed write); \"\" otherwise.")
      .def_readonly("served_from", &engine::KernelInfo::served_from,
                    "The disk tier: the cache directory or read-only site cache whose entry "
                    "served it; \"\" for the other tiers.")
      .def("__repr__", [](const engine::KernelInfo& i) {
        return "KernelInfo(key=\"" + i.key + "\", tier=\"" + to_string(i.tier) + "\", origin=\"" +
               i.origin + "\")";
      });

  py::class_<PySource>(m, "Source", R"doc(
A kernel's text and its slot tables, for Engine.kernel and Engine.kernels.

Source(text, entry=None, state_in=(), state_out=(), statics=(), extents=(), integrals=())

text defines `extern "C" int ENTRY(const uwjit_kernel_args* args)` and returns 0 (the ABI
header and the math prelude come first; no standard headers). With entry=None the text names
its entry __UWJIT_ENTRY__ and uwjit names it after the key; otherwise entry is its fixed name.
Each buffer slot is a name, or a tuple (name, dtype, shape) that calls are checked against: a
shape entry is a number or the name of a run-time extent (its value in that call).)doc")
      .def(py::init(&make_source), py::arg("text"), py::arg("entry") = py::none(),
           py::arg("state_in") = py::tuple(), py::arg("state_out") = py::tuple(),
           py::arg("statics") = py::tuple(), py::arg("extents") = py::tuple(),
           py::arg("integrals") = py::tuple())
      .def_property_readonly(
          "canonical", [](const PySource& s) { return s.source.canonical(); },
          "The text the key is computed over.")
      .def_property_readonly(
          "body", [](const PySource& s) { return s.source.body(); },
          "The kernel's own text, as given (without the ABI header and the prelude).")
      .def("__repr__", [](const PySource& s) {
        const auto& slots = s.source.slots();
        std::string text =
            "Source(origin=" + py::repr(py::str(s.source.origin())).cast<std::string>();
        const std::pair<const char*, const std::vector<std::string>*> tables[] = {
            {"state_in", &slots.state_in},   {"state_out", &slots.state_out},
            {"statics", &slots.statics},     {"extents", &slots.extents},
            {"integrals", &slots.integrals}, {"params", &slots.params}};
        for (const auto& [name, names] : tables) {
          if (!names->empty()) {
            text += ", " + std::string(name) + "=" + py::repr(py::cast(*names)).cast<std::string>();
          }
        }
        return text + ", " + std::to_string(s.source.body().size()) + " characters)";
      });

  py::class_<engine::Engine, std::shared_ptr<engine::Engine>>(m, "Engine", R"doc(
Turns kernel sources into loaded kernels: the in-process memory cache, then the verified disk
cache, then a cold in-process compile published atomically. Thread-safe.

Engine(cache_dir=None, disk_cache=True, lock_timeout=None, dump_dir=None)

cache_dir overrides UWJIT_CACHE_DIR / XDG_CACHE_HOME / ~/.cache/uwjit; disk_cache=False keeps
kernels in memory only; lock_timeout (seconds) is how long to wait for another process that
compiles the same key; dump_dir receives each compiled kernel's source, IR and assembly.
Raises UsageError for bad options or environment variables, JitError if the JIT cannot start.)doc")
      .def(py::init([](std::optional<std::filesystem::path> cache_dir, bool disk_cache,
                       std::optional<double> lock_timeout,
                       std::optional<std::filesystem::path> dump_dir) {
             auto options = engine::EngineOptions::from_environment();
             if (cache_dir) {
               options.cache_dir = std::move(cache_dir);
             }
             if (!disk_cache) {
               options.disk_cache = engine::DiskCache::off;
             }
             if (lock_timeout) {
               // The range of UWJIT_LOCK_TIMEOUT: whole milliseconds that the clock can add.
               if (!std::isfinite(*lock_timeout) || *lock_timeout < 0 ||
                   *lock_timeout > env::k_max_seconds) {
                 throw py::value_error(
                     format("Engine: lock_timeout must be a number of seconds from 0 to {}",
                            env::k_max_seconds));
               }
               options.lock_timeout = std::chrono::milliseconds(
                   static_cast<std::int64_t>(std::llround(*lock_timeout * 1000)));
             }
             if (dump_dir) {
               options.dump_dir = std::move(dump_dir);
             }
             py::gil_scoped_release release;
             return std::make_shared<engine::Engine>(std::move(options));
           }),
           py::arg("cache_dir") = py::none(), py::arg("disk_cache") = true,
           py::arg("lock_timeout") = py::none(), py::arg("dump_dir") = py::none())
      .def(
          "kernel",
          [](engine::Engine& self, const py::object& source,
             const std::optional<std::string>& entry, const py::iterable& state_in,
             const py::iterable& state_out, const py::iterable& statics,
             const py::iterable& extents, const py::iterable& integrals) {
            if (!py::isinstance<PySource>(source) && !py::isinstance<py::str>(source)) {
              throw py::type_error("Engine.kernel: expected a uwjit.Source or the kernel's text "
                                   "(a str), got " +
                                   type_name(source));
            }
            PySource request = py::isinstance<PySource>(source)
                                   ? source.cast<const PySource&>()
                                   : make_source(source.cast<std::string>(), entry, state_in,
                                                 state_out, statics, extents, integrals);
            std::optional<engine::Kernel> kernel;
            {
              py::gil_scoped_release release;
              kernel.emplace(self.kernel(request.source));
            }
            return PyKernel{std::move(*kernel), std::move(request.specs)};
          },
          py::arg("source"), py::arg("entry") = py::none(), py::arg("state_in") = py::tuple(),
          py::arg("state_out") = py::tuple(), py::arg("statics") = py::tuple(),
          py::arg("extents") = py::tuple(), py::arg("integrals") = py::tuple(), R"doc(
The kernel for `source` (a str, with the other arguments as for Source, or a Source).
Raises CompileError (with .diagnostics, .line, .column), JitError, UsageError. The GIL is
released while the kernel is looked up or compiled.)doc")
      .def(
          "kernels",
          [](engine::Engine& self, const py::iterable& sources, const py::object& comm) {
            std::vector<codegen::KernelSource> requests;
            std::vector<BufferSpecs> specs;
            for (const auto item : sources) {
              if (!py::isinstance<PySource>(item)) {
                throw py::type_error("Engine.kernels: each source must be a uwjit.Source, got " +
                                     type_name(item));
              }
              requests.push_back(source_arg(item));
              specs.push_back(item.cast<const PySource&>().specs);
            }
            const auto communicator = comm_of(comm);
            std::vector<engine::Kernel> kernels;
            {
              py::gil_scoped_release release;
              kernels = self.kernels(requests, communicator.get());
            }
            py::list out;
            for (std::size_t i = 0; i < kernels.size(); ++i) {
              out.append(PyKernel{std::move(kernels[i]), std::move(specs[i])});
            }
            return out;
          },
          py::arg("sources"), py::arg("comm") = py::none(), R"doc(
The kernels for a list of Source, in order; distinct cold kernels compile in parallel.
With comm (an mpi4py communicator) the request is collective: every rank passes the same
sources; rank 0 compiles or loads each missing kernel once for the job and the others receive
it; a key mismatch or compile error raises the same error on every rank.)doc")
      .def(
          "ptx",
          [](engine::Engine& self, const py::object& sources, const std::string& target,
             const py::object& comm) -> py::object {
            const auto parsed = engine::Target::parse(target);
            const bool one = py::isinstance<PySource>(sources);
            std::vector<codegen::KernelSource> requests;
            if (one) {
              requests.push_back(source_arg(sources));
            } else {
              for (const auto item : py::iterable(sources)) {
                if (!py::isinstance<PySource>(item)) {
                  throw py::type_error("Engine.ptx: each source must be a uwjit.Source, got " +
                                       type_name(item));
                }
                requests.push_back(source_arg(item));
              }
            }
            const auto communicator = comm_of(comm);
            std::vector<engine::PtxKernel> got;
            {
              py::gil_scoped_release release;
              got = self.ptx(requests, parsed, communicator.get());
            }
            py::list out;
            for (const auto& kernel : got) {
              out.append(py::make_tuple(*kernel.ptx, *kernel.info));
            }
            return one ? py::object(out[0]) : py::object(out);
          },
          py::arg("sources"), py::arg("target"), py::arg("comm") = py::none(), R"doc(
The PTX of a Source (or of each Source in a list) compiled for `target`, "cuda:sm_XX", as a
(text, KernelInfo) tuple (a list of them), through the same memory and disk tiers as kernel();
uwjit does not load it. A GPU kernel's entry is extern "C" __attribute__((nvptx_kernel)) void;
uwjit.node_kernels(node, gpu=True) gives a node's. With comm (an mpi4py communicator) the
request is collective: one compile per job. Raises UsageError for a host or unknown target,
CompileError (libdevice missing for exp/log/pow/tanh: set UWJIT_CUDA_PATH).)doc")
      .def(
          "key_of",
          [](const engine::Engine& self, const PySource& source) {
            return self.key_of(source.source).hex();
          },
          py::arg("source"), "The cache key `source` has under this engine (16 hex digits).")
      .def(
          "stats",
          [](const engine::Engine& self) {
            const auto snapshot = self.stats();
            py::dict out;
            for (const auto stat : cache::k_all_stats) {
              out[py::str(std::string(cache::to_string(stat)))] = snapshot.get(stat);
            }
            return out;
          },
          "This engine's counters by name: memory_hits, disk_hits, compiles, rejected, ...")
      .def_property_readonly("cache_dir", &engine::Engine::cache_dir,
                             "The cache directory in use, or None when memory-only.")
      .def("__repr__",
           [](const engine::Engine& self) {
             const auto dir = self.cache_dir();
             return dir ? "Engine(cache_dir=" +
                              py::repr(py::str(dir->string())).cast<std::string>() + ")"
                        : std::string("Engine(disk_cache=False)");
           })
      .def_property_readonly("site_cache_dirs", &engine::Engine::site_cache_dirs,
                             "The read-only site caches (UWJIT_CACHE_SITE_DIR) consulted after "
                             "the cache directory misses, in order; those that cannot be used "
                             "are left out, with one warning.");
}

} // namespace uwjit::python
