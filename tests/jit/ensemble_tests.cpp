// Ensembles: members stepped as one batch equal the same nodes run alone, bit for bit, whatever
// the batch size and thread count; stop rules, refill, sinks and back-pressure; bad input. These
// tests really JIT.
#include "sandbox.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/ensemble.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

using uwjit::Error;
using uwjit::engine::Engine;
using uwjit::runtime::Ensemble;
using uwjit::runtime::EnsembleOptions;
using uwjit::runtime::FileSink;
using uwjit::runtime::GridSampler;
using uwjit::runtime::ListSampler;
using uwjit::runtime::MemberResult;
using uwjit::runtime::MemberStatus;
using uwjit::runtime::MemorySink;
using uwjit::runtime::ParamRange;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;
using uwjit::runtime::StopRule;

namespace {

Engine& engine() {
  static Engine e({.disk_cache = uwjit::engine::DiskCache::off});
  return e;
}

uwjit::runtime::MemberFactory factory(const std::string& type) {
  return [type](const Params& params) { return uwjit::nodes::make(type, type, params); };
}

struct Outcome {
  std::vector<MemberResult> members; // by id
  std::int64_t batch = 0;
  std::vector<std::string> keys;
};

// Runs an ensemble to its end with a memory sink large enough for every member.
Outcome run_all(const std::string& type, const Params& base,
                std::unique_ptr<uwjit::runtime::MemberSampler> sampler, EnsembleOptions options) {
  auto sink = std::make_shared<MemorySink>(100000);
  Ensemble ensemble(engine(), factory(type), base, std::move(sampler), {sink}, options);
  ensemble.run();
  Outcome out;
  out.members = sink->take();
  std::sort(out.members.begin(), out.members.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  out.batch = ensemble.batch_size();
  for (const auto& report : ensemble.kernel_reports()) {
    out.keys.push_back(report.info.key);
  }
  CHECK(ensemble.finished() == static_cast<std::int64_t>(out.members.size()));
  CHECK(ensemble.active() == 0);
  return out;
}

// The member's node run alone as a serial Simulation of one thread, for `steps` steps.
void check_alone(const std::string& type, const Params& base, const std::vector<std::string>& names,
                 const MemberResult& member) {
  Params params = base;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (params.at(names[i]).is_int()) {
      params.set(names[i], static_cast<std::int64_t>(member.values[i]));
    } else {
      params.set(names[i], member.values[i]);
    }
  }
  Simulation alone(engine(), {uwjit::nodes::make(type, type, params)}, {.threads = 1});
  alone.step(member.steps);
  const auto integrals = alone.integrals(0);
  REQUIRE(integrals.size() == member.integrals.size());
  CAPTURE(member.id);
  CHECK(std::memcmp(integrals.data(), member.integrals.data(), integrals.size_bytes()) == 0);
  for (const auto& field : member.fields) {
    const auto& own = alone.field(type, field.name);
    std::vector<std::byte> bytes(field.data.size());
    own.copy_interior_to(bytes);
    CAPTURE(field.name);
    CHECK(bytes == field.data);
  }
}

StopRule steps(std::int64_t n) {
  return StopRule::parse({"steps:" + std::to_string(n)});
}

} // namespace

TEST_CASE("heat members batched equal each member run alone, for any batch and thread count") {
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{10, 8, 6});
  std::vector<ParamRange> ranges = {ParamRange::parse("contrast=1:4:4"),
                                    ParamRange::parse("kappa=0.5:1:2")};
  std::map<std::int64_t, std::vector<MemberResult>> by_batch;
  std::set<std::string> keys;
  for (const auto& [batch, threads] :
       std::vector<std::pair<std::int64_t, int>>{{8, 1}, {3, 2}, {1, 1}, {5, 2}}) {
    auto out = run_all("heat", base, std::make_unique<GridSampler>(ranges),
                       {.until = steps(7), .batch = batch, .threads = threads});
    CHECK(out.batch == batch);
    REQUIRE(out.members.size() == 8);
    keys.insert(out.keys.begin(), out.keys.end());
    by_batch[batch] = std::move(out.members);
  }
  // One kernel for every batch size and every member.
  CHECK(keys.size() == 1);
  for (const auto& member : by_batch[3]) {
    CHECK(member.steps == 7);
    CHECK(member.status == MemberStatus::step_cap);
    check_alone("heat", base, {"contrast", "kappa"}, member);
  }
  for (std::size_t i = 0; i < 8; ++i) {
    for (const auto batch : {1, 5, 8}) {
      CHECK(by_batch[batch][i].integrals == by_batch[3][i].integrals);
      CHECK(by_batch[batch][i].fields[0].data == by_batch[3][i].fields[0].data);
    }
  }
}

