// uwjit-bench --compare A.json B.json: two runs side by side (two CPU kinds, or before and after
// a change), row by row, with the ratio of their medians.
#include "bench.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>

namespace uwjit::bench {

namespace {

Json read_run(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error(ErrorKind::io, format("{}: cannot open", path));
  }
  try {
    Json doc = Json::parse(in);
    if (!doc.contains("rows") || !doc["rows"].is_array() || !doc.contains("machine")) {
      throw Error(ErrorKind::usage,
                  format("{}: not a uwjit-bench bench.json (no rows or machine)", path));
    }
    return doc;
  } catch (const Json::exception& error) {
    throw Error(ErrorKind::usage, format("{}: not JSON: {}", path, error.what()));
  }
}

std::string median_text(const Json& row) {
  const Json& median = row["value"]["median"];
  if (!median.is_number()) {
    return "–";
  }
  const std::string unit = row.value("unit", "");
  return number_text(median.get<double>()) + (unit.empty() || unit == "×" ? unit : " " + unit);
}

std::string key_of(const Json& row) {
  return row.value("section", "") + "\n" + row.value("figure", "");
}

std::string cell(std::string text) {
  for (std::size_t at = 0; (at = text.find('|', at)) != std::string::npos; at += 2) {
    text.replace(at, 1, "\\|");
  }
  return text;
}

} // namespace

int compare(const std::string& path_a, const std::string& path_b) {
  const Json a = read_run(path_a);
  const Json b = read_run(path_b);
  std::map<std::string, const Json*> in_b;
  for (const auto& row : b["rows"]) {
    in_b.emplace(key_of(row), &row);
  }
  std::cout << "# uwjit benchmark: two runs\n\n";
  std::cout << "- A: " << path_a << ": " << machine_line(a["machine"]) << ", "
            << a["run"].value("started_utc", "?") << "\n";
  std::cout << "- B: " << path_b << ": " << machine_line(b["machine"]) << ", "
            << b["run"].value("started_utc", "?") << "\n\n";
  std::cout << "Medians of each run's interleaved rounds; B / A is the ratio of the medians (runs "
               "on different machines or days are not interleaved with each other).\n\n";
  std::cout << "| section | figure | A | B | B / A |\n|---|---|---|---|---|\n";
  const auto ratio = [](const Json& x, const Json& y) -> std::string {
    const Json& mx = x["value"]["median"];
    const Json& my = y["value"]["median"];
    if (!mx.is_number() || !my.is_number() || mx.get<double>() == 0 ||
        x.value("unit", "") != y.value("unit", "")) {
      return "–";
    }
    return number_text(std::round(my.get<double>() / mx.get<double>() * 1000) / 1000) + "×";
  };
  std::map<std::string, bool> shown;
  for (const auto& row : a["rows"]) {
    const std::string key = key_of(row);
    const auto it = in_b.find(key);
    std::cout << "| " << cell(row.value("section", "")) << " | " << cell(row.value("figure", ""))
              << " | " << median_text(row) << " | "
              << (it == in_b.end() ? "not in B" : median_text(*it->second)) << " | "
              << (it == in_b.end() ? "–" : ratio(row, *it->second)) << " |\n";
    shown[key] = true;
  }
  for (const auto& row : b["rows"]) {
    if (!shown.contains(key_of(row))) {
      std::cout << "| " << cell(row.value("section", "")) << " | " << cell(row.value("figure", ""))
                << " | not in A | " << median_text(row) << " | – |\n";
    }
  }
  return 0;
}

} // namespace uwjit::bench
