// GPU targets without a GPU: PTX compiled in process for cuda:sm_XX, its keys, and its entries in
// the disk cache (KEY.ptx). Nothing here loads PTX.
#include "sandbox.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/engine/target.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

using uwjit::Error;
using uwjit::ErrorKind;
using uwjit::codegen::KernelSource;
using uwjit::engine::DiskCache;
using uwjit::engine::Engine;
using uwjit::engine::EngineOptions;
using uwjit::engine::Target;
using uwjit::engine::Tier;
using uwjit_test::ScopedEnv;
using uwjit_test::TempDir;

namespace {

// One GPU thread per element: out[i] = sqrt(|in[i]|) + fmin + fmax + floor, all PTX instructions.
constexpr const char* k_plain_kernel = R"(
extern "C" __attribute__((nvptx_kernel)) void scale(uwjit_kernel_args args) {
  const long i = long(__nvvm_read_ptx_sreg_ctaid_x()) * __nvvm_read_ptx_sreg_ntid_x() +
                 __nvvm_read_ptx_sreg_tid_x();
  if (i >= args.extents[0]) { return; }
  const double* in = static_cast<const double*>(args.state_in[0]);
  double* out = static_cast<double*>(args.state_out[0]);
  out[i] = uwm::sqrt(uwm::fabs(in[i])) + uwm::fmin(in[i], 1.0) - uwm::fmax(in[i], 0.0) +
           uwm::floor(in[i]) / 3.0 * args.dt;
}
)";

// The same with exp and tanh, which NVPTX has no instruction for: they need libdevice.
constexpr const char* k_libm_kernel = R"(
extern "C" __attribute__((nvptx_kernel)) void decay(uwjit_kernel_args args) {
  const long i = long(__nvvm_read_ptx_sreg_tid_x());
  const double* in = static_cast<const double*>(args.state_in[0]);
  double* out = static_cast<double*>(args.state_out[0]);
  out[i] = uwm::exp(-in[i]) * uwm::tanh(in[i]);
}
)";

KernelSource plain() {
  return KernelSource::from_text(k_plain_kernel, "scale",
                                 {.state_in = {"u"}, .state_out = {"u"}, .extents = {"n"}});
}

KernelSource libm() {
  return KernelSource::from_text(k_libm_kernel, "decay", {.state_in = {"u"}, .state_out = {"u"}});
}

EngineOptions cached_in(const std::filesystem::path& dir) {
  return {.cache_dir = dir};
}

