#include <uwjit/cuda/driver.hpp>

#include "library.hpp"

#include <uwjit/common/text.hpp>

#include <memory>

namespace uwjit::cuda {

// The outcome of opening the driver, decided once per process: a driver or the error to raise.
struct DriverOpening {
  std::unique_ptr<const Driver> driver;
  std::string error;

  static DriverOpening open() {
    DriverOpening out;
    const Library& lib = library();
    if (!lib.loaded) {
      out.error = "no NVIDIA driver: " + std::string(k_library) + " could not be loaded (" +
                  lib.load_error + "); a CUDA device needs the NVIDIA driver";
      return out;
    }
    const std::string which =
        "the NVIDIA driver" + (lib.version ? " " + version_text(*lib.version) : std::string());
    if (!lib.missing.empty()) {
      out.error = which + " (" + std::string(k_library) + ") lacks " + join(lib.missing) +
                  ": it is too old for uwjit; install a newer NVIDIA driver";
      return out;
    }
    if (const Result result = lib.api.cuInit(0); result != k_success) {
      out.error = which + " could not initialise CUDA: cuInit: " + describe(lib.api, result) +
                  "; a CUDA device needs an NVIDIA GPU that the driver can see (see nvidia-smi "
                  "and CUDA_VISIBLE_DEVICES)";
      return out;
    }
    // A driver whose cuDriverGetVersion fails cannot be told apart from a broken one.
    if (!lib.version) {
      out.error = which + " (" + std::string(k_library) + ") did not report its version";
      return out;
    }
    out.driver.reset(new Driver(lib.api, *lib.version));
    return out;
  }
};

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

const Driver& Driver::get() {
  static const DriverOpening opening = DriverOpening::open();
  if (!opening.driver) {
    throw Error(ErrorKind::usage, opening.error);
  }
  return *opening.driver;
}

void Driver::check(Result result, std::string_view call, ErrorKind kind) const {
  if (result != k_success) {
    throw Error(kind, "CUDA call " + std::string(call) + " failed: " + describe(result));
  }
}

std::string Driver::describe(Result result) const {
  return cuda::describe(m_api, result);
}

} // namespace uwjit::cuda
