// KernelWriter's accessor of each buffer: its data pointer, extents and strides (constants where
// the extents are compiled in), and the lambda that indexes it past its halos, with checked
// mode's bounds tests.
#include <uwjit/codegen/kernel_writer.hpp>

#include <uwjit/codegen/number.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace uwjit::codegen {

std::string KernelWriter::extent_text(const ExtentDecl& extent) const {
  return extent.name.empty() ? literal(extent.value) : extent.name;
}

// Checked mode: the tests that open an accessor, one per axis, each recording the first bad index
// (see kernel_abi.h) and returning before the access.
std::string KernelWriter::checks_text(const BufferDecl& b) const {
  const std::string& a = b.accessor;
  const bool writable = b.role == BufferRole::state_out;
  const std::size_t rank = b.axes.size();
  const int role = b.role == BufferRole::state_in ? 0 : (writable ? 1 : 2);
  std::string text = "    const uw_i64 uwjit_at[] = {";
  for (std::size_t d = 0; d < rank; ++d) {
    text += format("{}i{}", d == 0 ? "" : ", ", d);
  }
  text += "};\n";
  for (std::size_t d = 0; d < rank; ++d) {
    const ExtentDecl& e = extent_of(b.axes[d].extent);
    std::string low;
    std::string high;
    if (writable && e.domain_axis >= 0) {
      low = format("uwjit_begin{}", e.domain_axis);
      high = format("uwjit_end{}", e.domain_axis);
    } else if (writable || b.axes[d].halo == 0) {
      low = "0LL";
      high = format("{}_n{}", a, d);
    } else {
      const std::string halo = literal(std::int64_t{b.axes[d].halo});
      low = "-" + halo;
      high = format("{}_n{} + {}", a, d, halo);
    }
    text += format("    if (__builtin_expect(i{} < {} || i{} >= {}, 0)) {\n", d, low, d, high);
    text += format("      uwjit_record(uwjit_check, {}, {}, {}, {}, {}, {}, {}, uwjit_at);\n",
                   writable ? "UWJIT_CHECK_WRITE" : "UWJIT_CHECK_READ", role, b.slot, d, low, high,
                   rank);
    text += writable ? format("      return *uwjit_sink{};\n", b.slot) : "      return 0;\n";
    text += "    }\n";
  }
  return text;
}

bool assumes_aligned(const BufferDecl& buffer) noexcept {
  return buffer.role != BufferRole::statics ||
         std::any_of(buffer.axes.begin(), buffer.axes.end(),
                     [](const Axis& axis) { return axis.halo > 0; });
}

std::string KernelWriter::buffer_text(const BufferDecl& b) const {
  const std::string& a = b.accessor;
  const std::string type(c_type(b.dtype));
  const bool writable = b.role == BufferRole::state_out;
  const std::size_t rank = b.axes.size();
  std::string text = format("  // {}: {} {} [", a, to_string(b.role), to_string(b.dtype));
  for (std::size_t d = 0; d < rank; ++d) {
    const ExtentDecl& e = extent_of(b.axes[d].extent);
    text += d == 0 ? "" : ", ";
    text += extent_text(e);
    if (b.axes[d].halo > 0) {
      text += format(" halo {}", b.axes[d].halo);
    }
  }
  text += "]\n";
  const bool aligned = assumes_aligned(b);
  const std::string pointer = format("args->{}[{}]", to_string(b.role), b.slot);
  text += format("  {}{}* const {}_data = static_cast<{}{}*>({});\n", writable ? "" : "const ",
                 type, a, writable ? "" : "const ", type,
                 aligned ? format("__builtin_assume_aligned({}, 64)", pointer) : pointer);
  // A stride is a compile-time constant when every extent after its axis is.
  std::vector<bool> compiled_after(rank + 1, true);
  for (std::size_t d = rank; d-- > 0;) {
    compiled_after[d] =
        compiled_after[d + 1] && extent_of(b.axes[d].extent).mode == ExtentMode::compiled;
  }
  for (std::size_t d = 0; d < rank; ++d) {
    const ExtentDecl& e = extent_of(b.axes[d].extent);
    text += format("  {} uw_i64 {}_n{} = {};\n",
                   e.mode == ExtentMode::compiled ? "constexpr" : "const", a, d, extent_text(e));
  }
  for (std::size_t d = rank; d-- > 0;) {
    const char* qualifier = compiled_after[d + 1] ? "constexpr" : "const";
    if (d + 1 == rank) {
      text += format("  constexpr uw_i64 {}_s{} = 1LL;\n", a, d);
    } else {
      text += format("  {} uw_i64 {}_s{} = {}_s{} * ({}_n{} + {});\n", qualifier, a, d, a, d + 1, a,
                     d + 1, literal(std::int64_t{2} * b.axes[d + 1].halo));
    }
  }
  if (rank == 0) {
    text += format("  auto {} = [=]() -> {} {\n    return {}_data[0];\n  };\n", a, type, a);
    text += format("  (void){};\n", a);
    return text;
  }
  if (m_checked && writable) {
    // Where a write outside the box goes instead.
    text +=
        format("  {} uwjit_sink_value{} = 0;\n  {}* const uwjit_sink{} = &uwjit_sink_value{};\n",
               type, b.slot, type, b.slot, b.slot);
  }
  text += format("  auto {} = [=](", a);
  for (std::size_t d = 0; d < rank; ++d) {
    text += format("{}uw_i64 i{}", d == 0 ? "" : ", ", d);
  }
  text += format(") -> {}{} {\n", type, writable ? "&" : "");
  if (m_checked) {
    text += checks_text(b);
  }
  text += format("    return {}_data[", a);
  for (std::size_t d = 0; d < rank; ++d) {
    const int halo = b.axes[d].halo;
    const std::string index =
        halo > 0 ? format("(i{} + {})", d, literal(std::int64_t{halo})) : format("i{}", d);
    text += d == 0 ? "" : " + ";
    text += d + 1 == rank ? index : format("{} * {}_s{}", index, a, d);
  }
  text += "];\n  };\n";
  text += format("  (void){};\n", a);
  return text;
}

} // namespace uwjit::codegen
