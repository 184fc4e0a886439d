// libcuda.so.1 opened and its entry points resolved, once per process; no cuInit yet.
#pragma once

#include <uwjit/cuda/driver.hpp>

#include <optional>
#include <string>
#include <vector>

namespace uwjit::cuda {

/// What opening libcuda.so.1 gave. The library is never closed: the driver stays for the
/// process's lifetime.
struct Library {
  bool loaded = false;              ///< dlopen succeeded
  std::string load_error;           ///< dlerror's text when it did not
  Api api{};                        ///< every entry point found (the others null)
  std::vector<std::string> missing; ///< the entry points it lacks, in the table's order
  std::optional<int> version;       ///< cuDriverGetVersion's number, when it answered
};

/// The process's library, opened on the first call. Never throws (but std::bad_alloc).
/// Thread-safe.
[[nodiscard]] const Library& library();

/// "NAME (text)" for a result, as the driver names it; "CUresult N" if it does not.
[[nodiscard]] std::string describe(const Api& api, Result result);

} // namespace uwjit::cuda
