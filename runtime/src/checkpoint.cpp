// Simulation::checkpoint and Simulation::restore: the checkpoint format of simulation.hpp,
// written atomically, read back and checked, one file for a job on any rank count.
#include "byte_io.hpp"
#include "runtime_log.hpp"
#include "simulation_impl.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/posix_file.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace uwjit::runtime {

using namespace detail; // this file is the runtime's own

namespace {

constexpr std::string_view k_magic = "UWJITCKP";

// One node as the checkpoint format stores it.
struct CheckpointNode {
  const Node* node;
  std::vector<const Field*> fields;
  const std::vector<std::string>* integral_names;
  std::span<const double> integrals;
  std::vector<std::string> rebound; // sorted
};

// Writes the checkpoint format of simulation.hpp to `path`, atomically.
void write_checkpoint(const std::filesystem::path& path, std::int64_t steps,
                      std::span<const CheckpointNode> nodes) {
  detail::ByteWriter out;
  out.raw(k_magic.data(), k_magic.size());
  out.u32(k_checkpoint_version);
  out.i64(steps);
  out.u32(static_cast<std::uint32_t>(nodes.size()));
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
    for (const Field* f : n.fields) {
      out.str(f->name());
      out.u8(static_cast<std::uint8_t>(f->dtype()));
      out.u32(static_cast<std::uint32_t>(f->rank()));
      for (const std::int64_t extent : f->shape()) {
        out.i64(extent);
      }
      const std::size_t bytes =
          static_cast<std::size_t>(f->interior_count()) * codegen::size_of(f->dtype());
      out.u64(bytes);
      const std::size_t at = out.bytes().size();
      out.bytes().resize(at + bytes);
      f->copy_interior_to(
          std::span<std::byte>(reinterpret_cast<std::byte*>(out.bytes().data() + at), bytes));
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
  const std::string checksum = cache::sha256_hex(out.bytes());
  out.raw(checksum.data(), checksum.size());

  // A reader never sees a torn checkpoint, and a symlink at its name is never followed.
  const std::string& bytes = out.bytes();
  try {
    posix::write_file_atomically(path, bytes, {.mode = 0644});
  } catch (const Error& e) {
    throw Error(ErrorKind::io, format("checkpoint {}: {}", path.string(), e.what()));
  }
  logger().info("checkpoint {} written at step {} ({} bytes)", path.string(), steps, bytes.size());
}

} // namespace

void Simulation::checkpoint(const std::filesystem::path& path) const {
  if (m_impl->decomposition && m_impl->decomposition->comm->size() > 1) {
    // One file for the job: the whole domain gathered, written by rank 0, its outcome shared so
    // that a failure raises the same error on every rank.
    comm::Comm& comm = *m_impl->decomposition->comm;
    const Snapshot whole = gathered();
    comm::together(comm, [&] {
      if (comm.rank() == 0) {
        whole.checkpoint(path);
      }
    });
    return;
  }
  m_impl->pull_state();
  std::vector<CheckpointNode> nodes;
  for (const auto& s : m_impl->states) {
    CheckpointNode n{s.node.get(),
                     {},
                     &s.layout.integrals,
                     s.integrals,
                     std::vector<std::string>(s.rebound.begin(), s.rebound.end())};
    for (const auto& f : s.current) {
      n.fields.push_back(f.get());
    }
    nodes.push_back(std::move(n));
  }
  write_checkpoint(path, m_impl->steps, nodes);
}

void Snapshot::checkpoint(const std::filesystem::path& path) const {
  std::vector<CheckpointNode> nodes;
  std::vector<std::vector<std::string>> names(m_nodes.size());
  for (std::size_t i = 0; i < m_nodes.size(); ++i) {
    const NodeData& d = m_nodes[i];
    names[i] = d.node->layout().integrals;
    CheckpointNode n{d.node.get(), {}, &names[i], d.integrals, d.rebound};
    for (const auto& f : d.fields) {
      n.fields.push_back(f.get());
    }
    nodes.push_back(std::move(n));
  }
  write_checkpoint(path, m_steps, nodes);
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
      differences.push_back(format("{}: only in the file ({})", printable(key), value.text()));
    } else if (!same(value, it->second)) {
      differences.push_back(
          format("{}: {} in the file, {} now", printable(key), value.text(), it->second.text()));
    }
  }
  for (const auto& [key, value] : rebuilt.values()) {
    if (!file.values().contains(key)) {
      differences.push_back(format("{}: not in the file ({} now)", key, value.text()));
    }
  }
  return join(differences, "; ");
}

