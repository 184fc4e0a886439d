// uwjit.Error and one subclass per ErrorKind, and the translation of uwjit::Error into them.
// UsageError is also a ValueError, so a caller may catch either. CompileError carries the
// compiler's diagnostics parsed into (line, column, severity, message).
#include "bindings.hpp"

#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/common/error.hpp>

#include <array>
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
     "with lines counted in the text the node wrote (a hand-written kernel: its own lines); "
     ".line, .column and .section (\"kernel\", \"kernel helpers\", \"kernel.cpp\", ...) are "
     "the first error's."},
    {ErrorKind::jit, "JitError", "The object could not be linked or its entry not found."},
    {ErrorKind::collective, "CollectiveError",
     "Ranks of an MPI job disagreed (raised on every rank alike)."},
    {ErrorKind::internal, "InternalError", "A bug in uwjit: an assertion failed."},
    {ErrorKind::kernel, "KernelError", "A kernel returned a non-zero status while it ran."},
};

// The compiler's diagnostics as (line, column, severity, message) tuples; lines count in the
// text the node wrote (see uwjit::CompileDiagnostic).
py::list diagnostics_of(const Error& error) {
  py::list out;
  for (const CompileDiagnostic& d : error.diagnostics()) {
    out.append(py::make_tuple(d.line, d.column, d.severity, d.message));
  }
  return out;
}

void raise(const Error& error) {
  PyObject* type = g_classes[static_cast<std::size_t>(error.kind())];
  py::object instance = py::reinterpret_borrow<py::object>(type)(error.what());
  instance.attr("kind") = std::string(to_string(error.kind()));
  if (error.kind() == ErrorKind::compile) {
    instance.attr("diagnostics") = diagnostics_of(error);
    py::object line = py::none();
    py::object column = py::none();
    py::object section = py::none();
    for (const CompileDiagnostic& d : error.diagnostics()) {
      if (d.severity == "error" || d.severity == "fatal error") {
        line = py::int_(d.line);
        column = py::int_(d.column);
        section = py::str(d.section);
        break;
      }
    }
    instance.attr("line") = line;
    instance.attr("column") = column;
    instance.attr("section") = section;
  }
  PyErr_SetObject(type, instance.ptr());
}

} // namespace

std::optional<ErrorKind> error_kind_of(const PythonError& error) {
  for (std::size_t k = 0; k < g_classes.size(); ++k) {
    if (g_classes[k] != nullptr && error.matches(g_classes[k])) {
      return static_cast<ErrorKind>(k);
    }
  }
  return std::nullopt;
}

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
    } catch (const PythonError& error) {
      error.restore();
    }
  });
}

} // namespace uwjit::python
