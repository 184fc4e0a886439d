// Pipelines under mpiexec, one stage per rank, in each mode: every member leaves the last stage
// exactly once, bit for bit the member run alone through its stages (a Simulation per stage, each
// started from the state the one before left); no stage waits forever when no member converges
// for many steps or every member stops at once; a member that fails passes to the sinks; an
// error on one rank is the same error on every rank; bad input is refused alike everywhere.
#include "harness.hpp"
#include "job.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/builtin.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/pipeline.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using uwjit::engine::Engine;
using uwjit::runtime::GridSampler;
using uwjit::runtime::MemberResult;
using uwjit::runtime::MemberStatus;
using uwjit::runtime::MemorySink;
using uwjit::runtime::ParamRange;
using uwjit::runtime::Params;
using uwjit::runtime::Pipeline;
using uwjit::runtime::PipelineMode;
using uwjit::runtime::PipelineOptions;
using uwjit::runtime::PipelineStage;
using uwjit::runtime::Simulation;
using uwjit::runtime::StopRule;

namespace {

using uwjit_test::comm;

Engine& engine() {
  static Engine e({.disk_cache = uwjit::engine::DiskCache::off});
  return e;
}

const std::vector<PipelineMode> k_modes = {PipelineMode::sync, PipelineMode::async_recv,
                                           PipelineMode::fully_async};

Params heat_base() {
  return uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{8, 6, 5});
}

uwjit::runtime::MemberFactory heat_factory() {
  return [](const Params& params) { return uwjit::nodes::make("heat", "heat", params); };
}

// Stage k of np: its own courant number and stop rule.
std::vector<PipelineStage> stages(const std::vector<std::string>& rules) {
  std::vector<PipelineStage> out;
  for (int k = 0; k < comm()->size(); ++k) {
    PipelineStage stage;
    stage.params.set("courant", 0.05 + 0.02 * k);
    stage.until = StopRule::parse({rules[static_cast<std::size_t>(k) % rules.size()]});
    out.push_back(std::move(stage));
  }
  return out;
}

struct Outcome {
  std::vector<MemberResult> members; // on the last rank, by id
  std::int64_t finished = 0;
  std::int64_t member_steps = 0;
};

Outcome run_pipeline(PipelineOptions options, std::int64_t members, std::int64_t capacity) {
  auto sink = std::make_shared<MemorySink>(capacity);
  options.comm = comm().get();
  const auto count = std::to_string(members);
  Pipeline pipeline(engine(), heat_factory(), heat_base(),
                    std::make_unique<GridSampler>(
                        std::vector<ParamRange>{ParamRange::parse("contrast=1:3:" + count)}),
                    {sink}, options);
  pipeline.run();
  Outcome out;
  out.members = sink->take();
  std::sort(out.members.begin(), out.members.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  out.finished = pipeline.finished();
  out.member_steps = pipeline.member_steps();
  return out;
}

// The rule's verdict after `taken` steps in a stage, as StopRule says (change rules on "heat").
bool stops(const StopRule& rule, std::int64_t taken, double now, double before) {
  if (taken >= rule.max_steps) {
    return true;
  }
  if (taken % rule.every != 0 || rule.changes.empty() || taken < 2) {
    return false;
  }
  const double change = now == before ? 0.0 : std::abs(now - before) / std::abs(now);
  return change < rule.changes.front().tolerance;
}

// A node that is `inner` in all but its initial state: `fields`, a member's state where it left
// the stage before.
class Continued final : public uwjit::runtime::Node {
public:
  Continued(std::shared_ptr<const Node> inner, std::vector<uwjit::runtime::MemberField> fields)
      : Node(inner->type(), inner->name(), inner->params()), m_inner(std::move(inner)),
        m_fields(std::move(fields)) {}
  uwjit::runtime::NodeLayout layout() const override { return m_inner->layout(); }
  void initial_state(uwjit::runtime::State& state) const override {
    for (const auto& field : m_fields) {
      state[field.name].copy_interior_from(field.data);
    }
  }
  void emit_update(uwjit::codegen::KernelWriter& w) const override { m_inner->emit_update(w); }
  uwjit::runtime::StaticData build_static_data() const override { return m_inner->static_data(); }

private:
  std::shared_ptr<const Node> m_inner;
  std::vector<uwjit::runtime::MemberField> m_fields;
};

// The member run alone: a serial Simulation of stage 0's node, stepped until stage 0's rule
// stops it; then one of stage 1's node started from that state, and so on; compared bit for bit.
void check_alone(const MemberResult& member, const std::vector<PipelineStage>& all) {
  auto node_of = [&](std::size_t k) {
    Params params = heat_base();
    for (const auto& [name, value] : all[k].params.values()) {
      params.set(name, value);
    }
    params.set("contrast", member.values[0]);
    return uwjit::nodes::make("heat", "heat", params);
  };
  std::vector<uwjit::runtime::MemberField> state;
  std::vector<double> integrals;
  std::int64_t steps = 0;
  for (std::size_t k = 0; k < all.size(); ++k) {
    std::shared_ptr<const uwjit::runtime::Node> node = node_of(k);
    if (k > 0) {
      node = std::make_shared<Continued>(node, state);
    }
    Simulation alone(engine(), {node}, {.threads = 1});
    double before = 0;
    for (std::int64_t taken = 1;; ++taken) {
      alone.step(1);
      const double now = alone.integrals(0)[0];
      if (stops(all[k].until, taken, now, before)) {
        break;
      }
      before = now;
    }
    steps += alone.steps_taken();
    const auto last = alone.integrals(0);
    integrals.assign(last.begin(), last.end());
    state = member.fields; // the names, dtypes and shapes; the data is the stage's
    for (auto& field : state) {
      alone.field("heat", field.name).copy_interior_to(field.data);
    }
  }
  MPI_CHECK(steps == member.steps);
  MPI_CHECK(integrals.size() == member.integrals.size() &&
            std::memcmp(integrals.data(), member.integrals.data(),
                        integrals.size() * sizeof(double)) == 0);
  for (std::size_t i = 0; i < state.size(); ++i) {
    MPI_CHECK(state[i].data == member.fields[i].data);
  }
}

bool last_rank() {
  return comm()->rank() + 1 == comm()->size();
}

} // namespace

