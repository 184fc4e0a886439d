// codegen/: KernelWriter and dtypes. The text is checked here; tests/jit runs it.
#include "expect.hpp"

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/codegen/kernel_writer.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <array>

#include <string>

using uwjit::codegen::Dtype;
using uwjit::codegen::ExtentMode;
using uwjit::codegen::KernelWriter;

namespace {

// A writer with a 3-D domain, a halo-padded state field u, a static array k and an integral.
KernelWriter heat_like(ExtentMode mode, std::int64_t n = 12345) {
  KernelWriter w("heat");
  const auto x = w.domain_extent(0, "nx", n, mode);
  const auto y = w.domain_extent(1, "ny", 7, mode);
  const auto z = w.domain_extent(2, "nz", 9, ExtentMode::compiled);
  w.state_in("u", Dtype::f64, {{x, 1}, {y, 1}, {z, 1}});
  w.provide_static("k", Dtype::f32, {n, 7, 9});
  w.restrict_outputs({"u"}, {"total"});
  w.state_out("u");
  w.static_array("k", Dtype::f32, {{x}, {y}, {z}});
  w.integral("total");
  w.body("    total += u(0, 0, 0) + k(0, 0, 0);\n    u_out(0, 0, 0) = u(-1, 0, 0);\n");
  return w;
}

using uwjit_test::contains;
using uwjit_test::usage_error;

} // namespace

TEST_CASE("every dtype has a name, a C type and a size, and its name parses back") {
  for (const Dtype dtype : uwjit::codegen::k_all_dtypes) {
    CHECK(uwjit::codegen::parse_dtype(uwjit::codegen::to_string(dtype)) == dtype);
    CHECK(uwjit::codegen::c_type(dtype).substr(0, 3) == "uw_");
  }
  CHECK(uwjit::codegen::size_of(Dtype::u8) == 1);
  CHECK(uwjit::codegen::size_of(Dtype::i32) == 4);
  CHECK(uwjit::codegen::size_of(Dtype::f64) == 8);
  CHECK_FALSE(uwjit::codegen::parse_dtype("f16"));
  const auto bogus = static_cast<Dtype>(42);
  CHECK_FALSE(uwjit::codegen::is_supported(bogus));
  CHECK(contains(usage_error([&] { (void)uwjit::codegen::size_of(bogus); }), "unsupported"));
}

TEST_CASE("a kernel writer emits accessors, extents and slot tables in declaration order") {
  const auto source = heat_like(ExtentMode::runtime).finish();
  const std::string& body = source.body();
  CHECK(source.slots().state_in == std::vector<std::string>{"u"});
  CHECK(source.slots().state_out == std::vector<std::string>{"u"});
  CHECK(source.slots().statics == std::vector<std::string>{"k"});
  CHECK(source.slots().extents == std::vector<std::string>{"nx", "ny"});
  CHECK(source.slots().integrals == std::vector<std::string>{"total"});
  CHECK(contains(body, "const uw_i64 nx = args->extents[0];"));
  CHECK(contains(body, "const uw_i64 ny = args->extents[1];"));
  CHECK(contains(body, "constexpr uw_i64 nz = 9LL;"));
  CHECK(contains(body, "const uw_i64 nx_offset = args->shard_offset[0];"));
  CHECK(contains(body, "const uw_i64 nz_global = args->global_extent[2];"));
  CHECK(contains(body, "auto u = [=](uw_i64 i0, uw_i64 i1, uw_i64 i2) -> uw_f64 {"));
  CHECK(contains(body, "auto u_out = [=](uw_i64 i0, uw_i64 i1, uw_i64 i2) -> uw_f64& {"));
  CHECK(contains(body, "(i0 + 1LL) * u_s0 + (i1 + 1LL) * u_s1 + (i2 + 1LL)"));
  CHECK(contains(body, "auto k = [=](uw_i64 i0, uw_i64 i1, uw_i64 i2) -> uw_f32 {"));
  CHECK(contains(body, "static_cast<const uw_f32*>(args->statics[0])"));
  CHECK(contains(body, "args->integrals[0] = total.value;"));
  CHECK(contains(body, "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* args)"));
  CHECK_FALSE(contains(body, "#define"));
  CHECK_FALSE(contains(body, "#include"));
}

TEST_CASE("a run-time extent's value never appears in the text; a compiled one's does") {
  const std::string runtime_text = heat_like(ExtentMode::runtime, 12345).finish().body();
  const std::string compiled_text = heat_like(ExtentMode::compiled, 12345).finish().body();
  CHECK_FALSE(contains(runtime_text, "12345"));
  CHECK(contains(compiled_text, "constexpr uw_i64 nx = 12345LL;"));
  // So with run-time extents another grid size is the same kernel.
  CHECK(heat_like(ExtentMode::runtime, 100).finish().canonical() ==
        heat_like(ExtentMode::runtime, 200).finish().canonical());
  CHECK(heat_like(ExtentMode::compiled, 100).finish().canonical() !=
        heat_like(ExtentMode::compiled, 200).finish().canonical());
}

