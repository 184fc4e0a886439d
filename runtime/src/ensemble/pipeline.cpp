// Pipeline: one ensemble stage per rank, linked by a send buffer (a sink whose room is set each
// round) and a receive buffer (the stage's inbox), a message a round between neighbours, and one
// all-reduce a round that agrees on what every stage holds.
#include <uwjit/runtime/pipeline.hpp>

#include "../cpu_executor.hpp"
#include "../seal.hpp"
#include "ensemble_impl.hpp"
#include "member_transfer.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <exception>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {

// The tag of a pipeline's messages (its own, apart from the halo exchange's).
constexpr int k_tag = 0x5049;
// A pipeline's checkpoint file and each stage's part of it, each ending with a seal (a checksum):
// a file cut short or corrupted is refused, never resumed from.
constexpr std::string_view k_magic = k_pipeline_checkpoint_magic;
constexpr posix::AtomicFileOptions k_replaces = {.replaces = k_magic,
                                                 .kind = "uwjit pipeline checkpoint"};
constexpr std::string_view k_part_magic = "UWJITPPT";
constexpr std::uint32_t k_version = 2; // sealed since 2; version 1 is still read
// Room for a member's reason in a message; a longer reason is cut there.
constexpr std::size_t k_reason_bytes = 4096;
// The figures each rank gives the round's all-reduce, at 5 × its rank.
enum Figure : std::size_t { busy, failed, room, member_steps, finished, figures };

// The members a stage sends to the next: taken as a sink (the ensemble's only one), at most
// `room` a round; those it has no room for wait in the batch.
class SendBuffer final : public MemberSink {
public:
  explicit SendBuffer(int next) : m_next(next) {}
  [[nodiscard]] std::string describe() const override {
    return format("the send buffer to stage {}", m_next);
  }
  void begin(const MemberColumns& /*columns*/,
             const std::vector<std::pair<std::string, std::string>>& /*attributes*/) override {}
  [[nodiscard]] bool full() const override {
    return static_cast<std::int64_t>(held.size()) >= room;
  }
  void put(MemberResult&& member) override {
    if (member.reason.size() > k_reason_bytes) {
      member.reason.resize(k_reason_bytes - 3);
      member.reason += "...";
    }
    held.push_back(std::move(member));
    ++m_count;
  }
  [[nodiscard]] std::int64_t count() const override { return m_count; }

  std::vector<MemberResult> held;
  std::int64_t room = 0;

private:
  int m_next;
  std::int64_t m_count = 0;
};

// `members` as one message: its length, then encode_members.
std::string message(const std::vector<MemberResult>& members) {
  const std::string body = encode_members(members);
  ByteWriter out;
  out.u64(body.size());
  out.raw(body.data(), body.size());
  return std::move(out.bytes());
}

} // namespace

std::string_view to_string(PipelineMode mode) noexcept {
  switch (mode) {
  case PipelineMode::sync:
    return "sync";
  case PipelineMode::async_recv:
    return "async_recv";
  case PipelineMode::fully_async:
    return "fully_async";
  }
  return "?";
}

PipelineMode parse_pipeline_mode(std::string_view text) {
  for (const auto mode :
       {PipelineMode::sync, PipelineMode::async_recv, PipelineMode::fully_async}) {
    if (text == to_string(mode)) {
      return mode;
    }
  }
  throw Error(ErrorKind::usage,
              format("pipeline mode \"{}\": expected sync, async_recv or fully_async", text));
}

struct Pipeline::Impl {
  comm::Comm* comm = nullptr;
  int stage = 0;
  int stages = 0;
  PipelineMode mode = PipelineMode::async_recv;
  std::int64_t buffer = 0;
  std::unique_ptr<Ensemble> ensemble;
  Ensemble::Impl* e = nullptr;
  std::shared_ptr<SendBuffer> out;      // null on the last stage
  std::string send_bytes;               // the message in flight to the next stage
  std::vector<std::byte> receive_bytes; // the receive buffer, allocated at the first round
  std::size_t member_bytes = 0;         // the most one member takes in a message
  std::unique_ptr<comm::Comm::Request> sending;
  std::unique_ptr<comm::Comm::Request> receiving;
  std::int64_t room_after = 0;  // the next stage's room, as of the last agreement
  std::int64_t unaccounted = 0; // members sent that its room did not count then
  std::int64_t finished = 0;
  std::int64_t member_steps = 0;
  std::int64_t rounds = 0;
  std::uint64_t generation = 0; // of the last checkpoint written or resumed
  bool done = false;

