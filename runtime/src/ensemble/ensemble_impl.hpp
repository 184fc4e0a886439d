// Ensemble::Impl: what an ensemble keeps (its members in their slots, the batch kernels, the
// sinks, the sampler) and the steps of its work, shared by the files of src/ensemble/:
// ensemble.cpp (construction, the batch size, the stop rule, the sinks, a step), members.cpp
// (building, refilling and retiring members), batch_step.cpp (the batch-kernel calls) and
// ensemble_checkpoint.cpp (a checkpoint written and resumed).
#pragma once

#include <uwjit/runtime/ensemble.hpp>

#include "../kernel_binding.hpp"
#include "../node_layout.hpp"
#include "../node_state.hpp"
#include "../thread_pool.hpp"
#include "member_device.hpp"

#include <uwjit/comm/comm.hpp>
#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/engine/kernel.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace uwjit::runtime {

namespace detail {

// One member in an ensemble's batch.
struct EnsembleMember {
  std::int64_t id = 0;
  std::vector<double> values;
  NodeState state;
  std::int64_t steps = 0;
  std::int64_t entered = 0;     // its steps when it entered this stage of a pipeline (else 0)
  std::vector<double> previous; // the integrals after the step before the last
  bool stopped = false;         // no longer stepped: it waits for a sink
  MemberStatus status = MemberStatus::step_cap;
  std::string reason;
  bool on_device = false; // its state is on the ensemble's device (MemberDevice::place)
};

/// What an ensemble is in a pipeline (Pipeline): a stage after the first is fed members by the
/// stage before (its inbox), not by the sampler; a stage never ends on its own (the pipeline
/// agrees when every stage is done); reasons name the stage.
struct StageRole {
  int index = -1; // the stage, or -1: an ensemble alone
  int count = 0;  // the pipeline's stages
  // A pipeline's resume: the batch is left unfilled, for the pipeline to restore the stage from
  // its part of a checkpoint before it fills it.
  bool unfilled = false;

  [[nodiscard]] bool piped() const noexcept { return index >= 0; }
  [[nodiscard]] bool fed() const noexcept { return index > 0; }
  [[nodiscard]] bool last() const noexcept { return index + 1 == count; } // the host's sinks
  /// What a member's reason starts with: "stage 1: " in a pipeline of several stages.
  [[nodiscard]] std::string label() const;
};

/// What members must share of a layout, in words (boundaries, dt and values may differ).
[[nodiscard]] std::string shared_layout(const Layout& layout);
/// "NAME=VALUE ..." for a member's varied params.
[[nodiscard]] std::string values_text(const std::vector<std::string>& names,
                                      const std::vector<double>& values);
/// What one member holds: its state buffers (halos included), its static arrays and their
/// halo-padded copies, in bytes.
[[nodiscard]] double member_memory(const NodeState& state);
/// Rank `rank`'s part of generation `generation` of the checkpoint at `path`: PATH.gG.rR.
[[nodiscard]] std::filesystem::path part_path(const std::filesystem::path& path,
                                              std::uint64_t generation, int rank);
/// Every member's fields, as zeros of their shapes (a member never built, or a message's size).
[[nodiscard]] std::vector<MemberField> zero_fields(const MemberColumns& columns);
/// The cache one of `threads` threads steps its group of members from, and its words for the
/// batch's report.
struct ThreadCache {
  double bytes = 0;
  std::string text; ///< e.g. "a thread's 1.05 MB level-2 cache"
};
/// The bytes of the cache one of `threads` threads steps its group from: the first CPU's level-2
/// cache (split between the CPUs that share it, at most `threads`) where sysfs names one, else
/// the thread's share of half the last-level cache. No strings: each round asks.
[[nodiscard]] double thread_cache_bytes(std::size_t threads);
/// thread_cache_bytes(threads) with its words, for the batch's report.
[[nodiscard]] ThreadCache thread_cache(std::size_t threads);
/// Members of `member_bytes` each that fit thread_cache_bytes(threads); at least 1. A thread steps
/// such a group all the steps of a round while its buffers stay in its cache.
[[nodiscard]] std::size_t cache_group(double member_bytes, std::size_t threads);

} // namespace detail

struct Ensemble::Impl {
  using Member = detail::EnsembleMember;
  engine::Engine* engine;
  MemberFactory make;
  Params base;
  std::unique_ptr<MemberSampler> sampler;
  std::vector<std::shared_ptr<MemberSink>> sinks;
  EnsembleOptions options;

