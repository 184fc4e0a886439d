#include "halo_exchange.hpp"

#include "face_fill.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>

#include <algorithm>
#include <cstring>

namespace uwjit::runtime::detail {

namespace {

// A field seen along one axis as [outer][n + 2h][inner]: a halo side is `outer` chunks of
// h * inner contiguous elements.
struct Layers : AxisView {
  std::size_t element = 0;

  Layers(const Field& field, std::size_t axis)
      : AxisView(field, axis), element(codegen::size_of(field.dtype())) {}
  [[nodiscard]] std::size_t chunk() const { return static_cast<std::size_t>(h * inner) * element; }
  // The address of padded layer `layer` in slab `o`.
  [[nodiscard]] std::byte* at(Field& field, std::int64_t o, std::int64_t layer) const {
    return static_cast<std::byte*>(field.data()) +
           static_cast<std::size_t>((o * padded() + layer) * inner) * element;
  }
};

// Calls fn(o, k) for the slabs o of `l` whose halos along `axis` are read, k counting them.
template <class Fn>
void for_each_read_slab(const Layers& l, const ReadHalos& read, std::size_t axis, Fn fn) {
  std::int64_t k = 0;
  read.for_each_read_run(l.outer, axis, [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t o = first; o < last; ++o) {
      fn(o, k++);
    }
  });
}

// Copies the h layers that start at padded layer `first` of the read slabs into `out`, slab by
// slab.
void pack(Field& field, const Layers& l, const ReadHalos& read, std::size_t axis,
          std::int64_t first, std::span<std::byte> out) {
  for_each_read_slab(l, read, axis, [&](std::int64_t o, std::int64_t k) {
    std::memcpy(out.data() + static_cast<std::size_t>(k) * l.chunk(), l.at(field, o, first),
                l.chunk());
  });
}

void unpack(Field& field, const Layers& l, const ReadHalos& read, std::size_t axis,
            std::int64_t first, std::span<const std::byte> in) {
  for_each_read_slab(l, read, axis, [&](std::int64_t o, std::int64_t k) {
    std::memcpy(l.at(field, o, first), in.data() + static_cast<std::size_t>(k) * l.chunk(),
                l.chunk());
  });
}

// Distinct tags per field, axis and direction, so that transfers in flight together never match
// the wrong receive (two neighbours may be the same rank).
int tag(std::size_t f, std::size_t axis, Side towards) {
  return static_cast<int>(f * 32 + axis * 2 + (towards == Side::low ? 0 : 1));
}

} // namespace

HaloExchanger::HaloExchanger(comm::Comm& comm, std::vector<std::vector<AxisPlan>> plans,
                             LocalFill local_fill, std::vector<ReadHalos> reads)
    : m_comm(&comm), m_local_fill(std::move(local_fill)), m_plans(std::move(plans)),
      m_reads(std::move(reads)) {
  UWJIT_ASSERT(m_reads.empty() || m_reads.size() == m_plans.size(),
               "HaloExchanger: no read halos, or one per field");
}

const ReadHalos& HaloExchanger::read(std::size_t f) const {
  static const ReadHalos k_every;
  return m_reads.empty() ? k_every : m_reads[f];
}

void HaloExchanger::fill_local(Field& field, std::size_t f, std::size_t axis,
                               const Boundary& boundary) {
  const ReadHalos& read = this->read(f);
  if (m_local_fill) {
    m_local_fill(field, axis, boundary, read);
  } else {
    fill_read_faces(field, axis, boundary, read, 0, read_slabs(field, axis, read));
  }
}

void HaloExchanger::ensure_buffers(std::span<Field* const> fields) {
  if (m_ready) {
    return;
  }
  UWJIT_ASSERT(fields.size() == m_plans.size(), "HaloExchanger: a plan per field");
  m_buffers.resize(fields.size());
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const Field& field = *fields[f];
    UWJIT_ASSERT(m_plans[f].size() == static_cast<std::size_t>(field.rank()),
                 "HaloExchanger: a plan per field axis");
    m_buffers[f].resize(m_plans[f].size());
    for (std::size_t axis = 0; axis < m_plans[f].size(); ++axis) {
      if (!m_plans[f][axis].exchange || field.halo()[axis] == 0) {
        continue;
      }
      const std::size_t bytes =
          static_cast<std::size_t>(read_slabs(field, axis, read(f))) * Layers(field, axis).chunk();
      Buffers& b = m_buffers[f][axis];
      b.send_low.resize(m_plans[f][axis].low >= 0 ? bytes : 0);
      b.receive_low.resize(m_plans[f][axis].low >= 0 ? bytes : 0);
      b.send_high.resize(m_plans[f][axis].high >= 0 ? bytes : 0);
      b.receive_high.resize(m_plans[f][axis].high >= 0 ? bytes : 0);
    }
  }
  m_pending.reserve(4 * fields.size());
  m_ready = true;
}