TEST_CASE("the same declarations give byte-identical text") {
  CHECK(heat_like(ExtentMode::compiled).finish().canonical() ==
        heat_like(ExtentMode::compiled).finish().canonical());
}

TEST_CASE("an output that is neither a state field nor a domain integral is refused, named") {
  KernelWriter w("heat");
  const auto x = w.domain_extent(0, "nx", 8, ExtentMode::compiled);
  w.state_in("u", Dtype::f64, {{x, 1}});
  w.restrict_outputs({"u"}, {"total"});
  const auto state = usage_error([&] { w.state_out("ghost", Dtype::f64, {{x, 1}}); });
  CHECK(contains(state, "kernel of \"heat\""));
  CHECK(contains(state, "output \"ghost\" is neither a declared state field (u) nor a domain "
                        "integral (total)"));
  const auto integral = usage_error([&] { w.integral("energy"); });
  CHECK(contains(integral, "output \"energy\""));
  w.state_out("u");
  w.integral("total");
}

TEST_CASE("a static array read with another shape or dtype than it is bound with is refused") {
  KernelWriter w("fvm");
  const auto n = w.extent("n", 10, ExtentMode::compiled);
  w.provide_static("area", Dtype::f64, {11});
  CHECK(contains(usage_error([&] { w.static_array("area", Dtype::f64, {{n}}); }),
                 "static array \"area\" has shape (11) but the kernel's axes are (10)"));
  CHECK(contains(usage_error([&] { w.static_array("area", Dtype::f32, {{w.constant(11)}}); }),
                 "bound as f64 but the kernel reads it as f32"));
  CHECK(contains(usage_error([&] { w.static_array("missing"); }),
                 "static array \"missing\" was not provided"));
  w.static_array("area");
  CHECK(w.find(uwjit::codegen::BufferRole::statics, "area") != nullptr);
}

TEST_CASE("a static array declared from its provided shape gets compiled-in constants") {
  KernelWriter w("mlp");
  w.provide_static("w0", Dtype::f64, {16, 3});
  w.static_array("w0");
  w.body("    (void)w0(0, 0);\n");
  const std::string text = w.finish().body();
  CHECK(contains(text, "constexpr uw_i64 w0_n0 = 16LL;"));
  CHECK(contains(text, "constexpr uw_i64 w0_n1 = 3LL;"));
  CHECK(contains(text, "constexpr uw_i64 w0_s0 = w0_s1 * (w0_n1 + 0LL);"));
}

TEST_CASE("names must be identifiers, unreserved and unique") {
  KernelWriter w("n");
  const auto x = w.extent("nx", 4, ExtentMode::compiled);
  CHECK(contains(usage_error([&] { (void)w.extent("nx", 4, ExtentMode::compiled); }),
                 "clashes with a name already declared"));
  CHECK(
      contains(usage_error([&] { w.state_in("2u", Dtype::f64, {{x}}); }), "is not a C identifier"));
  CHECK(contains(usage_error([&] { w.state_in("args", Dtype::f64, {{x}}); }), "reserved"));
  CHECK(contains(usage_error([&] { w.state_in("uwjit_x", Dtype::f64, {{x}}); }), "reserved"));
  CHECK(contains(usage_error([&] { (void)w.extent("m", 0, ExtentMode::compiled); }),
                 "must be at least 1"));
  CHECK(contains(usage_error([&] { w.state_in("u", Dtype::f64, {{uwjit::codegen::Extent{7}}}); }),
                 "extent handle 7 was not declared"));
  CHECK(contains(usage_error([&] { (void)w.domain(1); }), "domain axis 1 was not declared"));
  CHECK(contains(usage_error([&] { (void)w.finish(); }), "no body was written"));
  CHECK(contains(usage_error([&] { w.comment("two\nlines"); }), "line break"));
}

TEST_CASE("a kernel that updates a box gets its bounds per domain axis, and says so in the text") {
  const std::string plain = heat_like(ExtentMode::compiled).finish().body();
  CHECK_FALSE(heat_like(ExtentMode::compiled).updates_box());
  CHECK_FALSE(contains(plain, "update_begin"));
  KernelWriter w = heat_like(ExtentMode::compiled);
  w.update_box();
  CHECK(w.updates_box());
  const std::string text = w.finish().body();
  CHECK(contains(text, "// updates the box args->update_begin .. update_end"));
  CHECK(contains(text, "const uw_i64 nx_begin = args->update_begin[0];"));
  CHECK(contains(text, "const uw_i64 nz_end = args->update_end[2];"));
  // Part of the text, so part of the key: the promise travels with the kernel.
  CHECK(text != plain);
}

