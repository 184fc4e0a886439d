// Simulation::checkpoint and Simulation::restore: the checkpoint format of simulation.hpp,
// written atomically and read back and checked, one file for a job on any rank count, each rank
// writing and reading its own slab of every field (collective_file.hpp).
#include "byte_io.hpp"
#include "collective_file.hpp"
#include "runtime_log.hpp"
#include "seal.hpp"
#include "simulation_impl.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/crc64.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include <fcntl.h>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {

constexpr std::string_view k_magic = k_checkpoint_magic;

// One node as the checkpoint format stores it. Each field is this rank's part of the whole
// field: its interior at `offset` (per axis) of an array of `whole` cells.
struct FieldPart {
  const Field* field;
  std::vector<std::int64_t> whole;
  std::vector<std::int64_t> offset;
};

struct CheckpointNode {
  const Node* node;
  std::vector<FieldPart> fields;
  const std::vector<std::string>* integral_names;
  std::span<const double> integrals;
  std::vector<std::string> rebound; // sorted
};

// Field data starts at multiples of this, after the head.
constexpr std::uint64_t k_data_alignment = 4096;

std::uint64_t aligned(std::uint64_t at) {
  return (at + k_data_alignment - 1) / k_data_alignment * k_data_alignment;
}

std::uint64_t whole_bytes(const FieldPart& f) {
  std::uint64_t count = codegen::size_of(f.field->dtype());
  for (const std::int64_t n : f.whole) {
    count *= static_cast<std::uint64_t>(n);
  }
  return count;
}

// The part of the whole field that `field` holds on this rank: its shape with the domain axes
// made the whole domain's, and its offset per axis (0 on the leading, component axes). Serially
// (no shard) the whole field.
FieldPart part_of(const Field* field, const ShardInfo& shard) {
  FieldPart part{field, field->shape(), std::vector<std::int64_t>(field->shape().size(), 0)};
  if (!shard.global.empty()) {
    const std::size_t lead = part.whole.size() - shard.global.size();
    std::copy(shard.global.begin(), shard.global.end(), part.whole.begin() + lead);
    std::copy(shard.offset.begin(), shard.offset.end(), part.offset.begin() + lead);
  }
  return part;
}

// Calls move(at, run) for each contiguous run of `part`'s slab, `at` its byte offset in the
// field's data and `run` its bytes in `packed` (the slab's interior packed row-major), then
// returns this rank's part of the field's CRC-64 (taken after `move`, which reads or writes the
// run): the ranks' parts XOR into the whole field's.
template <class Move>
std::uint64_t for_each_slab_run(const FieldPart& part, std::span<std::byte> packed, Move move) {
  const std::uint64_t element = codegen::size_of(part.field->dtype());
  const std::uint64_t total = whole_bytes(part);
  std::uint64_t crc = 0;
  detail::for_each_run(part.whole, part.offset, part.field->shape(),
                       [&](std::int64_t whole, std::int64_t at, std::int64_t count) {
                         const std::span<std::byte> run =
                             packed.subspan(static_cast<std::size_t>(at) * element,
                                            static_cast<std::size_t>(count) * element);
                         const std::uint64_t begin = static_cast<std::uint64_t>(whole) * element;
                         move(begin, run);
                         crc ^= crc64_advance(crc64_update(0, run), total - begin - run.size());
                       });
  return crc;
}

// Where each field's data lies: its offset in the file, in the order of the head.
struct DataPlan {
  std::vector<std::uint64_t> offsets;
  std::uint64_t size = 0; // of the whole file
};

