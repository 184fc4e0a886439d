// Halo exchange between ranks: one field axis at a time, the layers packed into buffers that are
// sized on first use and reused.
#pragma once

#include "face_fill.hpp"

#include <uwjit/comm/comm.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace uwjit::runtime::detail {

/// How the halo of one field axis is filled. `exchange` false: locally, from the field's own
/// interior, with `boundary` (as Field::fill_halos does). `exchange` true: each side from the rank
/// `low` / `high` (which may be this rank: a periodic axis over one rank), or, where that is -1
/// (the global boundary of a non-periodic axis), by that side's face of `boundary`.
struct AxisPlan {
  bool exchange = false;
  Boundary boundary = Boundary::edge;
  int low = -1;
  int high = -1;
};

/// Fills the halos of a fixed set of fields (one plan per field axis), axis by axis in each
/// field's axis order, so that halos of earlier axes travel with the layers of later ones and
/// corners are right. Send and receive buffers are allocated on the first fill() and reused.
/// Point-to-point over `comm`: every rank that neighbours another must call fill() the same
/// number of times with the same plans. Not thread-safe.
class HaloExchanger {
public:
  /// Fills one field axis's halos locally from the field's own interior (an axis that is not
  /// exchanged), as fill_read_faces over all its read slabs does: e.g. on the threads of an
  /// executor.
  using LocalFill =
      std::function<void(Field&, std::size_t axis, const Boundary&, const ReadHalos&)>;

  /// `local_fill` fills the axes that are not exchanged; empty: on the calling thread. `reads`
  /// (empty: every halo; or one per field, the same on every rank): the halos that are filled,
  /// locally or by an exchange that carries the layers of the reading components only. The
  /// global faces of an exchanged axis are filled whole.
  HaloExchanger(comm::Comm& comm, std::vector<std::vector<AxisPlan>> plans,
                LocalFill local_fill = {}, std::vector<ReadHalos> reads = {});

  /// Fills every halo of `fields` (the same layouts, in the same order, on every call).
  void fill(std::span<Field* const> fields, ExchangeMode mode);

  /// The first half of an overlapped fill: fills every halo of `fields` except those of the
  /// domain axis `deferred` axes before the last (every field's trailing axes are the domain),
  /// as fill() does with `mode`, then starts that axis's transfers and returns without waiting.
  /// Until finish_fill(), the caller may update every cell that reads no halo of that axis. The
  /// axis must be exchanged (AxisPlan::exchange) and every rank must defer the same axis (the
  /// order of the transfers is the same everywhere, so none waits for ever). Together the two
  /// calls fill what fill() fills, with the same values: a halo layer carries the halos of the
  /// other axes whichever axis comes last.
  void start_fill(std::span<Field* const> fields, ExchangeMode mode, std::size_t deferred);

  /// The second half: waits for the deferred axis's transfers and fills its halos.
  void finish_fill(std::span<Field* const> fields);

private:
  struct Buffers {
    std::vector<std::byte> send_low, send_high, receive_low, receive_high;
  };
  static constexpr std::size_t k_none = static_cast<std::size_t>(-1);
  void ensure_buffers(std::span<Field* const> fields);
  void fill_except(std::span<Field* const> fields, ExchangeMode mode, std::size_t deferred);
  [[nodiscard]] bool exchanges(std::span<Field* const> fields, std::size_t f,
                               std::size_t axis) const;
  void exchange_sync(Field& field, std::size_t f, std::size_t axis);
  void post(Field& field, std::size_t f, std::size_t axis);
  void wait_pending();
  void receive(Field& field, std::size_t f, std::size_t axis);
  enum class Faces { all, computed };
  void fill_global_faces(Field& field, std::size_t f, std::size_t axis, Faces which);

  void fill_local(Field& field, std::size_t f, std::size_t axis, const Boundary& boundary);
  [[nodiscard]] const ReadHalos& read(std::size_t f) const;

  comm::Comm* m_comm;
  LocalFill m_local_fill;
  std::vector<std::vector<AxisPlan>> m_plans;  // per field, per field axis
  std::vector<ReadHalos> m_reads;              // per field, or empty: every halo
  std::vector<std::vector<Buffers>> m_buffers; // per field, per field axis
  std::vector<std::unique_ptr<comm::Comm::Request>> m_pending;
  std::size_t m_deferred = k_none; // between start_fill and finish_fill: the deferred axis
  bool m_ready = false;
};

} // namespace uwjit::runtime::detail