TEST_CASE("members of several slabs sum their integrals as a Simulation does, slab by slab") {
  // 48 x 40 x 30 cells: the executor cuts such a box into three slabs, whose partial sums a
  // Simulation adds in slab order; a member's integrals must be those bits.
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{48, 40, 30});
  for (const int threads : {1, 2}) {
    auto out = run_all(
        "heat", base,
        std::make_unique<GridSampler>(std::vector<ParamRange>{ParamRange::parse("contrast=1:5:3")}),
        {.until = steps(3), .batch = 2, .threads = threads});
    REQUIRE(out.members.size() == 3);
    for (const auto& member : out.members) {
      check_alone("heat", base, {"contrast"}, member);
    }
  }
}

TEST_CASE("pipe-flow members batched equal each member run alone") {
  Params base = uwjit::nodes::sized_params("pipe-flow", std::vector<std::int64_t>{12, 10, 10});
  auto out =
      run_all("pipe-flow", base,
              std::make_unique<ListSampler>(std::vector<std::string>{"tau", "u_max"},
                                            std::vector<std::vector<double>>{
                                                {0.6, 0.05}, {0.8, 0.02}, {1.1, 0.05}, {0.7, 0.1}}),
              {.until = steps(5), .batch = 3, .threads = 2});
  REQUIRE(out.members.size() == 4);
  for (const auto& member : out.members) {
    check_alone("pipe-flow", base, {"tau", "u_max"}, member);
  }
}

TEST_CASE("members stop by their own rule, leave once each, and their slots refill") {
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{8});
  // A fixed-wall bar relaxes to its linear profile; its total heat stops changing at a pace
  // set by the Courant number (dt kappa), so members converge after different numbers of steps.
  base.set("boundary", "fixed");
  EnsembleOptions options{
      .until = StopRule::parse({"change:heat<1e-6", "steps:4000"}), .batch = 3, .threads = 2};
  auto out = run_all("heat", base,
                     std::make_unique<GridSampler>(
                         std::vector<ParamRange>{ParamRange::parse("courant=0.02:0.14:7")}),
                     options);
  REQUIRE(out.members.size() == 7);
  std::set<std::int64_t> step_counts;
  for (std::size_t i = 0; i < out.members.size(); ++i) {
    const auto& member = out.members[i];
    CHECK(member.id == static_cast<std::int64_t>(i));
    CHECK(member.status == MemberStatus::converged);
    CHECK(member.reason.find("change of heat") != std::string::npos);
    CHECK(member.steps < 4000);
    step_counts.insert(member.steps);
    check_alone("heat", base, {"courant"}, member);
  }
  CHECK(step_counts.size() > 3);
}

