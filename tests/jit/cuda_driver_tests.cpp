// The CUDA driver reached at run time, without a GPU. Each suite runs in a process of its own
// (the driver is opened once per process), registered by tests/CMakeLists.txt: "machine" as the
// machine is; the "fake ..." suites with tests/jit/fake_libcuda.c, a stand-in libcuda.so.1, put
// first on LD_LIBRARY_PATH and configured by UWJIT_FAKE_CUDA_DEVICES / UWJIT_FAKE_CUDA_VERSION.
#include <uwjit/common/error.hpp>
#include <uwjit/cuda/driver.hpp>
#include <uwjit/cuda/probe.hpp>

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using uwjit::Error;
using uwjit::ErrorKind;
using uwjit::cuda::Driver;

namespace {

// The message Driver::get() raises (it must raise one).
std::string open_error() {
  try {
    (void)Driver::get();
  } catch (const Error& error) {
    CHECK(error.kind() == ErrorKind::usage);
    return error.what();
  }
  FAIL("Driver::get() opened a driver");
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_SUITE("machine") {
  TEST_CASE("a driver version reads as major.minor") {
    CHECK(uwjit::cuda::version_text(12040) == "12.4");
    CHECK(uwjit::cuda::version_text(11080) == "11.8");
    CHECK(uwjit::cuda::version_text(13000) == "13.0");
  }

  TEST_CASE("without libcuda.so.1, asking for the driver is one usage error and the probe says "
            "why") {
    // What the dynamic loader finds for that name on this machine decides what uwjit must say.
    void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    const uwjit::cuda::DriverProbe probe = uwjit::cuda::probe();
    CHECK(probe.library == "libcuda.so.1");
    if (handle == nullptr) {
      const std::string message = open_error();
      CHECK(contains(message, "no NVIDIA driver: libcuda.so.1 could not be loaded ("));
      CHECK(contains(message, "a CUDA device needs the NVIDIA driver"));
      CHECK(open_error() == message); // decided once per process
      CHECK_FALSE(probe.loaded);
      CHECK_FALSE(probe.usable);
      CHECK_FALSE(probe.version.has_value());
      CHECK(probe.devices.empty());
      CHECK(probe.problem == message);
    } else {
      // A machine with the NVIDIA driver: the probe opens it and reads its version.
      CHECK(probe.loaded);
      REQUIRE(probe.version.has_value());
      CHECK(*probe.version > 0);
      CHECK(probe.usable == probe.problem.empty());
    }
  }
}

TEST_SUITE("fake no device") {
  TEST_CASE("a driver without a device: cuInit's error names CUDA_ERROR_NO_DEVICE") {
    const std::string message = open_error();
    CHECK(message == "the NVIDIA driver 12.4 could not initialise CUDA: cuInit: "
                     "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected); a CUDA device "
                     "needs an NVIDIA GPU that the driver can see (see nvidia-smi and "
                     "CUDA_VISIBLE_DEVICES)");
    const uwjit::cuda::DriverProbe probe = uwjit::cuda::probe();
    CHECK(probe.loaded);
    CHECK(probe.version == 12040);
    CHECK_FALSE(probe.usable);
    CHECK(probe.problem == message);
    CHECK(probe.devices.empty());
  }
}

TEST_SUITE("fake old driver") {
  TEST_CASE("a driver that lacks entry points is named too old, with every missing name") {
    const std::string message = open_error();
    CHECK(message == "the NVIDIA driver 11.2 (libcuda.so.1) lacks cuLinkCreate_v2, "
                     "cuLinkAddData_v2, cuLinkComplete, cuLinkDestroy: it is too old for uwjit; "
                     "install a newer NVIDIA driver");
    const uwjit::cuda::DriverProbe probe = uwjit::cuda::probe();
    CHECK(probe.loaded);
    CHECK(probe.version == 11020);
    CHECK_FALSE(probe.usable);
    CHECK(probe.problem == message);
  }
}

TEST_SUITE("fake one device") {
  TEST_CASE("the probe lists the device: name, sm_XX, memory, and the driver's version") {
    const uwjit::cuda::DriverProbe probe = uwjit::cuda::probe();
    CHECK(probe.loaded);
    CHECK(probe.usable);
    CHECK(probe.problem.empty());
    CHECK(probe.version == 12040);
    REQUIRE(probe.devices.size() == 1);
    const uwjit::cuda::DeviceReport& device = probe.devices[0];
    CHECK(device.ordinal == 0);
    CHECK(device.name == "uwjit fake GPU");
    CHECK(device.major == 9);
    CHECK(device.minor == 0);
    CHECK(device.arch() == "sm_90");
    CHECK(device.total_memory == std::uint64_t{80} << 30);
  }

  TEST_CASE("the driver is opened once: every thread gets the same one") {
    std::vector<const Driver*> seen(8, nullptr);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < seen.size(); ++i) {
      threads.emplace_back([&seen, i] {
        try {
          seen[i] = &Driver::get();
        } catch (const Error&) {
          // Left null: the checks below fail on it.
        }
      });
    }
    for (auto& thread : threads) {
      thread.join();
    }
    const Driver& driver = Driver::get();
    for (const Driver* seen_driver : seen) {
      CHECK(seen_driver == &driver);
    }
    CHECK(driver.version() == 12040);
  }

  TEST_CASE("a failed call becomes one Error naming the call and the driver's error") {
    const Driver& driver = Driver::get();
    uwjit::cuda::Device device = 0;
    try {
      driver.check(driver.api().cuDeviceGet(&device, 7), "cuDeviceGet", ErrorKind::usage);
      FAIL("cuDeviceGet of ordinal 7 succeeded");
    } catch (const Error& error) {
      CHECK(error.kind() == ErrorKind::usage);
      CHECK(std::string(error.what()) ==
            "CUDA call cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE (invalid device ordinal)");
    }
    // The caller chooses the kind: a module the driver cannot load is a jit failure.
    uwjit::cuda::Module module = nullptr;
    CHECK_THROWS_WITH_AS(
        driver.check(driver.api().cuModuleLoadDataEx(&module, "", 0, nullptr, nullptr),
                     "cuModuleLoadDataEx", ErrorKind::jit),
        "CUDA call cuModuleLoadDataEx failed: CUDA_ERROR_NOT_SUPPORTED (operation not supported)",
        Error);
    CHECK(driver.describe(999) == "CUresult 999");
    CHECK_NOTHROW(driver.check(uwjit::cuda::k_success, "cuCtxSynchronize", ErrorKind::kernel));
  }

  TEST_CASE("memory makes the round trip host, device, device, host through checked calls") {
    const Driver& driver = Driver::get();
    const uwjit::cuda::Api& api = driver.api();
    constexpr auto k_kind = ErrorKind::usage;
    uwjit::cuda::Device device = 0;
    driver.check(api.cuDeviceGet(&device, 0), "cuDeviceGet", k_kind);
    uwjit::cuda::Context context = nullptr;
    driver.check(api.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain",
                 k_kind);
    driver.check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent", k_kind);

    std::vector<double> sent(1000);
    std::iota(sent.begin(), sent.end(), 0.5);
    const std::size_t bytes = sent.size() * sizeof(double);
    uwjit::cuda::DevicePtr first = 0;
    uwjit::cuda::DevicePtr second = 0;
    driver.check(api.cuMemAlloc_v2(&first, bytes), "cuMemAlloc_v2", k_kind);
    driver.check(api.cuMemAlloc_v2(&second, bytes), "cuMemAlloc_v2", k_kind);
    driver.check(api.cuMemsetD8_v2(second, 0xff, bytes), "cuMemsetD8_v2", k_kind);
    driver.check(api.cuMemcpyHtoD_v2(first, sent.data(), bytes), "cuMemcpyHtoD_v2", k_kind);
    driver.check(api.cuMemcpyDtoD_v2(second, first, bytes), "cuMemcpyDtoD_v2", k_kind);
    void* pinned = nullptr;
    driver.check(api.cuMemAllocHost_v2(&pinned, bytes), "cuMemAllocHost_v2", k_kind);
    driver.check(api.cuMemcpyDtoH_v2(pinned, second, bytes), "cuMemcpyDtoH_v2", k_kind);
    driver.check(api.cuCtxSynchronize(), "cuCtxSynchronize", k_kind);
    const auto* received = static_cast<const double*>(pinned);
    CHECK(std::vector<double>(received, received + sent.size()) == sent);
    driver.check(api.cuMemFreeHost(pinned), "cuMemFreeHost", k_kind);
    driver.check(api.cuMemFree_v2(second), "cuMemFree_v2", k_kind);
    driver.check(api.cuMemFree_v2(first), "cuMemFree_v2", k_kind);
    driver.check(api.cuDevicePrimaryCtxRelease_v2(device), "cuDevicePrimaryCtxRelease_v2", k_kind);
  }
}
