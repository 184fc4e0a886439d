// uwjit.StaticArray: a numpy array bound to kernels as an external buffer, zero-copy (the
// StaticArray keeps the numpy array alive), and static_data_hash over a dict of them.
#include "bindings.hpp"

#include <uwjit/common/error.hpp>

#include <pybind11/stl.h>

#include <string>

namespace uwjit::python {
namespace {

using runtime::Replication;

// The array's memory, owned by a reference to the numpy array. The reference is dropped with
// the GIL held: the last C++ copy may go away on a thread that does not hold it.
std::shared_ptr<const void> keep_alive(const py::array& array) {
  auto* owner = new py::object(array);
  return std::shared_ptr<const void>(array.data(), [owner](const void*) {
    if (Py_IsInitialized() == 0) {
      return; // the interpreter is gone; so is the array
    }
    py::gil_scoped_acquire gil;
    delete owner;
  });
}

} // namespace

struct PyStaticArray {
  py::array value;
  runtime::StaticArray checked; // validated once, under a placeholder key
};

runtime::StaticArray static_array_of(const py::handle& value, std::string key) {
  if (!py::isinstance<PyStaticArray>(value)) {
    throw py::type_error(
        "static array \"" + key + "\": expected a uwjit.StaticArray, got " + type_name(value) +
        (py::isinstance<py::array>(value) ? " (wrap a numpy array: uwjit.StaticArray(array))"
                                          : ""));
  }
  const auto& array = value.cast<const PyStaticArray&>();
  const auto& c = array.checked;
  return runtime::StaticArray(std::move(key), c.shared_data(), c.dtype(), c.shape(),
                              c.replication(), c.shard_axis());
}

runtime::StaticData static_data_of(const py::handle& data, std::string_view what) {
  runtime::StaticData out;
  if (data.is_none()) {
    return out;
  }
  if (!py::isinstance<py::dict>(data)) {
    throw py::type_error(std::string(what) +
                         ": expected a dict of key → StaticArray or scalar, got " +
                         type_name(data));
  }
  for (const auto [k, v] : data.cast<py::dict>()) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error(std::string(what) + ": keys are str, got " + type_name(k));
    }
    const auto key = k.cast<std::string>();
    if (py::isinstance<PyStaticArray>(v)) {
      out.add(static_array_of(v, key));
    } else if (py::isinstance<py::array>(v)) {
      throw py::type_error(std::string(what) + " \"" + key +
                           "\": a numpy array must be wrapped in uwjit.StaticArray");
    } else {
      out.add(key, to_value(v, std::string(what) + " \"" + key + "\""));
    }
  }
  return out;
}

