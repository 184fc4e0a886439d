// Conversions between Python values and uwjit's: numbers, dtypes, Values, Params; and the
// Python exceptions carried through C++.
#include "bindings.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <string>

namespace uwjit::python {

using codegen::Dtype;

namespace {

// The kind of a numpy scalar's dtype ('i', 'u', 'f', 'b', ...), or 0 for anything else.
char numpy_kind(const py::handle& value) {
  if (py::isinstance<py::array>(value) || !py::hasattr(value, "dtype") ||
      !py::hasattr(value, "item")) {
    return 0;
  }
  const py::object dtype = value.attr("dtype");
  if (!py::isinstance<py::dtype>(dtype)) {
    return 0;
  }
  return py::detail::array_descriptor_proxy(dtype.ptr())->kind;
}

} // namespace

std::string type_name(const py::handle& value) {
  return py::str(py::type::of(value).attr("__name__")).cast<std::string>();
}

bool is_int(const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) {
    return false;
  }
  if (py::isinstance<py::int_>(value)) {
    return true;
  }
  const char kind = numpy_kind(value);
  return kind == 'i' || kind == 'u';
}

std::int64_t int_arg(const py::handle& value, std::string_view what, std::int64_t min,
                     std::int64_t max) {
  if (!is_int(value)) {
    throw py::type_error(std::string(what) + ": expected an int, got " + type_name(value));
  }
  const auto number = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!number) {
    throw py::error_already_set();
  }
  int overflow = 0;
  const long long got = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
  if (got == -1 && PyErr_Occurred() != nullptr) {
    throw py::error_already_set();
  }
  if (overflow != 0 || got < min || got > max) {
    throw Error(ErrorKind::usage, format("{}: expected an int from {} to {}, got {}", what, min,
                                         max, py::str(number).cast<std::string>()));
  }
  return got;
}

std::vector<std::int64_t> ints_arg(const py::handle& values, std::string_view what,
                                   std::int64_t min, std::int64_t max) {
  const bool sequence =
      py::isinstance<py::list>(values) || py::isinstance<py::tuple>(values) ||
      (py::isinstance<py::array>(values) && py::reinterpret_borrow<py::array>(values).ndim() == 1);
  if (!sequence) {
    throw py::type_error(std::string(what) + ": expected a list of ints, got " + type_name(values));
  }
  std::vector<std::int64_t> out;
  for (const auto item : values) {
    out.push_back(int_arg(item, what, min, max));
  }
  return out;
}

double float_arg(const py::handle& value, std::string_view what) {
  const char kind = numpy_kind(value);
  if (py::isinstance<py::bool_>(value) ||
      !(py::isinstance<py::float_>(value) || is_int(value) || kind == 'f')) {
    throw py::type_error(std::string(what) + ": expected a float, got " + type_name(value));
  }
  const double got = PyFloat_AsDouble(value.ptr());
  if (got == -1.0 && PyErr_Occurred() != nullptr) {
    throw py::error_already_set(); // an int too large for a double
  }
  return got;
}

namespace {

// "ValueError", or "package.module.Error" for a type that is not a builtin.
std::string exception_type_name(const py::handle& type) {
  const auto module = py::str(type.attr("__module__")).cast<std::string>();
  const auto name = py::str(type.attr("__qualname__")).cast<std::string>();
  return module == "builtins" ? name : module + "." + name;
}

} // namespace

PythonError::PythonError(std::string_view where, py::error_already_set error)
    : m_error(std::move(error)) {
  m_what = std::string(where) + " raised " + exception_type_name(m_error.type());
  std::string message;
  try {
    message = py::str(m_error.value()).cast<std::string>();
  } catch (const py::error_already_set&) {
    message = "(its message could not be read)";
  }
  if (!message.empty()) {
    m_what += ": " + message;
  }
}

void PythonError::restore() const {
  PyErr_Restore(m_error.type().inc_ref().ptr(), m_error.value().inc_ref().ptr(),
                m_error.trace().inc_ref().ptr());
}

bool PythonError::is_interrupt() const {
  return m_error.matches(PyExc_KeyboardInterrupt);
}

bool PythonError::matches(const py::handle& type) const {
  return m_error.matches(type);
}