void HaloExchanger::exchange_sync(Field& field, std::size_t f, std::size_t axis) {
  const AxisPlan& plan = m_plans[f][axis];
  const Layers l(field, axis);
  Buffers& b = m_buffers[f][axis];
  // Towards low: my first layers become the low neighbour's high halo; then towards high. A side
  // without a neighbour only sends or only receives (a blocking wait on one transfer).
  for (const Side towards : {Side::low, Side::high}) {
    const int dest = towards == Side::low ? plan.low : plan.high;
    const int source = towards == Side::low ? plan.high : plan.low;
    auto& send = towards == Side::low ? b.send_low : b.send_high;
    auto& receive = towards == Side::low ? b.receive_high : b.receive_low;
    const int t = tag(f, axis, towards);
    if (dest >= 0) {
      pack(field, l, read(f), axis, towards == Side::low ? l.h : l.n, send);
    }
    if (dest >= 0 && source >= 0) {
      m_comm->send_receive(send, dest, receive, source, t);
    } else if (dest >= 0) {
      m_comm->start_send(send, dest, t)->wait();
    } else if (source >= 0) {
      m_comm->start_receive(receive, source, t)->wait();
    }
    if (source >= 0) {
      unpack(field, l, read(f), axis, towards == Side::low ? l.h + l.n : 0, receive);
    }
  }
}

bool HaloExchanger::exchanges(std::span<Field* const> fields, std::size_t f,
                              std::size_t axis) const {
  return axis < m_plans[f].size() && m_plans[f][axis].exchange && fields[f]->halo()[axis] > 0;
}

// Starts both directions' transfers of one field axis: receives first, so that a neighbour's
// send finds its receive posted.
void HaloExchanger::post(Field& field, std::size_t f, std::size_t axis) {
  const AxisPlan& plan = m_plans[f][axis];
  Buffers& b = m_buffers[f][axis];
  if (plan.high >= 0) {
    m_pending.push_back(m_comm->start_receive(b.receive_high, plan.high, tag(f, axis, Side::low)));
  }
  if (plan.low >= 0) {
    m_pending.push_back(m_comm->start_receive(b.receive_low, plan.low, tag(f, axis, Side::high)));
  }
  const Layers l(field, axis);
  if (plan.low >= 0) {
    pack(field, l, read(f), axis, l.h, b.send_low);
    m_pending.push_back(m_comm->start_send(b.send_low, plan.low, tag(f, axis, Side::low)));
  }
  if (plan.high >= 0) {
    pack(field, l, read(f), axis, l.n, b.send_high);
    m_pending.push_back(m_comm->start_send(b.send_high, plan.high, tag(f, axis, Side::high)));
  }
}

void HaloExchanger::wait_pending() {
  for (auto& request : m_pending) {
    request->wait();
  }
  m_pending.clear();
}

// Unpacks what post() received.
void HaloExchanger::receive(Field& field, std::size_t f, std::size_t axis) {
  const Layers l(field, axis);
  if (m_plans[f][axis].high >= 0) {
    unpack(field, l, read(f), axis, l.h + l.n, m_buffers[f][axis].receive_high);
  }
  if (m_plans[f][axis].low >= 0) {
    unpack(field, l, read(f), axis, 0, m_buffers[f][axis].receive_low);
  }
}

// A side without a neighbour is the global boundary of a non-periodic axis: filled by its face,
// as a serial run fills it.
void HaloExchanger::fill_global_faces(Field& field, std::size_t f, std::size_t axis, Faces which) {
  const AxisPlan& plan = m_plans[f][axis];
  if (plan.low < 0 && (which == Faces::all || plan.boundary.low.computed())) {
    fill_face(field, axis, Side::low, plan.boundary.low);
  }
  if (plan.high < 0 && (which == Faces::all || plan.boundary.high.computed())) {
    fill_face(field, axis, Side::high, plan.boundary.high);
  }
}