TEST_CASE("update_box needs a domain extent and claims the names of its bounds") {
  KernelWriter none("probe");
  CHECK(contains(usage_error([&] { none.update_box(); }), "no domain extent is declared"));
  KernelWriter clash("probe");
  (void)clash.domain_extent(0, "nx", 8, ExtentMode::compiled);
  (void)clash.extent("nx_end", 3, ExtentMode::compiled);
  CHECK(contains(usage_error([&] { clash.update_box(); }), "\"nx_end\" clashes"));
  KernelWriter later("probe");
  (void)later.domain_extent(0, "nx", 8, ExtentMode::compiled);
  later.update_box();
  CHECK(contains(usage_error([&] { (void)later.extent("nx_begin", 3, ExtentMode::compiled); }),
                 "\"nx_begin\" clashes"));
}

TEST_CASE("a node reads a provided array's dtype as it reads its shape") {
  KernelWriter w("n");
  w.provide_static("mask", Dtype::u8, {4, 5});
  CHECK(w.provided_dtype("mask") == Dtype::u8);
  CHECK(w.provided_shape("mask") == std::vector<std::int64_t>{4, 5});
  CHECK_FALSE(w.provided_dtype("other").has_value());
  CHECK_FALSE(w.provided_shape("other").has_value());
}

TEST_CASE("checked mode is other text; off, the text is what it always was") {
  const std::string plain = heat_like(ExtentMode::compiled).finish().body();
  KernelWriter off = heat_like(ExtentMode::compiled);
  off.checked(false);
  CHECK_FALSE(off.is_checked());
  CHECK(off.finish().body() == plain);
  CHECK(plain.find("uwjit_check") == std::string::npos);
  KernelWriter on = heat_like(ExtentMode::compiled);
  on.checked(true);
  CHECK(on.is_checked());
  const std::string text = on.finish().body();
  CHECK(text != plain);
  CHECK(text.find("// checked: every accessor index is tested against its buffer's layout\n") !=
        std::string::npos);
  // Reads are tested against the halo-padded layout, writes against the update box.
  CHECK(text.find("if (__builtin_expect(i0 < -1LL || i0 >= u_n0 + 1LL, 0))") != std::string::npos);
  CHECK(text.find("if (__builtin_expect(i0 < uwjit_begin0 || i0 >= uwjit_end0, 0))") !=
        std::string::npos);
  CHECK(text.find("if (__builtin_expect(i2 < 0LL || i2 >= k_n2, 0))") != std::string::npos);
  CHECK(text.find("return UWJIT_KERNEL_CHECK_FAILED;") != std::string::npos);
}

TEST_CASE("a run-time param is read from args->params and its value never appears in the text") {
  auto with_kappa = [](double kappa) {
    KernelWriter w = heat_like(ExtentMode::compiled, 8);
    w.param("kappa", kappa);
    w.param("gain", 2.0);
    return w;
  };
  const KernelWriter w = with_kappa(0.123456789);
  REQUIRE(w.run_time_params().size() == 2);
  CHECK(w.run_time_params()[0].name == "kappa");
  CHECK(w.run_time_params()[0].value == 0.123456789);
  CHECK(w.run_time_params()[1].slot == 1);
  const auto source = w.finish();
  CHECK(source.slots().params == std::vector<std::string>{"kappa", "gain"});
  CHECK(contains(source.body(), "const double kappa = args->params[0];"));
  CHECK(contains(source.body(), "const double gain = args->params[1];"));
  CHECK_FALSE(contains(source.body(), "123456789"));
  CHECK(contains(source.canonical(), "params=[kappa,gain]"));
  // Another value is the same kernel.
  CHECK(with_kappa(7.5).finish().canonical() == source.canonical());
  // A param's name is claimed like any other.
  KernelWriter clash = heat_like(ExtentMode::compiled, 8);
  CHECK(contains(usage_error([&] { clash.param("u", 1.0); }), "param \"u\" clashes"));
  CHECK(contains(usage_error([&] { clash.param("args", 1.0); }), "reserved"));
}

TEST_CASE("a static array of no axes is read as a scalar through key()") {
  KernelWriter w("gain");
  const auto x = w.domain_extent(0, "nx", 4, ExtentMode::compiled);
  w.state_in("u", Dtype::f64, {{x}});
  w.provide_static("g", Dtype::f32, {});
  w.state_out("u");
  w.static_array("g"); // from its provided (empty) shape
  w.body("    u_out(0) = u(0) * g();\n");
  const auto source = w.finish();
  CHECK(source.slots().statics == std::vector<std::string>{"g"});
  CHECK(contains(source.body(), "auto g = [=]() -> uw_f32 {\n    return g_data[0];"));
  // State buffers still need an axis.
  KernelWriter bad("bad");
  CHECK(contains(usage_error([&] { bad.state_in("u", Dtype::f64, {}); }),
                 "only a static array may be a scalar"));
}