  [[nodiscard]] bool first() const { return stage == 0; }
  // The most bytes a message takes: its length, the member count, `buffer` members.
  [[nodiscard]] std::size_t message_capacity() const {
    return 16 + static_cast<std::size_t>(buffer) * member_bytes;
  }
  [[nodiscard]] bool last() const { return stage + 1 == stages; }
  void receive_into_inbox();
  void finish();
  bool advance(std::int64_t steps);
  [[nodiscard]] std::int64_t room() const;
  void agree_rooms();
  void settle();
  void save(const std::filesystem::path& path);
  void restore(const std::filesystem::path& path);
};

// This stage's free slots not yet promised to members it has received.
std::int64_t Pipeline::Impl::room() const {
  const std::int64_t free_slots = std::count_if(e->members.begin(), e->members.end(),
                                                [](const auto& m) { return m == nullptr; });
  return std::max<std::int64_t>(free_slots - std::ssize(e->inbox), 0);
}

// Collective: each stage learns the room of the stage after it, every member counted.
void Pipeline::Impl::agree_rooms() {
  std::vector<double> rooms(static_cast<std::size_t>(stages), 0.0);
  rooms[static_cast<std::size_t>(stage)] = static_cast<double>(room());
  comm->all_reduce_sum(rooms);
  if (!last()) {
    room_after = static_cast<std::int64_t>(rooms[static_cast<std::size_t>(stage) + 1]);
  }
  unaccounted = 0;
}

// The round's transfers complete, their members in the inbox: no member in flight (each rank's
// partner completes its side too, so that no rank waits for ever).
void Pipeline::Impl::settle() {
  if (receiving) {
    receiving->wait();
    receiving.reset();
    receive_into_inbox();
  }
  if (sending) {
    sending->wait();
    sending.reset();
  }
}

void Pipeline::Impl::save(const std::filesystem::path& path) {
  comm::together(*comm, [&] {
    settle();
    // Nothing is written where the file could not go (a user's file at its path).
    if (stage == 0) {
      posix::check_replaceable(path, k_replaces.replaces, k_replaces.kind);
    }
  });
  agree_rooms();
  const std::uint64_t next = generation + 1;
  ByteWriter facts;
  e->put_identity(facts);
  const auto all = gather_to_root(*comm, facts.bytes()); // rank 0 writes them
  comm::together(*comm, [&] {
    ByteWriter part;
    part.raw(k_part_magic.data(), k_part_magic.size());
    part.u64(next);
    part.u32(static_cast<std::uint32_t>(stage));
    part.i64(e->next_id);
    part.u8(e->exhausted ? 1 : 0);
    part.i64(e->left);
    part.i64(e->steps_taken);
    part.i64(e->batch_steps);
    part.str(encode_members(e->summaries));
    part.str(e->batch_bytes());
    detail::seal(part.bytes());
    posix::write_file_atomically(part_path(path, next, stage), part.bytes());
  });
  comm::together(*comm, [&] {
    if (stage != 0) {
      return;
    }
    ByteWriter out;
    out.raw(k_magic.data(), k_magic.size());
    out.u32(k_version);
    out.u32(static_cast<std::uint32_t>(stages));
    out.u64(next);
    out.i64(finished);
    out.i64(member_steps);
    out.i64(rounds);
    for (const auto& stage_facts : all) {
      out.str(stage_facts);
    }
    detail::seal(out.bytes());
    posix::write_file_atomically(path, out.bytes(), k_replaces);
  });
  generation = next;
  if (next > 1) {
    std::error_code ignored;
    std::filesystem::remove(part_path(path, next - 1, stage), ignored);
  }
}

