// Reduction: how a domain integral combines the values its cells give (a sum or a maximum), the
// form a maximum travels in between a kernel and the runtime, and the accumulators' kernel text.
#pragma once

#include <span>
#include <string_view>

namespace uwjit::codegen {

/// How a domain integral combines its cells' values: their sum (the text adds to it, name += x),
/// or their maximum (the text offers each value, name.max(x)), e.g. max |u_new - u_old|.
enum class Reduction { sum, max };

[[nodiscard]] const char* to_string(Reduction reduction) noexcept;

/// A maximum travels in its integral's double slot as an order key: the bits of a 64-bit
/// unsigned integer whose order is the values' total order, -inf (and no cell at all) being 0.
/// So a zeroed slot is the identity of both reductions, slots are combined by an integer maximum
/// (on a GPU, one atomic per warp), and the result is the same bits in any order of the cells:
/// -0 orders below +0, and any NaN becomes the one NaN that orders above every number.
[[nodiscard]] double max_key(double value) noexcept;
/// The value a maximum's key stands for (-inf for 0: no cell).
[[nodiscard]] double max_value(double key) noexcept;

/// Combines the integrals of one more call (`part`) into `total`, slot by slot, each by its
/// reduction (`reductions[i]`; a slot beyond it is a sum). Both hold a maximum as its key.
void combine(std::span<double> total, std::span<const double> part,
             std::span<const Reduction> reductions) noexcept;

/// The value of slot `stored` of reduction `reduction`: a sum as it is, a maximum's key decoded.
[[nodiscard]] double value_of(Reduction reduction, double stored) noexcept;

/// The kernel text of a sum's accumulator (struct uwjit_sum: += and -= x, reassociable, so that
/// the loops that sum still vectorise; its value as a double).
[[nodiscard]] std::string_view sum_accumulator_text() noexcept;

/// The GPU kernel text that adds a sum over a warp and into `total` with one atomic addition per
/// warp (uwjit_warp_add).
[[nodiscard]] std::string_view warp_sum_text() noexcept;

/// The kernel text of a maximum's accumulator (struct uwjit_max: max(x), its value as a double,
/// its key), the same encoding as max_key in C++ that compiles for a CPU and for a GPU.
[[nodiscard]] std::string_view max_accumulator_text() noexcept;

/// The GPU kernel text that combines a maximum's keys over a warp and into `total` with one
/// atomic maximum per warp (uwjit_warp_max).
[[nodiscard]] std::string_view warp_max_text() noexcept;

} // namespace uwjit::codegen
