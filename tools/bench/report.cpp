#include "bench.hpp"

#include <uwjit/common/format.hpp>
#include <uwjit/common/version.hpp>
#include <uwjit/engine/compiler.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <sys/utsname.h>
#include <unistd.h>

namespace uwjit::bench {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value after "key" and ':' on the first line that starts with `key` in a /proc file.
std::string proc_field(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key, 0) == 0) {
      auto value = line.substr(line.find(':') + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "";
}

std::string first_line_of(const std::vector<std::string>& argv) {
  try {
    const auto result = run(argv, {}, std::chrono::seconds(20));
    const std::string text = result.out.empty() ? result.err : result.out;
    return text.substr(0, text.find('\n'));
  } catch (const std::exception&) {
    return "(not found)";
  }
}

std::string escape_cell(std::string text) {
  std::string out;
  for (const char c : text) {
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  }
  return out;
}

} // namespace

std::vector<double> load_average() {
  double loads[3] = {0, 0, 0};
  if (::getloadavg(loads, 3) != 3) {
    return {};
  }
  return {loads[0], loads[1], loads[2]};
}

std::string vector_isa(const std::vector<std::string>& features) {
  const auto has = [&](std::string_view name) {
    return std::find(features.begin(), features.end(), "+" + std::string(name)) != features.end();
  };
  for (const auto& [feature, isa] :
       {std::pair{"avx512f", "AVX-512"}, std::pair{"avx2", "AVX2"}, std::pair{"avx", "AVX"},
        std::pair{"sse4.2", "SSE4.2"}, std::pair{"sve", "SVE"}, std::pair{"neon", "NEON"}}) {
    if (has(feature)) {
      return isa;
    }
  }
  return "scalar";
}

Json machine_info() {
  const std::string cpuinfo = read_text("/proc/cpuinfo");
  const std::string meminfo = read_text("/proc/meminfo");
  utsname names{};
  ::uname(&names);
  const auto& target = engine::host_target();
  Json machine;
  machine["cpu_model"] = proc_field(cpuinfo, "model name");
  machine["cores"] = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::string mem_kb = proc_field(meminfo, "MemTotal");
  machine["memory_bytes"] = std::stoull(mem_kb.empty() ? "0" : mem_kb) * 1024;
  machine["kernel"] = std::string(names.sysname) + " " + names.release;
  machine["llvm_version"] = target.llvm_version;
  machine["llvm_cpu"] = target.cpu;
  machine["vector_isa"] = vector_isa(target.features);
  machine["triple"] = target.triple;
  machine["uwjit_version"] = k_version;
  machine["gcc"] = first_line_of({"g++", "--version"});
  machine["clang"] = first_line_of({"clang++-19", "--version"});
  machine["mpiexec"] = first_line_of({"mpiexec", "--version"});
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  machine["hostname"] = host;
  return machine;
}

std::string machine_line(const Json& machine) {
  const double gib = machine.value("memory_bytes", 0.0) / double(1ull << 30);
  return format("{} ({}, {}), {} cores, {} GiB, {}, LLVM {}", machine.value("cpu_model", "?"),
                machine.value("llvm_cpu", "?"), machine.value("vector_isa", "?"),
                machine.value("cores", 0), number_text(std::round(gib * 10) / 10),
                machine.value("kernel", "?"), machine.value("llvm_version", "?"));
}

std::optional<bool> Row::met() const {
  if (!goal || value.n == 0 || !std::isfinite(value.median)) {
    return std::nullopt;
  }
  return (!goal->at_least || value.median >= *goal->at_least) &&
         (!goal->at_most || value.median <= *goal->at_most);
}

Row& Report::add(Row row) {
  m_rows.push_back(std::move(row));
  return m_rows.back();
}

Json& Report::section(const std::string& name) {
  if (!m_sections.contains(name)) {
    m_sections[name] = {{"status", "measured"}};
  }
  return m_sections[name];
}

void Report::not_measured(const std::string& name, const std::string& reason) {
  Json& s = section(name);
  s["status"] = "not_measured";
  s["reason"] = reason;
}