TEST_CASE("the line map takes each line of body() and helpers() back to the node's own text") {
  KernelWriter w = heat_like(ExtentMode::compiled, 8);
  w.helpers("inline double twice(double a) {\n  return 2 * a;\n}\n");
  const auto source = w.finish();
  const auto& map = source.line_map();
  REQUIRE(map.spans.size() == 2);
  const std::string& text = source.body();
  auto line_of = [&](int line) {
    std::size_t at = 0;
    for (int l = 1; l < line; ++l) {
      at = text.find('\n', at) + 1;
    }
    return text.substr(at, text.find('\n', at) - at);
  };
  for (const auto& span : map.spans) {
    CAPTURE(span.section);
    CHECK(span.source_first == 1);
    CHECK(map.find(span.first) == &span);
  }
  CHECK(map.spans[0].section == "kernel helpers");
  CHECK(map.spans[0].count == 3);
  CHECK(line_of(map.spans[0].first + 1) == "  return 2 * a;");
  CHECK(map.spans[1].section == "kernel");
  CHECK(map.spans[1].count == 2);
  CHECK(line_of(map.spans[1].first + 1) == "    u_out(0, 0, 0) = u(-1, 0, 0);");
  CHECK(map.find(1) == nullptr); // the writer's own first line
  // The canonical text, and so the key, does not carry the map.
  CHECK(source.canonical().find("kernel helpers") == std::string::npos);
  // The body starts where body_first_line() says.
  const std::string& canonical = source.canonical();
  std::size_t at = 0;
  for (int l = 1; l < source.body_first_line(); ++l) {
    at = canonical.find('\n', at) + 1;
  }
  CHECK(canonical.substr(at, text.find('\n') + 1) == text.substr(0, text.find('\n') + 1));
}

namespace {

// heat_like without its body: a kernel about to be given its cell.
KernelWriter cell_like() {
  KernelWriter w("heat");
  const auto x = w.domain_extent(0, "nx", 8, ExtentMode::compiled);
  const auto y = w.domain_extent(1, "ny", 7, ExtentMode::runtime);
  const auto z = w.domain_extent(2, "nz", 9, ExtentMode::compiled);
  w.state_in("u", Dtype::f64, {{x, 1}, {y, 1}, {z, 1}});
  w.state_out("u");
  w.integral("total");
  return w;
}

constexpr const char* k_cell = "      const double next = u(i, j, k + 1) * args->dt;\n"
                               "      u_out(i, j, k) = next;\n"
                               "      total += next;\n";

} // namespace

TEST_CASE("the cell form on a CPU: loops over the update box, the last axis innermost") {
  KernelWriter w = cell_like();
  w.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
  CHECK(w.updates_box()); // declared by for_each_cell
  CHECK(w.is_cell_form());
  const auto source = w.finish();
  const std::string& body = source.body();
  CHECK(contains(body, "    for (uw_i64 i = nx_begin; i < nx_end; ++i) {\n"
                       "      for (uw_i64 j = ny_begin; j < ny_end; ++j) {\n"
                       "        for (uw_i64 k = nz_begin; k < nz_end; ++k) {\n" +
                           std::string(k_cell) + "        }\n      }\n    }\n"));
  // The caller's struct is copied, so that no buffer can alias what the cell reads from args.
  CHECK(contains(body, "int __UWJIT_ENTRY__(const uwjit_kernel_args* uwjit_caller_args) {\n"
                       "  const uwjit_kernel_args uwjit_args = *uwjit_caller_args;\n"));
  CHECK(contains(body, "  args->integrals[0] = total.value;\n  return UWJIT_KERNEL_OK;\n"));
  CHECK_FALSE(contains(body, "vectorize_predicate"));
  CHECK_FALSE(contains(body, "nvvm"));
  // The node's lines are mapped as a body's are.
  const auto& span = source.line_map().spans.at(0);
  CHECK(span.section == "kernel");
  CHECK(span.count == 3);
  std::size_t at = 0;
  for (int line = 1; line < span.first; ++line) {
    at = body.find('\n', at) + 1;
  }
  CHECK(body.substr(at, body.find('\n', at) - at) ==
        "      const double next = u(i, j, k + 1) * args->dt;");

  KernelWriter masked = cell_like();
  masked.for_each_cell({.indices = {"i", "j", "k"}, .masked_remainder = true}, k_cell);
  // Masked iterations where the target's masked moves are cheap: the compiler's macros choose,
  // and the text names the choice for the node's own code.
  const std::string masked_body = masked.finish().body();
  CHECK(contains(masked_body, "#if UWJIT_MASKED_MOVES\n"
                              "#pragma clang loop vectorize_predicate(enable)\n"
                              "#else\n"
                              "#pragma clang loop vectorize(enable)\n"
                              "#endif\n"
                              "        for (uw_i64 k = nz_begin;"));
  // The choice itself, before the text that uses it.
  const auto choice = masked_body.find("#if defined(__AVX512F__) || !defined(__x86_64__)\n"
                                       "#define UWJIT_MASKED_MOVES 1\n#else\n"
                                       "#define UWJIT_MASKED_MOVES 0\n#endif\n");
  CHECK(choice != std::string::npos);
  CHECK(choice < masked_body.find("#if UWJIT_MASKED_MOVES"));
  CHECK_FALSE(contains(body, "UWJIT_MASKED_MOVES"));
}