TEST_CASE("a full memory sink holds members back until the host takes them") {
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6});
  auto sampler = [](int members) {
    return std::make_unique<GridSampler>(
        std::vector<ParamRange>{ParamRange::parse("contrast=1:2:" + std::to_string(members))});
  };
  std::set<std::int64_t> ids;
  auto take = [&](MemorySink& sink) {
    for (const auto& m : sink.take()) {
      CHECK(ids.insert(m.id).second);
      CHECK(m.steps == 3);
    }
  };
  SUBCASE("a member that waits is not stepped, and nothing can make room: an error") {
    auto sink = std::make_shared<MemorySink>(2);
    Ensemble ensemble(engine(), factory("heat"), base, sampler(3), {sink},
                      {.until = steps(3), .batch = 3, .threads = 1});
    for (int s = 0; s < 3; ++s) {
      REQUIRE(ensemble.step());
    }
    // Three stopped; two fit; one waits in the batch; the sampler is exhausted.
    CHECK(sink->held() == 2);
    CHECK(ensemble.waiting() == 1);
    CHECK(ensemble.member_steps() == 9);
    CHECK_THROWS_WITH_AS(ensemble.step(), doctest::Contains("every sink is full"), Error);
    CHECK(ensemble.member_steps() == 9);
    take(*sink);
    CHECK_FALSE(ensemble.step());
    take(*sink);
    CHECK(ids == std::set<std::int64_t>{0, 1, 2});
  }
  SUBCASE("refilled slots go on while a member waits; every member leaves once") {
    auto sink = std::make_shared<MemorySink>(2);
    Ensemble ensemble(engine(), factory("heat"), base, sampler(7), {sink},
                      {.until = steps(3), .batch = 3, .threads = 2});
    while (true) {
      if (sink->full()) {
        take(*sink);
      }
      if (!ensemble.step()) {
        break;
      }
    }
    take(*sink);
    CHECK(ids.size() == 7);
    CHECK(ensemble.finished() == 7);
    CHECK(ensemble.member_steps() == 21);
  }
}

TEST_CASE("bad ensemble input is one clear error") {
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6});
  auto make = [&](std::vector<ParamRange> ranges, std::vector<std::string> rules) {
    Ensemble e(engine(), factory("heat"), base, std::make_unique<GridSampler>(std::move(ranges)),
               {std::make_shared<MemorySink>(10)}, {.until = StopRule::parse(rules), .batch = 2});
  };
  CHECK_THROWS_WITH_AS(make({ParamRange::parse("kapa=1:2:2")}, {"steps:2"}),
                       doctest::Contains("unknown param \"kapa\" to vary (did you mean kappa?)"),
                       Error);
  CHECK_THROWS_WITH_AS(make({ParamRange::parse("kappa=1:2:2")}, {"change:energy<1e-9", "steps:2"}),
                       doctest::Contains("heat has no integral \"energy\""), Error);
  CHECK_THROWS_WITH_AS(make({ParamRange::parse("nx=6:8:2")}, {"steps:2"}),
                       doctest::Contains("never the layout"), Error);
  CHECK_THROWS_WITH_AS(StopRule::parse({"change:heat<1e-9"}), doctest::Contains("no step cap"),
                       Error);
  CHECK_THROWS_WITH_AS(StopRule::parse({"stepz:3"}), doctest::Contains("unknown rule \"stepz\""),
                       Error);
  CHECK_THROWS_WITH_AS(make({ParamRange::parse("kappa=1:2:2")}, {"below:resid<1e-9", "steps:2"}),
                       doctest::Contains("stop rule \"below:resid<1e-09\": heat has no integral"),
                       Error);
  CHECK_THROWS_WITH_AS(StopRule::parse({"below:heat<0", "steps:2"}),
                       doctest::Contains("not a number > 0"), Error);
  // A rule reads back as it was written, each kind in its place.
  CHECK(StopRule::parse({"below:heat<1e-06,change:heat<0.5", "every:3", "steps:9"}).text() ==
        "below:heat<1e-06,change:heat<0.5,steps:9,every:3");
  CHECK_THROWS_WITH_AS((void)ParamRange::parse("kappa=1:2:0"), doctest::Contains("an empty range"),
                       Error);
  CHECK_THROWS_WITH_AS((void)ParamRange::parse("kappa=2:1:3"), doctest::Contains("above HIGH"),
                       Error);
  // A grid of more members than a count holds is refused, never wrapped round to a few; one of
  // 10^9 values a range costs no memory, and its values are those values() lists.
  CHECK_THROWS_WITH_AS(GridSampler({ParamRange::parse("kappa=1:2:10000000"),
                                    ParamRange::parse("contrast=1:2:10000000"),
                                    ParamRange::parse("amplitude=0:1:10000000")}),
                       doctest::Contains("10000000 x 10000000 x 10000000 members (kappa x "
                                         "contrast x amplitude) are more than"),
                       Error);
  GridSampler huge({ParamRange::parse("kappa=1:2:1000000000"), ParamRange::parse("mode=1:3:3")});
  CHECK(huge.size() == 3000000000);
  CHECK(huge.next() == std::vector<double>{1.0, 1.0});
  CHECK(huge.next() == std::vector<double>{1.0, 2.0});
  const ParamRange thirds = ParamRange::parse("kappa=0:1:4");
  for (std::int64_t i = 0; i < thirds.count; ++i) {
    CHECK(thirds.value(i) == thirds.values()[static_cast<std::size_t>(i)]);
  }
  CHECK(thirds.value(3) == 1.0);
}

