// Conversions between Python values and uwjit's: dtypes, Values, Params.
#include "bindings.hpp"

#include <uwjit/common/text.hpp>

#include <string>

namespace uwjit::python {

using codegen::Dtype;

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

runtime::Value to_value(const py::handle& value, std::string_view what) {
  if (py::isinstance<py::bool_>(value)) {
    throw py::type_error(std::string(what) + ": a bool is not a value (say 0 or 1)");
  }
  if (py::isinstance<py::int_>(value)) {
    return runtime::Value(value.cast<std::int64_t>());
  }
  if (py::isinstance<py::float_>(value)) {
    return runtime::Value(value.cast<double>());
  }
  if (py::isinstance<py::str>(value)) {
    return runtime::Value(value.cast<std::string>());
  }
  if (py::isinstance<py::tuple>(value)) {
    runtime::Value::Tuple items;
    for (const auto item : value) {
      items.push_back(to_value(item, what));
    }
    return runtime::Value(std::move(items));
  }
  // numpy scalars (np.float64(0.5), np.int64(3)) are numbers too.
  if (py::hasattr(value, "dtype") && py::hasattr(value, "item") &&
      !py::isinstance<py::array>(value)) {
    return to_value(value.attr("item")(), what);
  }
  throw py::type_error(std::string(what) + ": expected an int, float, str or tuple of those, got " +
                       py::str(py::type::of(value).attr("__name__")).cast<std::string>());
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
                         py::str(py::type::of(params).attr("__name__")).cast<std::string>());
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