// The head of a version 3 checkpoint (everything but the field data), with the fields' offsets
// from `plan` and checksums `crcs` (zeros while they are not known: the length is the same).
std::string checkpoint_head(std::int64_t steps, std::span<const CheckpointNode> nodes,
                            const DataPlan& plan, std::span<const std::uint64_t> crcs) {
  detail::ByteWriter out;
  out.raw(k_magic.data(), k_magic.size());
  out.u32(k_checkpoint_version);
  const std::size_t length_at = out.bytes().size();
  out.u64(0); // the head's length, set below
  out.i64(steps);
  out.u32(static_cast<std::uint32_t>(nodes.size()));
  std::size_t k = 0;
  for (const auto& n : nodes) {
    out.str(n.node->type());
    out.str(n.node->name());
    const auto& params = n.node->params().values();
    out.u32(static_cast<std::uint32_t>(params.size()));
    for (const auto& [key, value] : params) {
      out.str(key);
      out.value(value);
    }
    out.u32(static_cast<std::uint32_t>(n.fields.size()));
    for (const FieldPart& f : n.fields) {
      out.str(f.field->name());
      out.u8(static_cast<std::uint8_t>(f.field->dtype()));
      out.u32(static_cast<std::uint32_t>(f.whole.size()));
      for (const std::int64_t extent : f.whole) {
        out.i64(extent);
      }
      out.u64(whole_bytes(f));
      out.u64(plan.offsets.empty() ? 0 : plan.offsets[k]);
      out.u64(crcs.empty() ? 0 : crcs[k]);
      ++k;
    }
    out.u32(static_cast<std::uint32_t>(n.integrals.size()));
    for (std::size_t i = 0; i < n.integrals.size(); ++i) {
      out.str((*n.integral_names)[i]);
      out.f64(n.integrals[i]);
    }
    out.u32(static_cast<std::uint32_t>(n.rebound.size()));
    for (const auto& key : n.rebound) {
      out.str(key);
    }
  }
  const std::uint64_t length = out.bytes().size() + 64;
  for (int b = 0; b < 8; ++b) {
    out.bytes()[length_at + static_cast<std::size_t>(b)] = static_cast<char>(length >> (8 * b));
  }
  detail::seal(out.bytes());
  return std::move(out.bytes());
}

// Each rank's checksums (per field, in head order) XORed over the ranks: the whole fields'.
std::vector<std::uint64_t> combine_over_ranks(comm::Collectives* comm,
                                              std::vector<std::uint64_t> mine) {
  if (comm == nullptr || comm->size() == 1) {
    return mine;
  }
  const std::string bytes(reinterpret_cast<const char*>(mine.data()), mine.size() * 8);
  const auto all = comm->all_gather(bytes);
  std::fill(mine.begin(), mine.end(), 0);
  for (const auto& part : all) {
    UWJIT_ASSERT(part.size() == mine.size() * 8, "checkpoint: ranks hold different field counts");
    for (std::size_t k = 0; k < mine.size(); ++k) {
      std::uint64_t v = 0;
      std::memcpy(&v, part.data() + 8 * k, 8);
      mine[k] ^= v;
    }
  }
  return mine;
}

// Writes the checkpoint format of simulation.hpp to `path`, atomically, each rank of `comm` (or
// this process alone) its own part of every field.
void write_checkpoint(comm::Collectives* comm, const std::filesystem::path& path,
                      std::int64_t steps, std::span<const CheckpointNode> nodes) {
  DataPlan plan;
  plan.size = aligned(checkpoint_head(steps, nodes, {}, {}).size());
  std::vector<const FieldPart*> fields;
  for (const auto& n : nodes) {
    for (const auto& f : n.fields) {
      plan.size = aligned(plan.size);
      plan.offsets.push_back(plan.size);
      plan.size += whole_bytes(f);
      fields.push_back(&f);
    }
  }
  std::vector<std::uint64_t> crcs(fields.size(), 0);
  try {
    detail::CollectiveFile file(comm, path, plan.size,
                                {.mode = 0644, .replaces = k_magic, .kind = "uwjit checkpoint"});
    file.write([&] {
      std::vector<std::byte> packed;
      for (std::size_t k = 0; k < fields.size(); ++k) {
        const FieldPart& f = *fields[k];
        packed.resize(static_cast<std::size_t>(f.field->interior_count()) *
                      codegen::size_of(f.field->dtype()));
        f.field->copy_interior_to(packed);
        crcs[k] = for_each_slab_run(f, packed, [&](std::uint64_t at, std::span<std::byte> run) {
          file.write_at(plan.offsets[k] + at,
                        {reinterpret_cast<const char*>(run.data()), run.size()});
        });
      }
    });
    crcs = combine_over_ranks(comm, std::move(crcs));
    const std::string head = checkpoint_head(steps, nodes, plan, crcs);
    if (comm != nullptr && comm->size() > 1) {
      // Every rank made the head from what it holds: they must agree, or the file would say what
      // rank 0 alone believes.
      const auto heads = comm->all_gather(cache::sha256_hex(head));
      if (std::adjacent_find(heads.begin(), heads.end(), std::not_equal_to<>()) != heads.end()) {
        throw Error(ErrorKind::internal,
                    "the ranks disagree on the checkpoint's params, steps or integrals");
      }
    }
    file.commit(head);
  } catch (const Error& e) {
    throw Error(e.kind(), format("checkpoint {}: {}", path.string(), e.what()));
  }
  if (comm == nullptr || comm->rank() == 0) {
    logger().info("checkpoint {} written at step {} ({} bytes)", path.string(), steps, plan.size);
  }
}

} // namespace

