// Ensemble: many members of one node type, differing in node params, stepped as one batch (one
// kernel call covers every member), each checked against a stop rule, leaving for sinks when it
// stops, its slot refilled from a sampler.
#pragma once

#include <uwjit/runtime/member_sampler.hpp>
#include <uwjit/runtime/member_sink.hpp>
#include <uwjit/runtime/node.hpp>
#include <uwjit/runtime/snapshot.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::engine {
class Engine;
}
namespace uwjit::comm {
class Comm;
}

namespace uwjit::runtime {

/// The first bytes of an ensemble checkpoint (Ensemble::checkpoint): a file at its path that is
/// not empty and does not start with them is never replaced (Error(io) instead).
inline constexpr std::string_view k_ensemble_checkpoint_magic = "UWJITENS";

/// When a member stops, checked after every `every` steps of it (and at the cap): it has
/// converged when every convergence rule holds: a change rule when its integral's relative change
/// over its last step, |I(s) - I(s-1)| / |I(s)|, is below the tolerance (0 / 0 counts as no
/// change; never at a first step), a below rule when the integral's magnitude |I(s)| is (a
/// residual the node's kernel sums, e.g. the sum of (u_new - u_old)^2 over its cells); it leaves
/// at `max_steps` steps otherwise, not converged. A member whose kernel fails, or whose integral
/// is not finite at a check, leaves as failed.
struct StopRule {
  struct Change {
    std::string integral;
    double tolerance = 0;
    bool below = false; ///< |I(s)| < tolerance ("below:"), not its relative change ("change:")
  };
  std::int64_t max_steps = 0;  ///< the step cap (> 0: every member ends)
  std::vector<Change> changes; ///< convergence: all must hold
  std::int64_t every = 1;      ///< steps between checks (>= 1)
  /// Parses rules, each "steps:N", "change:INTEGRAL<TOLERANCE", "below:INTEGRAL<TOLERANCE" or
  /// "every:K" (several may be given, also comma-separated in one text), e.g.
  /// {"change:heat<1e-9", "steps:5000"}.
  /// Error(usage) naming the text for a rule it does not know, a number that does not parse,
  /// no steps rule (a member that never converges would never end) or a step count below 1.
  [[nodiscard]] static StopRule parse(const std::vector<std::string>& rules);
  /// The rules as parse() takes them, e.g. "change:heat<1e-09,steps:5000".
  [[nodiscard]] std::string text() const;
};

/// How an ensemble runs.
struct EnsembleOptions {
  StopRule until;
  /// Members stepped together; 0: two groups a thread of the members that fit its cache (its
  /// level-2 cache where sysfs lists one, else its share of half the last-level cache; one member
  /// a thread where a member is larger than that), at most as
  /// many as fit in `memory_fraction` of the memory this process can use (from each member's
  /// layout, computed, never probed) and the sampler's size.
  std::int64_t batch = 0;
  double memory_fraction = 0.25;
  /// Threads that step the batch (members split between them); 0: this process's cores (shared
  /// among the ranks of its machine).
  int threads = 0;
  /// Where the batch runs: "cpu", "cuda" (device 0; over ranks, the rank's place on its node
  /// modulo the devices there) or "cuda:N". On a CUDA device each member's state and static
  /// arrays stay in device memory while it steps, a stage of a step is one launch for every
  /// member stepping, and the default batch is what fits in `memory_fraction` of the device's
  /// free memory (cuMemGetInfo) and of the host's (each member keeps its host copy), at most
  /// 4096. Members' states are those of a Simulation on the device, bit for bit; their integrals
  /// are summed there by atomic additions, so their last bits may differ from run to run (and a
  /// change rule may then stop a member a step sooner or later).
  std::string device = "cpu";
  /// The ranks to spread the members over, or null (this process alone). With a comm,
  /// construction and step() are collective (every rank makes the ensemble with the same
  /// arguments, its sampler giving the same members, and steps it alike); each rank steps a
  /// batch of its own (sized from its own memory, at most its share of the sampler's members);
  /// as slots free up, the sampler's next members go to them in rank order (no member twice,
  /// none lost, and ranks whose members finish sooner take more); every member that stops is
  /// sent to rank 0, whose sinks take it (the other ranks need none). An error on any rank is
  /// raised on every rank.
  comm::Comm* comm = nullptr;
  /// A checkpoint (Ensemble::checkpoint) to go on from, or empty. The ensemble must be made with
  /// the arguments that made the one checkpointed (its node type, shared params, varied params,
  /// stop rule and kernels are checked: Error(usage) naming each difference), a sampler that gives
  /// the same members (it is advanced to where the checkpoint's was), and a batch at least as
  /// large as the one held then; a file sink reopened with FileSink::Open::append. It then goes
  /// on as the checkpointed one would have, bit for bit. Over ranks, on as many ranks as wrote
  /// it (Error(usage) otherwise), each reading its own part. A file or part whose checksum (the
  /// SHA-256 it ends with) does not match is Error(io) "... truncated or corrupt (checksum
  /// mismatch)", on every rank.
  std::filesystem::path resume = {};
  /// A directory (it must exist) where each member that leaves is also written for ParaView, as
  /// its node writes VTK (Node::write_vtk), named NODE_ID (heat_000012.vti), or empty. Over
  /// ranks, each member is written by the rank that stepped it (the ranks must share it).
  std::filesystem::path vtk = {};
};

/// What makes a member: its node from its node params (the ensemble's base with the member's
/// values set). Every member must have the same layout (domain, halos, fields, integrals, stages)
/// and the same kernel text: the params an ensemble varies must be the node's run-time params
/// (KernelWriter::param), boundary values or inputs of its static data, never what shapes its
/// kernel (Error(usage) naming the member and its values otherwise).
using MemberFactory = std::function<std::shared_ptr<const Node>(const Params& params)>;

/// An ensemble of one node type. Members differ in the node params the sampler varies, and so
/// in their run-time params, static data, boundary values and initial state; they share one
/// layout and one compiled kernel per stage, written as a batch (KernelWriter::batch): a stage of
/// a step is one kernel call for the whole batch, the members split over the threads, each
/// member's params read from its own row. Each member's state and integrals are bit for bit
/// those of the same node run alone as a serial Simulation, whatever the batch size, slot or
/// thread count. A member is checked against the stop rule, leaves for the first sink with room
/// (waiting in the batch, not stepped, while every sink is full), and its slot is refilled with
/// the sampler's next member (only that member's state is built); once the sampler is exhausted
/// the batch drains. Not thread-safe: one thread drives it.
class Ensemble {
public:
  /// Builds the first member (its kernels requested from `engine`: one compile for any sweep),
  /// chooses the batch size, begins every sink and fills the batch. `base` must hold every varied
  /// param (Error(usage) naming an unknown one, with the node's params); the sinks are tried in
  /// order (at least one).
  Ensemble(engine::Engine& engine, MemberFactory make, Params base,
           std::unique_ptr<MemberSampler> sampler, std::vector<std::shared_ptr<MemberSink>> sinks,
           EnsembleOptions options);
  ~Ensemble();
  Ensemble(const Ensemble&) = delete;
  Ensemble& operator=(const Ensemble&) = delete;

