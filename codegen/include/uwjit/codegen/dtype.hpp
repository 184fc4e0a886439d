// Element types of kernel buffers: their names, C types in kernel text, and sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace uwjit::codegen {

/// The element types a kernel buffer (state field or static array) may hold.
enum class Dtype : std::uint8_t { f32, f64, i8, u8, i32, i64 };

/// Every supported dtype, in a fixed order.
inline constexpr Dtype k_all_dtypes[] = {Dtype::f32, Dtype::f64, Dtype::i8,
                                         Dtype::u8,  Dtype::i32, Dtype::i64};

/// True for the six enumerators above; false for any other value forced into a Dtype.
[[nodiscard]] bool is_supported(Dtype dtype) noexcept;

/// "f32", "f64", "i8", "u8", "i32" or "i64"; "unsupported" for any other value. Thread-safe.
[[nodiscard]] std::string_view to_string(Dtype dtype) noexcept;

/// The type's name in kernel text: uw_f32, uw_f64, uw_i8, uw_u8, uw_i32 or uw_i64 (kernel_abi.h).
/// Throws Error(usage) for an unsupported value.
[[nodiscard]] std::string_view c_type(Dtype dtype);

namespace detail {
/// Throws Error(usage) naming `dtype` as unsupported.
[[noreturn]] void unsupported_dtype(Dtype dtype);
} // namespace detail

/// The size of one element in bytes. Throws Error(usage) for an unsupported value. Inline: the
/// runtime asks it per row when it fills halos.
[[nodiscard]] inline std::size_t size_of(Dtype dtype) {
  switch (dtype) {
  case Dtype::f32:
  case Dtype::i32:
    return 4;
  case Dtype::f64:
  case Dtype::i64:
    return 8;
  case Dtype::i8:
  case Dtype::u8:
    return 1;
  }
  detail::unsupported_dtype(dtype);
}

/// The dtype named `name` ("f64", ...), or nullopt. Thread-safe.
[[nodiscard]] std::optional<Dtype> parse_dtype(std::string_view name) noexcept;

/// The dtype of the C++ type T (float, double, std::int8_t, std::uint8_t, std::int32_t,
/// std::int64_t); does not compile for other types.
template <class T>
inline constexpr Dtype dtype_of = [] {
  if constexpr (std::is_same_v<T, float>) {
    return Dtype::f32;
  } else if constexpr (std::is_same_v<T, double>) {
    return Dtype::f64;
  } else if constexpr (std::is_same_v<T, std::int8_t>) {
    return Dtype::i8;
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    return Dtype::u8;
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return Dtype::i32;
  } else {
    static_assert(std::is_same_v<T, std::int64_t>, "dtype_of: not a kernel element type");
    return Dtype::i64;
  }
}();

} // namespace uwjit::codegen
