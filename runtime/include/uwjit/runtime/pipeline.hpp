// Pipeline: an ensemble whose members pass through stages on ranks, e.g. a cheap spin-up stage
// feeding a production stage with other params: stage k's members that stop become stage k+1's,
// each going on from its state there.
#pragma once

#include <uwjit/runtime/ensemble.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

/// The first bytes of a pipeline checkpoint (Pipeline::checkpoint): a file at its path that is
/// not empty and does not start with them is never replaced (Error(io) instead).
inline constexpr std::string_view k_pipeline_checkpoint_magic = "UWJITPIP";

/// One stage of a pipeline: the params it sets over the ensemble's base (never one the ensemble
/// varies: a member's varied values are its own in every stage) and when a member leaves it.
struct PipelineStage {
  Params params;
  StopRule until;
};

/// How the stages exchange members, once a round (Ensemble::round_steps steps). In every mode a
/// stage sends the stage after it a message each round, empty when no member leaves it, so that
/// no stage waits for a member that will never come.
enum class PipelineMode {
  sync,        ///< the round's message is sent and received before the round ends
  async_recv,  ///< sent at once; received at the start of the next round, after its compute
  fully_async, ///< the send is waited for only before the next one, the receive as async_recv
};
/// "sync", "async_recv" or "fully_async".
[[nodiscard]] std::string_view to_string(PipelineMode mode) noexcept;
/// What to_string gives; Error(usage) naming the three for any other text.
[[nodiscard]] PipelineMode parse_pipeline_mode(std::string_view text);

/// How a pipeline runs.
struct PipelineOptions {
  /// The stages in order, at least one; stage k runs on rank k (the comm has one rank per stage).
  std::vector<PipelineStage> stages;
  PipelineMode mode = PipelineMode::async_recv;
  /// The most members a stage sends on in one round (its send buffer, and the receive buffer of
  /// the stage after it, allocated once from the first member); 0: the batch size.
  std::int64_t buffer = 0;
  /// Each stage's batch (EnsembleOptions::batch; 0: from memory), the memory fraction and threads
  /// (0: this process's share of its machine's cores). A stage holds, besides its batch, a
  /// receive buffer and a message of up to `buffer` members (at the default, a batch each): a
  /// batch from memory is sized from a third of the fraction, so that the three fit in it.
  std::int64_t batch = 0;
  double memory_fraction = 0.25;
  int threads = 0;
  /// Where each stage's batch runs (EnsembleOptions::device); "cuda" gives each rank a device of
  /// its node (its place there modulo the devices).
  std::string device = "cpu";
  /// The ranks, one per stage (required).
  comm::Comm* comm = nullptr;
  /// As EnsembleOptions::vtk, written by the last stage.
  std::filesystem::path vtk = {};
  /// A checkpoint (Pipeline::checkpoint) to go on from, or empty: made by a pipeline of the same
  /// arguments on as many ranks (each stage's node, params, rules and kernels are checked:
  /// Error(usage) naming each difference), each rank reading its own part; a file sink reopened
  /// with FileSink::Open::append. Every member then goes on bit for bit as it would have.
  std::filesystem::path resume = {};
};

/// An ensemble in stages, one stage per rank: the first stage's batch is filled from the sampler
/// (as an Ensemble's); a member that stops in stage k (its stop rule) is sent to stage k+1, which
/// builds it with its own params (the base, the stage's params, the member's varied values) and
/// goes on from the member's fields, steps and integrals; a member that stops in the last stage
/// leaves for the sinks (on the last rank). A member that failed passes on to the sinks
/// untouched. Each stage's stop rule counts the steps taken in that stage; a member's steps are
/// all its steps (the step its kernel is told goes on from stage to stage). Every member is
/// stepped as it would be alone: bit for bit, a serial Simulation of its first stage's node run
/// for its steps there, then one of the next stage's node whose initial state is where the first
/// left it, and so on (tests/mpi/pipeline_tests.cpp).
///
/// Back-pressure: a stage sends at most `buffer` members a round, and no more than the stage
/// after it has free slots for; a member that stopped and cannot be sent waits in its batch, not
/// stepped. The ranks agree after each round whether any stage still holds, awaits or sends a
/// member (one all-reduce, with the member-steps and the members that left); when none does, the
/// pipeline has drained. Construction and advance() are collective, and an error on any rank is
/// raised on every rank after the round's messages have all arrived (never a hang).
class Pipeline {
public:
  /// Builds every stage's template (the sampler's first member with the stage's params), checks
  /// that the stages' layouts agree (Error(usage) naming two that differ), requests each stage's
  /// kernels on its rank (stages with the same kernel text share one compile through the cache)
  /// and fills the first stage's batch. Every rank passes the same arguments and a sampler giving
  /// the same members; `sinks` are used on the last rank only.
  Pipeline(engine::Engine& engine, MemberFactory make, Params base,
           std::unique_ptr<MemberSampler> sampler, std::vector<std::shared_ptr<MemberSink>> sinks,
           PipelineOptions options);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// One round: up to `steps` steps (>= 1) of this rank's stage, then the exchange and the
  /// agreement. Returns whether members remain anywhere.
  bool advance(std::int64_t steps);
  /// Rounds of Ensemble::round_steps until every member has left the last stage, calling
  /// `progress` after each.
  void run(const std::function<void(const Pipeline&)>& progress = {});
  /// Collective, between rounds: writes what PipelineOptions::resume needs. First every member
  /// in flight arrives (the round's transfers complete); then each rank writes its stage (its
  /// batch, the members received and waiting for a slot, those waiting for a sink, the sampler's
  /// position on the first stage) to a part beside `path`, PATH.gG.rR, and rank 0 writes `path`
  /// (every stage's identity and the pipeline's counts), naming generation G only once every
  /// part is whole; the parts of the generation before are removed after. What sinks took is
  /// theirs, as for Ensemble::checkpoint. Error(io) when a file cannot be written.
  void checkpoint(const std::filesystem::path& path);

  /// This rank's stage (its index), and the number of stages.
  [[nodiscard]] int stage() const noexcept;
  [[nodiscard]] int stages() const noexcept;
  [[nodiscard]] PipelineMode mode() const noexcept;
  /// The members a stage sends on in one round at most.
  [[nodiscard]] std::int64_t buffer() const noexcept;
  /// This rank's stage as an ensemble: its batch, kernels and the members that left it
  /// (summaries(): on the last stage, the members the sinks took).
  [[nodiscard]] const Ensemble& ensemble() const noexcept;
  /// Members that left the last stage, member-steps of every stage and rounds: every rank's
  /// figures, the same on every rank.
  [[nodiscard]] std::int64_t finished() const noexcept;
  [[nodiscard]] std::int64_t member_steps() const noexcept;
  [[nodiscard]] std::int64_t rounds() const noexcept;
  /// The sampler's members, when it knows.
  [[nodiscard]] std::optional<std::int64_t> total() const;

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace uwjit::runtime
