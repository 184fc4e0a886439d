// The extension module uwjit._uwjit; the package uwjit (python/uwjit/__init__.py) re-exports it.
#include "bindings.hpp"

PYBIND11_MODULE(_uwjit, m) {
  namespace python = uwjit::python;
  m.doc() = "uwjit: run-time compiled simulation kernels with an on-disk kernel cache";
  m.attr("__version__") = UWJIT_PYTHON_VERSION;
  python::bind_errors(m);
  python::bind_engine(m);
  python::bind_kernel_call(m);
  python::bind_static_array(m);
  python::bind_nodes(m);
  python::bind_mpi(m);
  python::bind_simulation(m);
  python::bind_driver(m);
  python::bind_ensemble(m);
  python::refuse_bare_new(m);
}