void HaloExchanger::fill(std::span<Field* const> fields, ExchangeMode mode) {
  fill_except(fields, mode, k_none);
}

void HaloExchanger::fill_except(std::span<Field* const> fields, ExchangeMode mode,
                                std::size_t deferred) {
  ensure_buffers(fields);
  std::size_t axes = 0;
  for (const Field* field : fields) {
    axes = std::max(axes, static_cast<std::size_t>(field->rank()));
  }
  const auto skipped = [&](std::size_t f, std::size_t axis) {
    return deferred != k_none && axis + 1 + deferred == static_cast<std::size_t>(fields[f]->rank());
  };
  for (std::size_t axis = 0; axis < axes; ++axis) {
    // Transfers first (all fields at once when overlapping), then the local sides.
    if (mode == ExchangeMode::overlap) {
      m_pending.clear();
      for (std::size_t f = 0; f < fields.size(); ++f) {
        if (exchanges(fields, f, axis) && !skipped(f, axis)) {
          post(*fields[f], f, axis);
        }
      }
      wait_pending();
      for (std::size_t f = 0; f < fields.size(); ++f) {
        if (exchanges(fields, f, axis) && !skipped(f, axis)) {
          receive(*fields[f], f, axis);
        }
      }
    }
    for (std::size_t f = 0; f < fields.size(); ++f) {
      Field& field = *fields[f];
      if (axis >= m_plans[f].size() || field.halo()[axis] == 0 || skipped(f, axis)) {
        continue;
      }
      const AxisPlan& plan = m_plans[f][axis];
      if (!plan.exchange) {
        fill_local(field, f, axis, plan.boundary);
        continue;
      }
      if (mode == ExchangeMode::sync) {
        exchange_sync(field, f, axis);
      }
      fill_global_faces(field, f, axis, Faces::all);
    }
  }
}

void HaloExchanger::start_fill(std::span<Field* const> fields, ExchangeMode mode,
                               std::size_t deferred) {
  UWJIT_ASSERT(m_deferred == k_none, "HaloExchanger: start_fill twice without finish_fill");
  fill_except(fields, mode, deferred);
  m_pending.clear();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const auto rank = static_cast<std::size_t>(fields[f]->rank());
    UWJIT_ASSERT(deferred < rank, "HaloExchanger: the deferred axis is not a field axis");
    const std::size_t axis = rank - 1 - deferred;
    UWJIT_ASSERT(fields[f]->halo()[axis] == 0 || m_plans[f][axis].exchange,
                 "HaloExchanger: the deferred axis is not exchanged");
    if (exchanges(fields, f, axis)) {
      post(*fields[f], f, axis);
    }
  }
  m_deferred = deferred;
}

void HaloExchanger::finish_fill(std::span<Field* const> fields) {
  UWJIT_ASSERT(m_deferred != k_none, "HaloExchanger: finish_fill without start_fill");
  wait_pending();
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const std::size_t axis = static_cast<std::size_t>(fields[f]->rank()) - 1 - m_deferred;
    if (exchanges(fields, f, axis)) {
      receive(*fields[f], f, axis);
      fill_global_faces(*fields[f], f, axis, Faces::all);
    }
    // The axes after the deferred one were filled before it, so their corners with it hold its
    // rule applied to theirs. For copies (exchange, edge, periodic) the order does not matter;
    // dirichlet and neumann faces do not commute (in value or in rounding), so the computed
    // faces of the later axes are filled again: the corners then hold what fill() (axis order)
    // gives, bit for bit. Their cells off the corners come out the same as before.
    for (std::size_t later = axis + 1; later < static_cast<std::size_t>(fields[f]->rank());
         ++later) {
      if (fields[f]->halo()[later] == 0) {
        continue;
      }
      const AxisPlan& plan = m_plans[f][later];
      if (plan.exchange) {
        fill_global_faces(*fields[f], f, later, Faces::computed);
      } else if (plan.boundary.low.computed() || plan.boundary.high.computed()) {
        fill_local(*fields[f], f, later, plan.boundary);
      }
    }
  }
  m_deferred = k_none;
}

} // namespace uwjit::runtime::detail
