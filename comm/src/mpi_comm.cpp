// The MPI implementation of Comm: the one file of uwjit that includes <mpi.h>.
#include <uwjit/mpi.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/log.hpp>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <numeric>
#include <optional>
#include <vector>

namespace uwjit::mpi {

namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw Error(ErrorKind::collective, format("{} failed: {}", what, std::string(text, length)));
  }
}

int checked_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    throw Error(ErrorKind::usage, format("an MPI message of {} bytes is over 2 GiB", bytes));
  }
  return static_cast<int>(bytes);
}

class MpiRequest final : public comm::Comm::Request {
public:
  MpiRequest() = default;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;
  ~MpiRequest() override {
    if (m_request != MPI_REQUEST_NULL) {
      // Never leave a transfer running into freed buffers; errors cannot be thrown from here.
      MPI_Wait(&m_request, MPI_STATUS_IGNORE);
    }
  }
  void wait() override { check(MPI_Wait(&m_request, MPI_STATUS_IGNORE), "MPI_Wait"); }
  MPI_Request m_request = MPI_REQUEST_NULL;
};

// all_reduce_sum_max's operation on packed words: word 0 the count n of sums, words 1..n the
// sums' bits (added as doubles), the rest maxima (unsigned).
void sum_then_max(void* in, void* inout, int* length, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const std::uint64_t*>(in);
  auto* b = static_cast<std::uint64_t*>(inout);
  const auto sums = static_cast<int>(a[0]);
  for (int i = 1; i < *length; ++i) {
    b[i] = i <= sums ? std::bit_cast<std::uint64_t>(std::bit_cast<double>(a[i]) +
                                                    std::bit_cast<double>(b[i]))
                     : std::max(a[i], b[i]);
  }
}

class MpiComm final : public comm::Comm {
public:
  // `names_log`: put this group's rank in uwjit's log lines (the job's group, not a sub-group).
  MpiComm(MPI_Comm parent, bool names_log) {
    check(MPI_Comm_dup(parent, &m_comm), "MPI_Comm_dup");
    // Errors come back as codes and become Error(collective), instead of aborting the job.
    check(MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(m_comm, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(m_comm, &m_size), "MPI_Comm_size");
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(m_comm, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    check(MPI_Comm_rank(node, &m_node_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(node, &m_node_size), "MPI_Comm_size");
    MPI_Comm_free(&node);
    if (names_log) {
      log::set_rank(m_rank, m_size);
    }
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  ~MpiComm() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Comm_free(&m_comm);
      if (m_sum_max != MPI_OP_NULL) {
        MPI_Op_free(&m_sum_max);
      }
    }
  }

  [[nodiscard]] int rank() const noexcept override { return m_rank; }
  [[nodiscard]] int size() const noexcept override { return m_size; }
  [[nodiscard]] int node_rank() const noexcept override { return m_node_rank; }
  [[nodiscard]] int node_size() const noexcept override { return m_node_size; }

  [[nodiscard]] std::vector<std::string> all_gather(std::string_view mine) override {
    int length = checked_count(mine.size());
    std::vector<int> lengths(m_size);
    check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, m_comm), "MPI_Allgather");
    std::vector<int> offsets(m_size, 0);
    std::size_t total = 0;
    for (int r = 0; r < m_size; ++r) {
      offsets[r] = checked_count(total);
      total += static_cast<std::size_t>(lengths[r]);
    }
    std::string all(total, '\0');
    check(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                         MPI_CHAR, m_comm),
          "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < m_size; ++r) {
      out.push_back(
          all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    }
    return out;
  }

