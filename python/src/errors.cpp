// uwjit.Error and one subclass per ErrorKind, and the translation of uwjit::Error into them.
// UsageError is also a ValueError, so a caller may catch either. CompileError carries the
// compiler's diagnostics parsed into (line, column, severity, message).
#include "bindings.hpp"

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/common/error.hpp>

#include <array>
#include <charconv>
#include <string>

namespace uwjit::python {
namespace {

// Indexed by ErrorKind; owned by the module for the life of the process.
std::array<PyObject*, static_cast<std::size_t>(k_last_error_kind) + 1> g_classes{};
PyObject* g_error = nullptr;

struct KindClass {
  ErrorKind kind;
  const char* name;
  const char* doc;
};

constexpr KindClass k_kinds[] = {
    {ErrorKind::usage, "UsageError",
     "Bad input from the caller: arguments, environment variables, node declarations. Also a "
     "ValueError."},
    {ErrorKind::io, "IoError", "A file or directory could not be read or written."},
    {ErrorKind::compile, "CompileError",
     "The kernel source did not compile. .diagnostics lists (line, column, severity, message) "
     "with lines counted in the kernel body; .line and .column are the first error's."},
    {ErrorKind::jit, "JitError", "The object could not be linked or its entry not found."},
    {ErrorKind::collective, "CollectiveError",
     "Ranks of an MPI job disagreed (raised on every rank alike)."},
    {ErrorKind::internal, "InternalError", "A bug in uwjit: an assertion failed."},
    {ErrorKind::kernel, "KernelError", "A kernel returned a non-zero status while it ran."},
};

std::optional<long> number_at(std::string_view text, std::size_t& at) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), value);
  if (ec != std::errc{} || end == text.data() + at) {
    return std::nullopt;
  }
  at = static_cast<std::size_t>(end - text.data());
  return value;
}

// Lines "kernel.cpp:LINE:COL: SEVERITY: MESSAGE" of the compiler's output.
py::list diagnostics_of(std::string_view message) {
  py::list out;
  const std::string prefix = std::string(codegen::k_buffer_name) + ":";
  std::size_t start = 0;
  while (start < message.size()) {
    std::size_t end = message.find('\n', start);
    if (end == std::string_view::npos) {
      end = message.size();
    }
    const std::string_view line = message.substr(start, end - start);
    start = end + 1;
    const std::size_t at_file = line.find(prefix);
    if (at_file == std::string_view::npos) {
      continue;
    }
    std::size_t at = at_file + prefix.size();
    const auto row = number_at(line, at);
    if (!row || at >= line.size() || line[at] != ':') {
      continue;
    }
    ++at;
    const auto column = number_at(line, at);
    if (!column || line.substr(at, 2) != ": ") {
      continue;
    }
    at += 2;
    const std::size_t colon = line.find(": ", at);
    if (colon == std::string_view::npos) {
      continue;
    }
    out.append(py::make_tuple(*row, *column, std::string(line.substr(at, colon - at)),
                              std::string(line.substr(colon + 2))));
  }
  return out;
}

void raise(const Error& error) {
  PyObject* type = g_classes[static_cast<std::size_t>(error.kind())];
  py::object instance = py::reinterpret_borrow<py::object>(type)(error.what());
  instance.attr("kind") = std::string(to_string(error.kind()));
  if (error.kind() == ErrorKind::compile) {
    const py::list diagnostics = diagnostics_of(error.what());
    instance.attr("diagnostics") = diagnostics;
    py::object line = py::none();
    py::object column = py::none();
    for (const auto item : diagnostics) {
      const auto entry = item.cast<py::tuple>();
      if (entry[2].cast<std::string>() == "error") {
        line = entry[0];
        column = entry[1];
        break;
      }
    }
    instance.attr("line") = line;
    instance.attr("column") = column;
  }
  PyErr_SetObject(type, instance.ptr());
}

} // namespace

void bind_errors(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc("uwjit.Error",
                                      "The base of every error uwjit raises; .kind names the kind.",
                                      PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(g_error);
  for (const auto& k : k_kinds) {
    const std::string qualified = std::string("uwjit.") + k.name;
    PyObject* bases = k.kind == ErrorKind::usage ? PyTuple_Pack(2, g_error, PyExc_ValueError)
                                                 : PyTuple_Pack(1, g_error);
    PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), k.doc, bases, nullptr);
    Py_DECREF(bases);
    if (type == nullptr) {
      throw py::error_already_set();
    }
    g_classes[static_cast<std::size_t>(k.kind)] = type;
    m.attr(k.name) = py::handle(type);
  }
  py::register_exception_translator([](std::exception_ptr failure) {
    try {
      if (failure) {
        std::rethrow_exception(failure);
      }
    } catch (const Error& error) {
      raise(error);
    }
  });
}

} // namespace uwjit::python