TEST_CASE(
    "the cell form for a GPU: one thread per cell, the last axis on x, warp-summed integrals") {
  KernelWriter w = cell_like();
  w.gpu(true);
  w.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
  const auto source = w.finish();
  const std::string& body = source.body();
  CHECK(contains(body, "extern \"C\" __attribute__((nvptx_kernel)) void "
                       "__UWJIT_ENTRY__(const uwjit_kernel_args uwjit_args) {\n"
                       "  const uwjit_kernel_args* const args = &uwjit_args;\n"));
  CHECK(contains(body, "    const uw_i64 i = nx_begin + "
                       "static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_z());\n"
                       "    const uw_i64 j = ny_begin + "
                       "static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_y());\n"
                       "    const uw_i64 k = nz_begin + "
                       "static_cast<uw_i64>(__nvvm_read_ptx_sreg_ctaid_x()) * "
                       "__nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();\n"
                       "    if (i < nx_end && j < ny_end && k < nz_end) {\n" +
                           std::string(k_cell) + "    }\n"));
  CHECK(contains(body, "  uwjit_warp_add(&args->integrals[0], total.value);\n}\n"));
  CHECK_FALSE(contains(body, "UWJIT_KERNEL_OK"));
  // Other text than the CPU form's: another key.
  KernelWriter cpu = cell_like();
  cpu.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
  CHECK(cpu.finish().canonical() != source.canonical());
}

TEST_CASE("a batch for a GPU: each member a run of blocks along x, its cells as the plain "
          "kernel's") {
  KernelWriter w = cell_like();
  w.gpu(true);
  w.batch(true);
  w.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
  const auto source = w.finish();
  const std::string& body = source.body();
  // The member from ctaid.x, over blocks of the batch's shared row (the last axis, z).
  CHECK(contains(body, "extern \"C\" __attribute__((nvptx_kernel)) void "
                       "__UWJIT_ENTRY__(const uwjit_kernel_args uwjit_batch) {\n"
                       "  const uw_i64 uwjit_row = uwjit_batch.update_end[2] - "
                       "uwjit_batch.update_begin[2];\n"));
  CHECK(contains(body, "  if (uwjit_row_blocks == 0 || uwjit_block >= uwjit_row_blocks * "
                       "uwjit_batch.n_members) {\n    return;\n  }\n"));
  CHECK(contains(body, "  const uwjit_kernel_args* const args = &uwjit_batch.members[uwjit_block / "
                       "uwjit_row_blocks];\n"));
  // The cell's threads and text as the plain kernel's, the block within the member's row.
  CHECK(contains(body, "    const uw_i64 k = nz_begin + uwjit_row_block * "
                       "__nvvm_read_ptx_sreg_ntid_x() + __nvvm_read_ptx_sreg_tid_x();\n"
                       "    if (i < nx_end && j < ny_end && k < nz_end) {\n" +
                           std::string(k_cell) + "    }\n"));
  CHECK(contains(body, "  uwjit_warp_add(&args->integrals[0], total.value);\n}\n"));
  // No CPU entry looping over members, and another key than the plain GPU kernel's.
  CHECK_FALSE(contains(body, "uwjit_member("));
  KernelWriter plain = cell_like();
  plain.gpu(true);
  plain.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
  CHECK(plain.finish().canonical() != source.canonical());
}

