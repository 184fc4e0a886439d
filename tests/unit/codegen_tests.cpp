// codegen/: kernel sources, canonical text, number literals.
#include <uwjit/codegen/kernel_source.hpp>
#include <uwjit/codegen/number.hpp>
#include <uwjit/codegen/reduction.hpp>
#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using uwjit::codegen::KernelSource;
using uwjit::codegen::SlotTables;

TEST_CASE("double literals read back bit for bit") {
  std::mt19937_64 random(12345);
  std::vector<double> values = {0.1,
                                1.0,
                                -2.5,
                                1e300,
                                5e-324,
                                2.2250738585072014e-308,
                                std::numeric_limits<double>::max(),
                                123456789.0,
                                1.0 / 3.0};
  for (int i = 0; i < 2000; ++i) {
    values.push_back(std::bit_cast<double>(random()));
  }
  for (const double value : values) {
    if (!std::isfinite(value)) {
      continue;
    }
    const std::string text = uwjit::codegen::literal(value);
    CAPTURE(text);
    CHECK(text.find_first_of(".e") != std::string::npos); // a floating literal, not an integer
    const double back = std::strtod(text.c_str(), nullptr);
    CHECK(std::bit_cast<std::uint64_t>(back) == std::bit_cast<std::uint64_t>(value));
  }
}

TEST_CASE("special values become builtins and integral doubles stay floating") {
  using uwjit::codegen::literal;
  CHECK(literal(1.0) == "1.0");
  CHECK(literal(-0.0) == "-0.0");
  CHECK(literal(0.1) == "0.1");
  CHECK(literal(0.1f) == "0.1f");
  CHECK(literal(2.0f) == "2.0f");
  CHECK(literal(std::numeric_limits<double>::infinity()) == "__builtin_inf()");
  CHECK(literal(-std::numeric_limits<double>::infinity()) == "(-__builtin_inf())");
  CHECK(literal(std::numeric_limits<double>::quiet_NaN()) == "__builtin_nan(\"\")");
  CHECK(literal(std::int64_t{42}) == "42LL");
  CHECK(literal(std::numeric_limits<std::int64_t>::min()) == "(-9223372036854775807LL - 1)");
}

TEST_CASE("a generated kernel keeps its placeholders in the canonical text") {
  const auto source = KernelSource::generated(
      "heat", "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* a) { return 0; }\n",
      SlotTables{.state_in = {"u"}, .state_out = {"u"}});
  CHECK(source.canonical().find("__UWJIT_ENTRY__") != std::string::npos);
  CHECK(source.canonical().find(uwjit::codegen::kernel_abi_text()) != std::string::npos);
  CHECK(source.canonical().find("namespace uwm") != std::string::npos);
  const auto text = source.instantiate("uwjit_0123456789abcdef", "m");
  CHECK(text.find("__UWJIT_ENTRY__") == std::string::npos);
  CHECK(text.find("int uwjit_0123456789abcdef(") != std::string::npos);
  CHECK(source.entry_symbol("0123456789abcdef") == "uwjit_0123456789abcdef");
}

TEST_CASE("the same body gives the same canonical text; different slots give different text") {
  const std::string body =
      "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args*) { return 0; }";
  const auto a = KernelSource::generated("a", body, SlotTables{.state_in = {"u"}});
  const auto b = KernelSource::generated("b", body, SlotTables{.state_in = {"u"}});
  const auto c = KernelSource::generated("a", body, SlotTables{.state_in = {"v"}});
  CHECK(a.canonical() == b.canonical());
  CHECK(a.canonical() != c.canonical());
}

TEST_CASE("a generated kernel without the entry placeholder is refused") {
  CHECK_THROWS_AS((void)KernelSource::generated("n", "int f() { return 0; }", {}), uwjit::Error);
}

