// uwjit.Kernel and its call: numpy arrays bound zero-copy through the ABI's pointer tables,
// every argument checked before the call (TypeError / ValueError naming the slot), the GIL
// released while the kernel runs.
#include "kernel.hpp"

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/common/error.hpp>
#include <uwjit/common/text.hpp>

#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace uwjit::python {
namespace {

constexpr const char* k_table_names[3] = {"state_in", "state_out", "statics"};

std::string shape_of(const py::array& array) {
  return shape_text(std::vector<std::int64_t>(array.shape(), array.shape() + array.ndim()));
}

// The bytes of one buffer of a call, for the overlap check.
struct Span {
  std::uintptr_t begin;
  std::uintptr_t end;
  int table;
  const std::string* slot;
};

// The value of a declared axis at a call: its count, plus its run-time extent's value.
std::int64_t axis_value(const ShapeAxis& axis,
                        const std::vector<std::pair<std::string, std::int64_t>>& extents,
                        const std::function<std::string()>& what) {
  if (axis.extent.empty()) {
    return axis.count;
  }
  const auto found = std::find_if(extents.begin(), extents.end(),
                                  [&](const auto& e) { return e.first == axis.extent; });
  if (found == extents.end()) {
    throw py::value_error(what() + ": its shape names \"" + axis.extent +
                          "\", which is not a run-time extent of the kernel");
  }
  return found->second + axis.count;
}

// The buffers of one table, checked; their data pointers in `pointers`, their bytes in `spans`.
void bind_table(const PyKernel& kernel, int table, const py::sequence& buffers,
                const std::vector<std::string>& slots,
                const std::vector<std::pair<std::string, std::int64_t>>& extents,
                std::vector<void*>& pointers, std::vector<Span>& spans) {
  // Messages are made only on an error: a call on small arrays costs microseconds.
  const auto what = [&] {
    return "kernel " + kernel.kernel.info().origin + ": " + k_table_names[table];
  };
  if (py::len(buffers) != slots.size()) {
    throw py::value_error(what() + " takes " + std::to_string(slots.size()) + " buffer(s) (" +
                          join(slots) + "), got " + std::to_string(py::len(buffers)));
  }
  const auto& specs = kernel.specs.tables[table];
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const py::handle item = buffers[i];
    const auto slot = [&] { return what() + " \"" + slots[i] + "\""; };
    if (!py::isinstance<py::array>(item)) {
      throw py::type_error(slot() + ": expected a numpy.ndarray, got " + type_name(item));
    }
    const auto array = py::reinterpret_borrow<py::array>(item);
    const auto dtype = dtype_of(array.dtype());
    if (!dtype) {
      throw py::type_error(slot() + ": unsupported dtype " +
                           py::str(array.dtype()).cast<std::string>() +
                           " (accepted: float32, float64, int8, uint8, int32, int64)");
    }
    if ((array.flags() & py::array::c_style) == 0) {
      throw py::value_error(slot() + ": the array must be C-contiguous (numpy.ascontiguousarray)");
    }
    if (table == 1 && !array.writeable()) {
      throw py::value_error(slot() + ": the array is read-only, and the kernel writes it");
    }
    if (array.size() == 0) {
      throw py::value_error(slot() + ": the array is empty");
    }
    if (i < specs.size() && specs[i].dtype && *specs[i].dtype != *dtype) {
      throw py::type_error(slot() + ": expected dtype " + std::string(to_string(*specs[i].dtype)) +
                           ", got " + std::string(to_string(*dtype)));
    }
    if (i < specs.size() && specs[i].shape) {
      std::vector<std::int64_t> expected;
      for (const auto& axis : *specs[i].shape) {
        expected.push_back(axis_value(axis, extents, slot));
      }
      const std::vector<std::int64_t> got(array.shape(), array.shape() + array.ndim());
      if (got != expected) {
        throw py::value_error(slot() + ": expected shape " + shape_text(expected) + ", got " +
                              shape_of(array));
      }
    }
    if (i < specs.size() && specs[i].aligned &&
        reinterpret_cast<std::uintptr_t>(array.data()) % 64 != 0) {
      throw py::value_error(slot() + ": the kernel (made by a KernelWriter) assumes 64-byte "
                                     "aligned buffers; make the array with uwjit.empty or "
                                     "uwjit.zeros");
    }
    pointers.push_back(const_cast<void*>(array.data()));
    const auto begin = reinterpret_cast<std::uintptr_t>(array.data());
    spans.push_back({begin, begin + static_cast<std::uintptr_t>(array.nbytes()), table, &slots[i]});
  }
}