void Simulation::checkpoint(const std::filesystem::path& path) const {
  // Each rank writes its slab of every field at its place in the one file of the job (the file
  // a serial run writes for the same state), so that no rank holds the whole domain.
  comm::Collectives* comm = m_impl->decomposition ? m_impl->decomposition->comm : nullptr;
  m_impl->together([&] { m_impl->pull_state(); });
  std::vector<CheckpointNode> nodes;
  for (const auto& s : m_impl->states) {
    CheckpointNode n{s.node.get(),
                     {},
                     &s.layout.integrals,
                     s.integrals,
                     std::vector<std::string>(s.rebound.begin(), s.rebound.end())};
    for (const auto& f : s.current) {
      n.fields.push_back(part_of(f.get(), s.shard));
    }
    nodes.push_back(std::move(n));
  }
  write_checkpoint(comm, path, m_impl->steps, nodes);
}

void Snapshot::checkpoint(const std::filesystem::path& path) const {
  std::vector<CheckpointNode> nodes;
  std::vector<std::vector<std::string>> names(m_nodes.size());
  for (std::size_t i = 0; i < m_nodes.size(); ++i) {
    const NodeData& d = m_nodes[i];
    if (d.slab.extent != d.slab.global) {
      throw Error(ErrorKind::usage,
                  format("checkpoint: this snapshot holds a slab of node \"{}\", not its whole "
                         "domain (Simulation::checkpoint writes a sharded simulation's file)",
                         d.node->name()));
    }
    names[i] = d.node->layout().integrals;
    CheckpointNode n{d.node.get(), {}, &names[i], d.integrals, d.rebound};
    for (const auto& f : d.fields) {
      n.fields.push_back(part_of(f.get(), {}));
    }
    nodes.push_back(std::move(n));
  }
  write_checkpoint(nullptr, path, m_steps, nodes);
}

namespace {

// The params of `file` and `rebuilt` that differ, in words ("kappa: 1 in the file, 0.5 now;
// rate: only in the file"), or "" when they are the same.
std::string params_differ(const Params& file, const Params& rebuilt) {
  std::vector<std::string> differences;
  const auto same = [](const Value& a, const Value& b) { return a == b || a.text() == b.text(); };
  for (const auto& [key, value] : file.values()) {
    const auto it = rebuilt.values().find(key);
    if (it == rebuilt.values().end()) {
      differences.push_back(
          format("{}: only in the file ({})", printable(key), printable(value.text())));
    } else if (!same(value, it->second)) {
      differences.push_back(format("{}: {} in the file, {} now", printable(key),
                                   printable(value.text()), printable(it->second.text())));
    }
  }
  for (const auto& [key, value] : rebuilt.values()) {
    if (!file.values().contains(key)) {
      differences.push_back(
          format("{}: not in the file ({} now)", printable(key), printable(value.text())));
    }
  }
  return join(differences, "; ");
}

struct FieldRecord {
  std::string name;
  std::uint8_t dtype;
  std::vector<std::int64_t> shape;
  std::uint64_t byte_count = 0;
  std::string_view bytes;   // versions 1 and 2: the data, in the file read whole
  std::uint64_t offset = 0; // version 3: where the data is in the file
  std::uint64_t crc = 0;    // version 3: its CRC-64
};

// Version 3 keeps the head apart from the field data, which each rank reads its slab of; 1 and
// 2 are one stream read whole.
constexpr std::uint32_t k_first_split_version = 3;

// The largest head this uwjit reads: far beyond any node's params and field names.
constexpr std::uint64_t k_max_head = std::uint64_t{256} << 20;

// What rank 0 reads of a checkpoint: the head of a version 3 file, or a whole older file.
// Thread-safe; throws Error(io) naming the file.
std::string read_checkpoint_head(const std::filesystem::path& path, const std::string& what) {
  posix::check_input_file(path, what);
  const posix::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    posix::throw_io(format("{}: cannot open", what), errno);
  }
  const auto status = posix::status_of(fd.get());
  const std::uint64_t size = status ? status->size : 0;
  std::string prefix(std::min<std::uint64_t>(size, k_magic.size() + 12), '\0');
  posix::read_at(fd.get(), 0, prefix, what);
  if (!std::string_view(prefix).starts_with(k_magic)) {
    throw Error(ErrorKind::io, format("{}: not a uwjit checkpoint (bad magic)", what));
  }
  if (prefix.size() < k_magic.size() + 4) {
    throw Error(ErrorKind::io, format("{}: truncated", what));
  }
  detail::ByteReader reader(std::string_view(prefix).substr(k_magic.size()), what);
  if (reader.u32() < k_first_split_version) {
    return posix::read_input_file(
        path, {.what = what, .magic = k_magic, .not_magic = "not a uwjit checkpoint (bad magic)"});
  }
  if (prefix.size() < k_magic.size() + 12) {
    throw Error(ErrorKind::io, format("{}: truncated", what));
  }
  const std::uint64_t length = reader.u64();
  if (length > k_max_head || length < prefix.size() + 64 || length > size) {
    throw Error(ErrorKind::io,
                format("{}: truncated or corrupt (its head says {} bytes; the file has {})", what,
                       length, size));
  }
  std::string head(length, '\0');
  posix::read_at(fd.get(), 0, head, what);
  return head;
}