  /// One step of every member in the batch that is still stepping; then the checks, the members
  /// that stop leaving for the sinks, their slots refilled. Returns whether members remain (in
  /// the batch or the sampler). Error(usage) when every member left in the batch waits for a
  /// full sink (nothing could ever make room: take members from a MemorySink first).
  bool step();
  /// Up to `steps` steps (>= 1) of every member still stepping, as step() takes one, in one
  /// round: members are judged after each of their steps, and those that stop leave and their
  /// slots refill when the round ends. Returns whether members remain. What run() calls, for a
  /// host that wants to stop between rounds.
  bool advance(std::int64_t steps);
  /// The steps of one of run()'s rounds: a member that stops waits at most this many steps for
  /// its slot to refill (and, over ranks, the ranks exchange once a round).
  static constexpr std::int64_t round_steps = 16;
  /// Writes what a resumed ensemble needs (EnsembleOptions::resume) to `path`, atomically (the
  /// last checkpoint stays whole until the new one replaces it): the sampler's position, every
  /// member in the batch with its state, the members that left (their summaries) and those
  /// waiting for a sink. What sinks took is theirs: a file sink's rows stay in its file (a
  /// resumed ensemble does not write a member the file holds again), a memory sink's members are
  /// the host's. Call it between steps; Error(io) when the file cannot be written. Over ranks it
  /// is collective: `path` holds what the ranks share (rank 0 writes it) and each rank writes its
  /// own batch to a part beside it, PATH.gG.rR (G counts the checkpoints, R is the rank; the
  /// ranks must share the directory); the file is replaced only once every part of the new one is
  /// whole, and the parts it no longer names are removed, so a job killed at any moment leaves one
  /// whole checkpoint.
  void checkpoint(const std::filesystem::path& path) const;
  /// Steps until every member has left, in rounds of up to 16 steps between refills, calling
  /// `progress` after each round. Within a round, groups of members that fit in a thread's cache
  /// (EnsembleOptions::batch) are stepped by one thread each, all their steps while their buffers
  /// stay in the cache; each member is still judged after each of its steps and stops at the step
  /// its rule says, with the same bits as one step() at a time.
  void run(const std::function<void(const Ensemble&)>& progress = {});