struct FieldRecord {
  std::string name;
  std::uint8_t dtype;
  std::vector<std::int64_t> shape;
  std::string_view bytes;
};

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
  // A regular file only (a FIFO or device is refused without blocking), and its magic read
  // before the rest, so that a large file of another kind is refused without being read.
  const auto read_file = [&] {
    return posix::read_input_file(
        path, {.what = what, .magic = k_magic, .not_magic = "not a uwjit checkpoint (bad magic)"});
  };
  std::string file;
  if (options.comm != nullptr && options.comm->size() > 1) {
    // Rank 0 reads (the ranks need not share a file system) and broadcasts the bytes; every
    // rank then parses the same bytes and raises the same errors.
    comm::Comm& comm = *options.comm;
    file = comm::together(comm, [&] { return comm.rank() == 0 ? read_file() : std::string(); });
    file = comm.broadcast(std::move(file), 0);
  } else {
    file = read_file();
  }
  if (file.size() < k_magic.size() + 4 + 64) {
    throw Error(ErrorKind::io, format("{}: truncated", what));
  }
  const std::string_view body(file.data(), file.size() - 64);
  if (cache::sha256_hex(body) != std::string_view(file).substr(file.size() - 64)) {
    throw Error(ErrorKind::io, format("{}: truncated or corrupt (checksum mismatch)", what));
  }
  detail::ByteReader reader(body, what);
  (void)reader.raw(k_magic.size());
  const std::uint32_t version = reader.u32();
  if (version != 1 && version != k_checkpoint_version) {
    throw Error(ErrorKind::io, format("{}: format version {} (this uwjit reads versions 1 to {})",
                                      what, version, k_checkpoint_version));
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
        throw Error(ErrorKind::io, format("{}: field \"{}\" has rank {}", what, field.name, rank));
      }
      const auto dtype = static_cast<codegen::Dtype>(field.dtype);
      if (!codegen::is_supported(dtype)) {
        throw Error(ErrorKind::io, format("{}: field \"{}\" of node \"{}\" has an unknown dtype "
                                          "code {}",
                                          what, field.name, record.name, field.dtype));
      }
      // The byte count follows from the dtype and shape; a file that says otherwise is named
      // for what it is, not as truncated.
      std::uint64_t expected = codegen::size_of(dtype);
      for (const std::int64_t extent : field.shape) {
        if (extent < 0 ||
            (extent > 0 && expected > UINT64_MAX / static_cast<std::uint64_t>(extent))) {
          throw Error(ErrorKind::io, format("{}: field \"{}\" of node \"{}\" has shape {}", what,
                                            field.name, record.name, shape_text(field.shape)));
        }
        expected *= static_cast<std::uint64_t>(extent);
      }
      const std::uint64_t stored = reader.u64();
      if (stored != expected) {
        throw Error(ErrorKind::io,
                    format("{}: field \"{}\" of node \"{}\" holds {} bytes, but a {} field of {} "
                           "takes {}",
                           what, field.name, record.name, stored, shape_text(field.shape),
                           codegen::to_string(dtype), expected));
      }
      field.bytes = reader.raw(stored);
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
      std::vector<std::int64_t> whole_shape;
      if (target != nullptr) {
        whole_shape = target->shape();
        const std::size_t lead = whole_shape.size() - s.shard.global.size();
        std::copy(s.shard.global.begin(), s.shard.global.end(), whole_shape.begin() + lead);
      }
      std::int64_t whole_count = 1;
      for (const std::int64_t n : whole_shape) {
        whole_count *= n;
      }
      if (target == nullptr || static_cast<std::uint8_t>(target->dtype()) != saved.dtype ||
          whole_shape != saved.shape ||
          saved.bytes.size() !=
              static_cast<std::size_t>(whole_count) * codegen::size_of(target->dtype())) {
        throw Error(ErrorKind::usage,
                    format("{}: field \"{}\" of node \"{}\" ({}) does not match the node's "
                           "state field",
                           what, saved.name, record.name, shape_text(saved.shape)));
      }
      const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(saved.bytes.data()),
                                             saved.bytes.size());
      if (whole_shape == target->shape()) {
        target->copy_interior_from(bytes);
      } else {
        Field whole(saved.name, target->dtype(), whole_shape,
                    std::vector<int>(whole_shape.size(), 0));
        whole.copy_interior_from(bytes);
        copy_slab(whole, *target, s.shard.offset, Direction::global_to_local);
      }
    }
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
