// Reduction: a maximum's order key, the combining of calls' integrals, and the kernel text of
// both accumulators (the runtime decodes the key the maxima's text encodes).
#include <uwjit/codegen/reduction.hpp>

#include <bit>
#include <cstdint>
#include <limits>

namespace uwjit::codegen {
namespace {

constexpr std::uint64_t k_sign = std::uint64_t{1} << 63;
// The order key of -inf: keys are shifted down by it, so that -inf (and an empty slot) is 0.
constexpr std::uint64_t k_lowest = ~std::uint64_t{0xfff0000000000000};

std::uint64_t key_bits(double value) noexcept {
  if (value != value) {
    return ~std::uint64_t{0} - k_lowest; // every NaN: above +inf
  }
  const auto bits = std::bit_cast<std::uint64_t>(value);
  return ((bits & k_sign) != 0 ? ~bits : bits | k_sign) - k_lowest;
}

} // namespace

const char* to_string(Reduction reduction) noexcept {
  return reduction == Reduction::max ? "max" : "sum";
}

double max_key(double value) noexcept {
  return std::bit_cast<double>(key_bits(value));
}

double max_value(double key) noexcept {
  const std::uint64_t ordered = std::bit_cast<std::uint64_t>(key) + k_lowest;
  return std::bit_cast<double>((ordered & k_sign) != 0 ? ordered & ~k_sign : ~ordered);
}

void combine(std::span<double> total, std::span<const double> part,
             std::span<const Reduction> reductions) noexcept {
  for (std::size_t i = 0; i < total.size() && i < part.size(); ++i) {
    if (i < reductions.size() && reductions[i] == Reduction::max) {
      const auto a = std::bit_cast<std::uint64_t>(total[i]);
      const auto b = std::bit_cast<std::uint64_t>(part[i]);
      total[i] = std::bit_cast<double>(a > b ? a : b);
    } else {
      total[i] += part[i];
    }
  }
}

double value_of(Reduction reduction, double stored) noexcept {
  return reduction == Reduction::max ? max_value(stored) : stored;
}

std::string_view sum_accumulator_text() noexcept {
  return "struct uwjit_sum {\n"
         "  double value;\n"
         "  inline void operator+=(double x) {\n"
         "#pragma clang fp reassociate(on)\n"
         "    value += x;\n"
         "  }\n"
         "  inline void operator-=(double x) {\n"
         "#pragma clang fp reassociate(on)\n"
         "    value -= x;\n"
         "  }\n"
         "  inline operator double() const { return value; }\n"
         "};\n";
}

std::string_view warp_sum_text() noexcept {
  return "inline void uwjit_warp_add(double* total, double value) {\n"
         "  for (int offset = 16; offset > 0; offset /= 2) {\n"
         "    const unsigned long long bits = __builtin_bit_cast(unsigned long long, value);\n"
         "    const unsigned low = static_cast<unsigned>(__nvvm_shfl_sync_down_i32(\n"
         "        0xffffffffu, static_cast<int>(bits & 0xffffffffu), offset, 31));\n"
         "    const unsigned high = static_cast<unsigned>(__nvvm_shfl_sync_down_i32(\n"
         "        0xffffffffu, static_cast<int>(bits >> 32), offset, 31));\n"
         "    value += __builtin_bit_cast(\n"
         "        double, (static_cast<unsigned long long>(high) << 32) | low);\n"
         "  }\n"
         "  if (__nvvm_read_ptx_sreg_laneid() == 0) {\n"
         "    __nvvm_atom_add_gen_d(total, value);\n"
         "  }\n"
         "}\n";
}

std::string_view max_accumulator_text() noexcept {
  // Integer compares and a select: the loops that offer values still vectorise (a maximum of
  // doubles does not without assuming no NaN), and NaN is never lost.
  return "struct uwjit_max {\n"
         "  unsigned long long key;\n"
         "  inline void max(double x) {\n"
         "    const unsigned long long bits = __builtin_bit_cast(unsigned long long, x);\n"
         "    unsigned long long k = (bits >> 63) != 0 ? ~bits : bits | 0x8000000000000000ull;\n"
         "    k = x != x ? ~0ull : k;\n"
         "    k -= 0x000fffffffffffffull;\n"
         "    key = k > key ? k : key;\n"
         "  }\n"
         "  inline operator double() const {\n"
         "    const unsigned long long k = key + 0x000fffffffffffffull;\n"
         "    return __builtin_bit_cast(double, (k >> 63) != 0 ? k & 0x7fffffffffffffffull : ~k);\n"
         "  }\n"
         "};\n";
}

std::string_view warp_max_text() noexcept {
  return "inline void uwjit_warp_max(double* total, unsigned long long key) {\n"
         "  for (int offset = 16; offset > 0; offset /= 2) {\n"
         "    const unsigned low = static_cast<unsigned>(__nvvm_shfl_sync_down_i32(\n"
         "        0xffffffffu, static_cast<int>(key & 0xffffffffu), offset, 31));\n"
         "    const unsigned high = static_cast<unsigned>(__nvvm_shfl_sync_down_i32(\n"
         "        0xffffffffu, static_cast<int>(key >> 32), offset, 31));\n"
         "    const unsigned long long other = (static_cast<unsigned long long>(high) << 32) | "
         "low;\n"
         "    key = other > key ? other : key;\n"
         "  }\n"
         "  if (__nvvm_read_ptx_sreg_laneid() == 0) {\n"
         "    __nvvm_atom_max_gen_ull(reinterpret_cast<unsigned long long*>(total), key);\n"
         "  }\n"
         "}\n";
}

} // namespace uwjit::codegen