TEST_CASE("a member whose params the node refuses leaves as failed; the others run") {
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6});
  auto out =
      run_all("heat", base,
              std::make_unique<ListSampler>(std::vector<std::string>{"kappa"},
                                            std::vector<std::vector<double>>{{1.0}, {-1.0}, {0.5}}),
              {.until = steps(2), .batch = 2, .threads = 1});
  REQUIRE(out.members.size() == 3);
  CHECK(out.members[0].status == MemberStatus::step_cap);
  CHECK(out.members[1].status == MemberStatus::failed);
  CHECK(out.members[1].reason.find("kappa") != std::string::npos);
  CHECK(out.members[1].steps == 0);
  CHECK(out.members[2].status == MemberStatus::step_cap);
}

TEST_CASE("the batch from memory is at most the sampler's members, and says why") {
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6});
  Ensemble e(
      engine(), factory("heat"), base,
      std::make_unique<GridSampler>(std::vector<ParamRange>{ParamRange::parse("kappa=1:2:6")}),
      {std::make_shared<MemorySink>(10)}, {.until = steps(1)});
  CHECK(e.batch_size() == 6);
  CHECK(e.batch_reason().find("the sampler's members") != std::string::npos);
  // 6^3 cells with halos, two buffers, and the conductivity array and its padded copy.
  CHECK(e.member_bytes() > 2 * 216 * 8);
  CHECK_THROWS_WITH_AS(
      Ensemble(
          engine(), factory("heat"), base,
          std::make_unique<GridSampler>(std::vector<ParamRange>{ParamRange::parse("kappa=1:2:6")}),
          {std::make_shared<MemorySink>(10)},
          {.until = steps(1), .batch = 1'000'000'000'000, .memory_fraction = 0.5}),
      doctest::Contains("a batch of at most"), Error);
}

TEST_CASE("the default batch is two cache-sized groups a thread, one large member a thread, and "
          "a resume grows it to fit") {
  uwjit_test::TempDir dir;
  auto sampler = [] {
    return std::make_unique<GridSampler>(
        std::vector<ParamRange>{ParamRange::parse("kappa=1:2:4000")});
  };
  // Members of about 302 kB (heat 16³): a thread's cache (its level-2 cache, or its share of the
  // last-level cache) holds a few of them, far fewer than the sampler's. Members of about 100 MB
  // (heat 160³) fit no thread's cache: each thread steps one, so that two never take turns in it.
  const Params small = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{16});
  const Params large = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{160});
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    const std::string count = std::to_string(threads) + " thread";
    Ensemble e(engine(), factory("heat"), small, sampler(), {std::make_shared<MemorySink>(10)},
               {.until = steps(1), .threads = threads});
    CHECK(e.batch_size() < 4000);
    CHECK(e.batch_size() % (2 * threads) == 0);
    CHECK(e.batch_reason().find("two groups a thread for " + count) != std::string::npos);
    CHECK(e.batch_reason().find("fits") != std::string::npos); // memory's figure too
    Ensemble big(engine(), factory("heat"), large, sampler(), {std::make_shared<MemorySink>(10)},
                 {.until = steps(1), .threads = threads});
    CHECK(big.batch_size() == threads);
    CHECK(big.batch_reason().find("one member a thread for " + count) != std::string::npos);
    CHECK(big.batch_reason().find("larger than a thread's ") != std::string::npos);
    // The cache named is the thread's level-2 cache where sysfs lists one, else its share of
    // the last-level cache.
    CHECK((big.batch_reason().find("level-2 cache") != std::string::npos ||
           big.batch_reason().find("last-level cache") != std::string::npos));
  }
  // Members of about 7.4 MB (heat 48³), for the resume below.
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{48});
  // A checkpoint of a larger batch than this machine's default: resumed with the default, the
  // batch grows to hold every member it held.
  const EnsembleOptions defaults{.until = steps(3), .threads = 1};
  const std::int64_t chosen = Ensemble(engine(), factory("heat"), base, sampler(),
                                       {std::make_shared<MemorySink>(10)}, defaults)
                                  .batch_size();
  auto larger = defaults;
  larger.batch = chosen + 3;
  const auto checkpoint = dir.path() / "larger.ckpt";
  {
    Ensemble first(engine(), factory("heat"), base, sampler(),
                   {std::make_shared<MemorySink>(100000)}, larger);
    REQUIRE(first.active() == chosen + 3);
    first.checkpoint(checkpoint);
  }
  auto resumed = defaults;
  resumed.resume = checkpoint;
  Ensemble again(engine(), factory("heat"), base, sampler(), {std::make_shared<MemorySink>(100000)},
                 resumed);
  CHECK(again.batch_size() == chosen + 3);
  CHECK(again.active() == chosen + 3);
  CHECK(again.batch_reason().find("the batch the checkpoint held") != std::string::npos);
}

