// An ensemble's checkpoint: what a resumed ensemble needs to go on as if it had not stopped (the
// sampler's position, every member in the batch with its state, the members that left and those
// waiting for a sink), written atomically, and read back into a new ensemble made with the same
// arguments (checked: node, rule, varied params, shared params and kernels). Over ranks, the
// file holds what every rank shares and each rank writes its own batch to a part beside it
// (PATH.gG.rR, G the checkpoint's generation): rank 0 replaces the file only once every part of
// the new generation is whole, and the parts of the one before are removed after, so that a job
// killed at any moment leaves one whole checkpoint; no rank holds another's members. The file and
// every part end with a seal (a checksum), so that a file cut short or corrupted is refused, never
// resumed from.
#include "ensemble_impl.hpp"

#include "../seal.hpp"

#include "member_transfer.hpp"

#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/common/text.hpp>

#include <map>
#include <utility>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {

constexpr std::string_view k_magic = k_ensemble_checkpoint_magic;
constexpr posix::AtomicFileOptions k_replaces = {.replaces = k_magic,
                                                 .kind = "uwjit ensemble checkpoint"};
constexpr std::string_view k_part_magic = "UWJITENP";
constexpr std::uint32_t k_version = 3; // sealed since 3; version 2 is still read

} // namespace

std::filesystem::path detail::part_path(const std::filesystem::path& path, std::uint64_t generation,
                                        int rank) {
  return path.string() + format(".g{}.r{}", generation, rank);
}

// What must be the same in the ensemble that resumes: a text per fact, compared one by one.
std::vector<std::pair<std::string, std::string>> Ensemble::Impl::identity() const {
  std::vector<std::pair<std::string, std::string>> facts = {
      {"node", type},
      {"stop rule", options.until.text()},
      {"varied params", join(varied)},
  };
  for (const auto& [key, value] : base.values()) {
    facts.emplace_back("param " + key, value.text());
  }
  for (const auto& report : reports) {
    facts.emplace_back(format("kernel of stage {}", report.stage), report.info.key);
  }
  return facts;
}

// Every member in this rank's batch (its id, values, steps, integrals, status and state), those
// waiting here for a sink, and (a pipeline's stage) those received and waiting for a slot.
std::string Ensemble::Impl::batch_bytes() const {
  pull_stepping();
  ByteWriter out;
  out.str(encode_members(unplaced));
  out.str(encode_members(std::vector<MemberResult>(inbox.begin(), inbox.end())));
  std::vector<const Member*> held;
  for (const auto& m : members) {
    if (m != nullptr) {
      held.push_back(m.get());
    }
  }
  out.u64(held.size());
  for (const Member* m : held) {
    out.i64(m->id);
    put_doubles(out, m->values);
    out.i64(m->steps);
    out.i64(m->entered);
    put_doubles(out, m->previous);
    put_doubles(out, m->state.integrals);
    out.u8(m->stopped ? 1 : 0);
    out.u8(static_cast<std::uint8_t>(m->status));
    out.str(m->reason);
    out.u64(m->state.current.size());
    for (const auto& field : m->state.current) {
      std::string interior(static_cast<std::size_t>(field->interior_count()) *
                               codegen::size_of(field->dtype()),
                           '\0');
      field->copy_interior_to(std::as_writable_bytes(std::span(interior.data(), interior.size())));
      out.str(interior);
    }
  }
  return std::move(out.bytes());
}

void Ensemble::Impl::save(const std::filesystem::path& path) const {
  const int ranks = comm != nullptr ? comm->size() : 1;
  const std::uint64_t generation = checkpoints + 1;
  // Nothing is written where the file could not go (a user's file at its path).
  collectively([&] {
    if (lead()) {
      posix::check_replaceable(path, k_replaces.replaces, k_replaces.kind);
    }
  });
  // Over ranks, every rank's part first: the file names a generation only once it is whole.
  collectively([&] {
    if (comm != nullptr) {
      ByteWriter part;
      part.raw(k_part_magic.data(), k_part_magic.size());
      part.u64(generation);
      part.u32(static_cast<std::uint32_t>(comm->rank()));
      part.str(batch_bytes());
      detail::seal(part.bytes());
      posix::write_file_atomically(part_path(path, generation, comm->rank()), part.bytes());
    }
  });
  collectively([&] {
    if (!lead()) {
      return;
    }
    ByteWriter out;
    out.raw(k_magic.data(), k_magic.size());
    out.u32(k_version);
    put_identity(out);
    out.u32(static_cast<std::uint32_t>(ranks));
    out.u64(generation);
    out.i64(next_id);
    out.u8(exhausted ? 1 : 0);
    out.i64(left);
    out.i64(steps_taken);
    out.i64(batch_steps);
    out.str(encode_members(summaries));
    if (comm == nullptr) {
      out.str(batch_bytes());
    }
    detail::seal(out.bytes());
    posix::write_file_atomically(path, out.bytes(), k_replaces);
  });
  checkpoints = generation;
  if (comm != nullptr && generation > 1) {
    // The generation before is no longer named by the file: its parts go.
    std::error_code ignored;
    std::filesystem::remove(part_path(path, generation - 1, comm->rank()), ignored);
  }
}