Json Report::to_json(const Json& run) const {
  Json out;
  out["format"] = 1;
  out["tool"] = "uwjit-bench";
  out["run"] = run;
  out["machine"] = m_machine;
  const std::string line = machine_line(m_machine);
  Json sections = Json::object();
  for (const auto& name : k_sections) {
    sections[name] = m_sections.contains(name)
                         ? m_sections[name]
                         : Json{{"status", "skipped"}, {"reason", "not selected (--sections)"}};
  }
  out["sections"] = std::move(sections);
  Json rows = Json::array();
  for (const auto& row : m_rows) {
    Json r;
    r["section"] = row.section;
    r["figure"] = row.figure;
    r["unit"] = row.unit;
    r["value"] = bench::to_json(row.value);
    if (row.goal) {
      r["goal"] = {{"text", row.goal->text}};
      if (row.goal->at_least) {
        r["goal"]["at_least"] = *row.goal->at_least;
      }
      if (row.goal->at_most) {
        r["goal"]["at_most"] = *row.goal->at_most;
      }
      const auto met = row.met();
      r["met"] = met ? Json(*met) : Json(nullptr);
    } else {
      r["goal"] = nullptr;
      r["met"] = nullptr;
    }
    r["limit"] = row.limit;
    r["note"] = row.note;
    r["command"] = row.command;
    r["machine"] = line;
    rows.push_back(std::move(r));
  }
  out["rows"] = std::move(rows);
  return out;
}

std::string Report::to_markdown(const Json& run) const {
  std::string md = "# uwjit benchmark\n\n";
  md += "Machine: " + machine_line(m_machine) + " (" + m_machine.value("gcc", "") + "; " +
        m_machine.value("clang", "") + ").\n\n";
  const auto loads = [](const Json& list) {
    std::string text;
    for (const auto& value : list) {
      text += (text.empty() ? "" : ", ") + number_text(value.get<double>());
    }
    return text;
  };
  md += "Run: `" + run.value("command", "") + "`, " + run.value("started_utc", "") + ", " +
        number_text(run.value("duration_s", 0.0)) + " s; load average at start " +
        loads(run["load_average_start"]) + ", at end " + loads(run["load_average_end"]) + ".\n\n";
  md += "Each figure is the median of interleaved rounds [min–max] (n); ratios are medians of the "
        "per-round ratios of interleaved pairs.\n\n";
  md += "| section | figure | median [min–max] (n) | goal | verdict | reproduce |\n";
  md += "|---|---|---|---|---|---|\n";
  for (const auto& row : m_rows) {
    const auto met = row.met();
    const std::string verdict = !row.goal ? "" : !met ? "–" : *met ? "met" : "**missed**";
    const std::string unit = row.unit == "×" ? "×" : " " + row.unit;
    md += "| " + row.section + " | " + escape_cell(row.figure) + " | " +
          number_text(row.value.median) + unit + " [" + number_text(row.value.min) + "–" +
          number_text(row.value.max) + "] (" + std::to_string(row.value.n) + ") | " +
          (row.goal ? escape_cell(row.goal->text) : std::string()) + " | " + verdict + " | `" +
          escape_cell(row.command) + "` |\n";
  }
  std::string limits;
  for (const auto& row : m_rows) {
    if (row.met() == std::optional<bool>(false) && !row.limit.empty()) {
      limits += "- **" + row.section + ", " + row.figure + "**: " + row.limit + "\n";
    }
  }
  if (!limits.empty()) {
    md += "\n## What limits the missed goals\n\n" + limits;
  }
  std::string skipped;
  for (const auto& name : k_sections) {
    const Json s = m_sections.contains(name)
                       ? m_sections[name]
                       : Json{{"status", "skipped"}, {"reason", "not selected (--sections)"}};
    if (s.value("status", "") != "measured" || s.contains("not_measured")) {
      std::string reason = s.value("reason", "");
      if (s.contains("not_measured")) {
        for (const auto& [what, why] : s["not_measured"].items()) {
          reason += (reason.empty() ? "" : "; ") + what + ": " + why.get<std::string>();
        }
      }
      skipped += "- " + name + " (" + s.value("status", "") + "): " + reason + "\n";
    }
  }
  if (!skipped.empty()) {
    md += "\n## Not measured\n\n" + skipped;
  }
  return md;
}

} // namespace uwjit::bench