std::string message_of(const auto& action) {
  try {
    action();
  } catch (const Error& error) {
    return std::string(to_string(error.kind())) + ": " + error.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("targets are host or cuda:sm_XX, and anything else is a usage error naming both") {
  CHECK(Target::parse("host").is_host());
  CHECK(Target::parse("cuda:sm_90").sm() == "sm_90");
  CHECK(Target::parse("cuda:sm_90a").text() == "cuda:sm_90a");
  CHECK(Target::parse("cuda:sm_80").is_cuda());
  for (const char* bad : {"cuda", "cuda:sm_9", "cuda:sm_20", "cuda:90", "gpu", "", "cuda:sm_90 "}) {
    const std::string message = message_of([&] { (void)Target::parse(bad); });
    CAPTURE(bad);
    CHECK(message.starts_with("usage: target \""));
    CHECK(message.find("expected host or cuda:sm_XX") != std::string::npos);
    CHECK(message.find("cuda:sm_90") != std::string::npos);
  }
}

TEST_CASE("a kernel compiled for cuda:sm_90 is PTX with its entry, and nothing to link") {
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  const auto ptx = engine.ptx(plain(), Target::parse("cuda:sm_90"));
  const std::string& text = *ptx.ptx;
  CHECK(text.find(".version 8.5\n") != std::string::npos);
  CHECK(text.find(".target sm_90\n") != std::string::npos);
  CHECK(ptx.info->entry == "scale");
  CHECK(text.find(".visible .entry scale(") != std::string::npos);
  CHECK(text.find("sqrt.rn.f64") != std::string::npos); // correctly rounded, no libdevice
  CHECK(text.find(".extern") == std::string::npos);     // no call to an undefined function
  CHECK(text.find("fma.rn") == std::string::npos);      // -ffp-contract=off, as on CPUs
  CHECK(ptx.info->tier == Tier::compiled);
  CHECK(ptx.info->object_size == text.size());
  CHECK_THROWS_AS((void)engine.ptx(plain(), Target::host()), Error);
}

TEST_CASE("host and cuda keys differ, and the target is in the salt of cuda keys only") {
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  const auto source = plain();
  const auto host = engine.key_of(source, Target::host());
  const auto sm90 = engine.key_of(source, Target::parse("cuda:sm_90"));
  const auto sm80 = engine.key_of(source, Target::parse("cuda:sm_80"));
  CHECK(host == engine.key_of(source));
  CHECK(host != sm90);
  CHECK(sm90 != sm80);
  const auto& salt = engine.salt_of(source, Target::parse("cuda:sm_90"));
  CHECK(salt.get("target") == "cuda:sm_90");
  CHECK(salt.get("ptx") == "8.5");
  CHECK(salt.get("triple") == "nvptx64-nvidia-cuda");
  CHECK(salt.get("libdevice").has_value());
  CHECK(uwjit::cache::target_of(salt) == "cuda:sm_90");
  CHECK(!engine.salt().get("target").has_value()); // host salts are as they were
  CHECK(uwjit::cache::target_of(engine.salt()) == "host");
}

TEST_CASE("a PTX entry is a memory hit in its engine and a verified disk hit in a fresh one") {
  TempDir dir;
  const Target sm90 = Target::parse("cuda:sm_90");
  std::string key;
  std::string text;
  {
    Engine first(cached_in(dir.path()));
    const auto compiled = first.ptx(plain(), sm90);
    key = compiled.info->key;
    text = *compiled.ptx;
    CHECK(compiled.info->publication == uwjit::engine::Publication::published);
    CHECK(std::filesystem::is_regular_file(dir.path() / (key + ".ptx")));
    CHECK(!std::filesystem::exists(dir.path() / (key + ".o")));
    const auto again = first.ptx(plain(), sm90);
    CHECK(again.info->tier == Tier::memory);
    CHECK(*again.ptx == text);
    CHECK(first.stats().get(uwjit::cache::Stat::compiles) == 1);
    CHECK(first.stats().get(uwjit::cache::Stat::memory_hits) == 1);
  }
  Engine fresh(cached_in(dir.path()));
  const auto hit = fresh.ptx(plain(), sm90);
  CHECK(hit.info->tier == Tier::disk);
  CHECK(*hit.ptx == text);
  CHECK(fresh.stats().get(uwjit::cache::Stat::compiles) == 0);
  CHECK(fresh.stats().get(uwjit::cache::Stat::disk_hits) == 1);
  // The host kernel of the same source is another entry.
  CHECK(fresh.key_of(plain()).hex() != key);
}

TEST_CASE("a corrupted PTX entry is rejected and compiled again, as a CPU entry is") {
  TempDir dir;
  const Target sm90 = Target::parse("cuda:sm_90");
  std::string text;
  std::filesystem::path file;
  {
    Engine first(cached_in(dir.path()));
    const auto compiled = first.ptx(plain(), sm90);
    text = *compiled.ptx;
    file = dir.path() / (compiled.info->key + ".ptx");
  }
  std::string damaged = text;
  damaged[damaged.find("sm_90")] = 'x';
  uwjit_test::write_text(file, damaged);
  {
    Engine second(cached_in(dir.path()));
    const auto healed = second.ptx(plain(), sm90);
    CHECK(healed.info->tier == Tier::compiled);
    CHECK(*healed.ptx == text);
    CHECK(second.stats().get(uwjit::cache::Stat::rejected) == 1);
    CHECK(second.stats().get(uwjit::cache::Stat::rejected_checksum_mismatch) == 1);
  }
  CHECK(uwjit_test::read_text(file) == text);
  uwjit_test::write_text(file, text.substr(0, text.size() / 2));
  Engine third(cached_in(dir.path()));
  CHECK(third.ptx(plain(), sm90).info->tier == Tier::compiled);
  CHECK(third.stats().get(uwjit::cache::Stat::rejected_truncated_object) == 1);
}

TEST_CASE("a GPU kernel that needs exp without libdevice fails naming what and where") {
  TempDir cuda;
  ScopedEnv path("UWJIT_CUDA_PATH", cuda.path().string());
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  CHECK(engine.salt_of(libm(), Target::parse("cuda:sm_90")).get("libdevice") == "none");
  const std::string message =
      message_of([&] { (void)engine.ptx(libm(), Target::parse("cuda:sm_90")); });
  CHECK(message.starts_with("compile: kernel.cpp: exp, tanh on cuda:sm_90 need CUDA's libdevice, "
                            "which was not found (looked at: " +
                            (cuda.path() / "nvvm/libdevice/libdevice.10.bc").string() +
                            " (UWJIT_CUDA_PATH)); set UWJIT_CUDA_PATH"));
  // sqrt, fabs, fmin, fmax and floor need nothing.
  CHECK(engine.ptx(plain(), Target::parse("cuda:sm_90")).ptx->find(".entry scale(") !=
        std::string::npos);
}

TEST_CASE("libdevice is linked in process when found, and its digest joins the salt") {
  ScopedEnv path("UWJIT_CUDA_PATH", UWJIT_TEST_FAKE_CUDA);
  ScopedEnv home("CUDA_HOME", std::nullopt);
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  const Target sm90 = Target::parse("cuda:sm_90");
  const std::string bitcode =
      uwjit_test::read_text(std::string(UWJIT_TEST_FAKE_CUDA) + "/nvvm/libdevice/libdevice.10.bc");
  REQUIRE(!bitcode.empty());
  CHECK(engine.salt_of(libm(), sm90).get("libdevice") ==
        uwjit::cache::sha256_hex(bitcode).substr(0, 16));
  const auto ptx = engine.ptx(libm(), sm90);
  const std::string& text = *ptx.ptx;
  CHECK(text.find(".visible .entry decay(") != std::string::npos);
  CHECK(text.find("__nv_") == std::string::npos); // inlined, and nothing of it left visible
  CHECK(text.find(".extern") == std::string::npos);
  // Without libdevice the key differs: the same source under another salt.
  TempDir empty;
  ScopedEnv none("UWJIT_CUDA_PATH", empty.path().string());
  Engine without(EngineOptions{.disk_cache = DiskCache::off});
  CHECK(without.key_of(libm(), sm90) != engine.key_of(libm(), sm90));
}

TEST_CASE("a GPU entry that is no kernel, or is missing, is one compile error saying so") {
  Engine engine(EngineOptions{.disk_cache = DiskCache::off});
  const auto device_function = KernelSource::from_text(
      "extern \"C\" void helper(uwjit_kernel_args* args) { args->dt = 1.0; }", "helper", {});
  CHECK(message_of([&] { (void)engine.ptx(device_function, Target::parse("cuda:sm_90")); })
            .find("it is a device function, not a GPU kernel; declare it extern \"C\" "
                  "__attribute__((nvptx_kernel)) void") != std::string::npos);
  const auto wrong = KernelSource::from_text(
      k_plain_kernel, "scale2", {.state_in = {"u"}, .state_out = {"u"}, .extents = {"n"}});
  CHECK(message_of([&] { (void)engine.ptx(wrong, Target::parse("cuda:sm_90")); })
            .find("the kernel defines no such GPU kernel on cuda:sm_90; the kernels it defines: "
                  "scale") != std::string::npos);
  const auto calls_host = KernelSource::from_text(
      "extern \"C\" double host_function(double);\n"
      "extern \"C\" __attribute__((nvptx_kernel)) void k(uwjit_kernel_args args) {\n"
      "  args.integrals[0] = host_function(args.dt);\n}\n",
      "k", {.integrals = {"s"}});
  CHECK(message_of([&] { (void)engine.ptx(calls_host, Target::parse("cuda:sm_90")); })
            .starts_with("compile: kernel.cpp: the kernel calls host_function, which is not "
                         "defined on cuda:sm_90"));
}