TEST_CASE("a maximum integral: its accumulator only where one is declared, its key stored, one "
          "atomic maximum a warp on a GPU") {
  auto with_peak = [](bool gpu) {
    KernelWriter w = cell_like();
    w.gpu(gpu);
    w.integral("peak", uwjit::codegen::Reduction::max);
    w.for_each_cell({.indices = {"i", "j", "k"}},
                    std::string(k_cell) + "      peak.max(uwm::fabs(next));\n");
    CHECK(w.integral_reductions() ==
          std::vector{uwjit::codegen::Reduction::sum, uwjit::codegen::Reduction::max});
    return w.finish().body();
  };
  const std::string cpu = with_peak(false);
  CHECK(contains(cpu, std::string(uwjit::codegen::max_accumulator_text())));
  CHECK(contains(cpu, "  uwjit_max peak{0};\n"));
  CHECK(contains(cpu, "  args->integrals[1] = __builtin_bit_cast(double, peak.key);\n"));
  const std::string gpu = with_peak(true);
  CHECK(contains(gpu, std::string(uwjit::codegen::warp_max_text())));
  CHECK(contains(gpu, "  uwjit_warp_max(&args->integrals[1], peak.key);\n"));
  // A kernel of sums only is the text it always was: no key of an existing kernel changes.
  KernelWriter sums = cell_like();
  sums.gpu(true);
  sums.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
  const std::string plain = sums.finish().body();
  CHECK_FALSE(contains(plain, "uwjit_max"));
  CHECK(contains(plain, "struct uwjit_sum"));
  KernelWriter only_max("peak");
  only_max.integral("peak", uwjit::codegen::Reduction::max);
  only_max.body("  peak.max(1.0);\n");
  CHECK_FALSE(contains(only_max.finish().body(), "uwjit_sum"));
}

TEST_CASE("the cell form's mistakes are usage errors naming the kernel") {
  {
    KernelWriter w = cell_like();
    CHECK(usage_error([&] { w.for_each_cell({.indices = {"i", "j"}}, k_cell); }) ==
          "kernel of \"heat\": for_each_cell() names 2 indices (i, j) for 3 domain axes");
    CHECK(contains(usage_error([&] { w.for_each_cell({.indices = {"i", "j", "nx"}}, k_cell); }),
                   "cell index \"nx\" clashes with a name already declared"));
    CHECK(contains(usage_error([&] { w.for_each_cell({.indices = {"i", "j", "k"}}, " \n"); }),
                   "for_each_cell() was given no text"));
  }
  {
    KernelWriter w = cell_like();
    w.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
    CHECK(contains(usage_error([&] { w.for_each_cell({.indices = {"a", "b", "c"}}, k_cell); }),
                   "for_each_cell() is called twice"));
    CHECK(usage_error([&] { w.body("    total += 1.0;\n"); }) ==
          "kernel of \"heat\": body() after for_each_cell(): a kernel has its own loops or the "
          "writer's, not both");
  }
  {
    KernelWriter w = cell_like();
    w.body("    total += 1.0;\n");
    CHECK(contains(usage_error([&] { w.for_each_cell({.indices = {"i", "j", "k"}}, k_cell); }),
                   "for_each_cell() after body()"));
    w.gpu(true);
    CHECK(usage_error([&] { (void)w.finish(); }) ==
          "kernel of \"heat\": it writes its own loops (body()), which run on CPUs only; a kernel "
          "that runs on a GPU gives the update of one cell with for_each_cell()");
  }
  {
    KernelWriter w = cell_like();
    w.gpu(true);
    w.checked(true);
    w.for_each_cell({.indices = {"i", "j", "k"}}, k_cell);
    CHECK(contains(usage_error([&] { (void)w.finish(); }), "checked mode runs on CPUs only"));
  }
}

TEST_CASE("a cell's text that would leave the cell is refused, naming the statement and line") {
  struct Case {
    const char* text;
    const char* keyword;
    int line;
  };
  const Case cases[] = {
      {"      if (u(i, j, k) > 1) return 0;\n      u_out(i, j, k) = 1;\n", "return", 1},
      {"      u_out(i, j, k) = 1;\n      if (i == 3) {\n        return;\n      }\n", "return", 3},
      {"      u_out(i, j, k) = 1;\n      if (k > 2) break;\n", "break", 2},
      {"      if (k > 2) continue;\n      u_out(i, j, k) = 1;\n", "continue", 1},
      {"      u_out(i, j, k) = 1;\n      goto done;\n", "goto", 2},
      // after a loop of its own, the text's own break no longer belongs to it
      {"      for (int q = 0; q < 3; ++q) { if (q == 1) break; }\n      break;\n", "break", 2},
      // a switch owns break, not continue
      {"      switch (k) { case 1: continue; default: u_out(i, j, k) = 0; }\n", "continue", 1},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    KernelWriter w = cell_like();
    const std::string message =
        usage_error([&] { w.for_each_cell({.indices = {"i", "j", "k"}}, c.text); });
    CHECK(contains(message,
                   std::string("\"") + c.keyword + "\" at line " + std::to_string(c.line) + ","));
    CHECK(contains(message, "leaves the cell"));
  }
}

