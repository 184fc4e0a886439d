// Cls.__new__(Cls) refused for every class the module binds: such an object's C++ value was never
// constructed, and the pybind11 of Debian 12 hands a method raw memory for it (a crash in repr).
#include "bindings.hpp"

namespace uwjit::python {

namespace {

// The class pybind11 bound that `cls` is or derives from (a Python subclass of Node), or null.
const py::detail::type_info* bound_base(const py::handle& cls) {
  if (!PyType_Check(cls.ptr())) {
    return nullptr;
  }
  return py::detail::get_type_info(reinterpret_cast<PyTypeObject*>(cls.ptr()));
}

// True while the class's metaclass is making an object (Sub(...)), until the guard below lets
// one __new__ through: a direct Sub.__new__(Sub) outside it is refused.
thread_local bool constructing = false;
ternaryfunc metaclass_call = nullptr;

PyObject* call_marking_construction(PyObject* type, PyObject* args, PyObject* kwargs) {
  const bool outer = constructing;
  constructing = true;
  PyObject* made = metaclass_call(type, args, kwargs);
  constructing = outer;
  return made;
}

// `name` as users write it: uwjit.Layout, or a Python subclass's own name.
[[noreturn]] void refuse(const std::string& name) {
  throw py::type_error(name + " cannot be made by __new__ alone (its value would be unset): call " +
                       name + "(...)");
}

} // namespace

void refuse_bare_new(py::module_& m) {
  // In the class's dict as a staticmethod, set there without updating the type's slot: Cls(...)
  // still goes through pybind11's own allocation and then __init__, and only an explicit
  // Cls.__new__(Cls) comes here. A Python subclass's slot does call this (it finds __new__ in
  // its base's dict): its object is made as before when its class is called, and pybind11 checks
  // that its __init__ ran; a direct Sub.__new__(Sub) is refused too.
  const py::cpp_function guarded_new(
      [](const py::handle& cls, const py::args& args, const py::kwargs& kwargs) -> py::object {
        const auto* base = bound_base(cls);
        if (base == nullptr) {
          throw py::type_error("__new__: expected a uwjit class as the first argument");
        }
        const std::string name = py::str(cls.attr("__name__"));
        if (reinterpret_cast<PyObject*>(base->type) == cls.ptr()) {
          refuse("uwjit." + name);
        }
        if (!constructing) {
          refuse(name);
        }
        constructing = false; // this one object only: a __new__ its __init__ calls is guarded
        PyObject* made = base->type->tp_new(reinterpret_cast<PyTypeObject*>(cls.ptr()), args.ptr(),
                                            kwargs.ptr());
        if (made == nullptr) {
          throw py::error_already_set();
        }
        return py::reinterpret_steal<py::object>(made);
      },
      py::name("__new__"));
  const py::object as_static =
      py::reinterpret_steal<py::object>(PyStaticMethod_New(guarded_new.ptr()));
  for (const auto& [name, value] : m.attr("__dict__").cast<py::dict>()) {
    const auto* info = bound_base(value);
    if (info == nullptr || reinterpret_cast<PyObject*>(info->type) != value.ptr()) {
      continue;
    }
    auto* type = reinterpret_cast<PyTypeObject*>(value.ptr());
    if (PyDict_SetItemString(type->tp_dict, "__new__", as_static.ptr()) != 0) {
      throw py::error_already_set();
    }
    PyType_Modified(type);
    // Every class shares pybind11's metaclass: its call (Cls(...), Sub(...)) marks a
    // construction, the original call doing the work.
    static PyTypeObject* wrapped = nullptr;
    auto* metaclass = Py_TYPE(value.ptr());
    if (wrapped == nullptr) {
      wrapped = metaclass;
      metaclass_call = metaclass->tp_call;
      metaclass->tp_call = &call_marking_construction;
    } else if (metaclass != wrapped) {
      throw Error(ErrorKind::internal, "uwjit." + py::str(name).cast<std::string>() +
                                           " has a metaclass of its own: __new__ is unguarded");
    }
  }
}

} // namespace uwjit::python
