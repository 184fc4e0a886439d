#include <uwjit/cuda/probe.hpp>

#include "library.hpp"

#include <uwjit/cuda/driver.hpp>

#include <array>
#include <exception>
#include <string>
#include <utility>

namespace uwjit::cuda {

std::string DeviceReport::arch() const {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

DriverProbe probe() noexcept {
  DriverProbe out;
  out.library = k_library;
  try {
    const Library& lib = library();
    out.loaded = lib.loaded;
    out.version = lib.version;
    const Driver& driver = Driver::get();
    out.usable = true;
    const Api& api = driver.api();
    constexpr auto k_kind = ErrorKind::usage;
    int count = 0;
    driver.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount", k_kind);
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      DeviceReport report;
      report.ordinal = ordinal;
      Device device = 0;
      driver.check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet", k_kind);
      std::array<char, 256> name{};
      driver.check(api.cuDeviceGetName(name.data(), static_cast<int>(name.size()), device),
                   "cuDeviceGetName", k_kind);
      report.name = std::string(name.data());
      driver.check(
          api.cuDeviceGetAttribute(&report.major, k_attribute_compute_capability_major, device),
          "cuDeviceGetAttribute", k_kind);
      driver.check(
          api.cuDeviceGetAttribute(&report.minor, k_attribute_compute_capability_minor, device),
          "cuDeviceGetAttribute", k_kind);
      std::size_t bytes = 0;
      driver.check(api.cuDeviceTotalMem_v2(&bytes, device), "cuDeviceTotalMem_v2", k_kind);
      report.total_memory = bytes;
      out.devices.push_back(std::move(report));
    }
  } catch (const std::exception& error) {
    out.usable = false;
    out.problem = error.what();
    out.devices.clear();
  }
  return out;
}

} // namespace uwjit::cuda