TEST_CASE("a hand-written kernel keeps its fixed entry name") {
  const auto source =
      KernelSource::from_text("extern \"C\" int step(const uwjit_kernel_args*);", "step");
  CHECK(source.entry_symbol("0123456789abcdef") == "step");
  CHECK(source.origin() == "source");
  CHECK_THROWS_AS((void)KernelSource::from_text("", "not an identifier"), uwjit::Error);
  CHECK_THROWS_AS((void)KernelSource::from_text("", "step", SlotTables{.statics = {"a b"}}),
                  uwjit::Error);
}

TEST_CASE("the body's first line is line 1 of kernel.cpp") {
  const auto source = KernelSource::from_text("int x;\n", "k");
  const auto& text = source.canonical();
  const auto marker = text.find("#line 1 \"kernel.cpp\"\n");
  REQUIRE(marker != std::string::npos);
  CHECK(text.substr(marker + std::strlen("#line 1 \"kernel.cpp\"\n")) == "int x;\n");
}

TEST_CASE("kernel options leave the canonical text alone and are validated") {
  using uwjit::codegen::FpContract;
  const auto source = KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args*) "
                                              "{ return 0; }\n",
                                              "k");
  const auto with = source.with_options({.fp_contract = FpContract::off, .defines = {"N=4", "M"}});
  CHECK(with.canonical() == source.canonical());
  CHECK(with.options().fp_contract == FpContract::off);
  CHECK(source.options().empty());
  CHECK_THROWS_AS((void)source.with_options({.opt_level = -1}), uwjit::Error);
  CHECK_THROWS_AS((void)source.with_options({.defines = {"N=\"x\""}}), uwjit::Error);
  CHECK_THROWS_AS((void)source.with_options({.defines = {"A|B"}}), uwjit::Error);
  for (const auto mode : {FpContract::off, FpContract::on, FpContract::fast}) {
    CHECK(uwjit::codegen::parse_fp_contract(uwjit::codegen::to_string(mode)) == mode);
  }
  CHECK_FALSE(uwjit::codegen::parse_fp_contract("sometimes"));
  CHECK(uwjit::codegen::define_name("N=4") == "N");
  CHECK(uwjit::codegen::define_name("M") == "M");
}

TEST_CASE("indentation, trailing blanks and blank lines change no canonical text") {
  const auto a = KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                                         "  double x = 1;   \n"
                                         "\n"
                                         "  return (int)x;\n"
                                         "}\n",
                                         "k");
  const auto b = KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                                         "\t\t    double x = 1;\n"
                                         "        return (int)x;\r\n"
                                         "\n\n  \t\n"
                                         "}",
                                         "k");
  CHECK(a.canonical() == b.canonical());
  CHECK(a.body() != b.body()); // each keeps the text as written
  // A change of a token is a change.
  const auto c = KernelSource::from_text("extern \"C\" int k(const uwjit_kernel_args* args) {\n"
                                         "  double x = 2;\n  return (int)x;\n}\n",
                                         "k");
  CHECK(c.canonical() != a.canonical());
}

TEST_CASE("what layout means inside literals, raw strings and splices is kept") {
  const auto canonical_body = [](const std::string& body) {
    const auto text = KernelSource::from_text(body, "k").canonical();
    return text.substr(text.find("#line 1 \"kernel.cpp\"\n") +
                       std::strlen("#line 1 \"kernel.cpp\"\n"));
  };
  // Spaces inside string and character literals, and a digit separator that is no quote.
  CHECK(canonical_body("  const char* s = \"  a  b  \";   \n  int n = 1'000; char c = ' ';\n") ==
        "const char* s = \"  a  b  \";\nint n = 1'000; char c = ' ';\n");
  // A raw string spanning lines keeps every line as it is, blank ones and blanks included.
  CHECK(canonical_body("  auto r = R\"x(\n    kept  \n\n  )x\";\n") ==
        "auto r = R\"x(\n    kept  \n\n  )x\";\n");
  // A line after a splice keeps its leading blanks (they separate tokens), and an empty one
  // after a splice (it ends the directive) stays.
  CHECK(canonical_body("  #define A(x) x \\\n      + 1\n  #define B 2 \\\n\n  int y;\n") ==
        "#define A(x) x \\\n      + 1\n#define B 2 \\\n\nint y;\n");
  // Comments are code's neighbours: their lines are stripped like code's.
  CHECK(canonical_body("  /* one\n\n     two */  int z;\n  // end  \n") ==
        "/* one\ntwo */  int z;\n// end\n");
}

