// Field: an owned, halo-padded, row-major N-d array; the storage of state and padded statics.
#pragma once

#include <uwjit/codegen/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

using codegen::Dtype;

/// What the halo beyond one face (the low or the high end) of a domain axis holds, on a
/// cell-centred grid: cell i has its centre at i + 1/2, the low face at 0, the high face at n.
/// Below, "the halo cell at distance k" (k = 1..halo) is cell -k beyond the low face and n-1+k
/// beyond the high face; "its mirror" is the interior cell at the same distance on the other
/// side of the face: k-1 at the low face, n-k at the high one.
///
/// | kind      | the halo cell at distance k holds          | so that                            |
/// |-----------|--------------------------------------------|------------------------------------|
/// | periodic  | the cell n cells away (the opposite end)    | the domain wraps (both faces)      |
/// | edge      | the outermost interior cell (0 or n-1)      | numpy's pad(mode="edge")           |
/// | dirichlet | 2 value - mirror                            | the face value (the mean of the    |
/// |           |                                             | two cells beside it) is `value`    |
/// | neumann   | mirror + value (2k - 1)                     | the gradient along the outward     |
/// |           |                                             | normal is `value` per cell         |
///
/// Dirichlet is the antisymmetric reflection about the face value, not the value itself: with it
/// a linear profile through the face values is exact, so a diffusion scheme's steady state is
/// the analytic one at the cell centres (a halo holding `value` would put the face half a cell
/// away). Neumann's `value` is du/dn in field units per cell, n the outward normal (at the low
/// face -x, so `value` > 0 there means u rises towards the wall); 2k - 1 is the distance between
/// the centres of a halo cell and its mirror; neumann 0 is a mirror (with a halo of 1, the same
/// as edge). Both are computed in the field's floating-point type (f32 or f64; integer fields
/// take only periodic and edge), per element: a field with component axes (e.g. D3Q19
/// populations) gets the same rule for each component. Dirichlet and neumann need a halo no
/// wider than the extent, as periodic does.
///
/// A dirichlet value or neumann gradient must be finite and within [-k_max_value, k_max_value]
/// (1e300), so that no halo value (2 value - mirror, mirror + value (2k - 1)) overflows for any
/// field value within the same bound; an f32 field takes [-1e37, 1e37]. dirichlet() and
/// neumann() refuse others (Error(usage) naming the value and the range) when the face is made;
/// a face written as an aggregate is checked when a layout or fill_halos reads it.
struct BoundaryFace {
  enum class Kind { periodic, edge, dirichlet, neumann };
  Kind kind = Kind::edge;
  double value = 0.0; ///< dirichlet: the face value; neumann: the outward gradient per cell

  /// The largest |value| a dirichlet or neumann face takes.
  static constexpr double k_max_value = 1e300;

  [[nodiscard]] static constexpr BoundaryFace periodic() noexcept { return {Kind::periodic}; }
  [[nodiscard]] static constexpr BoundaryFace edge() noexcept { return {Kind::edge}; }
  /// Throws Error(usage) unless `value` is finite and within [-k_max_value, k_max_value].
  [[nodiscard]] static BoundaryFace dirichlet(double value);
  /// Throws Error(usage) unless `gradient` is finite and within [-k_max_value, k_max_value].
  [[nodiscard]] static BoundaryFace neumann(double gradient);
  /// Dirichlet or neumann: the halo is computed from the interior, not copied.
  [[nodiscard]] constexpr bool computed() const noexcept {
    return kind == Kind::dirichlet || kind == Kind::neumann;
  }
  friend constexpr bool operator==(const BoundaryFace&, const BoundaryFace&) = default;
};

/// How the halos of one domain axis are filled: one BoundaryFace per end. One value per axis, so
/// that what was written `Boundary::edge` or `Boundary::periodic` (both faces alike) still
/// reads so, and a face of its own is `{.low = BoundaryFace::dirichlet(1), .high =
/// BoundaryFace::neumann(0)}`. Periodic must be on both faces or neither (a layout that says
/// otherwise is an Error(usage) naming the node and the axis).
struct Boundary {
  BoundaryFace low = BoundaryFace::edge();
  BoundaryFace high = BoundaryFace::edge();