void bind_static_array(py::module_& m) {
  py::class_<PyStaticArray>(m, "StaticArray", R"doc(
A read-only numpy array bound to kernels as an external buffer, never compiled into them.

StaticArray(value, replication="replicate", shard_axis=None)

value must be a numpy.ndarray: C-contiguous, non-empty, of dtype float32, float64, int8, uint8,
int32 or int64. A 0-d array, a numpy scalar (its dtype), or a Python float (float64) or int
(int64), is a scalar array of
shape (): a kernel reads it as KEY(), and rebinding another value of the same dtype compiles
nothing, where a bare scalar in the static data is part of the kernel's key. It is not copied: the StaticArray keeps it alive, and a kernel reads its memory,
so its contents must not change while a simulation may step. replication is "replicate" (every
rank gets the whole array) or "shard" (each rank gets a slab along shard_axis, required then and
forbidden otherwise). Raises TypeError for anything else that is not a numpy array (lists, tuples,
dicts and sets included) and for an unsupported dtype; ValueError for a non-contiguous or empty
array, an unknown replication, a missing or superfluous shard_axis, an axis out of range.
The key is given by the dict of static data that holds the array.)doc")
      .def(py::init([](py::object value, const std::string& replication,
                       std::optional<int> shard_axis) {
             // A Python float or int is a scalar: a 0-d array of float64 or int64; a numpy
             // scalar one of its own dtype.
             const py::module_ numpy = py::module_::import("numpy");
             if (py::isinstance<py::float_>(value) ||
                 (py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value))) {
               value = numpy.attr("array")(value,
                                           py::isinstance<py::float_>(value) ? "float64" : "int64");
             } else if (py::isinstance(value, numpy.attr("generic"))) {
               value = numpy.attr("asarray")(value);
             }
             if (!py::isinstance<py::array>(value)) {
               throw py::type_error("StaticArray: value must be a numpy.ndarray (or a float or "
                                    "int, a scalar), got " +
                                    type_name(value) +
                                    " (convert it with numpy.ascontiguousarray(value, dtype=...))");
             }
             const auto array = value.cast<py::array>();
             const auto dtype = dtype_of(array.dtype());
             if (!dtype) {
               throw py::type_error("StaticArray: unsupported dtype " +
                                    py::str(array.dtype()).cast<std::string>() +
                                    " (accepted: float32, float64, int8, uint8, int32, int64)");
             }
             if ((array.flags() & py::array::c_style) == 0) {
               throw py::value_error("StaticArray: the array must be C-contiguous "
                                     "(numpy.ascontiguousarray makes a contiguous copy)");
             }
             Replication mode;
             if (replication == "replicate") {
               mode = Replication::replicate;
             } else if (replication == "shard") {
               mode = Replication::shard;
             } else {
               throw py::value_error("StaticArray: unknown replication \"" + replication +
                                     "\" (accepted: replicate, shard)");
             }
             std::vector<std::int64_t> shape(array.shape(), array.shape() + array.ndim());
             try {
               runtime::StaticArray checked("value", keep_alive(array), *dtype, std::move(shape),
                                            mode, shard_axis);
               return PyStaticArray{array, std::move(checked)};
             } catch (const Error& error) {
               throw py::value_error(std::string("StaticArray: ") + error.what());
             }
           }),
           py::arg("value"), py::arg("replication") = "replicate",
           py::arg("shard_axis") = py::none())
      .def_property_readonly(
          "value", [](const PyStaticArray& a) { return a.value; },
          "The numpy array (the same object, not a copy).")
      .def_property_readonly(
          "dtype", [](const PyStaticArray& a) { return std::string(to_string(a.checked.dtype())); },
          "\"f64\", \"f32\", \"i64\", \"i32\", \"i8\" or \"u8\".")
      .def_property_readonly(
          "shape", [](const PyStaticArray& a) { return py::tuple(py::cast(a.checked.shape())); },
          "The array's shape, a tuple (() for a scalar).")
      .def_property_readonly(
          "replication",
          [](const PyStaticArray& a) { return std::string(to_string(a.checked.replication())); },
          "\"replicate\" (whole on every rank) or \"shard\" (split along shard_axis like the "
          "state).")
      .def_property_readonly(
          "shard_axis", [](const PyStaticArray& a) { return a.checked.shard_axis(); },
          "The axis a shard-mode array is split along, or None.")
      .def("__repr__", [](const PyStaticArray& a) {
        std::string text =
            "StaticArray(dtype=" + std::string(to_string(a.checked.dtype())) +
            ", shape=" + py::repr(py::tuple(py::cast(a.checked.shape()))).cast<std::string>() +
            ", replication=\"" + std::string(to_string(a.checked.replication())) + "\"";
        if (a.checked.shard_axis()) {
          text += ", shard_axis=" + std::to_string(*a.checked.shard_axis());
        }
        return text + ")";
      });

  m.def(
      "static_data_hash",
      [](const py::object& data) {
        return runtime::static_data_hash(static_data_of(data, "static data"));
      },
      py::arg("data"), R"doc(
The hash a node's static data contributes to its kernel's key: the same as C++'s
uwjit::runtime::static_data_hash for the same declarations. data is a dict of key →
StaticArray or scalar (int, float, str, tuple). Arrays contribute their key, dtype, shape,
replication and shard axis, never their contents; "0" for an empty dict.)doc");
}

} // namespace uwjit::python
