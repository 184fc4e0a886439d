#include "mpi_job.hpp"

#include <uwjit/common/error.hpp>

#ifdef UWJIT_HAVE_MPI
#include <uwjit/mpi.hpp>
#endif

#include <optional>

namespace uwjit::tools {

#ifdef UWJIT_HAVE_MPI

namespace {
std::optional<mpi::Session>& session() {
  static std::optional<mpi::Session> instance;
  return instance;
}
} // namespace

std::unique_ptr<comm::Comm> start_mpi_job() {
  if (!session()) {
    session().emplace(nullptr, nullptr);
  }
  return session()->world();
}

void end_mpi_job_on_error(std::string_view message, int code) {
  if (session() && session()->size() > 1) {
    session()->abort(message, code);
  }
}

void finish_mpi_job() {
  session().reset();
}

#else

std::unique_ptr<comm::Comm> start_mpi_job() {
  throw Error(ErrorKind::usage, "run: --shard needs uwjit built with MPI (uwjit::mpi)");
}

void end_mpi_job_on_error(std::string_view, int) {}

void finish_mpi_job() {}

#endif

} // namespace uwjit::tools