MPI_TEST_CASE(
    "in every mode each member leaves once, bit for bit as run alone through its stages") {
  // Back-pressure: batches of 3, at most 2 members sent a round; stages alternate between a step
  // cap and a change rule that most members meet before their cap.
  const auto all = stages({"steps:5", "change:heat<1e-14,every:2,steps:40", "steps:3"});
  for (const auto mode : k_modes) {
    const Outcome out =
        run_pipeline({.stages = all, .mode = mode, .buffer = 2, .batch = 3, .threads = 1}, 7, 100);
    MPI_CHECK(out.finished == 7);
    if (last_rank()) {
      MPI_CHECK(out.members.size() == 7);
      for (std::size_t i = 0; i < out.members.size(); ++i) {
        MPI_CHECK(out.members[i].id == static_cast<std::int64_t>(i));
        try { // this rank alone: an exception must not leave the case early
          check_alone(out.members[i], all);
        } catch (const std::exception& error) {
          MPI_CHECK(error.what() == std::string("nothing"));
        }
      }
    } else {
      MPI_CHECK(out.members.empty());
    }
  }
}

MPI_TEST_CASE("no stage waits forever when no member converges for many steps") {
  // Fixed walls: heat flows in and out, so its integral changes at every step.
  auto all = stages({"change:heat<1e-300,steps:120"});
  for (auto& stage : all) {
    stage.params.set("boundary", std::string("fixed"));
  }
  for (const auto mode : k_modes) {
    const Outcome out =
        run_pipeline({.stages = all, .mode = mode, .buffer = 1, .batch = 2, .threads = 1}, 5, 100);
    MPI_CHECK(out.finished == 5);
    MPI_CHECK(out.member_steps == 5 * 120 * comm()->size());
    for (const auto& member : out.members) {
      MPI_CHECK(member.status == MemberStatus::step_cap);
      MPI_CHECK(member.steps == 120 * comm()->size());
    }
  }
}

MPI_TEST_CASE("every member stopping at once passes through a buffer of one") {
  for (const auto mode : k_modes) {
    const Outcome out = run_pipeline(
        {.stages = stages({"steps:1"}), .mode = mode, .buffer = 1, .batch = 8, .threads = 1}, 16,
        100);
    MPI_CHECK(out.finished == 16);
    if (last_rank()) {
      MPI_CHECK(out.members.size() == 16);
      for (std::size_t i = 0; i < out.members.size(); ++i) {
        MPI_CHECK(out.members[i].id == static_cast<std::int64_t>(i));
        MPI_CHECK(out.members[i].steps == comm()->size());
      }
    }
  }
}

MPI_TEST_CASE("a member the first stage cannot build passes to the sinks as failed") {
  // contrast 0 is outside heat's range: member 1 fails where it is built (the first member is
  // the template, which must build), the others run.
  auto sink = std::make_shared<MemorySink>(100);
  Pipeline pipeline(
      engine(), heat_factory(), heat_base(),
      std::make_unique<uwjit::runtime::ListSampler>(
          std::vector<std::string>{"contrast"},
          std::vector<std::vector<double>>{{1.0}, {0.0}, {2.0}}),
      {sink},
      {.stages = stages({"steps:2"}), .buffer = 1, .batch = 2, .threads = 1, .comm = comm().get()});
  pipeline.run();
  MPI_CHECK(pipeline.finished() == 3);
  auto members = sink->take();
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  if (last_rank()) {
    MPI_CHECK(members.size() == 3);
    MPI_CHECK(members.size() == 3 && members[1].status == MemberStatus::failed &&
              members[1].reason.find("not built") != std::string::npos && members[1].steps == 0);
    MPI_CHECK(members.size() == 3 && members[2].status == MemberStatus::step_cap &&
              members[2].steps == 2 * comm()->size());
  }
}

