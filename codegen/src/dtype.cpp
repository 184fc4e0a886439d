#include <uwjit/codegen/dtype.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

namespace uwjit::codegen {

bool is_supported(Dtype dtype) noexcept {
  for (const Dtype known : k_all_dtypes) {
    if (dtype == known) {
      return true;
    }
  }
  return false;
}

std::string_view to_string(Dtype dtype) noexcept {
  switch (dtype) {
  case Dtype::f32:
    return "f32";
  case Dtype::f64:
    return "f64";
  case Dtype::i8:
    return "i8";
  case Dtype::u8:
    return "u8";
  case Dtype::i32:
    return "i32";
  case Dtype::i64:
    return "i64";
  }
  return "unsupported";
}

void detail::unsupported_dtype(Dtype dtype) {
  throw Error(ErrorKind::usage,
              format("dtype {}: unsupported (accepted: f32, f64, i8, u8, i32, i64)",
                     static_cast<int>(dtype)));
}

std::string_view c_type(Dtype dtype) {
  switch (dtype) {
  case Dtype::f32:
    return "uw_f32";
  case Dtype::f64:
    return "uw_f64";
  case Dtype::i8:
    return "uw_i8";
  case Dtype::u8:
    return "uw_u8";
  case Dtype::i32:
    return "uw_i32";
  case Dtype::i64:
    return "uw_i64";
  }
  detail::unsupported_dtype(dtype);
}

std::optional<Dtype> parse_dtype(std::string_view name) noexcept {
  for (const Dtype dtype : k_all_dtypes) {
    if (to_string(dtype) == name) {
      return dtype;
    }
  }
  return std::nullopt;
}

} // namespace uwjit::codegen