  std::string type;
  std::vector<std::string> varied;
  std::vector<std::string> integral_names;
  std::vector<std::size_t> change_index; // per change rule: its integral's index
  std::string layout_text;               // the first member's, as members must share it
  std::vector<std::string> texts;        // per stage: the first member's kernel text
  std::vector<engine::Kernel> kernels;   // per stage: the batch kernel
  std::vector<codegen::SlotTables> slots;
  std::vector<KernelReport> reports;
  std::int64_t batch = 0;
  std::string batch_reason;
  double bytes_per_member = 0;
  std::int64_t memory_fit = 0; // members that fit in the memory fraction
  std::vector<std::unique_ptr<detail::EnsembleMember>> members; // the batch's slots; null: empty
  std::vector<MemberResult> summaries;
  std::int64_t next_id = 0;
  std::int64_t steps_taken = 0;
  std::int64_t batch_steps = 0;
  std::int64_t left = 0;
  std::optional<detail::ThreadPool> pool;
  std::unique_ptr<detail::MemberDevice> device; // the CUDA device the batch runs on, or null
  // One stage's calls of a group of members: each stepping member's slabs, in member order.
  struct Calls {
    std::vector<uwjit_kernel_args> args;
    std::vector<int> status;
    std::vector<double> sums; // call-major: call c's integral slots at c * slot count
    std::vector<std::size_t> member;
  };
  std::vector<Calls> scratch; // per group, kept from step to step
  // The state buffers of members that left, for the members that take their slots (the same
  // layout): a refill allocates nothing.
  std::vector<std::pair<std::vector<std::unique_ptr<Field>>, std::vector<std::unique_ptr<Field>>>>
      spare;
  std::vector<char> failed_now;       // per slot: its kernel failed in this step
  std::vector<MemberResult> unplaced; // serially, members never built, waiting for a sink;
                                      // over ranks, what leaves this rank next (rank 0: what
                                      // waits for room in its sinks)
  MemberColumns columns;              // what every member holds
  bool mismatch = false;              // build() is throwing: a member differs from the first
  std::vector<codegen::KernelSource> sources; // per stage: the first member's batch kernel
  bool exhausted = false;                     // the sampler has given its last member
  bool ended = false;                         // the sinks have ended
  comm::Comm* comm = nullptr;                 // the ranks the members are spread over, or null
  std::int64_t departed = 0;                  // members that left this rank since the last step
  detail::StageRole role;                     // in a pipeline: which stage, fed how
  std::deque<MemberResult> inbox; // a fed stage: members from the stage before, waiting for slots

  Impl(engine::Engine& e, MemberFactory factory, Params params,
       std::unique_ptr<MemberSampler> source, std::vector<std::shared_ptr<MemberSink>> outs,
       EnsembleOptions opts, detail::StageRole stage = {});
  [[nodiscard]] Params member_params(const std::vector<double>& values) const;
  /// A member made from its values; with `from`, it goes on from that member's state and steps
  /// (one that left the stage before in a pipeline).
  std::unique_ptr<detail::EnsembleMember> build(std::int64_t id, std::vector<double> values,
                                                const MemberResult* from = nullptr);
  void allocate_fed();
  void load_kernels(const Node& node);
  void choose_batch(const detail::EnsembleMember& first);
  void begin_sinks(const detail::EnsembleMember& first);
  void allocate();
  void leave_unbuilt(MemberResult result);
  void leave();
  void end_sinks();
  template <class Body> void collectively(Body&& body) const {
    if (comm != nullptr) {
      comm::together(*comm, body);
    } else {
      body();
    }
  }
  [[nodiscard]] bool lead() const { return comm == nullptr || comm->rank() == 0; }
  void retire(std::unique_ptr<detail::EnsembleMember> member);
  void write_vtk(const detail::EnsembleMember& member) const;
  std::vector<Field*> reuse_fields(detail::NodeState& s);
  void call_stage(std::span<const std::size_t> group, std::size_t stage, Calls& c,
                  std::size_t parts);
  std::int64_t advance(std::span<const std::size_t> group, std::int64_t steps, Calls& c,
                       std::size_t parts);
  std::int64_t advance_all(std::int64_t steps);
  std::int64_t advance_on_device(std::span<const std::size_t> stepping, std::int64_t steps);
  /// The state of every member stepping on the device, back in its host buffers.
  void pull_stepping() const;
  void judge(detail::EnsembleMember& m) const;
  [[nodiscard]] MemberResult result_of(const detail::EnsembleMember& m, bool with_fields) const;
  bool place(MemberResult& result);
  // ensemble_checkpoint.cpp
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> identity() const;
  /// identity() as a checkpoint holds it, and its check against what a checkpoint holds
  /// (Error(usage) naming each difference; `what` names the file).
  void put_identity(ByteWriter& out) const;
  void check_identity(const std::string& what, ByteReader& in) const;
  void save(const std::filesystem::path& path) const;
  [[nodiscard]] std::string batch_bytes() const;
  void restore(const std::filesystem::path& path);
  void restore_from(const std::filesystem::path& path, const std::string& bytes);
  void restore_batch(const std::string& what, std::int64_t drawn, bool was_exhausted,
                     const std::string& bytes);
  mutable std::uint64_t checkpoints = 0; // the generation of the last checkpoint written or resumed
  bool step(std::int64_t steps);
  [[nodiscard]] std::int64_t waiting_count() const;
};

} // namespace uwjit::runtime