TEST_CASE("loops, switches, lambdas, comments and strings of a cell's own keep their jumps") {
  const char* texts[] = {
      "      double s = 0;\n"
      "      for (int q = 0; q < 19; ++q) {\n"
      "        if (q == 3) continue;\n"
      "        if (q > 9) break;\n"
      "        s += q;\n"
      "      }\n"
      "      u_out(i, j, k) = s;\n",
      "      int q = 0;\n      while (true) { if (++q > 4) break; }\n"
      "      do { ++q; if (q > 8) continue; } while (q < 9);\n      u_out(i, j, k) = q;\n",
      "      double v = 0;\n"
      "      switch (k % 3) { case 0: v = 1; break; default: v = 2; }\n"
      "      u_out(i, j, k) = v;\n",
      "      auto sq = [](double x) { return x * x; };\n"
      "      struct P { double f() const { return 2; } };\n"
      "      u_out(i, j, k) = sq(u(i, j, k)) + P{}.f();\n",
      "      // return early? no: break and continue are words here\n"
      "      /* return; */ const char* why = \"return; break; continue;\";\n"
      "      const char c = '\\'';\n"
      "      const double returned = 1e-3, break_even = 0x1p+3;\n"
      "      u_out(i, j, k) = returned + break_even + (why[0] != c);\n",
      "#pragma unroll\n      for (int q = 0; q < 2; ++q) continue;\n      u_out(i, j, k) = 0;\n",
  };
  for (const char* text : texts) {
    CAPTURE(text);
    KernelWriter w = cell_like();
    CHECK_NOTHROW(w.for_each_cell({.indices = {"i", "j", "k"}}, text));
  }
}

namespace {

// A 2-D kernel of 8 x 6 cells: state u with halo 1 on both axes and 3 components first, a static
// array w without halo, its output u_out; a cell's text judged as the writer sees it.
KernelWriter stencil_like() {
  KernelWriter w("stencil");
  const auto x = w.domain_extent(0, "nx", 8, ExtentMode::compiled);
  const auto y = w.domain_extent(1, "ny", 6, ExtentMode::runtime);
  w.state_in("u", Dtype::f64, {{w.constant(3)}, {x, 1}, {y, 1}});
  w.provide_static("w", Dtype::f64, {8, 6});
  w.state_out("u");
  w.static_array("w", Dtype::f64, {{x}, {y}});
  return w;
}

uwjit::codegen::HaloReads reads_of(const std::string& cell) {
  KernelWriter w = stencil_like();
  w.for_each_cell({.indices = {"i", "j"}}, cell);
  return w.halo_reads();
}

std::string refusal_of(const std::string& cell) {
  KernelWriter w = stencil_like();
  w.for_each_cell({.indices = {"i", "j"}}, cell);
  return usage_error([&] { (void)w.finish(); });
}

} // namespace

TEST_CASE("a cell's reaches that the text shows within their halos are judged from it") {
  using uwjit::codegen::HaloReads;
  const char* within[] = {
      "u_out(0, i, j) = u(0, i - 1, j) + u(2, i + 1, j - 1) + w(i, j);",
      "u_out(1, i, j) = u(1, (i + 2) - 1, -1 + j) + u(2, i, j +1) + u(0, i - 0, j);",
      // a component index from a loop is the node's business; the domain indices are judged
      "for (int q = 0; q < 3; ++q) { u_out(q, i, j) = q > 0 ? u(q, i, j + 1) : w(i, j); }",
      // comments, strings and members are not calls
      "// u(0, i - 5, j) once\n u_out(0, i, j) = 1; const char* s = \"w(i + 9, j)\"; (void)s;",
  };
  for (const char* cell : within) {
    CAPTURE(cell);
    CHECK(reads_of(cell) == HaloReads::within);
    KernelWriter w = stencil_like();
    w.for_each_cell({.indices = {"i", "j"}}, cell);
    CHECK_NOTHROW((void)w.finish());
  }
  const char* unknown[] = {
      // a reach beyond the halo that may never run: only a run can tell
      "u_out(0, i, j) = i > 0 ? u(0, i - 2, j) : u(0, i, j);",
      "if (j > 1) { u_out(0, i, j) = w(i, j - 2); } else { u_out(0, i, j) = 0; }",
      "auto far = [&] { return u(0, i + 3, j); }; u_out(0, i, j) = 1;",
      "#if 0\n u_out(0, i, j) = u(0, i - 4, j);\n#endif\n u_out(0, i, j) = 0;",
      // indices the text computes, swaps or rebinds
      "const uw_i64 l = i - 1; u_out(0, i, j) = u(0, l, j);",
      "u_out(0, i, j) = u(0, j, i);",
      "u_out(0, i, j) = u(0, 2 * i, j);",
      "u_out(0, i, j) = u(0, 0, j);",
      "{ const uw_i64 i = 3; u_out(0, i, j) = u(0, i - 9, j); }",
      // an accessor passed on instead of called
      "auto& f = w; u_out(0, i, j) = f(i, j);",
  };
  for (const char* cell : unknown) {
    CAPTURE(cell);
    CHECK(reads_of(cell) == HaloReads::unknown);
    KernelWriter w = stencil_like();
    w.for_each_cell({.indices = {"i", "j"}}, cell);
    CHECK_NOTHROW((void)w.finish());
  }
  // A body() with its own loops is never judged.
  KernelWriter loops = stencil_like();
  loops.body("    for (uw_i64 i = 0; i < nx; ++i) { u_out(0, i, 0) = u(0, i, 0); }\n");
  CHECK(loops.halo_reads() == HaloReads::unknown);
}

