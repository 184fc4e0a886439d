// What every MPI test program shares: the job's communicator and its sandbox cache directories.
#pragma once

#include "harness.hpp"
#include "sandbox.hpp"

#include <uwjit/comm/comm.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/mpi.hpp>
#include <uwjit/runtime/simulation.hpp>
#include <uwjit/runtime/snapshot.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <stdlib.h>

namespace uwjit_test {

/// The job's communicator, set by main() before the cases run and reset before MPI_Finalize.
inline std::unique_ptr<uwjit::comm::Comm>& comm() {
  static std::unique_ptr<uwjit::comm::Comm> instance;
  return instance;
}

/// Every job_sandbox() made so far, for remove_job_sandboxes().
inline std::vector<std::filesystem::path>& job_sandboxes() {
  static std::vector<std::filesystem::path> made;
  return made;
}

/// A fresh directory shared by the job: made by rank 0, its path broadcast. Collective.
inline std::filesystem::path job_sandbox(const std::string& prefix) {
  std::string path;
  if (comm()->rank() == 0) {
    path = uwjit_test::make_temp_dir(prefix).string();
  }
  path = comm()->broadcast(path, 0);
  job_sandboxes().emplace_back(path);
  return path;
}

/// Removes every job_sandbox() still there, once every rank is done. Collective; main() calls it
/// after the cases, so that no run leaves directories behind.
inline void remove_job_sandboxes() {
  comm()->barrier();
  if (comm()->rank() == 0) {
    for (const auto& dir : job_sandboxes()) {
      uwjit_test::remove_tree(dir);
    }
  }
  job_sandboxes().clear();
}

/// Runs `body` and returns the error it raised as "KIND: message" ("(no error)" if none),
/// checking that every rank got the same. Collective.
inline std::string same_failure_everywhere(const std::function<void()>& body) {
  std::string message = "(no error)";
  try {
    body();
  } catch (const uwjit::Error& error) {
    message = std::string(uwjit::to_string(error.kind())) + ": " + error.what();
  }
  for (const auto& other : comm()->all_gather(message)) {
    MPI_CHECK(other == message);
  }
  return message;
}

/// Whether `a` and `b` hold the same doubles, bit for bit.
inline bool same_bits(std::span<const double> a, std::span<const double> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

/// Checks that every rank holds the same integrals of `run`, bit for bit. Collective.
inline void check_integrals_alike_on_every_rank(const uwjit::runtime::Simulation& run) {
  std::string mine;
  for (const auto& node : run.nodes()) {
    const auto values = run.integrals(node->name());
    mine.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  }
  for (const auto& other : comm()->all_gather(mine)) {
    MPI_CHECK(other == mine);
  }
}

/// Checks that a run's state is `expected`'s: every field of `fields` (the run itself, or its
/// gathered Snapshot) bit for bit, each integral of `run` within 1e-12 of max(|value|, 1) (partial
/// sums are added in another order when sharded or overlapped).
template <class Fields>
void check_same_state(const Fields& fields, const uwjit::runtime::Simulation& run,
                      const uwjit::runtime::Simulation& expected) {
  for (const auto& node : expected.nodes()) {
    for (const auto& f : node->layout().fields) {
      MPI_CHECK(
          fields.field(node->name(), f.name).interior_equals(expected.field(node->name(), f.name)));
    }
    const auto mine = run.integrals(node->name());
    const auto theirs = expected.integrals(node->name());
    MPI_CHECK(mine.size() == theirs.size());
    for (std::size_t i = 0; i < mine.size() && i < theirs.size(); ++i) {
      MPI_CHECK(std::abs(mine[i] - theirs[i]) <=
                1e-12 * std::max({std::abs(mine[i]), std::abs(theirs[i]), 1.0}));
    }
  }
}

/// The whole of a test program's main(): MPI started, every case run on the job's communicator,
/// the sandboxes removed, MPI finished. Returns the exit code.
inline int run_job(int& argc, char**& argv) {
  int code = 1;
  {
    uwjit::mpi::Session session(&argc, &argv);
    comm() = session.world();
    code = run_all();
    remove_job_sandboxes();
    comm().reset();
  }
  return code;
}

} // namespace uwjit_test