// A KernelWriter's kernel reads its inputs as they were before the call (its loops are
// vectorised on that): a state output that shares memory with another buffer would give wrong
// values silently, e.g. an update in place (the same array as state_in and state_out).
void check_outputs_apart(const PyKernel& kernel, const std::vector<Span>& spans) {
  for (std::size_t o = 0; o < spans.size(); ++o) {
    if (spans[o].table != 1) {
      continue;
    }
    for (std::size_t b = 0; b < spans.size(); ++b) {
      if (b == o || spans[b].begin >= spans[o].end || spans[o].begin >= spans[b].end ||
          (spans[b].table == 1 && b < o)) {
        continue;
      }
      throw py::value_error("kernel " + kernel.kernel.info().origin + ": state_out \"" +
                            *spans[o].slot + "\" shares memory with " +
                            k_table_names[spans[b].table] + " \"" + *spans[b].slot +
                            "\": a KernelWriter's kernel reads its inputs as they were before the "
                            "call, so each state output needs an array of its own (an update in "
                            "place writes into a second array, then swaps them)");
    }
  }
}

py::dict call(const PyKernel& kernel, const py::sequence& state_in, const py::sequence& state_out,
              const py::sequence& statics, const py::sequence& extents, const py::handle& params,
              double dt, std::int64_t step, const std::optional<std::vector<std::int64_t>>& domain,
              std::int64_t native_calls = 0, double* native_seconds = nullptr) {
  const auto& slots = kernel.kernel.info().slots;
  const auto what = [&] { return "kernel " + kernel.kernel.info().origin; };
  if (py::len(extents) != slots.extents.size()) {
    throw py::value_error(what() + ": extents takes " + std::to_string(slots.extents.size()) +
                          " value(s) (" + join(slots.extents) + "), got " +
                          std::to_string(py::len(extents)));
  }
  std::vector<std::pair<std::string, std::int64_t>> named_extents;
  std::vector<uw_i64> extent_values;
  for (std::size_t i = 0; i < slots.extents.size(); ++i) {
    const py::object item = extents[i];
    // A plain int in range costs no message; anything else goes through int_arg's checks.
    int overflow = 0;
    std::int64_t value =
        PyLong_CheckExact(item.ptr()) ? PyLong_AsLongLongAndOverflow(item.ptr(), &overflow) : 0;
    if (value < 1 || overflow != 0) {
      PyErr_Clear();
      value = int_arg(item, what() + ": extent \"" + slots.extents[i] + "\"", 1);
    }
    named_extents.emplace_back(slots.extents[i], value);
    extent_values.push_back(value);
  }
  // Run-time params by name, in the order of the params slot table.
  std::vector<double> param_values;
  if (!params.is_none() && !py::isinstance<py::dict>(params)) {
    throw py::type_error(what() + ": run_time_params: expected a dict of name → float, got " +
                         type_name(params));
  }
  const py::dict given = params.is_none() ? py::dict() : params.cast<py::dict>();
  for (const auto& name : slots.params) {
    if (!given.contains(name)) {
      throw py::value_error(what() + ": run_time_params lacks \"" + name + "\" (the kernel reads " +
                            join(slots.params) + ")");
    }
    const py::object value = given[py::str(name)];
    param_values.push_back(PyFloat_CheckExact(value.ptr())
                               ? PyFloat_AS_DOUBLE(value.ptr())
                               : float_arg(value, what() + ": param \"" + name + "\""));
  }
  for (const auto [key, value] : given) {
    const auto name = py::str(key).cast<std::string>();
    if (std::find(slots.params.begin(), slots.params.end(), name) == slots.params.end()) {
      throw py::value_error(
          what() + ": unknown run-time param \"" + name + "\" (the kernel reads " +
          (slots.params.empty() ? std::string("none") : join(slots.params)) + ")");
    }
  }
  std::vector<void*> pointers[3];
  std::vector<Span> spans;
  bind_table(kernel, 0, state_in, slots.state_in, named_extents, pointers[0], spans);
  bind_table(kernel, 1, state_out, slots.state_out, named_extents, pointers[1], spans);
  bind_table(kernel, 2, statics, slots.statics, named_extents, pointers[2], spans);
  if (kernel.specs.separate_outputs) {
    check_outputs_apart(kernel, spans);
  }

  uwjit_kernel_args args{};
  args.state_in = pointers[0].data();
  args.state_out = pointers[1].data();
  args.statics = pointers[2].data();
  args.extents = extent_values.data();
  args.params = param_values.data();
  args.dt = dt;
  args.step = step;
  // The update box: the domain given, or a KernelWriter's whole domain; never beyond its
  // extents, where the kernel's loops would read and write past the buffers.
  std::optional<std::vector<std::int64_t>> box = domain;
  const auto& declared = kernel.specs.domain;
  if (!declared.empty()) {
    std::vector<std::int64_t> whole;
    for (const auto& axis : declared) {
      whole.push_back(axis_value(axis, named_extents, what));
    }
    if (box && box->size() != whole.size()) {
      throw py::value_error(what() + ": domain has " + std::to_string(whole.size()) +
                            " axes (the kernel's domain is " + shape_text(whole) + "), got " +
                            std::to_string(box->size()));
    }
    for (std::size_t d = 0; box && d < whole.size(); ++d) {
      if ((*box)[d] < 1 || (*box)[d] > whole[d]) {
        throw py::value_error(what() + ": domain " + shape_text(*box) + ": axis " +
                              std::to_string(d) + " is " + std::to_string((*box)[d]) +
                              ", outside 1 to " + std::to_string(whole[d]) +
                              " (the kernel's domain is " + shape_text(whole) + ")");
      }
    }
    if (!box) {
      box = std::move(whole);
    }
  }
  if (box) {
    if (box->empty() || box->size() > UWJIT_MAX_AXES) {
      throw py::value_error(what() + ": domain has 1 to 3 axes, got " +
                            std::to_string(box->size()));
    }
    for (std::size_t d = 0; d < box->size(); ++d) {
      args.shard_extent[d] = args.global_extent[d] = args.update_end[d] = (*box)[d];
    }
  }
  std::vector<double> integrals(slots.integrals.size(), 0.0);
  args.integrals = integrals.data();
  int status = 0;
  if (native_calls > 0) {
    // The benchmark's baseline: the same bound call repeated from C++, timed there.
    py::gil_scoped_release release;
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < native_calls && status == 0; ++i) {
      status = kernel.kernel(args);
    }
    *native_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } else {
    py::gil_scoped_release release;
    status = kernel.kernel(args);
  }
  if (status != UWJIT_KERNEL_OK) {
    throw Error(ErrorKind::kernel, what() + " returned status " + std::to_string(status));
  }
  py::dict out;
  const auto& reductions = kernel.specs.integral_reductions;
  for (std::size_t i = 0; i < integrals.size(); ++i) {
    out[py::str(slots.integrals[i])] =
        i < reductions.size() ? codegen::value_of(reductions[i], integrals[i]) : integrals[i];
  }
  return out;
}

} // namespace