TEST_CASE("a reach beyond a halo that every cell makes is refused when the kernel is written, "
          "naming the call, the buffer, the axis and the halo") {
  CHECK(refusal_of("  u_out(0, i, j) =\n    u(0, i, j + 2);") ==
        "kernel of \"stencil\": for_each_cell(): u(0, i, j + 2) at line 2, column 5 of the "
        "cell's text reads \"u\" 2 cells beyond the interior along domain axis 1 (ny), whose halo "
        "is 1: every cell runs the text, so the cells next to the high face would read outside "
        "its layout. Declare a halo of at least 2 on that axis (DomainAxis::halo, "
        "NodeLayout::grid(cells, 2); in Python uwjit.grid(cells, halo=2))");
  CHECK(refusal_of("u_out(0, i, j) = w(i - 1, j);") ==
        "kernel of \"stencil\": for_each_cell(): w(i - 1, j) at line 1, column 18 of the cell's "
        "text reads static array \"w\" 1 cell beyond the interior along domain axis 0 (nx), whose "
        "halo is 0: every cell runs the text, so the cells next to the low face would read "
        "outside its layout. Declare a halo of at least 1 on that axis (the array's Axis in "
        "static_array(\"w\", ...) with halo 1)");
  CHECK(refusal_of("u_out(0, i + 1, j) = 0; u_out(0, i, j) = 0;") ==
        "kernel of \"stencil\": for_each_cell(): u_out(0, i + 1, j) at line 1, column 1 of the "
        "cell's text writes \"u\" 1 cell away from its own cell along domain axis 0 (nx): a "
        "cell's text writes only its own cell (each cell of the update box is one run of the "
        "text, and the runs may be on other threads)");
  // The same in checked mode and for a GPU: refused before anything is compiled.
  for (const bool gpu : {false, true}) {
    KernelWriter w = stencil_like();
    w.checked(!gpu);
    w.gpu(gpu);
    w.for_each_cell({.indices = {"i", "j"}}, "u_out(0, i, j) = u(0, i - 2, j);");
    CHECK(contains(usage_error([&] { (void)w.halo_reads(); }),
                   "u(0, i - 2, j) at line 1, column 18 of the cell's text reads \"u\" 2 cells"));
  }
}

TEST_CASE("a GPU launch fits its blocks to the rows: no more warps than a row needs") {
  uwjit_kernel_args args{};
  auto launch = [&](std::int64_t rows_z, std::int64_t rows_y, std::int64_t row) {
    args.update_begin[0] = 2; // a box off the origin: its extents count, not its place
    args.update_end[0] = 2 + rows_z;
    args.update_end[1] = rows_y;
    args.update_end[2] = row;
    return uwjit::codegen::cell_launch(args, 3);
  };
  auto shape = [](const uwjit::codegen::CellLaunch& l) {
    return std::array<unsigned, 4>{l.grid[0], l.grid[1], l.grid[2], l.block};
  };
  CHECK(shape(launch(5, 7, 192)) == std::array<unsigned, 4>{2, 7, 5, 96}); // not 2 of 128
  CHECK(shape(launch(5, 7, 256)) == std::array<unsigned, 4>{2, 7, 5, 128});
  CHECK(shape(launch(5, 7, 129)) == std::array<unsigned, 4>{2, 7, 5, 96}); // 65 + 64 cells
  CHECK(shape(launch(5, 7, 10)) == std::array<unsigned, 4>{1, 7, 5, 32});  // one warp
  CHECK(shape(launch(5, 7, 640)) == std::array<unsigned, 4>{5, 7, 5, 128});
  CHECK(launch(5, 7, 0).grid[0] == 0); // an empty box launches nothing
  // Fewer axes: the row is the last axis, the others fill y then z.
  args = {};
  args.update_end[0] = 4;
  args.update_end[1] = 100;
  const auto two = uwjit::codegen::cell_launch(args, 2);
  CHECK(shape(two) == std::array<unsigned, 4>{1, 4, 1, 128});
  // Every launch covers its row, in whole warps, within the limit asked for.
  for (std::int64_t row = 1; row <= 1000; ++row) {
    const auto l = launch(1, 1, row);
    CHECK(l.block % 32 == 0);
    CHECK(l.block <= 128);
    CHECK(std::int64_t{l.grid[0]} * l.block >= row);
    CHECK(std::int64_t{l.grid[0]} * l.block - row < std::int64_t{32} * l.grid[0]);
  }
}