// Collective, at construction: rank 0 reads the file, every rank gets it and reads its own part.
void Pipeline::Impl::restore(const std::filesystem::path& path) {
  const std::string what = "pipeline checkpoint " + path.string();
  std::string bytes;
  comm::together(*comm, [&] {
    if (stage == 0) {
      bytes = posix::read_input_file(
          path, {.what = what, .magic = k_magic, .not_magic = "not a pipeline checkpoint"});
    }
  });
  bytes = comm->broadcast(std::move(bytes), 0);
  comm::together(*comm, [&] {
    bool sealed = false;
    ByteReader in(detail::versioned_body(bytes, k_magic.size(), k_version, what, sealed), what);
    if (const std::uint32_t saved = in.u32(); static_cast<int>(saved) != stages) {
      throw Error(ErrorKind::usage,
                  format("{}: a pipeline of {} stage(s); this one has {}", what, saved, stages));
    }
    generation = in.u64();
    finished = in.i64();
    member_steps = in.i64();
    rounds = in.i64();
    for (int k = 0; k < stages; ++k) {
      const std::string stage_facts = in.str();
      if (k == stage) {
        ByteReader facts(stage_facts, what);
        e->check_identity(format("{} (stage {})", what, k), facts);
      }
    }
    const auto part = part_path(path, generation, stage);
    const std::string part_what = format("{} (stage {}'s part, {})", what, stage, part.string());
    const std::string part_bytes = posix::read_input_file(
        part, {.what = part_what, .magic = k_part_magic, .not_magic = "not a pipeline's part"});
    ByteReader head(sealed ? detail::sealed_body(part_bytes, part_what)
                           : std::string_view(part_bytes),
                    part_what);
    (void)head.raw(k_part_magic.size());
    if (head.u64() != generation || head.u32() != static_cast<std::uint32_t>(stage)) {
      head.fail("of another checkpoint or stage");
    }
    const std::int64_t drawn = head.i64();
    const bool exhausted = head.u8() != 0;
    e->left = head.i64();
    e->steps_taken = head.i64();
    e->batch_steps = head.i64();
    e->summaries = decode_members(head.str(), part_what);
    const std::string batch = head.str();
    if (!head.at_end()) {
      head.fail("bytes after the batch");
    }
    e->restore_batch(part_what, drawn, exhausted, batch);
    e->checkpoints = generation;
    e->allocate();
  });
  agree_rooms();
}

Pipeline::Pipeline(engine::Engine& engine, MemberFactory make, Params base,
                   std::unique_ptr<MemberSampler> sampler,
                   std::vector<std::shared_ptr<MemberSink>> sinks, PipelineOptions options)
    : m_impl(std::make_unique<Impl>()) {
  Impl& p = *m_impl;
  if (options.comm == nullptr) {
    throw Error(ErrorKind::usage, "pipeline: no ranks (a pipeline runs one stage per rank)");
  }
  if (options.stages.empty()) {
    throw Error(ErrorKind::usage, "pipeline: no stages");
  }
  p.comm = options.comm;
  p.stages = static_cast<int>(options.stages.size());
  p.stage = p.comm->rank();
  p.mode = options.mode;
  if (p.comm->size() != p.stages) {
    throw Error(ErrorKind::usage,
                format("pipeline of {} stage{}: it runs one stage per rank, and this job has {} "
                       "rank{} (mpiexec -n {})",
                       p.stages, p.stages == 1 ? "" : "s", p.comm->size(),
                       p.comm->size() == 1 ? "" : "s", p.stages));
  }
  if (options.buffer < 0) {
    throw Error(ErrorKind::usage,
                format("pipeline: buffer {}: expected 0 (the batch) or more", options.buffer));
  }
  const std::vector<std::string> varied = sampler ? sampler->names() : std::vector<std::string>{};
  Params stage_base = base;
  for (int k = 0; k < p.stages; ++k) {
    for (const auto& [name, value] : options.stages[static_cast<std::size_t>(k)].params.values()) {
      if (std::find(varied.begin(), varied.end(), name) != varied.end()) {
        throw Error(ErrorKind::usage,
                    format("pipeline: stage {} sets \"{}\", which the ensemble varies (a "
                           "member's varied values are its own in every stage)",
                           k, name));
      }
      if (!base.contains(name)) {
        std::vector<std::string> known;
        for (const auto& [key, v] : base.values()) {
          known.push_back(key);
        }
        throw Error(ErrorKind::usage,
                    format("pipeline: stage {} sets \"{}\", which is not a param of the node{}; "
                           "its params are {}",
                           k, name, did_you_mean(name, known), join(known)));
      }
      if (k == p.stage) {
        stage_base.set(name, value);
      }
    }
  }
  const PipelineStage& mine = options.stages[static_cast<std::size_t>(p.stage)];
  EnsembleOptions settings;
  settings.until = mine.until;
  settings.batch = options.batch;
  // The batch, the receive buffer and the message in flight: a third of the fraction each.
  settings.memory_fraction = options.memory_fraction / 3;
  settings.threads = options.threads > 0 ? options.threads : default_threads(p.comm->node_size());
  settings.vtk = p.last() ? options.vtk : std::filesystem::path{};
  // A stage alone would take device 0: "cuda" is the rank's place on its node, as over ranks.
  settings.device = options.device;
  if (const DeviceChoice choice = parse_device(options.device, "pipeline"); choice.cuda) {
    settings.device = format("cuda:{}", device_ordinal(choice, p.comm));
  }
  StageRole role{.index = p.stage, .count = p.stages, .unfilled = !options.resume.empty()};
  if (!p.last()) {
    p.out = std::make_shared<SendBuffer>(p.stage + 1);
    sinks = {p.out};
  }
  // Every stage builds its template (the sampler's first member with the stage's params) and
  // requests its kernels on its own rank; an error on one is raised on all.
  std::unique_ptr<Ensemble::Impl> impl;
  comm::together(*p.comm, [&] {
    impl = std::make_unique<Ensemble::Impl>(engine, std::move(make), std::move(stage_base),
                                            std::move(sampler), std::move(sinks),
                                            std::move(settings), std::move(role));
  });
  p.e = impl.get();
  p.ensemble.reset(new Ensemble(std::move(impl)));
  // The stages must share one layout (a member's fields go on from one to the next), and each
  // learns the batch of the others (the room of the stage after it, and the default buffer).
  const auto all = p.comm->all_gather(format("{}\n{}", p.e->batch, p.e->layout_text));
  std::vector<std::int64_t> batches;
  for (int k = 0; k < p.stages; ++k) {
    const std::string& text = all[static_cast<std::size_t>(k)];
    const auto cut = text.find('\n');
    batches.push_back(std::stoll(text.substr(0, cut)));
    const std::string layout = text.substr(cut + 1);
    const std::string& first_layout = all[0].substr(all[0].find('\n') + 1);
    if (layout != first_layout) {
      throw Error(ErrorKind::usage,
                  format("pipeline: stage {} has the layout {}, and stage 0 {}: a member's "
                         "fields go on from one stage to the next, so every stage's params must "
                         "keep the layout",
                         k, layout, first_layout));
    }
  }
  p.buffer =
      options.buffer > 0 ? options.buffer : *std::max_element(batches.begin(), batches.end());
  if (!p.last()) {
    p.room_after = batches[static_cast<std::size_t>(p.stage + 1)];
  }
  // The most one member takes in a message: its fields, values and integrals, and its reason.
  MemberResult shape;
  shape.values.assign(p.e->varied.size(), 0.0);
  shape.integrals.assign(p.e->integral_names.size(), 0.0);
  shape.fields = zero_fields(p.e->columns);
  p.member_bytes = encode_members({shape}).size() - encode_members({}).size() + k_reason_bytes;
  if (!options.resume.empty()) {
    p.restore(options.resume);
  }
}

