// An ensemble's members: made from the factory with their values, checked against the first
// (layout and kernel text), bound and given their initial state, in the slots the sampler
// refills (over ranks, the slots of every rank numbered in rank order), and retired, their
// buffers kept for the next.
#include "ensemble_impl.hpp"

#include "../decomposition.hpp"

#include <uwjit/runtime/snapshot.hpp>

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace uwjit::runtime {

namespace detail {

// What members must share of a layout, in words (boundaries, dt and values may differ).
std::string shared_layout(const Layout& l) {
  std::string text = format("domain {}, halo", shape_text(l.domain));
  for (const int h : l.halo) {
    text += format(" {}", h);
  }
  text += ", fields";
  for (const auto& f : l.fields) {
    text += format(" {}:{}{}", f.name, codegen::to_string(f.dtype), shape_text(f.components));
  }
  text += format(", integrals ({}), {} stage(s)", join(l.integrals), l.stages);
  for (const auto mode : l.modes) {
    text += format(" {}", codegen::to_string(mode));
  }
  return text;
}

std::string values_text(const std::vector<std::string>& names, const std::vector<double>& values) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    parts.push_back(format("{}={}", names[i], general(values[i])));
  }
  return join(parts, " ");
}

// What one member holds: its state buffers (halos included), its static arrays and their
// halo-padded copies.
double member_memory(const NodeState& s) {
  double bytes = 0;
  for (std::size_t i = 0; i < s.current.size(); ++i) {
    const double one = static_cast<double>(s.current[i]->padded_count()) *
                       static_cast<double>(codegen::size_of(s.current[i]->dtype()));
    bytes += s.next[i] ? 2 * one : one;
  }
  for (const auto& [key, entry] : s.bound.entries()) {
    if (const auto* array = std::get_if<StaticArray>(&entry)) {
      bytes += static_cast<double>(array->size_bytes());
    }
  }
  for (const auto& stage : s.stages) {
    for (const auto& padded : stage.binding.padded) {
      bytes += static_cast<double>(padded->padded_count()) *
               static_cast<double>(codegen::size_of(padded->dtype()));
    }
  }
  return bytes;
}

std::vector<MemberField> zero_fields(const MemberColumns& columns) {
  std::vector<MemberField> fields;
  for (const auto& column : columns.fields) {
    std::int64_t count = 1;
    for (const auto n : column.shape) {
      count *= n;
    }
    fields.push_back(
        {column.name, column.dtype, column.shape,
         std::vector<std::byte>(static_cast<std::size_t>(count) * codegen::size_of(column.dtype))});
  }
  return fields;
}

std::string StageRole::label() const {
  return count > 1 ? format("stage {}: ", index) : std::string{};
}

} // namespace detail

using namespace detail; // this file is the runtime's own

Params Ensemble::Impl::member_params(const std::vector<double>& values) const {
  Params params = base;
  for (std::size_t i = 0; i < varied.size(); ++i) {
    const Value& was = base.at(varied[i]);
    if (was.is_int()) {
      const double v = values[i];
      if (v != std::floor(v) || std::abs(v) > 9.0e15) {
        throw Error(ErrorKind::usage,
                    format("param \"{}\" is a whole number; {} is not", varied[i], general(v)));
      }
      params.set(varied[i], static_cast<std::int64_t>(v));
    } else if (was.is_double()) {
      params.set(varied[i], values[i]);
    } else {
      throw Error(ErrorKind::usage, format("param \"{}\" is a {}; an ensemble varies numbers",
                                           varied[i], was.type_name()));
    }
  }
  return params;
}