void Ensemble::Impl::restore(const std::filesystem::path& path) {
  const std::string what = "ensemble checkpoint " + path.string();
  // Over ranks, rank 0 reads the file and every rank gets it (the members that left, without
  // their fields, and what the ranks share); each then reads its own part.
  std::string bytes;
  collectively([&] {
    if (lead()) {
      bytes = posix::read_input_file(
          path, {.what = what, .magic = k_magic, .not_magic = "not an ensemble checkpoint"});
    }
  });
  if (comm != nullptr) {
    bytes = comm->broadcast(std::move(bytes), 0);
  }
  collectively([&] { restore_from(path, bytes); });
}

void Ensemble::Impl::put_identity(ByteWriter& out) const {
  const auto facts = identity();
  out.u64(facts.size());
  for (const auto& [what, value] : facts) {
    out.str(what);
    out.str(value);
  }
}

void Ensemble::Impl::check_identity(const std::string& what, ByteReader& in) const {
  const auto facts = identity();
  const std::uint64_t count = in.u64();
  std::vector<std::pair<std::string, std::string>> saved;
  for (std::uint64_t i = 0; i < count; ++i) {
    auto fact = in.str();
    saved.emplace_back(std::move(fact), in.str());
  }
  std::vector<std::string> differences;
  for (const auto& [fact, value] : facts) {
    const auto at =
        std::find_if(saved.begin(), saved.end(), [&](const auto& s) { return s.first == fact; });
    if (at == saved.end()) {
      differences.push_back(format("{} is {} here, and not in the checkpoint", fact, value));
    } else if (at->second != value) {
      differences.push_back(format("{} is {} here, {} in the checkpoint", fact, value, at->second));
    }
  }
  for (const auto& [fact, value] : saved) {
    if (std::none_of(facts.begin(), facts.end(), [&](const auto& f) { return f.first == fact; })) {
      differences.push_back(format("{} is {} in the checkpoint, and not here", fact, value));
    }
  }
  if (!differences.empty()) {
    throw Error(ErrorKind::usage,
                format("{}: it is of another ensemble: {}; resume with the arguments it was made "
                       "with",
                       what, join(differences, "; ")));
  }
}

void Ensemble::Impl::restore_from(const std::filesystem::path& path, const std::string& file) {
  const std::string what = "ensemble checkpoint " + path.string();
  bool sealed = false;
  ByteReader in(detail::versioned_body(file, k_magic.size(), k_version, what, sealed), what);
  check_identity(what, in);
  const int ranks = comm != nullptr ? comm->size() : 1;
  const std::uint32_t saved_ranks = in.u32();
  if (static_cast<int>(saved_ranks) != ranks) {
    throw Error(ErrorKind::usage, format("{}: written by {} rank(s); resume it on as many (this "
                                         "job has {})",
                                         what, saved_ranks, ranks));
  }
  const std::uint64_t generation = in.u64();
  const std::int64_t drawn = in.i64();
  const bool was_exhausted = in.u8() != 0;
  left = in.i64();
  steps_taken = in.i64();
  batch_steps = in.i64();
  summaries = decode_members(in.str(), what);
  if (!lead()) {
    summaries.clear(); // rank 0's: the others report none
  }
  checkpoints = generation;
  std::string part_bytes;
  std::string batch;
  if (comm == nullptr) {
    batch = in.str();
  } else {
    const auto part = part_path(path, generation, comm->rank());
    const std::string part_what =
        format("{} (rank {}'s part, {})", what, comm->rank(), part.string());
    part_bytes = posix::read_input_file(part, {.what = part_what,
                                               .magic = k_part_magic,
                                               .not_magic = "not an ensemble checkpoint's part"});
    ByteReader in_part(sealed ? detail::sealed_body(part_bytes, part_what)
                              : std::string_view(part_bytes),
                       part_what);
    (void)in_part.raw(k_part_magic.size());
    if (in_part.u64() != generation || in_part.u32() != static_cast<std::uint32_t>(comm->rank())) {
      in_part.fail("of another checkpoint or rank");
    }
    batch = in_part.str();
    if (!in_part.at_end()) {
      in_part.fail("bytes after the batch");
    }
  }
  if (!in.at_end()) {
    in.fail("bytes after the batch");
  }
  restore_batch(what, drawn, was_exhausted, batch);
}