Pipeline::~Pipeline() = default;

// The message from the stage before: its members join this stage's inbox, in the order sent.
void Pipeline::Impl::receive_into_inbox() {
  const std::string_view bytes(reinterpret_cast<const char*>(receive_bytes.data()),
                               receive_bytes.size());
  const std::string what = format("pipeline: the message from stage {}", stage - 1);
  ByteReader in(bytes, what);
  const std::uint64_t length = in.u64();
  for (auto& member : decode_members(in.raw(length), what)) {
    e->inbox.push_back(std::move(member));
  }
}

// Every transfer this rank started has finished (the partner of each takes part every round).
void Pipeline::Impl::finish() {
  if (receiving) {
    receiving->wait();
    receiving.reset();
  }
  if (sending) {
    sending->wait();
    sending.reset();
  }
}

bool Pipeline::Impl::advance(std::int64_t steps) {
  if (done) {
    return false;
  }
  std::exception_ptr failure;
  // The message of the round before (async modes), and the send before it (fully_async).
  try {
    if (receiving) {
      receiving->wait();
      receiving.reset();
      receive_into_inbox();
    }
  } catch (...) {
    failure = std::current_exception();
  }
  if (sending) {
    sending->wait();
    sending.reset();
  }
  if (!first()) {
    if (receive_bytes.empty()) {
      receive_bytes.resize(message_capacity());
    }
    receiving = comm->start_receive(receive_bytes, stage - 1, k_tag);
  }
  const std::int64_t steps_before = e->steps_taken;
  const std::int64_t left_before = e->left;
  if (!failure) {
    try {
      if (out) {
        out->room = std::clamp<std::int64_t>(room_after - unaccounted, 0, buffer);
      }
      e->step(steps);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  // The round's message, sent whatever happened (empty when nothing left, or on a failure), so
  // that the stage after never waits for one that does not come.
  std::int64_t sent = 0;
  if (!last()) {
    std::vector<MemberResult> going;
    if (!failure) {
      going = std::move(out->held);
    }
    out->held.clear();
    sent = static_cast<std::int64_t>(going.size());
    send_bytes = message(going);
    UWJIT_ASSERT(send_bytes.size() <= message_capacity(),
                 "a pipeline message larger than the receive buffer");
    sending = comm->start_send(std::as_bytes(std::span(send_bytes)), stage + 1, k_tag);
    if (mode != PipelineMode::fully_async) {
      sending->wait();
      sending.reset();
    }
  }
  if (mode == PipelineMode::sync && receiving) {
    try {
      receiving->wait();
      receiving.reset();
      receive_into_inbox();
    } catch (...) {
      failure = failure ? failure : std::current_exception();
    }
  }
  // The agreement: whether each stage still holds, awaits or sends a member, its room, and its
  // figures.
  std::vector<double> figures_of(
      static_cast<std::size_t>(Figure::figures) * static_cast<std::size_t>(stages), 0.0);
  const auto at = [](int rank) {
    return static_cast<std::size_t>(Figure::figures) * static_cast<std::size_t>(rank);
  };
  double* mine = figures_of.data() + at(stage);
  const bool holds = std::any_of(e->members.begin(), e->members.end(),
                                 [](const auto& m) { return m != nullptr; }) ||
                     !e->unplaced.empty() || !e->inbox.empty() || (first() && !e->exhausted);
  mine[Figure::busy] = holds || sent > 0 ? 1.0 : 0.0;
  mine[Figure::failed] = failure ? 1.0 : 0.0;
  mine[Figure::room] = static_cast<double>(room());
  mine[Figure::member_steps] = static_cast<double>(e->steps_taken - steps_before);
  mine[Figure::finished] = last() ? static_cast<double>(e->left - left_before) : 0.0;
  comm->all_reduce_sum(figures_of);
  ++rounds;
  bool any_busy = false;
  bool any_failed = false;
  for (int k = 0; k < stages; ++k) {
    const double* theirs = figures_of.data() + at(k);
    any_busy = any_busy || theirs[Figure::busy] != 0;
    any_failed = any_failed || theirs[Figure::failed] != 0;
    member_steps += static_cast<std::int64_t>(theirs[Figure::member_steps]);
    finished += static_cast<std::int64_t>(theirs[Figure::finished]);
  }
  if (any_failed) {
    finish();
    done = true;
    comm::together(*comm, [&] {
      if (failure) {
        std::rethrow_exception(failure);
      }
    });
  }
  if (!last()) {
    room_after = static_cast<std::int64_t>(figures_of[at(stage + 1) + Figure::room]);
    unaccounted = mode == PipelineMode::sync ? 0 : sent;
  }
  if (!any_busy) {
    finish();
    done = true;
    e->end_sinks();
  }
  return !done;
}

bool Pipeline::advance(std::int64_t steps) {
  if (steps < 1) {
    throw Error(ErrorKind::usage, format("pipeline: advance by {} steps: at least 1", steps));
  }
  return m_impl->advance(steps);
}

void Pipeline::checkpoint(const std::filesystem::path& path) {
  m_impl->save(path);
}

void Pipeline::run(const std::function<void(const Pipeline&)>& progress) {
  while (advance(Ensemble::round_steps)) {
    if (progress) {
      progress(*this);
    }
  }
  if (progress) {
    progress(*this);
  }
}

int Pipeline::stage() const noexcept {
  return m_impl->stage;
}
int Pipeline::stages() const noexcept {
  return m_impl->stages;
}
PipelineMode Pipeline::mode() const noexcept {
  return m_impl->mode;
}
std::int64_t Pipeline::buffer() const noexcept {
  return m_impl->buffer;
}
const Ensemble& Pipeline::ensemble() const noexcept {
  return *m_impl->ensemble;
}
std::int64_t Pipeline::finished() const noexcept {
  return m_impl->finished;
}
std::int64_t Pipeline::member_steps() const noexcept {
  return m_impl->member_steps;
}
std::int64_t Pipeline::rounds() const noexcept {
  return m_impl->rounds;
}
std::optional<std::int64_t> Pipeline::total() const {
  return m_impl->e->sampler->size();
}

} // namespace uwjit::runtime