void bind_kernel_call(py::module_& m) {
  m.def(
      "_numpy_dtype",
      [](const py::handle& dtype, std::string_view what) {
        return numpy_dtype(dtype_arg(dtype, what));
      },
      py::arg("dtype"), py::arg("what"),
      "The numpy dtype of a kernel dtype (\"f64\", numpy.float64, float, ...) for uwjit.empty; "
      "TypeError naming `what` for another.");
  py::class_<PyKernel>(m, "Kernel", R"doc(
A loaded kernel, made by Engine.kernel. Calling it runs it once:

kernel(state_in=(), state_out=(), statics=(), extents=(), dt=1.0, step=0, domain=None,
       params=None) -> dict

Buffers are numpy arrays, passed zero-copy: the kernel reads and writes the caller's memory.
Before the call every argument is checked: the count of each table (ValueError), each buffer
a numpy.ndarray of a supported dtype (TypeError), C-contiguous (ValueError), writable for
state_out (ValueError), and the dtype (TypeError) and shape (ValueError) declared in the
Source; a kernel made by a KernelWriter also needs its state buffers 64-byte aligned
(ValueError; uwjit.empty and uwjit.zeros make such arrays) and each state_out buffer apart from
every other buffer of the call (ValueError: it reads its inputs as they were before the call, so
an update in place writes a second array). extents are ints >= 1, one per run-time extent; a
KernelWriter's kernel also checks the shape of buffers over run-time extents (with their halos).
domain (up to 3 ints) fills the ABI's shard_extent, global_extent and update box for kernels
that read them; for a KernelWriter's kernel it is the whole domain when not given, and an axis
beyond the kernel's extent is a ValueError. run_time_params is a dict giving each run-time param of the kernel
(KernelWriter.param: a value the kernel reads when it runs, not a node param) its value
(ValueError for a missing or unknown name); params= is its deprecated former name. The GIL is
released while the kernel runs. Returns the domain integrals by name; raises KernelError if the kernel
returns a non-zero status.)doc")
      .def(
          "__call__",
          [](const PyKernel& k, const py::sequence& state_in, const py::sequence& state_out,
             const py::sequence& statics, const py::sequence& extents, double dt, std::int64_t step,
             const std::optional<std::vector<std::int64_t>>& domain,
             const py::object& run_time_params, const py::object& params) {
            if (!params.is_none()) {
              if (!run_time_params.is_none()) {
                throw py::type_error("Kernel: give run_time_params, not also params (its "
                                     "deprecated name)");
              }
              if (PyErr_WarnEx(PyExc_DeprecationWarning,
                               "Kernel(params=...) is deprecated (removed in the next release): "
                               "use run_time_params=",
                               1) < 0) {
                throw py::error_already_set();
              }
              return call(k, state_in, state_out, statics, extents, params, dt, step, domain);
            }
            return call(k, state_in, state_out, statics, extents, run_time_params, dt, step,
                        domain);
          },
          py::kw_only(), py::arg("state_in") = py::tuple(), py::arg("state_out") = py::tuple(),
          py::arg("statics") = py::tuple(), py::arg("extents") = py::tuple(), py::arg("dt") = 1.0,
          py::arg("step") = 0, py::arg("domain") = py::none(),
          py::arg("run_time_params") = py::none(), py::arg("params") = py::none(),
          "Runs the kernel once on the arrays given (keywords only; see the class's docstring) "
          "and returns its domain integrals by name.")
      .def(
          "_native_call_seconds",
          [](const PyKernel& k, std::int64_t count, const py::sequence& state_in,
             const py::sequence& state_out, const py::sequence& statics,
             const py::sequence& extents) {
            if (count < 1) {
              throw py::value_error("_native_call_seconds: count must be >= 1");
            }
            double seconds = 0;
            call(k, state_in, state_out, statics, extents, py::none(), 1.0, 0, std::nullopt, count,
                 &seconds);
            return seconds;
          },
          py::arg("count"), py::arg("state_in") = py::tuple(), py::arg("state_out") = py::tuple(),
          py::arg("statics") = py::tuple(), py::arg("extents") = py::tuple(),
          "For the benchmark (tools/bench/python_bench.py): seconds that `count` calls with these "
          "arguments take when repeated from C++ (checked and bound once).")
      .def_property_readonly(
          "info", [](const PyKernel& k) { return k.kernel.info(); },
          "What the request did: tier, key, timings (a KernelInfo).")
      .def("__repr__",
           [](const PyKernel& k) {
             const auto& info = k.kernel.info();
             return "Kernel(origin=" + py::repr(py::str(info.origin)).cast<std::string>() +
                    ", key=" + info.key + ", tier=" + std::string(engine::to_string(info.tier)) +
                    ")";
           })
      .def_property_readonly(
          "slots",
          [](const PyKernel& k) {
            const auto& s = k.kernel.info().slots;
            py::dict d;
            d["state_in"] = s.state_in;
            d["state_out"] = s.state_out;
            d["statics"] = s.statics;
            d["extents"] = s.extents;
            d["integrals"] = s.integrals;
            d["params"] = s.params;
            return d;
          },
          "The slot names of each table, in order.");
}

} // namespace uwjit::python