namespace {

// A member's varied values, one per varied param (a member is built from them).
void check_values(const ByteReader& in, std::int64_t id, std::size_t values, std::size_t varied) {
  if (values != varied) {
    in.fail(
        format("member {} has {} varied value(s); this ensemble varies {}", id, values, varied));
  }
}

void check_values(const ByteReader& in, const std::vector<MemberResult>& members,
                  std::size_t varied) {
  for (const auto& m : members) {
    check_values(in, m.id, m.values.size(), varied);
  }
}

} // namespace

void Ensemble::Impl::restore_batch(const std::string& what, std::int64_t drawn, bool was_exhausted,
                                   const std::string& bytes) {
  ByteReader in(bytes, what);
  unplaced = decode_members(in.str(), what);
  const auto received = decode_members(in.str(), what);
  check_values(in, unplaced, varied.size());
  check_values(in, received, varied.size());
  check_values(in, summaries, varied.size());
  inbox.assign(received.begin(), received.end());
  // The values of the members the checkpoint holds, which this ensemble's sampler must give
  // again (a sweep resumed with other ranges, list or seed would go on as another).
  std::map<std::int64_t, std::vector<double>> recorded;
  for (const std::vector<MemberResult>* list : {&std::as_const(unplaced), &received}) {
    for (const auto& m : *list) {
      recorded.emplace(m.id, m.values);
    }
  }
  const std::uint64_t held = in.u64();
  // A batch this ensemble chose itself grows to hold the checkpoint's, where memory allows (a
  // checkpoint of another machine, or of another default, may have held more).
  if (held > members.size() && options.batch == 0 &&
      held <= static_cast<std::uint64_t>(memory_fit)) {
    batch_reason = format("{}: the batch the checkpoint held (was {})", held, batch_reason);
    batch = static_cast<std::int64_t>(held);
    members.resize(held);
  }
  if (held > members.size()) {
    throw Error(ErrorKind::usage,
                format("{}: its batch held {} members, more than this ensemble's batch of {}: "
                       "resume with a batch of at least {}",
                       what, held, members.size(), held));
  }
  for (auto& m : members) {
    retire(std::move(m));
  }
  for (std::uint64_t slot = 0; slot < held; ++slot) {
    const std::int64_t id = in.i64();
    auto values = get_doubles(in);
    check_values(in, id, values.size(), varied.size());
    recorded.emplace(id, values);
    auto m = build(id, std::move(values));
    m->steps = in.i64();
    m->entered = in.i64();
    m->previous = get_doubles(in);
    m->state.integrals = get_doubles(in);
    m->stopped = in.u8() != 0;
    const auto status = in.u8();
    if (status > static_cast<std::uint8_t>(MemberStatus::failed)) {
      in.fail("a status out of range");
    }
    m->status = static_cast<MemberStatus>(status);
    m->reason = in.str();
    if (in.u64() != m->state.current.size()) {
      in.fail(format("member {} has another number of fields", id));
    }
    for (auto& field : m->state.current) {
      const std::string interior = in.str();
      if (interior.size() !=
          static_cast<std::size_t>(field->interior_count()) * codegen::size_of(field->dtype())) {
        in.fail(format("member {}: field {} has another size", id, field->name()));
      }
      field->copy_interior_from(std::as_bytes(std::span(interior.data(), interior.size())));
    }
    members[slot] = std::move(m);
  }
  if (!in.at_end()) {
    in.fail("bytes after the last member");
  }
  // The sampler where it was: the members it gave are drawn again (the first one, the template,
  // was drawn when this ensemble was made), and those the checkpoint holds compared.
  const auto other = [&](std::string_view problem) {
    throw Error(ErrorKind::usage,
                format("{}: {}: resume with the sampler that made it (its ranges, list or seed)",
                       what, problem));
  };
  while (next_id < drawn) {
    const auto values = sampler->next();
    if (!values) {
      other(format("its sampler had given {} members; this one gives {}", drawn, next_id));
    }
    if (const auto at = recorded.find(next_id); at != recorded.end() && at->second != *values) {
      other(format("its member {} has {}; this ensemble's sampler gives {}", next_id,
                   values_text(varied, at->second), values_text(varied, *values)));
    }
    ++next_id;
  }
  exhausted = was_exhausted;
  if (exhausted && !role.fed() && sampler->next()) {
    other(format("its sampler had given all of its {} members; this one gives more", drawn));
  }
}

} // namespace uwjit::runtime
