// uwjit-bench-start-linked: a trivial program linked with libuwjit that calls into it, so that
// its start-up includes loading libuwjit, libLLVM and libclang-cpp. With --rss it prints its
// peak resident set (VmHWM, KiB) as one JSON line.
#include <uwjit/engine/kernel.hpp>

#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--rss") {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmHWM:", 0) == 0) {
        std::cout << "{\"peak_rss_kb\": " << std::stol(line.substr(6)) << "}\n";
      }
    }
  }
  return std::string_view(uwjit::engine::to_string(uwjit::engine::Tier::disk)) == "disk" ? 0 : 1;
}
