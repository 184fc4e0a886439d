// KernelWriter: a kernel's declarations (extents, buffers, params, integrals, the update box,
// checked mode, GPU and batch forms) and finish(), which writes its text and slot tables. Each
// buffer's accessor text is in kernel_writer_buffers.cpp; the cell form's iteration and the
// judging of its reaches are in kernel_writer_cells.cpp.
#include <uwjit/codegen/kernel_writer.hpp>

#include <uwjit/codegen/kernel_abi.h>
#include <uwjit/codegen/number.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>

namespace uwjit::codegen {

static_assert(UWJIT_MAX_AXES == 3, "KernelWriter keeps one domain extent per ABI axis");

std::string_view to_string(ExtentMode mode) noexcept {
  return mode == ExtentMode::compiled ? "compiled" : "runtime";
}

std::string_view to_string(BufferRole role) noexcept {
  switch (role) {
  case BufferRole::state_in:
    return "state_in";
  case BufferRole::state_out:
    return "state_out";
  case BufferRole::statics:
    return "statics";
  }
  return "statics";
}

namespace {

// Names the generated text already uses, and C++ keywords a field might plausibly be called.
constexpr std::array<std::string_view, 40> k_reserved = {
    "args",      "uwm",     "auto",     "bool",   "break",    "case",   "char",   "const",
    "continue",  "default", "delete",   "do",     "double",   "else",   "enum",   "extern",
    "false",     "float",   "for",      "goto",   "if",       "inline", "int",    "long",
    "namespace", "new",     "operator", "return", "short",    "signed", "sizeof", "static",
    "struct",    "switch",  "this",     "true",   "unsigned", "using",  "void",   "while"};

bool is_reserved(std::string_view name) {
  return std::find(k_reserved.begin(), k_reserved.end(), name) != k_reserved.end() ||
         name.rfind("uw_", 0) == 0 || name.rfind("uwjit", 0) == 0 || name.rfind("UWJIT", 0) == 0 ||
         name.rfind("__", 0) == 0;
}

// The names for a message: "a, b", or "none".
std::string listed(const std::vector<std::string>& names) {
  return names.empty() ? "none" : join(names);
}

// Records that `part`, about to be appended to `text`, is `section`'s lines from its first.
void add_span(LineMap& lines, const std::string& text, const std::string& part,
              std::string section) {
  if (part.empty()) {
    return;
  }
  const auto first = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  const auto count = static_cast<int>(std::count(part.begin(), part.end(), '\n'));
  lines.spans.push_back({first, count, std::move(section), 1});
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

} // namespace

KernelWriter::KernelWriter(std::string origin) : m_origin(std::move(origin)) {}

void KernelWriter::fail(std::string_view message) const {
  throw Error(ErrorKind::usage, format("kernel of \"{}\": {}", m_origin, message));
}

void KernelWriter::claim(const std::string& identifier, std::string_view what) {
  if (!is_identifier(identifier)) {
    fail(format("{} \"{}\" is not a C identifier (letters, digits, _)", what,
                printable(identifier)));
  }
  if (is_reserved(identifier)) {
    fail(format("{} \"{}\" is a reserved name (C++ keywords, args, uwm, and names starting with "
                "uw_, uwjit, UWJIT or __)",
                what, identifier));
  }
  if (!m_identifiers.insert(identifier).second) {
    fail(format("{} \"{}\" clashes with a name already declared in this kernel", what, identifier));
  }
}

const ExtentDecl& KernelWriter::extent_of(Extent extent) const {
  if (extent.id < 0 || extent.id >= static_cast<int>(m_extents.size())) {
    fail(format("extent handle {} was not declared on this writer", extent.id));
  }
  return m_extents[static_cast<std::size_t>(extent.id)];
}

Extent KernelWriter::extent(std::string name, std::int64_t value, ExtentMode mode) {
  if (value < 1) {
    fail(format("extent \"{}\" must be at least 1, got {}", name, value));
  }
  claim(name, "extent");
  const int slot = mode == ExtentMode::runtime ? m_runtime_extents++ : -1;
  m_extents.push_back({std::move(name), value, mode, -1, slot});
  return Extent{static_cast<int>(m_extents.size()) - 1};
}

Extent KernelWriter::domain_extent(int axis, std::string name, std::int64_t value,
                                   ExtentMode mode) {
  if (axis < 0 || axis >= UWJIT_MAX_AXES) {
    fail(format("domain axis {} is out of range [0, {})", axis, UWJIT_MAX_AXES));
  }
  if (m_domain[axis] >= 0) {
    fail(format("domain axis {} is declared twice", axis));
  }
  const std::string base = name;
  const Extent handle = extent(std::move(name), value, mode);
  claim(base + "_offset", "extent");
  claim(base + "_global", "extent");
  if (m_update_box) {
    claim(base + "_begin", "extent");
    claim(base + "_end", "extent");
  }
  m_extents.back().domain_axis = axis;
  m_domain[axis] = handle.id;
  return handle;
}

Extent KernelWriter::constant(std::int64_t value) {
  if (value < 1) {
    fail(format("constant extent must be at least 1, got {}", value));
  }
  for (std::size_t i = 0; i < m_extents.size(); ++i) {
    const auto& e = m_extents[i];
    if (e.name.empty() && e.value == value) {
      return Extent{static_cast<int>(i)};
    }
  }
  m_extents.push_back({"", value, ExtentMode::compiled, -1, -1});
  return Extent{static_cast<int>(m_extents.size()) - 1};
}

Extent KernelWriter::domain(int axis) const {
  if (axis < 0 || axis >= UWJIT_MAX_AXES || m_domain[axis] < 0) {
    fail(format("domain axis {} was not declared", axis));
  }
  return Extent{m_domain[axis]};
}

void KernelWriter::declare_buffer(BufferRole role, std::string name, std::string accessor,
                                  Dtype dtype, std::vector<Axis> axes) {
  if (!is_supported(dtype)) {
    fail(format("buffer \"{}\": unsupported dtype (accepted: f32, f64, i8, u8, i32, i64)", name));
  }
  if (axes.empty() && role != BufferRole::statics) {
    fail(format("buffer \"{}\" needs at least one axis (only a static array may be a scalar)",
                name));
  }
  for (const Axis& axis : axes) {
    (void)extent_of(axis.extent);
    if (axis.halo < 0) {
      fail(format("buffer \"{}\": halo width {} is negative", name, axis.halo));
    }
  }
  if (find(role, name) != nullptr) {
    fail(format("{} \"{}\" is declared twice", to_string(role), name));
  }
  claim(accessor, "accessor");
  for (const char* suffix : {"_data", "_n", "_s"}) {
    if (suffix == std::string_view("_data")) {
      claim(accessor + suffix, "accessor");
      continue;
    }
    for (std::size_t d = 0; d < axes.size(); ++d) {
      claim(accessor + suffix + std::to_string(d), "accessor");
    }
  }
  int slot = 0;
  for (const auto& b : m_buffers) {
    slot += b.role == role ? 1 : 0;
  }
  m_buffers.push_back({role, std::move(name), std::move(accessor), dtype, std::move(axes), slot});
}

void KernelWriter::state_in(std::string field, Dtype dtype, std::vector<Axis> axes) {
  std::string accessor = field;
  declare_buffer(BufferRole::state_in, std::move(field), std::move(accessor), dtype,
                 std::move(axes));
}

void KernelWriter::state_out(std::string field) {
  if (m_allowed_state && !contains(*m_allowed_state, field)) {
    fail(format("output \"{}\" is neither a declared state field ({}) nor a domain integral ({})",
                field, listed(*m_allowed_state), listed(m_allowed_integrals)));
  }
  const BufferDecl* input = find(BufferRole::state_in, field);
  if (input == nullptr) {
    fail(format("state_out(\"{}\"): no state input of that name to copy the layout from; give "
                "the dtype and axes",
                field));
  }
  state_out(field, input->dtype, input->axes);
}

void KernelWriter::state_out(std::string field, Dtype dtype, std::vector<Axis> axes) {
  if (m_allowed_state && !contains(*m_allowed_state, field)) {
    fail(format("output \"{}\" is neither a declared state field ({}) nor a domain integral ({})",
                field, listed(*m_allowed_state), listed(m_allowed_integrals)));
  }
  std::string accessor = field + "_out";
  declare_buffer(BufferRole::state_out, std::move(field), std::move(accessor), dtype,
                 std::move(axes));
}

void KernelWriter::provide_static(std::string key, Dtype dtype, std::vector<std::int64_t> shape) {
  for (const auto& p : m_provided) {
    if (p.key == key) {
      fail(format("static array \"{}\" is provided twice", key));
    }
  }
  m_provided.push_back({std::move(key), dtype, std::move(shape)});
}

std::optional<std::vector<std::int64_t>> KernelWriter::provided_shape(std::string_view key) const {
  for (const auto& p : m_provided) {
    if (p.key == key) {
      return p.shape;
    }
  }
  return std::nullopt;
}

std::optional<Dtype> KernelWriter::provided_dtype(std::string_view key) const {
  for (const auto& p : m_provided) {
    if (p.key == key) {
      return p.dtype;
    }
  }
  return std::nullopt;
}

void KernelWriter::static_array(std::string key, Dtype dtype, std::vector<Axis> axes) {
  for (const auto& p : m_provided) {
    if (p.key != key) {
      continue;
    }
    std::vector<std::int64_t> declared;
    for (const Axis& axis : axes) {
      declared.push_back(extent_of(axis.extent).value);
    }
    if (p.dtype != dtype) {
      fail(format("static array \"{}\" is bound as {} but the kernel reads it as {}", key,
                  to_string(p.dtype), to_string(dtype)));
    }
    if (p.shape != declared) {
      fail(format("static array \"{}\" has shape {} but the kernel's axes are {}", key,
                  shape_text(p.shape), shape_text(declared)));
    }
  }
  std::string accessor = key;
  declare_buffer(BufferRole::statics, std::move(key), std::move(accessor), dtype, std::move(axes));
}

void KernelWriter::static_array(std::string key) {
  for (const auto& p : m_provided) {
    if (p.key != key) {
      continue;
    }
    std::vector<Axis> axes;
    for (const std::int64_t n : p.shape) {
      axes.push_back({constant(n), 0});
    }
    static_array(std::move(key), p.dtype, std::move(axes));
    return;
  }
  fail(format("static array \"{}\" was not provided (no such array in the static data)", key));
}

void KernelWriter::param(std::string name, double value) {
  claim(name, "param");
  const int slot = static_cast<int>(m_params.size());
  m_params.push_back({std::move(name), value, slot});
}

void KernelWriter::update_box() {
  if (m_update_box) {
    return;
  }
  if (std::all_of(std::begin(m_domain), std::end(m_domain), [](int id) { return id < 0; })) {
    fail("update_box(): no domain extent is declared");
  }
  for (const ExtentDecl& e : m_extents) {
    if (e.domain_axis >= 0) {
      claim(e.name + "_begin", "extent");
      claim(e.name + "_end", "extent");
    }
  }
  m_update_box = true;
}

void KernelWriter::integral(std::string name, Reduction reduction) {
  if (m_allowed_state && !contains(m_allowed_integrals, name)) {
    fail(format("output \"{}\" is neither a declared state field ({}) nor a domain integral ({})",
                name, listed(*m_allowed_state), listed(m_allowed_integrals)));
  }
  claim(name, "integral");
  m_integrals.push_back(std::move(name));
  m_integral_reductions.push_back(reduction);
}

void KernelWriter::restrict_outputs(std::vector<std::string> state_fields,
                                    std::vector<std::string> integrals) {
  m_allowed_state = std::move(state_fields);
  m_allowed_integrals = std::move(integrals);
}

void KernelWriter::comment(std::string_view line) {
  if (line.find_first_of("\r\n") != std::string_view::npos) {
    fail("a comment line may not hold a line break");
  }
  m_comments.emplace_back(line);
}

void KernelWriter::helpers(std::string_view text) {
  m_helpers += text;
  if (!m_helpers.empty() && m_helpers.back() != '\n') {
    m_helpers += '\n';
  }
}

void KernelWriter::body(std::string_view text) {
  if (!m_cell.empty()) {
    fail("body() after for_each_cell(): a kernel has its own loops or the writer's, not both");
  }
  m_body += text;
  if (!m_body.empty() && m_body.back() != '\n') {
    m_body += '\n';
  }
}

const BufferDecl* KernelWriter::find(BufferRole role, std::string_view name) const {
  for (const auto& b : m_buffers) {
    if (b.role == role && b.name == name) {
      return &b;
    }
  }
  return nullptr;
}

std::vector<uw_i64> KernelWriter::runtime_extent_values() const {
  std::vector<uw_i64> values;
  for (const ExtentDecl& e : m_extents) {
    if (e.mode == ExtentMode::runtime) {
      values.push_back(e.value);
    }
  }
  return values;
}

std::vector<double> KernelWriter::param_values() const {
  std::vector<double> values;
  for (const ParamDecl& p : m_params) {
    values.push_back(p.value);
  }
  return values;
}

std::vector<std::int64_t> KernelWriter::interior_shape(const BufferDecl& buffer) const {
  std::vector<std::int64_t> shape;
  for (const Axis& axis : buffer.axes) {
    shape.push_back(extent_of(axis.extent).value);
  }
  return shape;
}

// The head of the CPU function that updates the cells: the entry itself, or, in a batch, the
// update of one member that the entry calls, out of line so that it is compiled as the entry
// would be (the same bits).
std::string KernelWriter::update_head() const {
  if (m_batch) {
    return "static __attribute__((noinline)) int uwjit_member";
  }
  return format("extern \"C\" int {}", k_entry_placeholder);
}

KernelSource KernelWriter::finish() const {
  if (m_body.empty() && m_cell.empty()) {
    fail("no body was written (body() or for_each_cell())");
  }
  if (m_gpu && m_cell.empty()) {
    fail("it writes its own loops (body()), which run on CPUs only; a kernel that runs on a GPU "
         "gives the update of one cell with for_each_cell()");
  }
  if (m_gpu && m_checked) {
    fail("checked mode runs on CPUs only: check the kernel there, then write it for the GPU");
  }
  // A reach beyond a halo that every cell makes is refused before anything is compiled.
  (void)judge_reads();
  std::string text = "// uwjit generated kernel (KernelWriter)\n";
  if (m_gpu) {
    text += "// for a GPU: one thread per cell of the update box\n";
  }
  if (m_update_box) {
    text += "// updates the box args->update_begin .. update_end\n";
  }
  if (m_checked) {
    text += "// checked: every accessor index is tested against its buffer's layout\n";
  }
  if (m_batch) {
    text += m_gpu ? "// a batch: each member of args->members is a run of blocks along x\n"
                  : "// a batch: the entry makes the calls listed in args->members\n";
  }
  for (const auto& line : m_comments) {
    text += "// " + line + "\n";
  }
  if (!m_cell.empty() && m_cell_loop.masked_remainder) {
    text += masked_form_text();
  }
  const bool namespace_block = !m_integrals.empty() || !m_helpers.empty() || m_checked;
  if (namespace_block) {
    text += "namespace {\n";
  }
  if (m_checked) {
    // Out of line and cold: the accessors' common path stays a compare and a load.
    text += "__attribute__((noinline, cold)) void uwjit_record(uw_i64* check, uw_i64 kind, "
            "uw_i64 role, uw_i64 slot, uw_i64 axis, uw_i64 low, uw_i64 high, uw_i64 rank, "
            "const uw_i64* at) {\n"
            "  if (check[0] != UWJIT_CHECK_NONE) {\n"
            "    return;\n"
            "  }\n"
            "  check[0] = kind;\n"
            "  check[1] = role;\n"
            "  check[2] = slot;\n"
            "  check[3] = axis;\n"
            "  check[4] = low;\n"
            "  check[5] = high;\n"
            "  check[6] = rank;\n"
            "  for (uw_i64 k = 0; k < rank && k < UWJIT_CHECK_MAX_INDICES; ++k) {\n"
            "    check[7 + k] = at[k];\n"
            "  }\n"
            "}\n";
  }
  const auto has = [&](Reduction r) {
    return std::find(m_integral_reductions.begin(), m_integral_reductions.end(), r) !=
           m_integral_reductions.end();
  };
  if (has(Reduction::sum)) {
    // An integral may be summed in any order, so that the loops that sum it still vectorise
    // (a strict left-to-right sum of doubles does not); the rest of the kernel stays strict.
    text += sum_accumulator_text();
  }
  if (has(Reduction::max)) {
    text += max_accumulator_text();
  }
  if (m_gpu && has(Reduction::sum)) {
    text += warp_sum_text();
  }
  if (m_gpu && has(Reduction::max)) {
    text += warp_max_text();
  }
  LineMap lines;
  add_span(lines, text, m_helpers, "kernel helpers");
  text += m_helpers;
  if (namespace_block) {
    text += "} // namespace\n";
  }
  if (m_gpu && m_batch) {
    text += gpu_batch_head();
  } else if (m_gpu) {
    // The argument is passed by value; the text reads it through `args` as on a CPU.
    text += format("extern \"C\" __attribute__((nvptx_kernel)) void {}(const uwjit_kernel_args "
                   "uwjit_args) {\n",
                   k_entry_placeholder);
    text += "  const uwjit_kernel_args* const args = &uwjit_args;\n";
  } else if (!m_cell.empty()) {
    // A copy of the caller's struct, which no buffer can alias: the cell reads args->dt and the
    // like inside the loops, and those loads are then hoisted out of them.
    text += format("{}(const uwjit_kernel_args* uwjit_caller_args) {\n", update_head());
    text += "  const uwjit_kernel_args uwjit_args = *uwjit_caller_args;\n"
            "  const uwjit_kernel_args* const args = &uwjit_args;\n";
  } else {
    text += format("{}(const uwjit_kernel_args* args) {\n", update_head());
  }
  text += "  (void)args;\n";
  if (m_checked) {
    // The record of the first bad access: the caller's, or one of the kernel's own.
    text += "  uw_i64 uwjit_own_check[UWJIT_CHECK_RECORD_SIZE] = {};\n"
            "  uw_i64* const uwjit_check = args->check != nullptr ? args->check : "
            "uwjit_own_check;\n"
            "  for (int k = 0; k < UWJIT_CHECK_RECORD_SIZE; ++k) {\n"
            "    uwjit_check[k] = 0;\n"
            "  }\n";
    for (int d = 0; d < UWJIT_MAX_AXES; ++d) {
      text += format("  const uw_i64 uwjit_begin{} = args->update_begin[{}];\n", d, d);
      text += format("  const uw_i64 uwjit_end{} = args->update_end[{}];\n", d, d);
      text += format("  (void)uwjit_begin{};\n  (void)uwjit_end{};\n", d, d);
    }
  }
  SlotTables slots;
  for (const ExtentDecl& e : m_extents) {
    if (e.name.empty()) {
      continue;
    }
    if (e.mode == ExtentMode::compiled) {
      text += format("  constexpr uw_i64 {} = {};\n", e.name, literal(e.value));
    } else {
      text += format("  const uw_i64 {} = args->extents[{}];\n", e.name, e.slot);
      slots.extents.push_back(e.name);
    }
    if (e.domain_axis >= 0) {
      // Where this shard lies in the whole domain (0 and the extent itself when serial).
      text += format("  const uw_i64 {}_offset = args->shard_offset[{}];\n", e.name, e.domain_axis);
      text +=
          format("  const uw_i64 {}_global = args->global_extent[{}];\n", e.name, e.domain_axis);
      text += format("  (void){}_offset;\n  (void){}_global;\n", e.name, e.name);
      if (m_update_box) {
        // The box this call updates; a runtime may tile the interior with several calls.
        text +=
            format("  const uw_i64 {}_begin = args->update_begin[{}];\n", e.name, e.domain_axis);
        text += format("  const uw_i64 {}_end = args->update_end[{}];\n", e.name, e.domain_axis);
        text += format("  (void){}_begin;\n  (void){}_end;\n", e.name, e.name);
      }
    }
  }
  for (const BufferDecl& b : m_buffers) {
    text += buffer_text(b);
    switch (b.role) {
    case BufferRole::state_in:
      slots.state_in.push_back(b.name);
      break;
    case BufferRole::state_out:
      slots.state_out.push_back(b.name);
      break;
    case BufferRole::statics:
      slots.statics.push_back(b.name);
      break;
    }
  }
  // Every state output is a buffer of its own, apart from every other buffer the kernel sees:
  // loops that write it need no run-time overlap checks to vectorise. The builtin is Clang's; the
  // guard keeps the source valid C++ for other compilers (g++ builds the benchmark's anchors).
  std::string separate;
  for (const BufferDecl& out : m_buffers) {
    if (out.role != BufferRole::state_out) {
      continue;
    }
    for (const BufferDecl& other : m_buffers) {
      if (&other != &out) {
        separate += format("  __builtin_assume_separate_storage({}_data, {}_data);\n", out.accessor,
                           other.accessor);
      }
    }
  }
  if (!separate.empty()) {
    text += "#if __has_builtin(__builtin_assume_separate_storage)\n" + separate + "#endif\n";
  }
  for (const ParamDecl& p : m_params) {
    text += format("  const double {} = args->params[{}];\n  (void){};\n", p.name, p.slot, p.name);
    slots.params.push_back(p.name);
  }
  for (std::size_t i = 0; i < m_integrals.size(); ++i) {
    text += m_integral_reductions[i] == Reduction::max
                ? format("  uwjit_max {}{0};\n", m_integrals[i])
                : format("  uwjit_sum {}{0.0};\n", m_integrals[i]);
    slots.integrals.push_back(m_integrals[i]);
  }
  text += "  {\n";
  if (m_cell.empty()) {
    add_span(lines, text, m_body, "kernel");
    text += m_body;
  } else {
    const auto [opening, closing] = m_gpu ? cell_threads() : cell_loops();
    text += opening;
    add_span(lines, text, m_cell, "kernel");
    text += m_cell + closing;
  }
  text += "  }\n";
  if (m_checked) {
    text += "  if (uwjit_check[0] != UWJIT_CHECK_NONE) {\n"
            "    return UWJIT_KERNEL_CHECK_FAILED;\n"
            "  }\n";
  }
  for (std::size_t i = 0; i < m_integrals.size(); ++i) {
    const std::string& name = m_integrals[i];
    if (m_integral_reductions[i] == Reduction::max) {
      // The key, as the runtime combines and decodes it (reduction.hpp).
      text +=
          m_gpu ? format("  uwjit_warp_max(&args->integrals[{}], {}.key);\n", i, name)
                : format("  args->integrals[{}] = __builtin_bit_cast(double, {}.key);\n", i, name);
    } else {
      text += m_gpu ? format("  uwjit_warp_add(&args->integrals[{}], {}.value);\n", i, name)
                    : format("  args->integrals[{}] = {}.value;\n", i, name);
    }
  }
  text += m_gpu ? "}\n" : "  return UWJIT_KERNEL_OK;\n}\n";
  if (m_batch && !m_gpu) {
    text += format("extern \"C\" int {}(const uwjit_kernel_args* batch) {\n"
                   "  int first = UWJIT_KERNEL_OK;\n"
                   "  for (uw_i64 m = 0; m < batch->n_members; ++m) {\n"
                   "    const int status = uwjit_member(&batch->members[m]);\n"
                   "    batch->member_status[m] = status;\n"
                   "    if (first == UWJIT_KERNEL_OK) {\n"
                   "      first = status;\n"
                   "    }\n"
                   "  }\n"
                   "  return first;\n"
                   "}\n",
                   k_entry_placeholder);
  }
  return KernelSource::generated(m_origin, std::move(text), std::move(slots), std::move(lines));
}

} // namespace uwjit::codegen
