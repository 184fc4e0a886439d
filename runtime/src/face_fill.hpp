// Filling one face's halo of a Field from its own interior, as BoundaryFace documents: the one
// implementation behind Field::fill_halos and the global boundary of a sharded halo exchange, so
// that a sharded run fills its global faces bit for bit as a serial one does.
#pragma once

#include <uwjit/runtime/field.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace uwjit::runtime::detail {

enum class Side { low, high };

/// A field's padded array seen along `axis` as [outer][n + 2h][inner]: `outer` slabs of
/// `padded()` layers, each layer `inner` contiguous elements (a halo side is h layers a slab).
struct AxisView {
  std::int64_t outer, n, h, inner;
  AxisView(const Field& field, std::size_t axis)
      : n(field.shape()[axis]), h(field.halo()[axis]), inner(field.strides()[axis]) {
    outer = field.padded_count() / (inner * (n + 2 * h));
  }
  [[nodiscard]] std::int64_t padded() const noexcept { return n + 2 * h; }
};

/// Fills the `side` halo of `axis` by `face` (periodic: from the opposite end of this field).
/// Unchecked: the caller has checked the boundary (boundary_problem) and the dtype
/// (takes_computed_faces, f32_problem). Allocates nothing.
void fill_face(Field& field, std::size_t axis, Side side, const BoundaryFace& face);

/// fill_face of both sides of `axis`, in the slabs [first, last) of AxisView(field, axis) only
/// (`outer` slabs in all). A slab's halo is filled from that slab alone, so disjoint ranges can
/// be filled on different threads; every axis before `axis` must be filled first (its halo
/// cells are the corners this axis copies). Unchecked, as fill_face.
void fill_faces(Field& field, std::size_t axis, const Boundary& boundary, std::int64_t first,
                std::int64_t last);

/// Which halos of a state field its kernels read (StateField::halo_axes): one mask per component
/// (the field's leading `component_axes` axes, flattened), bit d for domain axis d. No masks:
/// every component reads every halo.
class ReadHalos {
public:
  ReadHalos() = default;
  ReadHalos(std::vector<std::uint32_t> masks, std::size_t component_axes)
      : m_masks(std::move(masks)), m_component_axes(component_axes) {}

  /// Whether component `c` reads the halo of field axis `axis` (a domain axis).
  [[nodiscard]] bool reads(std::size_t c, std::size_t axis) const noexcept {
    return m_masks.empty() ||
           (axis >= m_component_axes && ((m_masks[c] >> (axis - m_component_axes)) & 1U) != 0);
  }
  /// Whether every component reads the halo of field axis `axis`.
  [[nodiscard]] bool every(std::size_t axis) const noexcept;

  /// Calls fn(first, last) for each run [first, last) of consecutive slabs, of the `outer`
  /// slabs an AxisView of field axis `axis` has, whose halos are read, in order: one run of all
  /// when every component reads the axis. (Components lead a field's axes, so component c's
  /// slabs are [c outer / C, (c + 1) outer / C) of C components.) The one place that knows it.
  template <class Fn> void for_each_read_run(std::int64_t outer, std::size_t axis, Fn fn) const {
    if (every(axis)) {
      fn(std::int64_t{0}, outer);
      return;
    }
    const auto per = outer / static_cast<std::int64_t>(m_masks.size());
    for (std::size_t c = 0; c < m_masks.size(); ++c) {
      if (reads(c, axis)) {
        fn(static_cast<std::int64_t>(c) * per, static_cast<std::int64_t>(c + 1) * per);
      }
    }
  }

private:
  std::vector<std::uint32_t> m_masks;
  std::size_t m_component_axes = 0;
};

/// The slabs of AxisView(field, axis) whose halos `read` says are read: all `outer` of them, or
/// those of the components that read the axis.
[[nodiscard]] std::int64_t read_slabs(const Field& field, std::size_t axis, const ReadHalos& read);

/// fill_faces of the slabs [first, last) of the read_slabs(field, axis, read) slabs, counted over
/// the reading components only, in component order; the halos of the other components are left
/// as they are. Disjoint ranges can be filled on different threads. Unchecked, as fill_face.
void fill_read_faces(Field& field, std::size_t axis, const Boundary& boundary,
                     const ReadHalos& read, std::int64_t first, std::int64_t last);

/// Field::fill_halos(boundary) of the halos `read` says are read only, on the calling thread.
void fill_read_halos(Field& field, std::span<const Boundary> boundary, const ReadHalos& read);

/// Throws Error(usage) naming the field and the axis where Field::fill_halos would refuse
/// `boundary` (one Boundary per axis): its checks, for callers that fill the faces themselves.
void check_fill(const Field& field, std::span<const Boundary> boundary);

/// What is wrong with `boundary` on an axis of `cells` cells and a halo of `halo`, or "" if
/// nothing: periodic on one face only, a dirichlet or neumann value that is not finite or beyond
/// [-1e300, 1e300], a neumann gradient whose outer halo cell would lie more than 1e300 beyond
/// its mirror, or a periodic, dirichlet or neumann halo wider than the cells.
[[nodiscard]] std::string boundary_problem(const Boundary& boundary, std::int64_t cells, int halo);

/// How the halos of a static array are filled on an axis whose state has `boundary`: dirichlet
/// and neumann describe the state, not the static data (a conductivity beyond a hot wall is not
/// 2 value - kappa), so their faces become edge; periodic and edge stay.
[[nodiscard]] Boundary static_padding(const Boundary& boundary) noexcept;

/// Whether a field of `dtype` can take a dirichlet or neumann face (f32, f64).
[[nodiscard]] bool takes_computed_faces(Dtype dtype) noexcept;

/// What is wrong with `boundary` on a field of `dtype`, or "": a dirichlet or neumann value
/// beyond [-1e37, 1e37] on an f32 field (its halo values would overflow a float).
[[nodiscard]] std::string f32_problem(const Boundary& boundary, Dtype dtype);

} // namespace uwjit::runtime::detail
