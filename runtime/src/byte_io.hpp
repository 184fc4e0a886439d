// The checkpoint's encoder: the common little-endian byte encoder, plus parameter values.
#pragma once

#include <uwjit/common/byte_io.hpp>
#include <uwjit/runtime/value.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace uwjit::runtime::detail {

class ByteWriter : public uwjit::ByteWriter {
public:
  /// A u8 tag (the variant's index), then the value: i64, f64, str, or a u32 count of items.
  void value(const Value& v) {
    const auto& variant = v.variant();
    u8(static_cast<std::uint8_t>(variant.index()));
    switch (variant.index()) {
    case 0:
      i64(std::get<0>(variant));
      break;
    case 1:
      f64(std::get<1>(variant));
      break;
    case 2:
      str(std::get<2>(variant));
      break;
    default:
      u32(static_cast<std::uint32_t>(std::get<3>(variant).size()));
      for (const auto& item : std::get<3>(variant)) {
        value(item);
      }
    }
  }
};

/// Reads what ByteWriter wrote; any read past the end throws Error(io) naming `what`.
class ByteReader : public uwjit::ByteReader {
public:
  using uwjit::ByteReader::ByteReader;
  Value value(int depth = 0) {
    if (depth > Value::max_depth) {
      fail("values nested too deeply");
    }
    switch (u8()) {
    case 0:
      return Value(i64());
    case 1:
      return Value(f64());
    case 2:
      return Value(str());
    case 3: {
      const std::uint32_t count = u32();
      Value::Tuple items;
      for (std::uint32_t i = 0; i < count; ++i) {
        items.push_back(value(depth + 1));
      }
      return Value(std::move(items));
    }
    default:
      fail("unknown value tag");
    }
  }
};

} // namespace uwjit::runtime::detail