std::unique_ptr<EnsembleMember> Ensemble::Impl::build(std::int64_t id, std::vector<double> values,
                                                      const MemberResult* from) {
  auto m = std::make_unique<Member>();
  m->id = id;
  m->values = std::move(values);
  const std::shared_ptr<const Node> node = make(member_params(m->values));
  if (!node) {
    throw Error(ErrorKind::usage, "ensemble: the member factory gave no node");
  }
  // The member is reported with its values: the node must run with them (a factory that hands
  // back a node it made before, or changes a value, would label one run with another's params).
  for (std::size_t i = 0; i < varied.size(); ++i) {
    const Params& got = node->params();
    const Value* has = got.contains(varied[i]) ? &got.at(varied[i]) : nullptr;
    if (has == nullptr || !(has->is_int() || has->is_double()) ||
        has->as_double() != m->values[i]) {
      throw Error(ErrorKind::usage,
                  format("ensemble: the member factory gave a node whose param \"{}\" is {}, not "
                         "the member's {}: make each member's node from the params it is given",
                         varied[i], has != nullptr ? has->text() : std::string("missing"),
                         Value(m->values[i]).text()));
    }
  }
  NodeState& s = m->state;
  s.node = node;
  s.layout = read_layout(*node);
  const bool first = texts.empty();
  auto differs = [&](std::string_view what) {
    mismatch = true;
    return Error(
        ErrorKind::usage,
        format("ensemble of {}: member {} ({}) {} member 0's; the params an ensemble varies "
               "may change run-time params, static data, boundary values and initial "
               "states, never the layout or what is compiled into the kernel",
               type, id, values_text(varied, m->values), what));
  };
  if (first) {
    type = node->type();
    integral_names = s.layout.integrals;
    layout_text = shared_layout(s.layout);
    if (!s.layout.inputs.empty()) {
      throw Error(ErrorKind::usage,
                  format("ensemble of {}: the node reads other nodes' fields (inputs); an "
                         "ensemble holds members of one node type alone",
                         type));
    }
    for (const auto& change : options.until.changes) {
      const auto at = std::find(integral_names.begin(), integral_names.end(), change.integral);
      if (at == integral_names.end()) {
        throw Error(ErrorKind::usage,
                    format("stop rule \"{}:{}<{}\": {} has no integral \"{}\"{}; its "
                           "integrals are {}",
                           change.below ? "below" : "change", change.integral,
                           general(change.tolerance), type, change.integral,
                           did_you_mean(change.integral, integral_names),
                           integral_names.empty() ? "none" : join(integral_names)));
      }
      change_index.push_back(static_cast<std::size_t>(at - integral_names.begin()));
    }
  } else if (node->type() != type) {
    throw differs(format("is a {} node, not a {} like", node->type(), type));
  } else if (shared_layout(s.layout) != layout_text) {
    throw differs(format("has the layout {}, not that of", shared_layout(s.layout)));
  }
  s.shard = serial_shard(s.layout);
  s.bound = node->static_data();
  std::vector<Emitted> emitted =
      emit(*node, s.layout, s.bound, node->static_data(), false, device != nullptr, true);
  if (first) {
    for (const auto& e : emitted) {
      texts.push_back(e.source.canonical());
      slots.push_back(e.source.slots());
      sources.push_back(e.source);
    }
  } else {
    for (std::size_t stage = 0; stage < emitted.size(); ++stage) {
      if (emitted[stage].source.canonical() != texts[stage]) {
        throw differs("writes a kernel text other than");
      }
    }
  }
  for (auto& e : emitted) {
    Binding binding = bind_kernel(*node, s.layout, e.writer, s.bound, serial_padder(s.layout));
    s.stages.emplace_back();
    s.stages.back().binding = std::move(binding);
    s.stages.back().writer.emplace(std::move(e.writer));
  }
  const std::vector<Field*> fields = reuse_fields(s);
  State state(fields, Slab{s.shard.offset, s.shard.extent, s.shard.global});
  node->initial_state(state);
  if (from != nullptr) {
    // It goes on from where it left the stage before: its fields, steps and integrals.
    if (from->fields.size() != s.current.size()) {
      throw Error(ErrorKind::internal, format("member {} arrived with {} fields, not {}", id,
                                              from->fields.size(), s.current.size()));
    }
    for (std::size_t i = 0; i < s.current.size(); ++i) {
      s.current[i]->copy_interior_from(from->fields[i].data);
    }
    m->steps = from->steps;
    m->entered = from->steps;
  }
  // A retired member's next buffers start as a new member's would (wire() makes those it makes
  // as copies), so that a cell a kernel leaves unwritten is the same as alone.
  for (std::size_t i = 0; i < s.next.size(); ++i) {
    if (s.next[i] != nullptr) {
      s.next[i]->copy_from(*s.current[i]);
    }
  }
  s.integrals.assign(s.layout.integrals.size(), 0.0);
  if (from != nullptr && from->integrals.size() == s.integrals.size()) {
    s.integrals = from->integrals;
  }
  s.wire();
  for (std::size_t stage = 0; stage < s.stages.size(); ++stage) {
    codegen::set_table_lengths(s.stages[stage].args, slots[stage]);
  }
  m->previous = s.integrals;
  return m;
}

// The free slots take the sampler's next members, until it is exhausted; only those members'
// states are built. Serially, in slot order, and none while a member waits for a sink. Over
// ranks, every rank draws the same members from its own sampler, the ranks' free slots numbered
// in rank order (an all-gather of one count per rank), each building only its own: no member
// twice, none lost, and slots refilled wherever members finish first. A member the node's own
// code cannot build (its factory or initial state refusing its params) leaves at once as
// failed; one that differs from the first is an error (on every rank).
void Ensemble::Impl::allocate() {
  if (role.fed()) {
    allocate_fed();
    return;
  }
  std::vector<std::size_t> free;
  if (comm != nullptr || unplaced.empty()) {
    for (std::size_t slot = 0; slot < members.size(); ++slot) {
      if (!members[slot]) {
        free.push_back(slot);
      }
    }
  }
  if (exhausted) {
    return; // every rank alike
  }
  std::int64_t before = 0;
  auto total = static_cast<std::int64_t>(free.size());
  if (comm != nullptr) {
    const auto counts = comm->all_gather(std::to_string(free.size()));
    total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      const std::int64_t count = std::stoll(counts[r]);
      before += static_cast<int>(r) < comm->rank() ? count : 0;
      total += count;
    }
  }
  std::vector<std::pair<std::int64_t, std::vector<double>>> mine;
  for (std::int64_t k = 0; k < total; ++k) {
    auto values = sampler->next();
    if (!values) {
      exhausted = true;
      break;
    }
    const std::int64_t id = next_id++;
    if (k >= before && k < before + static_cast<std::int64_t>(free.size())) {
      mine.emplace_back(id, std::move(*values));
    }
  }
  const auto unbuilt = [&](std::size_t i, const char* why) {
    MemberResult r;
    r.id = mine[i].first;
    r.values = mine[i].second;
    r.status = MemberStatus::failed;
    r.reason = format("not built: {}", why);
    r.integrals.assign(integral_names.size(), std::nan(""));
    leave_unbuilt(std::move(r));
  };
  collectively([&] {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      try {
        members[free[i]] = build(mine[i].first, mine[i].second);
      } catch (const Error& error) {
        if (mismatch) {
          throw;
        }
        unbuilt(i, error.what());
      } catch (const std::exception& error) {
        // The host's own exception (a Python factory that raised, Ctrl-C in it): this member
        // and the others drawn with it leave as failed, so that none is lost, and the exception
        // goes on to the host.
        for (std::size_t j = i; j < mine.size(); ++j) {
          unbuilt(j, error.what());
        }
        throw;
      }
    }
  });
}

