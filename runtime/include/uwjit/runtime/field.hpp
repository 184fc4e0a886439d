// Field: an owned, halo-padded, row-major N-d array; the storage of state and padded statics.
#pragma once

#include <uwjit/codegen/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uwjit::runtime {

using codegen::Dtype;

/// How a halo is filled along one axis: from the opposite side of the domain (periodic), or by
/// repeating the outermost interior cell (edge: a zero-gradient, insulating wall).
enum class Boundary { periodic, edge };

/// "periodic" or "edge".
[[nodiscard]] std::string_view to_string(Boundary boundary) noexcept;

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

  /// Fills every halo from the interior, axis by axis (so corners are right), with
  /// `boundary[d]` for axis d (ignored where the halo is 0). Periodic needs halo <= extent.
  /// Allocates nothing. Throws Error(usage) if boundary has the wrong length.
  void fill_halos(std::span<const Boundary> boundary);

  /// Fills every halo cell with a value no computation should produce, so that reading a halo
  /// nobody filled shows: a quiet NaN for f32 and f64, the lowest value for signed integers, 255
  /// for u8. The interior is left alone. Allocates nothing. (Checked mode's poison.)
  void poison_halos() noexcept;

  /// Copies the interior, row-major without halos, to `out` (interior_count() * element size
  /// bytes) or from `in`. Allocates nothing.
  void copy_interior_to(std::span<std::byte> out) const;
  void copy_interior_from(std::span<const std::byte> in);

  /// Byte-for-byte equality of the interiors (same dtype and shape required).
  [[nodiscard]] bool interior_equals(const Field& other) const;

private:
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