  /// The node type, and the varied params in the order of MemberResult::values.
  [[nodiscard]] const std::string& node_type() const noexcept;
  [[nodiscard]] const std::vector<std::string>& varied() const noexcept;
  /// The node's integrals, in the order of MemberResult::integrals.
  [[nodiscard]] const std::vector<std::string>& integrals() const noexcept;
  /// The batch size, and why it is what it is (e.g. "12: two groups a thread for 2 threads, each
  /// of 3 members in a thread's 1.05 MB level-2 cache (25% of 24.9 GB (MemAvailable) fits 20573
  /// of 302 kB each)").
  [[nodiscard]] std::int64_t batch_size() const noexcept;
  [[nodiscard]] const std::string& batch_reason() const noexcept;
  /// Each member's memory: its state buffers and its static arrays, in bytes.
  [[nodiscard]] double member_bytes() const noexcept;
  /// Members in this rank's batch now, those of them waiting for a sink, members that have left
  /// (every rank's), and the sampler's total when it knows.
  [[nodiscard]] std::int64_t active() const noexcept;
  [[nodiscard]] std::int64_t waiting() const noexcept;
  [[nodiscard]] std::int64_t finished() const noexcept;
  [[nodiscard]] std::optional<std::int64_t> total() const;
  /// Member-steps taken in all (every rank's), and rounds stepped (calls of step(), and run()'s
  /// rounds of up to 16 steps each).
  [[nodiscard]] std::int64_t member_steps() const noexcept;
  [[nodiscard]] std::int64_t batch_steps() const noexcept;
  /// Every member that has left, in the order the sinks took it, without its fields (what a
  /// report lists); over ranks, on rank 0 (empty elsewhere).
  [[nodiscard]] const std::vector<MemberResult>& summaries() const noexcept;
  /// The batch kernels (one per stage) and what the engine did for them.
  [[nodiscard]] const std::vector<KernelReport>& kernel_reports() const noexcept;
  /// The threads that step the batch.
  [[nodiscard]] int threads() const noexcept;
  /// Where the batch runs: "cpu", or the device ("cuda:0 (NVIDIA H100 80GB HBM3, sm_90)").
  [[nodiscard]] std::string device() const;

private:
  friend class Pipeline; // each of its stages is an ensemble
  struct Impl;
  explicit Ensemble(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

} // namespace uwjit::runtime