  static const Boundary periodic; ///< both faces wrap
  static const Boundary edge;     ///< both faces repeat the outermost cell (zero-gradient)

  /// Both faces alike.
  [[nodiscard]] static constexpr Boundary both(BoundaryFace face) noexcept { return {face, face}; }
  friend constexpr bool operator==(const Boundary&, const Boundary&) = default;
};

inline constexpr Boundary Boundary::periodic = {BoundaryFace::periodic(), BoundaryFace::periodic()};
inline constexpr Boundary Boundary::edge = {};

/// "periodic", "edge", "dirichlet" or "neumann".
[[nodiscard]] std::string_view to_string(BoundaryFace::Kind kind) noexcept;
/// "periodic", "edge", "dirichlet 1.5", "neumann -2".
[[nodiscard]] std::string to_string(BoundaryFace face);
/// One face's text if both are alike, else "LOW / HIGH" (e.g. "dirichlet 1 / edge").
[[nodiscard]] std::string to_string(const Boundary& boundary);

/// An owned array of `shape` (interior extents, one per axis) with `halo[d]` extra cells on both
/// sides of axis d; row-major over the padded extents, the last axis contiguous, 64-byte aligned,
/// zero-initialised. Indices are interior-relative: 0..n-1 inside, -halo..-1 and n..n+halo-1 in
/// the halo. This is the layout KernelWriter accessors assume. Not thread-safe to modify.
class Field {
public:
  /// Throws Error(usage) naming the field: an unsupported dtype, no axes, an extent < 1, a
  /// negative halo, or `halo` of another length than `shape`.
  Field(std::string name, Dtype dtype, std::vector<std::int64_t> shape, std::vector<int> halo);
  Field(Field&&) noexcept = default;
  Field& operator=(Field&&) noexcept = default;
  Field(const Field&) = delete;
  Field& operator=(const Field&) = delete;

  /// A new field of this one's name, dtype, shape and halos holding every value of it, halos
  /// included: one pass over fresh memory (no zeroing first). Throws Error(usage) when out of
  /// memory, as the constructor does.
  [[nodiscard]] Field clone() const;
  /// Every value of `other`, halos included, into this field of the same dtype, shape and halos
  /// (Error(usage) naming both otherwise). Allocates nothing.
  void copy_from(const Field& other);

  [[nodiscard]] const std::string& name() const noexcept { return m_name; }
  [[nodiscard]] Dtype dtype() const noexcept { return m_dtype; }
  [[nodiscard]] const std::vector<std::int64_t>& shape() const noexcept { return m_shape; }
  [[nodiscard]] const std::vector<int>& halo() const noexcept { return m_halo; }
  [[nodiscard]] int rank() const noexcept { return static_cast<int>(m_shape.size()); }
  /// Strides in elements over the padded layout.
  [[nodiscard]] const std::vector<std::int64_t>& strides() const noexcept { return m_strides; }
  /// Interior elements (the product of shape).
  [[nodiscard]] std::int64_t interior_count() const noexcept { return m_interior; }
  /// Padded elements.
  [[nodiscard]] std::int64_t padded_count() const noexcept { return m_padded; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return m_bytes; }
  [[nodiscard]] void* data() noexcept { return m_storage.get(); }
  [[nodiscard]] const void* data() const noexcept { return m_storage.get(); }

  /// The element offset of interior-relative `index` (one entry per axis). Unchecked.
  [[nodiscard]] std::int64_t offset(std::span<const std::int64_t> index) const noexcept {
    std::int64_t at = 0;
    for (std::size_t d = 0; d < index.size(); ++d) {
      at += (index[d] + m_halo[d]) * m_strides[d];
    }
    return at;
  }