struct NodeRecord {
  std::string type;
  std::string name;
  Params params;
  std::vector<FieldRecord> fields;
  std::vector<std::pair<std::string, double>> integrals;
  std::vector<std::string> rebound;
};

} // namespace

Simulation Simulation::restore(engine::Engine& engine, const std::filesystem::path& path,
                               const NodeFactory& factory, SimulationOptions options) {
  const std::string what = "checkpoint " + path.string();
  comm::Collectives* comm =
      options.comm != nullptr && options.comm->size() > 1 ? options.comm : nullptr;
  // Rank 0 reads the head (a version 1 or 2 file whole) and broadcasts it; every rank then
  // parses the same bytes and raises the same errors. A regular file only (a FIFO or device is
  // refused without blocking), its magic read before the rest.
  std::string file;
  detail::run_together(comm, [&] {
    if (comm == nullptr || comm->rank() == 0) {
      file = read_checkpoint_head(path, what);
    }
  });
  if (comm != nullptr) {
    file = comm->broadcast(std::move(file), 0);
  }
  if (file.size() < k_magic.size() + 4 + 64) {
    throw Error(ErrorKind::io, format("{}: truncated", what));
  }
  const std::string_view body = detail::sealed_body(file, what);
  detail::ByteReader reader(body, what);
  (void)reader.raw(k_magic.size());
  const std::uint32_t version = reader.u32();
  if (version != 1 && version != 2 && version != k_checkpoint_version) {
    throw Error(ErrorKind::io, format("{}: format version {} (this uwjit reads versions 1 to {})",
                                      what, version, k_checkpoint_version));
  }
  if (version >= k_first_split_version) {
    (void)reader.u64(); // the head's length, checked as it was read
  }
  const std::int64_t steps = reader.i64();
  if (steps < 0 || steps > k_max_steps) {
    throw Error(ErrorKind::io, format("{}: step count {} is outside 0 to 2^53", what, steps));
  }
  const std::uint32_t node_count = reader.u32();
  std::vector<NodeRecord> records;
  for (std::uint32_t n = 0; n < node_count; ++n) {
    NodeRecord record;
    record.type = reader.str();
    record.name = reader.str();
    // The name becomes file names (outputs): checked before anything is built from it.
    for (const auto* text : {&record.type, &record.name}) {
      if (!is_safe_name(*text)) {
        throw Error(ErrorKind::io,
                    format("{}: node {} \"{}\" is not a valid node {} (1 to 64 letters, digits, "
                           "'_', '-' or '.', starting with a letter, a digit or '_')",
                           what, text == &record.type ? "type" : "name", printable(*text),
                           text == &record.type ? "type" : "name"));
      }
    }
    const std::uint32_t param_count = reader.u32();
    for (std::uint32_t p = 0; p < param_count; ++p) {
      std::string key = reader.str();
      if (record.params.values().contains(key)) {
        throw Error(ErrorKind::io, format("{}: node \"{}\" has param \"{}\" twice", what,
                                          record.name, printable(key)));
      }
      record.params.set(std::move(key), reader.value());
    }
    const std::uint32_t field_count = reader.u32();
    for (std::uint32_t f = 0; f < field_count; ++f) {
      FieldRecord field;
      field.name = reader.str();
      field.dtype = reader.u8();
      const std::uint32_t rank = reader.u32();
      for (std::uint32_t d = 0; d < rank && d < 16; ++d) {
        field.shape.push_back(reader.i64());
      }
      if (rank > 16) {
        throw Error(ErrorKind::io,
                    format("{}: field \"{}\" has rank {}", what, printable(field.name), rank));
      }
      const auto dtype = static_cast<codegen::Dtype>(field.dtype);
      if (!codegen::is_supported(dtype)) {
        throw Error(ErrorKind::io, format("{}: field \"{}\" of node \"{}\" has an unknown dtype "
                                          "code {}",
                                          what, printable(field.name), record.name,
                                          static_cast<int>(field.dtype)));
      }
      // The byte count follows from the dtype and shape; a file that says otherwise is named
      // for what it is, not as truncated.
      std::uint64_t expected = codegen::size_of(dtype);
      for (const std::int64_t extent : field.shape) {
        if (extent < 0 ||
            (extent > 0 && expected > UINT64_MAX / static_cast<std::uint64_t>(extent))) {
          throw Error(ErrorKind::io,
                      format("{}: field \"{}\" of node \"{}\" has shape {}", what,
                             printable(field.name), record.name, shape_text(field.shape)));
        }
        expected *= static_cast<std::uint64_t>(extent);
      }
      const std::uint64_t stored = reader.u64();
      if (stored != expected) {
        throw Error(ErrorKind::io,
                    format("{}: field \"{}\" of node \"{}\" holds {} bytes, but a {} field of {} "
                           "takes {}",
                           what, printable(field.name), record.name, stored,
                           shape_text(field.shape), codegen::to_string(dtype), expected));
      }
      field.byte_count = stored;
      if (version >= k_first_split_version) {
        field.offset = reader.u64();
        field.crc = reader.u64();
        if (field.offset < file.size() || field.offset > UINT64_MAX - stored) {
          throw Error(ErrorKind::io,
                      format("{}: field \"{}\" of node \"{}\" is placed at byte {}", what,
                             printable(field.name), record.name, field.offset));
        }
      } else {
        field.bytes = reader.raw(stored);
      }
      record.fields.push_back(std::move(field));
    }
    const std::uint32_t integral_count = reader.u32();
    for (std::uint32_t i = 0; i < integral_count; ++i) {
      std::string name = reader.str();
      record.integrals.emplace_back(std::move(name), reader.f64());
    }
    const std::uint32_t rebound_count = version >= 2 ? reader.u32() : 0;
    for (std::uint32_t r = 0; r < rebound_count; ++r) {
      record.rebound.push_back(reader.str());
    }
    records.push_back(std::move(record));
  }
  if (!reader.at_end()) {
    throw Error(ErrorKind::io, format("{}: unexpected bytes after the last node", what));
  }

  std::vector<std::shared_ptr<const Node>> nodes;
  for (const auto& record : records) {
    std::shared_ptr<const Node> node;
    try {
      node = factory(record.type, record.name, record.params);
    } catch (const Error& e) {
      throw Error(e.kind(), format("{}: node \"{}\" of type \"{}\": {}", what, record.name,
                                   record.type, e.what()));
    }
    if (node == nullptr || node->type() != record.type || node->name() != record.name) {
      throw Error(ErrorKind::usage, format("{}: the factory did not rebuild node \"{}\" of type "
                                           "\"{}\"",
                                           what, record.name, record.type));
    }
    // The state continues only with the physics that made it: the rebuilt node's params are
    // the file's, every one, and no other.
    if (const auto differ = params_differ(record.params, node->params()); !differ.empty()) {
      throw Error(ErrorKind::usage,
                  format("{}: node \"{}\" was rebuilt with other params than the checkpoint's: "
                         "{}",
                         what, record.name, differ));
    }
    nodes.push_back(std::move(node));
  }
  auto impl = std::make_unique<Impl>(engine, std::move(nodes), options, Impl::Init::skip);
  impl->steps = steps;
  // Version 3: the fields this rank reads its slab of, once every record is checked.
  struct SlabRead {
    Field* target;
    const FieldRecord* saved;
    FieldPart part; // of target
  };
  std::vector<SlabRead> reads;
  for (std::size_t n = 0; n < records.size(); ++n) {
    NodeState& s = impl->states[n];
    const NodeRecord& record = records[n];
    if (record.fields.size() != s.current.size()) {
      throw Error(ErrorKind::usage,
                  format("{}: node \"{}\" has {} fields in the file, {} now", what, record.name,
                         record.fields.size(), s.current.size()));
    }
    for (const auto& saved : record.fields) {
      Field* target = nullptr;
      for (std::size_t i = 0; i < s.current.size(); ++i) {
        if (s.current[i]->name() == saved.name) {
          target = s.current[i].get();
        }
      }
      // The file holds the whole domain; a sharded rank keeps its slab of it.
      const std::optional<FieldPart> part =
          target != nullptr ? std::optional(part_of(target, s.shard)) : std::nullopt;
      if (!part || static_cast<std::uint8_t>(target->dtype()) != saved.dtype ||
          part->whole != saved.shape || saved.byte_count != whole_bytes(*part)) {
        throw Error(ErrorKind::usage,
                    format("{}: field \"{}\" of node \"{}\" ({}) does not match the node's "
                           "state field",
                           what, printable(saved.name), record.name, shape_text(saved.shape)));
      }
      if (version >= k_first_split_version) {
        reads.push_back({target, &saved, *part});
        continue;
      }
      const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(saved.bytes.data()),
                                             saved.bytes.size());
      if (part->whole == target->shape()) {
        target->copy_interior_from(bytes);
      } else {
        Field whole(saved.name, target->dtype(), part->whole,
                    std::vector<int>(part->whole.size(), 0));
        whole.copy_interior_from(bytes);
        copy_slab(whole, *target, s.shard.offset, Direction::global_to_local);
      }
    }
  }
  if (!reads.empty()) {
    // Each rank reads its slab of each field, nothing more, and checks it against the file's
    // checksum together with the other ranks' slabs.
    std::vector<std::uint64_t> crcs(reads.size(), 0);
    detail::run_together(comm, [&] {
      const posix::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
      if (!fd) {
        posix::throw_io(comm != nullptr && comm->rank() != 0
                            ? format("{}: cannot open on rank {}, which reads its slab from it (do "
                                     "the ranks share its file system?)",
                                     what, comm->rank())
                            : format("{}: cannot open", what),
                        errno);
      }
      const std::string truncated = format("{}: truncated or corrupt", what);
      std::vector<std::byte> packed;
      for (std::size_t k = 0; k < reads.size(); ++k) {
        const SlabRead& r = reads[k];
        packed.resize(static_cast<std::size_t>(r.target->interior_count()) *
                      codegen::size_of(r.target->dtype()));
        crcs[k] =
            for_each_slab_run(r.part, packed, [&](std::uint64_t at, std::span<std::byte> run) {
              posix::read_at(fd.get(), r.saved->offset + at,
                             {reinterpret_cast<char*>(run.data()), run.size()}, truncated);
            });
        r.target->copy_interior_from(packed);
      }
    });
    crcs = combine_over_ranks(comm, std::move(crcs));
    for (std::size_t k = 0; k < reads.size(); ++k) {
      if (crcs[k] != reads[k].saved->crc) {
        throw Error(ErrorKind::io,
                    format("{}: truncated or corrupt (field \"{}\": checksum mismatch)", what,
                           reads[k].saved->name));
      }
    }
  }
  for (std::size_t n = 0; n < records.size(); ++n) {
    NodeState& s = impl->states[n];
    const NodeRecord& record = records[n];
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      if (s.next[i] != nullptr) {
        const std::size_t size = static_cast<std::size_t>(s.current[i]->interior_count()) *
                                 codegen::size_of(s.current[i]->dtype());
        std::vector<std::byte> interior(size);
        s.current[i]->copy_interior_to(interior);
        s.next[i]->copy_interior_from(interior);
      }
    }
    for (const auto& [name, value] : record.integrals) {
      const auto& declared = s.layout.integrals;
      const auto at = std::find(declared.begin(), declared.end(), name);
      if (at == declared.end()) {
        throw Error(ErrorKind::usage, format("{}: node \"{}\" has no domain integral \"{}\"", what,
                                             record.name, name));
      }
      s.integrals[static_cast<std::size_t>(at - declared.begin())] = value;
    }
    if (!record.rebound.empty()) {
      s.rebound.insert(record.rebound.begin(), record.rebound.end());
      const bool speaks = options.comm == nullptr || options.comm->rank() == 0;
      if (speaks) {
        logger().warn("{}: node \"{}\" ran with static arrays rebound ({}) when the checkpoint was "
                      "written; they are the node's own arrays now: rebind them again",
                      what, record.name, join(record.rebound, ", "));
      }
    }
  }
  impl->together([&] { impl->push_state(); });
  logger().info("restored {} at step {}", path.string(), steps);
  return Simulation(std::move(impl));
}

} // namespace uwjit::runtime