MPI_TEST_CASE("a pipeline checkpointed mid-run and resumed gives every member as uninterrupted") {
  const auto dir = uwjit_test::job_sandbox("uwjit-pipeline-ckpt");
  const auto all = stages({"steps:20", "change:heat<1e-14,every:2,steps:40", "steps:30"});
  auto make = [&](std::shared_ptr<MemorySink> sink, PipelineMode mode,
                  std::filesystem::path resume) {
    return std::make_unique<Pipeline>(
        engine(), heat_factory(), heat_base(),
        std::make_unique<GridSampler>(std::vector<ParamRange>{ParamRange::parse("contrast=1:3:9")}),
        std::vector<std::shared_ptr<uwjit::runtime::MemberSink>>{sink},
        PipelineOptions{.stages = all,
                        .mode = mode,
                        .buffer = 2,
                        .batch = 3,
                        .threads = 1,
                        .comm = comm().get(),
                        .resume = std::move(resume)});
  };
  auto by_id = [](std::vector<MemberResult> members) {
    std::sort(members.begin(), members.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    return members;
  };
  for (const auto mode : k_modes) {
    auto whole_sink = std::make_shared<MemorySink>(100);
    make(whole_sink, mode, {})->run();
    const auto whole = by_id(whole_sink->take());
    // Stopped after 3 rounds (members in every stage and in flight), checkpointed, and a round
    // more that the checkpoint does not hold; the members the sink took by the checkpoint are
    // the host's, the resumed run gives the others.
    const auto file = dir / ("p-" + std::string(to_string(mode)) + ".ckpt");
    std::vector<MemberResult> out;
    {
      auto sink = std::make_shared<MemorySink>(100);
      auto stopped = make(sink, mode, {});
      for (int round = 0; round < 3; ++round) {
        (void)stopped->advance(uwjit::runtime::Ensemble::round_steps);
      }
      stopped->checkpoint(file);
      out = sink->take();
      (void)stopped->advance(uwjit::runtime::Ensemble::round_steps);
    }
    auto sink = std::make_shared<MemorySink>(100);
    auto resumed = make(sink, mode, file);
    resumed->run();
    MPI_CHECK(resumed->finished() == 9);
    for (auto& m : sink->take()) {
      out.push_back(std::move(m));
    }
    if (last_rank()) {
      out = by_id(std::move(out));
      MPI_CHECK(out.size() == whole.size());
      for (std::size_t i = 0; i < out.size() && i < whole.size(); ++i) {
        MPI_CHECK(out[i].id == whole[i].id && out[i].steps == whole[i].steps &&
                  out[i].integrals == whole[i].integrals &&
                  out[i].fields[0].data == whole[i].fields[0].data);
      }
    }
  }
}

MPI_TEST_CASE("a full sink on the last rank is the same error on every rank") {
  for (const auto mode : k_modes) {
    std::string message;
    try {
      (void)run_pipeline({.stages = stages({"steps:2"}), .mode = mode, .batch = 2, .threads = 1}, 6,
                         1);
    } catch (const uwjit::Error& error) {
      message = error.what();
    }
    MPI_CHECK(message.find("every sink is full") != std::string::npos);
    MPI_CHECK(comm()->all_gather(message) == std::vector<std::string>(comm()->size(), message));
  }
}

MPI_TEST_CASE("bad pipelines are refused alike on every rank") {
  auto refused = [](PipelineOptions options) {
    std::string message;
    try {
      (void)run_pipeline(std::move(options), 3, 10);
    } catch (const uwjit::Error& error) {
      message = error.what();
    }
    MPI_CHECK(comm()->all_gather(message) == std::vector<std::string>(comm()->size(), message));
    return message;
  };
  // One stage more than ranks.
  auto more = stages({"steps:2"});
  more.push_back(more.front());
  MPI_CHECK(refused({.stages = more}).find("one stage per rank") != std::string::npos);
  // A stage setting a varied param, or one the node does not have.
  auto varied = stages({"steps:2"});
  varied.back().params.set("contrast", 2.0);
  MPI_CHECK(refused({.stages = varied}).find("which the ensemble varies") != std::string::npos);
  auto unknown = stages({"steps:2"});
  unknown.front().params.set("courrant", 0.1);
  MPI_CHECK(refused({.stages = unknown}).find("did you mean") != std::string::npos);
  if (comm()->size() > 1) {
    // A stage whose params change the layout.
    auto grown = stages({"steps:2"});
    grown.back().params.set("nx", std::int64_t{9});
    MPI_CHECK(refused({.stages = grown}).find("every stage's params must keep the layout") !=
              std::string::npos);
  }
}

int main(int argc, char** argv) {
  return uwjit_test::run_job(argc, argv);
}