TEST_CASE("positions in the compiled text map back to the text as written") {
  const auto source = KernelSource::from_text("\n\n    int a;\n\t  int b;\n", "k");
  CHECK(source.written_position(1, 5) == std::pair{3, 9});
  CHECK(source.written_position(2, 1) == std::pair{4, 4});
  CHECK(source.written_position(9, 2) == std::pair{9, 2}); // beyond the body: as it is
  CHECK(source.written_positions("kernel.cpp:2:5: error: x\nkernel.cpp:1:1: note: y\n") ==
        "kernel.cpp:4:8: error: x\nkernel.cpp:3:5: note: y\n");
  CHECK(source.body_first_line() > 1);
}

TEST_CASE("a maximum's order key orders every double, -0 below +0, NaN above all; 0 is no cell") {
  using uwjit::codegen::max_key;
  using uwjit::codegen::max_value;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ordered = {
      -inf, -1e300, -1.5, -5e-324, -0.0, 0.0, 5e-324, 1.0, std::numeric_limits<double>::max(), inf};
  auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  for (std::size_t i = 0; i + 1 < ordered.size(); ++i) {
    CAPTURE(ordered[i]);
    CHECK(bits(max_key(ordered[i])) < bits(max_key(ordered[i + 1])));
  }
  for (const double v : ordered) {
    CHECK(bits(max_value(max_key(v))) == bits(v));
  }
  CHECK(bits(max_key(-inf)) == 0);
  CHECK(max_value(0.0) == -inf); // a zeroed slot: no cell
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(bits(max_key(nan)) == bits(max_key(-nan)));
  CHECK(bits(max_key(nan)) > bits(max_key(inf)));
  CHECK(std::isnan(max_value(max_key(-nan))));
}

TEST_CASE("combining calls' integrals: sums add, maxima take the larger key, in any grouping") {
  using uwjit::codegen::Reduction;
  std::mt19937_64 random(7);
  std::vector<double> values;
  for (int i = 0; i < 500; ++i) {
    values.push_back(static_cast<double>(static_cast<std::int64_t>(random() % 41) - 20) / 4.0);
  }
  values.push_back(-0.0);
  values.push_back(0.0);
  const std::vector<Reduction> kinds = {Reduction::sum, Reduction::max};
  // The values split into `parts` calls, each combined from its own zeroed slots.
  auto grouped = [&](std::size_t parts) {
    std::vector<double> total = {0.0, 0.0};
    for (std::size_t p = 0; p < parts; ++p) {
      std::vector<double> part = {0.0, 0.0};
      for (std::size_t i = values.size() * p / parts; i < values.size() * (p + 1) / parts; ++i) {
        const std::vector<double> one = {values[i], uwjit::codegen::max_key(values[i])};
        uwjit::codegen::combine(part, one, kinds);
      }
      uwjit::codegen::combine(total, part, kinds);
    }
    return total;
  };
  const auto one = grouped(1);
  CHECK(uwjit::codegen::value_of(Reduction::max, one[1]) == 5.0);
  CHECK(uwjit::codegen::value_of(Reduction::sum, one[0]) == one[0]);
  for (const std::size_t parts : {2U, 3U, 7U, 64U}) {
    CHECK(std::bit_cast<std::uint64_t>(grouped(parts)[1]) == std::bit_cast<std::uint64_t>(one[1]));
  }
  // The slots beyond the reductions given are sums.
  std::vector<double> total = {1.0, 2.0};
  uwjit::codegen::combine(total, std::vector<double>{3.0, 4.0}, {});
  CHECK(total == std::vector<double>{4.0, 6.0});
}