  /// The element at interior-relative indices, as T. T must be the field's dtype and the index
  /// count its rank: otherwise Error(usage) naming the field and what was expected.
  template <class T, class... I> [[nodiscard]] T& at(I... index) {
    check_access(codegen::dtype_of<T>, sizeof...(I));
    const std::int64_t idx[] = {static_cast<std::int64_t>(index)...};
    return static_cast<T*>(data())[offset(idx)];
  }
  template <class T, class... I> [[nodiscard]] const T& at(I... index) const {
    check_access(codegen::dtype_of<T>, sizeof...(I));
    const std::int64_t idx[] = {static_cast<std::int64_t>(index)...};
    return static_cast<const T*>(data())[offset(idx)];
  }

  /// The element at `index`, converted to double, whatever the dtype.
  [[nodiscard]] double value(std::span<const std::int64_t> index) const;

  /// Calls fn(index) for every interior index, in row-major order. `index` is a span of rank().
  /// Allocates the index once; meant for set-up and checks, not for step loops.
  template <class Fn> void for_each_interior(Fn&& fn) const {
    std::vector<std::int64_t> index(m_shape.size(), 0);
    for (std::int64_t n = 0; n < m_interior; ++n) {
      fn(std::span<const std::int64_t>(index));
      for (std::size_t d = index.size(); d-- > 0;) {
        if (++index[d] < m_shape[d]) {
          break;
        }
        index[d] = 0;
      }
    }
  }

  /// Fills every halo from the interior, axis by axis in axis order (so corners are right: a
  /// corner gets the later axis's rule applied to the earlier axis's halo), with `boundary[d]`
  /// for axis d (ignored where the halo is 0), as BoundaryFace documents. Allocates nothing.
  /// Throws Error(usage) naming the field and axis if boundary has the wrong length, periodic is
  /// on one face only, a dirichlet or neumann value is not finite or meets an integer dtype, or
  /// a periodic, dirichlet or neumann halo is wider than the extent.
  void fill_halos(std::span<const Boundary> boundary);

  /// Fills every halo cell with a value no computation should produce, so that reading a halo
  /// nobody filled shows: a quiet NaN for f32 and f64, the lowest value for signed integers, 255
  /// for u8. The interior is left alone. Allocates nothing. (Checked mode's poison.)
  void poison_halos() noexcept;

  /// Checked mode's mark of cells a kernel has not written: fills the interior of an f32 or f64
  /// field with a signalling NaN whose payload no arithmetic produces (arithmetic only makes quiet
  /// NaNs). Integer fields have no value to spare and are left alone. Allocates nothing.
  void mark_interior_unwritten() noexcept;

  /// Interior cells that still hold mark_interior_unwritten()'s mark.
  struct Unwritten {
    std::vector<std::int64_t> first; ///< the first such cell, row-major, interior-relative
    std::int64_t count = 0;          ///< how many there are
  };
  /// The cells still marked; nullopt when there are none (always for an integer field).
  [[nodiscard]] std::optional<Unwritten> find_unwritten() const;

  /// Copies the interior, row-major without halos, to `out` (interior_count() * element size
  /// bytes) or from `in`. Allocates nothing.
  void copy_interior_to(std::span<std::byte> out) const;
  void copy_interior_from(std::span<const std::byte> in);

  /// Byte-for-byte equality of the interiors (same dtype and shape required).
  [[nodiscard]] bool interior_equals(const Field& other) const;

private:
  // clone(): `like`'s layout and every value of it.
  struct CloneOf {
    const Field& like;
  };
  explicit Field(CloneOf clone);
  // Allocates m_bytes, 64-byte aligned, not initialised.
  [[nodiscard]] std::byte* allocate() const;
  void check_access(Dtype dtype, std::size_t indices) const;
  template <class Fn> void for_each_interior_row(Fn&& fn) const;

  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::string m_name;
  Dtype m_dtype;
  std::vector<std::int64_t> m_shape;
  std::vector<int> m_halo;
  std::vector<std::int64_t> m_strides;
  std::int64_t m_interior = 1;
  std::int64_t m_padded = 1;
  std::size_t m_bytes = 0;
  std::unique_ptr<std::byte[], Free> m_storage;
};

} // namespace uwjit::runtime
