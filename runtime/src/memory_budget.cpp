#include "memory_budget.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

namespace uwjit::runtime::detail {

namespace {

// Beyond this a limit means "none" (cgroup v1 writes 2^63 rounded down to a page).
constexpr double k_unlimited = 0x1.0p60;

// The number after `key` in a "Key:   123 kB" file (/proc/meminfo, /proc/self/status), in bytes.
std::optional<double> kilobytes_of(const char* path, std::string_view key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ':') {
      std::istringstream fields(line.substr(key.size() + 1));
      double kb = 0;
      if (fields >> kb) {
        return kb * 1024;
      }
    }
  }
  return std::nullopt;
}

// A file holding one byte count ("max" or a huge value: none).
std::optional<double> limit_in(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") {
    return std::nullopt;
  }
  double value = 0;
  std::istringstream number(word);
  if (!(number >> value) || value <= 0 || value >= k_unlimited) {
    return std::nullopt;
  }
  return value;
}

// The lowest `file` limit of the group at `path` under `root` and of its parents.
std::optional<double> group_limit(const std::string& root, std::string path,
                                  std::string_view file) {
  std::optional<double> lowest;
  while (true) {
    const std::string dir = path == "/" ? root : root + path;
    if (const auto limit = limit_in(dir + "/" + std::string(file))) {
      lowest = lowest ? std::min(*lowest, *limit) : *limit;
    }
    if (path == "/" || path.empty()) {
      return lowest;
    }
    const auto slash = path.find_last_of('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
}

std::optional<double> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::optional<double> lowest;
  for (std::string line; std::getline(in, line);) {
    // id:controllers:path
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) {
      continue;
    }
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<double> limit;
    if (id == "0" && controllers.empty()) {
      limit = group_limit("/sys/fs/cgroup", path, "memory.max");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      limit = group_limit("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
    }
    if (limit) {
      lowest = lowest ? std::min(*lowest, *limit) : *limit;
    }
  }
  return lowest;
}

// What RLIMIT_AS leaves beside the address space mapped already.
std::optional<double> address_space_left() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return std::nullopt;
  }
  const double mapped = kilobytes_of("/proc/self/status", "VmSize").value_or(0);
  return std::max(0.0, static_cast<double>(limit.rlim_cur) - mapped);
}

} // namespace

MemoryLimits available_memory() {
  MemoryLimits limits{{std::numeric_limits<double>::infinity(), ""},
                      {std::numeric_limits<double>::infinity(), ""}};
  auto consider = [](MemoryLimit& best, std::optional<double> bytes, std::string_view source) {
    if (bytes && *bytes < best.bytes) {
      best = {*bytes, std::string(source)};
    }
  };
  consider(limits.machine, kilobytes_of("/proc/meminfo", "MemAvailable"), "MemAvailable");
  if (limits.machine.source.empty()) {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
      consider(limits.machine, static_cast<double>(pages) * static_cast<double>(page),
               "physical memory");
    }
  }
  consider(limits.machine, cgroup_limit(), "cgroup memory limit");
  consider(limits.process, address_space_left(), "RLIMIT_AS, less what is mapped already");
  return limits;
}

std::string bytes_text(double bytes) {
  static constexpr std::array<const char*, 7> k_units = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  std::size_t unit = 0;
  while (bytes >= 999.5 && unit + 1 < k_units.size()) {
    bytes /= 1000;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.3g %s", bytes, k_units[unit]);
  return text.data();
}

void check_fits(const MemoryNeed& need, int processes, const MemoryLimits& limits) {
  std::string parts =
      format("state {}: two buffers per state field, halos included; static data {}",
             bytes_text(need.state), bytes_text(need.statics));
  if (need.fill > 0) {
    parts += format("; the whole domain's state while a node that does not fill by slab is "
                    "filled {}",
                    bytes_text(need.fill));
  }
  const auto refuse = [&](const std::string& what, const std::string& has,
                          const MemoryLimit& limit) {
    throw Error(ErrorKind::usage,
                format("run needs about {} and {} {} ({}); use a smaller grid, or shard the run "
                       "over more machines",
                       what, has, bytes_text(limit.bytes), limit.source));
  };
  // An address-space limit is each process's own: one rank's need against it.
  if (std::isfinite(limits.process.bytes) && need.total() > limits.process.bytes) {
    refuse(format("{} of memory ({})", bytes_text(need.total()), parts), "this process may map",
           limits.process);
  }
  const double total = need.total() * processes;
  if (std::isfinite(limits.machine.bytes) && total > limits.machine.bytes) {
    refuse(processes == 1 ? format("{} of memory ({})", bytes_text(total), parts)
                          : format("{} of memory on this machine ({} ranks here, each {}: {})",
                                   bytes_text(total), processes, bytes_text(need.total()), parts),
           "this machine has", limits.machine);
  }
}

} // namespace uwjit::runtime::detail