  [[nodiscard]] std::string broadcast(std::string bytes, int root) override {
    unsigned long long length = bytes.size();
    check(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, root, m_comm), "MPI_Bcast");
    bytes.resize(length);
    // Large payloads go in pieces under MPI's int counts.
    constexpr std::size_t k_piece = 1U << 30;
    for (std::size_t done = 0; done < length; done += k_piece) {
      const std::size_t piece = std::min<std::size_t>(k_piece, length - done);
      check(MPI_Bcast(bytes.data() + done, static_cast<int>(piece), MPI_CHAR, root, m_comm),
            "MPI_Bcast");
    }
    return bytes;
  }

  void all_reduce_sum(std::span<double> values) override {
    check(MPI_Allreduce(MPI_IN_PLACE, values.data(), checked_count(values.size()), MPI_DOUBLE,
                        MPI_SUM, m_comm),
          "MPI_Allreduce");
  }

  void all_reduce_sum(std::span<std::uint64_t> values) override {
    check(MPI_Allreduce(MPI_IN_PLACE, values.data(), checked_count(values.size()), MPI_UINT64_T,
                        MPI_SUM, m_comm),
          "MPI_Allreduce");
  }

  // One MPI_Allreduce of the words [sums.size(), sums' bits..., maxima...] under sum_then_max.
  void all_reduce_sum_max(std::span<double> sums, std::span<std::uint64_t> maxima) override {
    if (m_sum_max == MPI_OP_NULL) {
      check(MPI_Op_create(&sum_then_max, 1, &m_sum_max), "MPI_Op_create");
    }
    m_packed.resize(1 + sums.size() + maxima.size()); // grows only: no allocation per step
    m_packed[0] = sums.size();
    std::memcpy(m_packed.data() + 1, sums.data(), sums.size_bytes());
    std::copy(maxima.begin(), maxima.end(), m_packed.begin() + 1 + sums.size());
    check(MPI_Allreduce(MPI_IN_PLACE, m_packed.data(), checked_count(m_packed.size()), MPI_UINT64_T,
                        m_sum_max, m_comm),
          "MPI_Allreduce");
    std::memcpy(sums.data(), m_packed.data() + 1, sums.size_bytes());
    std::copy_n(m_packed.begin() + 1 + static_cast<std::ptrdiff_t>(sums.size()), maxima.size(),
                maxima.begin());
  }

  void send_receive(std::span<const std::byte> send, int dest, std::span<std::byte> receive,
                    int source, int tag) override {
    check(MPI_Sendrecv(send.data(), checked_count(send.size()), MPI_BYTE, dest, tag, receive.data(),
                       checked_count(receive.size()), MPI_BYTE, source, tag, m_comm,
                       MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
  }

  [[nodiscard]] std::unique_ptr<Request> start_receive(std::span<std::byte> receive, int source,
                                                       int tag) override {
    auto request = std::make_unique<MpiRequest>();
    check(MPI_Irecv(receive.data(), checked_count(receive.size()), MPI_BYTE, source, tag, m_comm,
                    &request->m_request),
          "MPI_Irecv");
    return request;
  }

  [[nodiscard]] std::unique_ptr<Request> start_send(std::span<const std::byte> send, int dest,
                                                    int tag) override {
    auto request = std::make_unique<MpiRequest>();
    check(MPI_Isend(send.data(), checked_count(send.size()), MPI_BYTE, dest, tag, m_comm,
                    &request->m_request),
          "MPI_Isend");
    return request;
  }

  void barrier() override { check(MPI_Barrier(m_comm), "MPI_Barrier"); }

  [[nodiscard]] std::unique_ptr<Comm> split_node() override {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(m_comm, MPI_COMM_TYPE_SHARED, m_rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    // The child duplicates `node`; this handle is ours to free, also if the child throws.
    struct Free {
      MPI_Comm* comm;
      ~Free() { MPI_Comm_free(comm); }
    } free_node{&node};
    return std::make_unique<MpiComm>(node, false);
  }

private:
  MPI_Comm m_comm = MPI_COMM_NULL;
  MPI_Op m_sum_max = MPI_OP_NULL;      // all_reduce_sum_max's, made on its first call
  std::vector<std::uint64_t> m_packed; // all_reduce_sum_max's words
  int m_rank = 0;
  int m_size = 1;
  int m_node_rank = 0;
  int m_node_size = 1;
};

} // namespace

namespace {

// Slurm's srun starts a job's tasks itself. An MPI that cannot reach Slurm's process manager
// (Open MPI without PMIx or Slurm's PMI, or srun without --mpi=pmix) makes each task a job of
// one rank: N copies of a serial run would then write the same files, silently. The launchers'
// own variables tell: srun's step task count, unless mpirun/mpiexec started this process (its
// daemons run as a Slurm step of one task per node, whose count its ranks inherit).
void check_launcher() {
  int size = 1;
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  if (size != 1 || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
      std::getenv("PMI_SIZE") != nullptr) {
    return;
  }
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  const char* task = std::getenv("SLURM_PROCID");
  char* end = nullptr;
  const long count = tasks != nullptr ? std::strtol(tasks, &end, 10) : 0;
  if (tasks == nullptr || end == tasks || *end != '\0' || count <= 1) {
    return;
  }
  throw Error(ErrorKind::usage,
              format("this process is task {} of the {} that srun started (SLURM_PROCID, "
                     "SLURM_STEP_NUM_TASKS), but MPI sees a job of 1 rank: this MPI does not "
                     "reach Slurm's process manager, so every task would run alone. Launch with "
                     "srun --mpi=pmix (srun --mpi=list names what this Slurm offers; Open MPI "
                     "needs PMIx), or with mpirun inside the allocation",
                     task != nullptr ? task : "?", count));
}

} // namespace

std::unique_ptr<comm::Comm> make_comm(MPI_Comm comm) {
  // A host that initialised MPI itself (mpi4py) meets the same check as a Session.
  check_launcher();
  return std::make_unique<MpiComm>(comm, true);
}

Session::Session(int* argc, char*** argv) : m_unwinding_at_start(std::uncaught_exceptions()) {
  int initialised = 0;
  check(MPI_Initialized(&initialised), "MPI_Initialized");
  if (initialised == 0) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    m_owned = true;
  }
}

Session::~Session() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!m_owned || finalised != 0) {
    return;
  }
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (std::uncaught_exceptions() > m_unwinding_at_start && size > 1) {
    abort("an exception is unwinding past uwjit::mpi::Session on this rank, while other ranks "
          "may wait in a collective: ending the job (catch it inside the Session's scope and "
          "call Session::abort to see its message)",
          1);
  }
  MPI_Finalize();
}

void Session::abort(std::string_view message, int code, std::string_view program) const {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string line = format("{}: error: rank {}/{}: {}\n", program, rank, size, message);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return; should an implementation return, end anyway
}

std::unique_ptr<comm::Comm> Session::world() const {
  return make_comm(MPI_COMM_WORLD);
}

int Session::size() const {
  int size = 1;
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  return size;
}

namespace {

class MpiJob final : public comm::Job {
public:
  std::unique_ptr<comm::Comm> start() override {
    if (!m_session) {
      m_session.emplace(nullptr, nullptr);
    }
    return m_session->world();
  }
  void end_on_error(std::string_view program, std::string_view message, int code) override {
    if (m_session && m_session->size() > 1) {
      m_session->abort(message, code, program);
    }
  }
  void finish() override { m_session.reset(); }

private:
  std::optional<Session> m_session;
};

} // namespace

comm::Job& job() {
  static MpiJob instance;
  return instance;
}

} // namespace uwjit::mpi
