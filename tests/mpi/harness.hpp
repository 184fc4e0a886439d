// A small test harness for MPI programs (doctest has no MPI extension here): every rank runs
// every case; a case fails if it fails on any rank; rank 0 prints one line per case and the
// closing "N passed, N failed" line; the exit code is non-zero on any failure.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace uwjit_test {

struct Case {
  const char* name;
  std::function<void()> body;
};

inline std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}

struct Register {
  Register(const char* name, std::function<void()> body) { cases().push_back({name, body}); }
};

// A failed check is recorded and the case goes on: throwing out of a case on one rank would
// leave the other ranks waiting in the case's next collective.
inline std::vector<std::string>& failures() {
  static std::vector<std::string> list;
  return list;
}

inline void check(bool condition, const std::string& what, const char* file, int line) {
  if (!condition) {
    failures().push_back(std::string(file) + ":" + std::to_string(line) + ": " + what);
  }
}

inline int run_all() {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int passed = 0;
  int failed = 0;
  for (const auto& test : cases()) {
    failures().clear();
    std::string why;
    try {
      test.body();
    } catch (const std::exception& error) {
      failures().push_back(std::string("unexpected exception: ") + error.what());
    }
    for (const auto& failure : failures()) {
      why += (why.empty() ? "" : "; ") + failure;
    }
    if (!why.empty()) {
      std::fprintf(stderr, "[rank %d] FAILED %s: %s\n", rank, test.name, why.c_str());
    }
    int bad = why.empty() ? 0 : 1;
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("[np %d] %s: %s\n", size, any_bad ? "FAILED" : "passed", test.name);
    }
    (any_bad ? failed : passed) += 1;
  }
  if (rank == 0) {
    std::printf("%d passed, %d failed\n", passed, failed);
  }
  return failed == 0 ? 0 : 1;
}

} // namespace uwjit_test

#define UWJIT_CONCAT2(a, b) a##b
#define UWJIT_CONCAT(a, b) UWJIT_CONCAT2(a, b)
#define MPI_TEST_CASE(name)                                                                        \
  static void UWJIT_CONCAT(mpi_case_, __LINE__)();                                                 \
  static const uwjit_test::Register UWJIT_CONCAT(mpi_register_, __LINE__)(                         \
      name, UWJIT_CONCAT(mpi_case_, __LINE__));                                                    \
  static void UWJIT_CONCAT(mpi_case_, __LINE__)()
#define MPI_CHECK(condition) uwjit_test::check((condition), #condition, __FILE__, __LINE__)