// A stage of a pipeline after the first: its free slots take the members the stage before sent,
// in the order they came, each going on from its state there with this stage's params. A member
// that failed before passes through untouched (it waits for a sink like one unbuilt); one that
// this stage's node refuses leaves as failed, with the state it came with.
void Ensemble::Impl::allocate_fed() {
  std::size_t slot = 0;
  while (!inbox.empty()) {
    if (inbox.front().status == MemberStatus::failed) {
      unplaced.push_back(std::move(inbox.front()));
      inbox.pop_front();
      continue;
    }
    while (slot < members.size() && members[slot]) {
      ++slot;
    }
    if (slot == members.size() || !unplaced.empty()) {
      return; // no room, or members before it still wait for a sink
    }
    MemberResult from = std::move(inbox.front());
    inbox.pop_front();
    try {
      members[slot] = build(from.id, from.values, &from);
    } catch (const Error& error) {
      if (mismatch) {
        throw;
      }
      from.status = MemberStatus::failed;
      from.reason = format("{}not built: {}", role.label(), error.what());
      unplaced.push_back(std::move(from));
    } catch (const std::exception& error) {
      // The host's own exception: the member leaves as failed, and the exception goes on.
      from.status = MemberStatus::failed;
      from.reason = format("{}not built: {}", role.label(), error.what());
      unplaced.push_back(std::move(from));
      throw;
    }
  }
}

// A member that has left: its state buffers are kept for the next member built.
void Ensemble::Impl::retire(std::unique_ptr<EnsembleMember> member) {
  if (member != nullptr && spare.size() < members.size()) {
    spare.emplace_back(std::move(member->state.current), std::move(member->state.next));
  }
}

// A member that leaves, as VTK files for ParaView (EnsembleOptions::vtk): its node's write_vtk
// of a snapshot of its state, named after the node type and the member's id.
void Ensemble::Impl::write_vtk(const Member& member) const {
  if (options.vtk.empty()) {
    return;
  }
  const NodeState& s = member.state;
  Snapshot::NodeData data;
  data.node = s.node;
  for (const auto& field : s.current) {
    auto copy = std::make_shared<Field>(field->name(), field->dtype(), field->shape(),
                                        std::vector<int>(field->shape().size(), 0));
    std::vector<std::byte> interior(static_cast<std::size_t>(field->interior_count()) *
                                    codegen::size_of(field->dtype()));
    field->copy_interior_to(interior);
    copy->copy_interior_from(interior);
    data.fields.push_back(std::move(copy));
  }
  data.integrals = s.integrals;
  data.bound = s.bound;
  data.report = reports.front();
  data.stage_reports = reports;
  const Snapshot snapshot(member.steps, {std::move(data)});
  char id[32];
  std::snprintf(id, sizeof id, "%06lld", static_cast<long long>(member.id));
  (void)s.node->write_vtk(snapshot, options.vtk, type + "_" + id);
}

// A member's current buffers (with its boundaries): a retired member's when there is one (its
// interior is overwritten by initial_state, its halos filled before they are read, and its next
// buffers are written whole by each step), else new ones.
std::vector<Field*> Ensemble::Impl::reuse_fields(NodeState& s) {
  if (spare.empty()) {
    return s.allocate_fields();
  }
  auto [current, next] = std::move(spare.back());
  spare.pop_back();
  std::vector<Field*> fields;
  for (std::size_t i = 0; i < s.layout.fields.size(); ++i) {
    s.add_halo_rules(s.layout.fields[i]);
    fields.push_back(current[i].get());
  }
  s.current = std::move(current);
  s.next = std::move(next);
  return fields;
}

// A member that was never built: its fields are zeros of the members' shapes, so that every
// member has a row in every sink.
void Ensemble::Impl::leave_unbuilt(MemberResult result) {
  result.fields = zero_fields(columns);
  unplaced.push_back(std::move(result));
  ++departed;
}

} // namespace uwjit::runtime
