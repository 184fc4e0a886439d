// The pieces of the module uwjit._uwjit: one bind_* function per idea, and the conversions
// between Python values and uwjit's that several of them share.
#pragma once

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/comm/comm.hpp>
#include <uwjit/runtime/static_data.hpp>
#include <uwjit/runtime/value.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <string_view>

namespace uwjit::python {

namespace py = pybind11;

void bind_errors(py::module_& m);       // errors.cpp: uwjit.Error and one subclass per kind
void bind_engine(py::module_& m);       // engine.cpp: Engine, Source, KernelInfo
void bind_kernel_call(py::module_& m);  // kernel_call.cpp: Kernel and its __call__
void bind_static_array(py::module_& m); // static_array.cpp: StaticArray, static_data_hash
void bind_nodes(py::module_& m);        // nodes.cpp: Node (Python subclasses), layout, writer
void bind_simulation(py::module_& m);   // simulation.cpp: Simulation
void bind_mpi(py::module_& m);          // mpi.cpp (or a stub): communicators from mpi4py

/// The Dtype of a numpy dtype, or nullopt for one uwjit has no kernel type for.
[[nodiscard]] std::optional<codegen::Dtype> dtype_of(const py::dtype& dtype);
/// The numpy dtype of a Dtype.
[[nodiscard]] py::dtype numpy_dtype(codegen::Dtype dtype);
/// A Dtype from "f64", "float64", numpy.float64, numpy.dtype(...): TypeError otherwise.
[[nodiscard]] codegen::Dtype dtype_arg(const py::handle& value, std::string_view what);

/// A Python int, float, str or tuple of those as a Value; TypeError for anything else (bool
/// included: say 0 or 1).
[[nodiscard]] runtime::Value to_value(const py::handle& value, std::string_view what);
[[nodiscard]] py::object from_value(const runtime::Value& value);
/// A dict of str → value as Params.
[[nodiscard]] runtime::Params to_params(const py::handle& params, std::string_view what);
[[nodiscard]] py::dict from_params(const runtime::Params& params);

/// The C++ StaticArray named `key` for a uwjit.StaticArray (sharing its numpy array, kept alive).
[[nodiscard]] runtime::StaticArray static_array_of(const py::handle& value, std::string key);
/// A dict of key → StaticArray or scalar as StaticData; TypeError/ValueError naming the key.
[[nodiscard]] runtime::StaticData static_data_of(const py::handle& data, std::string_view what);

/// The communicator of a Python `comm` argument: None → nullptr (serial); an mpi4py
/// communicator → a uwjit Comm over a duplicate of it; TypeError otherwise.
[[nodiscard]] std::shared_ptr<comm::Comm> comm_of(const py::handle& comm);

} // namespace uwjit::python
