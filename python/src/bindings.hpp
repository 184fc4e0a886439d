// The pieces of the module uwjit._uwjit: one bind_* function per idea, and the conversions
// between Python values and uwjit's that several of them share.
#pragma once

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/comm/comm.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/static_data.hpp>
#include <uwjit/runtime/value.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::python {

namespace py = pybind11;

void bind_errors(py::module_& m);       // errors.cpp: uwjit.Error and one subclass per kind
void bind_engine(py::module_& m);       // engine.cpp: Engine, Source, KernelInfo
void bind_kernel_call(py::module_& m);  // kernel_call.cpp: Kernel and its __call__
void bind_static_array(py::module_& m); // static_array.cpp: StaticArray, static_data_hash
void bind_nodes(py::module_& m);        // nodes.cpp: Node (Python subclasses), layout, writer
void bind_simulation(py::module_& m);   // simulation.cpp: Simulation
void bind_ensemble(py::module_& m);     // ensemble.cpp: Ensemble
void bind_mpi(py::module_& m);          // mpi.cpp (or a stub): communicators from mpi4py
void bind_driver(py::module_& m);       // driver.cpp: NodeKind, Verdict, Snapshot, run_cli
void refuse_bare_new(py::module_& m);   // bare_new.cpp: Cls.__new__(Cls) a TypeError (last)

/// The name of `value`'s type, for messages ("int", "float", "ndarray", ...).
[[nodiscard]] std::string type_name(const py::handle& value);

/// Whether `value` is an int: a Python int or a numpy integer, never a bool.
[[nodiscard]] bool is_int(const py::handle& value);
/// An int (is_int) from `min` to `max`: TypeError `WHAT: expected an int, got TYPE` for another
/// type; UsageError `WHAT: expected an int from MIN to MAX, got VALUE` for one out of range
/// (2**70 included).
[[nodiscard]] std::int64_t int_arg(const py::handle& value, std::string_view what,
                                   std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                   std::int64_t max = std::numeric_limits<std::int64_t>::max());
/// A list, tuple or 1-D numpy array of such ints (TypeError naming `what` for anything else).
[[nodiscard]] std::vector<std::int64_t>
ints_arg(const py::handle& values, std::string_view what,
         std::int64_t min = std::numeric_limits<std::int64_t>::min(),
         std::int64_t max = std::numeric_limits<std::int64_t>::max());
/// A Python float or int, or a numpy number (never a bool) as a double: TypeError naming `what`
/// otherwise.
[[nodiscard]] double float_arg(const py::handle& value, std::string_view what);

/// A Python exception raised by Python code that uwjit's C++ code called (a node's method, a
/// run() callback, a restore factory), on its way back to Python through that C++ code: raised
/// again as itself when it arrives (errors.cpp registers the translation). what() is
/// "WHERE raised TYPE: MESSAGE", which is what the other ranks of an MPI job are told of it
/// (comm::agree rethrows such a foreign exception on its own rank only).
class PythonError : public std::exception {
public:
  /// Takes over the Python exception that `error` holds; the GIL must be held.
  PythonError(std::string_view where, py::error_already_set error);
  [[nodiscard]] const char* what() const noexcept override { return m_what.c_str(); }
  /// Sets the Python exception again, as the current one; the GIL must be held.
  void restore() const;
  /// Whether it is a KeyboardInterrupt; the GIL must be held.
  [[nodiscard]] bool is_interrupt() const;
  /// Whether it is an instance of the Python exception class `type`; the GIL must be held.
  [[nodiscard]] bool matches(const py::handle& type) const;

private:
  py::error_already_set m_error; // safe to copy and destroy without the GIL
  std::string m_what;
};

/// The kind of uwjit.Error (UsageError, IoError, ...) that `error` holds, if it holds one: what
/// Python code raised to say that its caller's input is wrong. The GIL must be held.
[[nodiscard]] std::optional<ErrorKind> error_kind_of(const PythonError& error);

/// Calls `body` (with the GIL held); a Python exception it raises leaves as a PythonError naming
/// `where`.
template <class Body> decltype(auto) calling_python(std::string_view where, Body&& body) {
  try {
    return body();
  } catch (py::error_already_set& error) {
    throw PythonError(where, std::move(error));
  }
}

/// The Dtype of a numpy dtype, or nullopt for one uwjit has no kernel type for.
[[nodiscard]] std::optional<codegen::Dtype> dtype_of(const py::dtype& dtype);
/// The numpy dtype of a Dtype.
[[nodiscard]] py::dtype numpy_dtype(codegen::Dtype dtype);
/// A Dtype from "f64", "float64", numpy.float64, numpy.dtype(...): TypeError otherwise.
[[nodiscard]] codegen::Dtype dtype_arg(const py::handle& value, std::string_view what);

/// A Python int, float, str or tuple of those as a Value; TypeError for anything else (bool
/// included: say 0 or 1), ValueError for tuples nested deeper than Value::max_depth. `depth`:
/// the tuples `value` is within.
[[nodiscard]] runtime::Value to_value(const py::handle& value, std::string_view what,
                                      int depth = 0);
[[nodiscard]] py::object from_value(const runtime::Value& value);
/// A dict of str → value as Params.
[[nodiscard]] runtime::Params to_params(const py::handle& params, std::string_view what);
[[nodiscard]] py::dict from_params(const runtime::Params& params);

/// The C++ StaticArray named `key` for a uwjit.StaticArray (sharing its numpy array, kept alive).
[[nodiscard]] runtime::StaticArray static_array_of(const py::handle& value, std::string key);
/// A dict of key → StaticArray or scalar as StaticData; TypeError/ValueError naming the key.
[[nodiscard]] runtime::StaticData static_data_of(const py::handle& data, std::string_view what);

/// A new numpy array holding a copy of `field`'s interior (simulation.cpp).
[[nodiscard]] py::array interior_copy(const runtime::Field& field);
/// The dict of integral name → value of `node`'s `values` (in its layout's order; simulation.cpp).
[[nodiscard]] py::dict integrals_of(const runtime::Node& node, std::span<const double> values);

/// The communicator of a Python `comm` argument: None → nullptr (serial); an mpi4py
/// communicator → a uwjit Comm over a duplicate of it; TypeError otherwise.
[[nodiscard]] std::shared_ptr<comm::Comm> comm_of(const py::handle& comm);

} // namespace uwjit::python