std::optional<Dtype> dtype_of(const py::dtype& dtype) {
  // Kind and size, not identity: numpy has several objects for one type (e.g. long vs longlong).
  // Read from the descriptor itself: this runs for every buffer of every kernel call.
  const auto* descr = py::detail::array_descriptor_proxy(dtype.ptr());
  const char kind = descr->kind;
  const int size = descr->elsize;
  if (descr->byteorder == '>') {
    return std::nullopt;
  }
  if (kind == 'f' && size == 8) {
    return Dtype::f64;
  }
  if (kind == 'f' && size == 4) {
    return Dtype::f32;
  }
  if (kind == 'i' && size == 8) {
    return Dtype::i64;
  }
  if (kind == 'i' && size == 4) {
    return Dtype::i32;
  }
  if (kind == 'i' && size == 1) {
    return Dtype::i8;
  }
  if (kind == 'u' && size == 1) {
    return Dtype::u8;
  }
  return std::nullopt;
}

py::dtype numpy_dtype(Dtype dtype) {
  switch (dtype) {
  case Dtype::f32:
    return py::dtype::of<float>();
  case Dtype::f64:
    return py::dtype::of<double>();
  case Dtype::i8:
    return py::dtype::of<std::int8_t>();
  case Dtype::u8:
    return py::dtype::of<std::uint8_t>();
  case Dtype::i32:
    return py::dtype::of<std::int32_t>();
  case Dtype::i64:
    return py::dtype::of<std::int64_t>();
  }
  return py::dtype::of<double>();
}

Dtype dtype_arg(const py::handle& value, std::string_view what) {
  if (py::isinstance<py::str>(value)) {
    if (const auto parsed = codegen::parse_dtype(value.cast<std::string>())) {
      return *parsed;
    }
  }
  try {
    const auto dtype = py::dtype::from_args(py::reinterpret_borrow<py::object>(value));
    if (const auto parsed = dtype_of(dtype)) {
      return *parsed;
    }
  } catch (const py::error_already_set&) {
  }
  throw py::type_error(std::string(what) + ": unsupported dtype " +
                       py::repr(value).cast<std::string>() +
                       " (accepted: f32, f64, i8, u8, i32, i64 or the numpy dtypes of those)");
}

runtime::Value to_value(const py::handle& value, std::string_view what, int depth) {
  if (py::isinstance<py::bool_>(value)) {
    throw py::type_error(std::string(what) + ": a bool is not a value (say 0 or 1)");
  }
  if (py::isinstance<py::int_>(value)) {
    return runtime::Value(int_arg(value, what));
  }
  if (py::isinstance<py::float_>(value)) {
    return runtime::Value(value.cast<double>());
  }
  if (py::isinstance<py::str>(value)) {
    return runtime::Value(value.cast<std::string>());
  }
  if (py::isinstance<py::tuple>(value)) {
    if (depth >= runtime::Value::max_depth) {
      throw py::value_error(std::string(what) + ": tuples nested more than " +
                            std::to_string(runtime::Value::max_depth) + " deep");
    }
    runtime::Value::Tuple items;
    for (const auto item : value) {
      items.push_back(to_value(item, what, depth + 1));
    }
    return runtime::Value(std::move(items));
  }
  // numpy scalars (np.float64(0.5), np.int64(3)) are numbers too.
  if (py::hasattr(value, "dtype") && py::hasattr(value, "item") &&
      !py::isinstance<py::array>(value)) {
    return to_value(value.attr("item")(), what, depth);
  }
  throw py::type_error(std::string(what) + ": expected an int, float, str or tuple of those, got " +
                       type_name(value));
}

py::object from_value(const runtime::Value& value) {
  if (value.is_int()) {
    return py::int_(value.as_int());
  }
  if (value.is_double()) {
    return py::float_(value.as_double());
  }
  if (value.is_string()) {
    return py::str(value.as_string());
  }
  py::list items;
  for (const auto& item : value.as_tuple()) {
    items.append(from_value(item));
  }
  return py::tuple(items);
}

runtime::Params to_params(const py::handle& params, std::string_view what) {
  runtime::Params out;
  if (params.is_none()) {
    return out;
  }
  if (!py::isinstance<py::dict>(params)) {
    throw py::type_error(std::string(what) + ": expected a dict of params, got " +
                         type_name(params));
  }
  for (const auto [key, value] : params.cast<py::dict>()) {
    if (!py::isinstance<py::str>(key)) {
      throw py::type_error(std::string(what) + ": param names are str");
    }
    const auto name = key.cast<std::string>();
    out.set(name, to_value(value, std::string(what) + " param \"" + name + "\""));
  }
  return out;
}

py::dict from_params(const runtime::Params& params) {
  py::dict out;
  for (const auto& [key, value] : params.values()) {
    out[py::str(key)] = from_value(value);
  }
  return out;
}

} // namespace uwjit::python