TEST_CASE("a checkpointed ensemble resumes bit for bit, and its file holds each member once") {
  uwjit_test::TempDir dir;
  Params base = uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6});
  base.set("boundary", "fixed");
  auto sampler = [] {
    return std::make_unique<GridSampler>(
        std::vector<ParamRange>{ParamRange::parse("courant=0.03:0.15:7")});
  };
  const EnsembleOptions options{
      .until = StopRule::parse({"change:heat<1e-8", "steps:20000"}), .batch = 3, .threads = 2};
  const auto reference = run_all("heat", base, sampler(), options);
  REQUIRE(reference.members.size() == 7);

  const auto checkpoint = dir.path() / "sweep.ckpt";
  const auto file = dir.path() / "sweep.h5";
  {
    Ensemble first(engine(), factory("heat"), base, sampler(), {std::make_shared<FileSink>(file)},
                   options);
    for (int round = 0; round < 60; ++round) {
      REQUIRE(first.advance(16));
    }
    first.checkpoint(checkpoint);
    REQUIRE(first.finished() >= 1);
    REQUIRE(first.finished() < 7);
    // Members that leave after the checkpoint are in the file when the process "dies".
    (void)first.advance(300);
  }
  auto resumed_options = options;
  resumed_options.resume = checkpoint;
  SUBCASE("the members after the checkpoint equal the uninterrupted run's") {
    auto sink = std::make_shared<MemorySink>(100);
    Ensemble resumed(engine(), factory("heat"), base, sampler(), {sink}, resumed_options);
    resumed.run();
    std::set<std::int64_t> ids;
    for (const auto& m : resumed.summaries()) {
      CHECK(ids.insert(m.id).second);
      CHECK(m.steps == reference.members[static_cast<std::size_t>(m.id)].steps);
      CHECK(m.integrals == reference.members[static_cast<std::size_t>(m.id)].integrals);
    }
    CHECK(ids.size() == 7);
    for (const auto& m : sink->take()) {
      CHECK(m.fields[0].data == reference.members[static_cast<std::size_t>(m.id)].fields[0].data);
    }
  }
  SUBCASE("a file sink appends only the members it does not hold") {
    auto sink = std::make_shared<FileSink>(file, -1, FileSink::Open::append);
    Ensemble resumed(engine(), factory("heat"), base, sampler(), {sink}, resumed_options);
    resumed.run();
    CHECK(sink->count() == 7);
    CHECK(resumed.finished() == 7);
  }
  SUBCASE("a checkpoint cut short or with a changed byte is refused, never resumed from") {
    const std::string whole = uwjit_test::read_text(checkpoint);
    const auto bad = dir.path() / "bad.ckpt";
    auto refused = [&](const std::string& bytes) {
      uwjit_test::write_text(bad, bytes);
      auto bad_options = options;
      bad_options.resume = bad;
      CHECK_THROWS_WITH_AS(Ensemble(engine(), factory("heat"), base, sampler(),
                                    {std::make_shared<MemorySink>(10)}, bad_options),
                           doctest::Contains("truncated or corrupt (checksum mismatch)"), Error);
    };
    // A bit of a member's state (near the end), one of the facts a resume must share (near the
    // start), and the file without its last byte.
    for (const std::size_t at : {whole.size() - 100, std::size_t{40}}) {
      std::string flipped = whole;
      flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
      CAPTURE(at);
      refused(flipped);
    }
    refused(whole.substr(0, whole.size() - 1));
  }
  SUBCASE("a checkpoint of format version 2, before the seal, still resumes bit for bit") {
    std::string old = uwjit_test::read_text(checkpoint);
    old.resize(old.size() - 64); // version 3 = version 2 and its seal
    old[8] = 2;
    const auto path = dir.path() / "v2.ckpt";
    uwjit_test::write_text(path, old);
    auto old_options = options;
    old_options.resume = path;
    Ensemble resumed(engine(), factory("heat"), base, sampler(),
                     {std::make_shared<MemorySink>(100)}, old_options);
    resumed.run();
    CHECK(resumed.finished() == 7);
    for (const auto& m : resumed.summaries()) {
      CHECK(m.integrals == reference.members[static_cast<std::size_t>(m.id)].integrals);
    }
  }
  SUBCASE("an unsealed checkpoint (version 2) with a member's counts changed is refused") {
    std::string old = uwjit_test::read_text(checkpoint);
    old.resize(old.size() - 64);
    old[8] = 2;
    // Each member's id (0 to 6), its count of varied values (1) and its courant, as the file
    // holds them.
    std::vector<std::size_t> counts;
    for (char id = 0; id < 7; ++id) {
      const std::string head =
          std::string(1, id) + std::string(7, '\0') + '\1' + std::string(7, '\0');
      for (auto at = old.find(head); at != std::string::npos; at = old.find(head, at + 1)) {
        double courant = 0;
        if (at + 24 <= old.size()) {
          std::memcpy(&courant, old.data() + at + 16, 8);
        }
        if (courant >= 0.03 && courant <= 0.15) {
          counts.push_back(at + 8);
        }
      }
    }
    REQUIRE(counts.size() >= 3);
    const auto bad = dir.path() / "bad-v2.ckpt";
    for (const std::size_t at : counts) {
      for (const char value : {'\0', '\2', '\x7f'}) {
        std::string changed = old;
        changed[at] = value;
        if (value == '\x7f') {
          changed[at + 7] = value; // a count of about 2^63: never allocated
        }
        uwjit_test::write_text(bad, changed);
        auto bad_options = options;
        bad_options.resume = bad;
        CAPTURE(at);
        CAPTURE(static_cast<int>(value));
        CHECK_THROWS_WITH_AS(Ensemble(engine(), factory("heat"), base, sampler(),
                                      {std::make_shared<MemorySink>(10)}, bad_options),
                             doctest::Contains("ensemble checkpoint"), Error);
      }
    }
  }
  SUBCASE("a resume whose sampler gives other members is refused, naming one") {
    for (const char* range : {"courant=0.03:0.3:7", "courant=0.03:0.15:9"}) {
      auto other = std::make_unique<GridSampler>(std::vector<ParamRange>{ParamRange::parse(range)});
      CAPTURE(range);
      CHECK_THROWS_WITH_AS(Ensemble(engine(), factory("heat"), base, std::move(other),
                                    {std::make_shared<MemorySink>(10)}, resumed_options),
                           doctest::Contains("this ensemble's sampler gives courant="), Error);
    }
  }
  SUBCASE("another ensemble's checkpoint is refused, naming the difference") {
    auto other = resumed_options;
    other.until = StopRule::parse({"change:heat<1e-9", "steps:20000"});
    CHECK_THROWS_WITH_AS(Ensemble(engine(), factory("heat"), base, sampler(),
                                  {std::make_shared<MemorySink>(10)}, other),
                         doctest::Contains("stop rule is change:heat<1e-09,steps:20000 here"),
                         Error);
  }
}
