// Communicators from mpi4py: `comm=MPI.COMM_WORLD` (or any mpi4py Comm) becomes a uwjit Comm
// over a duplicate of it. Without MPI or mpi4py at build time, only comm=None is accepted.
#include "bindings.hpp"

#if UWJIT_PYTHON_MPI
#include <uwjit/mpi.hpp>

#include <mpi4py/mpi4py.h>
#endif

#include <string>

namespace uwjit::python {

std::shared_ptr<comm::Comm> comm_of(const py::handle& comm) {
  if (comm.is_none()) {
    return nullptr;
  }
#if UWJIT_PYTHON_MPI
  const py::module_ mpi = py::module_::import("mpi4py.MPI");
  if (!py::isinstance(comm, mpi.attr("Comm"))) {
    throw py::type_error("comm: expected None or an mpi4py communicator (mpi4py.MPI.Comm), got " +
                         type_name(comm));
  }
  static const bool imported = import_mpi4py() == 0;
  if (!imported) {
    throw py::error_already_set();
  }
  MPI_Comm* handle = PyMPIComm_Get(comm.ptr());
  if (handle == nullptr) {
    throw py::error_already_set();
  }
  if (*handle == MPI_COMM_NULL) {
    throw py::value_error("comm: the communicator is MPI.COMM_NULL");
  }
  const MPI_Comm raw = *handle;
  py::gil_scoped_release release; // collective: duplicates the communicator
  return std::shared_ptr<comm::Comm>(uwjit::mpi::make_comm(raw));
#else
  throw py::type_error("comm: this uwjit module was built without MPI (mpi4py was not found at "
                       "build time); only comm=None is accepted");
#endif
}

void bind_mpi(py::module_& m) {
#if UWJIT_PYTHON_MPI
  m.attr("has_mpi") = true;
#else
  m.attr("has_mpi") = false;
#endif
}

} // namespace uwjit::python
