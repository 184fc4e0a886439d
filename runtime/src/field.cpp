#include <uwjit/runtime/field.hpp>

#include "face_fill.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

namespace uwjit::runtime {

std::string_view to_string(BoundaryFace::Kind kind) noexcept {
  switch (kind) {
  case BoundaryFace::Kind::periodic:
    return "periodic";
  case BoundaryFace::Kind::edge:
    return "edge";
  case BoundaryFace::Kind::dirichlet:
    return "dirichlet";
  case BoundaryFace::Kind::neumann:
    return "neumann";
  }
  return "?";
}

namespace {

// What is wrong with a dirichlet or neumann face's value, or "".
std::string value_problem(BoundaryFace::Kind kind, double value) {
  if (std::isfinite(value) && std::abs(value) <= BoundaryFace::k_max_value) {
    return {};
  }
  return format(
      "{} {} {} is not a finite number within [-1e300, 1e300] (the halo holds {}, "
      "which must not overflow)",
      to_string(kind), kind == BoundaryFace::Kind::dirichlet ? "value" : "gradient", value,
      kind == BoundaryFace::Kind::dirichlet ? "2 value - mirror" : "mirror + gradient (2k - 1)");
}

BoundaryFace checked_face(BoundaryFace::Kind kind, double value) {
  if (const auto problem = value_problem(kind, value); !problem.empty()) {
    throw Error(ErrorKind::usage, format("BoundaryFace::{}: {}", to_string(kind), problem));
  }
  return {kind, value};
}

} // namespace

BoundaryFace BoundaryFace::dirichlet(double value) {
  return checked_face(Kind::dirichlet, value);
}

BoundaryFace BoundaryFace::neumann(double gradient) {
  return checked_face(Kind::neumann, gradient);
}

std::string to_string(BoundaryFace face) {
  std::string text(to_string(face.kind));
  return face.computed() ? format("{} {}", text, face.value) : text;
}

std::string to_string(const Boundary& boundary) {
  if (boundary.low == boundary.high) {
    return to_string(boundary.low);
  }
  return to_string(boundary.low) + " / " + to_string(boundary.high);
}

namespace detail {

std::string boundary_problem(const Boundary& boundary, std::int64_t cells, int halo) {
  const bool low = boundary.low.kind == BoundaryFace::Kind::periodic;
  const bool high = boundary.high.kind == BoundaryFace::Kind::periodic;
  if (low != high) {
    return format("periodic on the {} face only (periodic needs both faces)", low ? "low" : "high");
  }
  for (const auto& [face, which] : {std::pair{boundary.low, "low"}, {boundary.high, "high"}}) {
    if (face.computed() && !std::isfinite(face.value)) {
      return format("the {} face's {} value is {} (need a finite number)", which,
                    face.kind == BoundaryFace::Kind::dirichlet ? "dirichlet" : "neumann",
                    face.value);
    }
    if (face.computed()) {
      if (const auto problem = value_problem(face.kind, face.value); !problem.empty()) {
        return format("the {} face's {}", which, problem);
      }
    }
    // The farthest neumann halo cell is (2 halo - 1) gradients beyond its mirror.
    if (face.kind == BoundaryFace::Kind::neumann &&
        std::abs(face.value) * (2.0 * halo - 1.0) > BoundaryFace::k_max_value) {
      return format("the {} face's neumann gradient {} over a halo of {} puts its outer cell {} "
                    "beyond its mirror, more than 1e300",
                    which, face.value, halo, std::abs(face.value) * (2.0 * halo - 1.0));
    }
    if ((face.computed() || low) && halo > cells) {
      return format("a {} halo of {} is wider than the extent {}", to_string(face), halo, cells);
    }
  }
  return {};
}

Boundary static_padding(const Boundary& boundary) noexcept {
  const auto pad = [](BoundaryFace face) { return face.computed() ? BoundaryFace::edge() : face; };
  return {pad(boundary.low), pad(boundary.high)};
}

bool takes_computed_faces(Dtype dtype) noexcept {
  return dtype == Dtype::f32 || dtype == Dtype::f64;
}

std::string f32_problem(const Boundary& boundary, Dtype dtype) {
  constexpr double k_max_f32 = 1e37; // twice it, less a mirror within FLT_MAX, is a float
  if (dtype != Dtype::f32) {
    return {};
  }
  for (const auto& [face, which] : {std::pair{boundary.low, "low"}, {boundary.high, "high"}}) {
    if (face.computed() && !(std::abs(face.value) <= k_max_f32)) {
      return format("the {} face's {} {} is out of range [-1e37, 1e37] for an f32 field", which,
                    to_string(face.kind), face.value);
    }
  }
  return {};
}

namespace {

// dst[e] = a - src[e] (dirichlet) or src[e] + a (neumann), in the field's type.
template <class T>
void compute_layer(std::byte* dst, const std::byte* src, std::int64_t count,
                   const BoundaryFace& face, std::int64_t distance) {
  auto* out = reinterpret_cast<T*>(dst);
  const auto* in = reinterpret_cast<const T*>(src);
  if (face.kind == BoundaryFace::Kind::dirichlet) {
    const auto twice = static_cast<T>(2.0 * face.value);
    for (std::int64_t e = 0; e < count; ++e) {
      out[e] = twice - in[e];
    }
  } else {
    const auto step = static_cast<T>(face.value * static_cast<double>(2 * distance - 1));
    for (std::int64_t e = 0; e < count; ++e) {
      out[e] = in[e] + step;
    }
  }
}

// Copies one layer of a halo. Along the innermost axis a layer is one element: a call of memcpy
// per element cost more than its copy (pipe-flow 96x64x64 spent a fifth of its step in them), so
// layers of one element are copied inline.
void copy_layer(std::byte* to, const std::byte* from, std::size_t bytes) noexcept {
  switch (bytes) {
  case 8:
    std::memcpy(to, from, 8);
    break;
  case 4:
    std::memcpy(to, from, 4);
    break;
  case 1:
    std::memcpy(to, from, 1);
    break;
  default:
    std::memcpy(to, from, bytes);
  }
}

// Fills the `side` halo layers of one slab of an axis's view (`at` gives a padded index's layer).
template <class At>
void fill_slab_face(const Field& field, const AxisView& view, Side side, const BoundaryFace& face,
                    At at) {
  const std::int64_t h = view.h;
  const std::int64_t n = view.n;
  const std::size_t layer = static_cast<std::size_t>(view.inner) * codegen::size_of(field.dtype());
  const bool low = side == Side::low;
  for (std::int64_t k = 1; k <= h; ++k) {
    const std::int64_t halo_cell = low ? h - k : h + n - 1 + k; // padded indices
    switch (face.kind) {
    case BoundaryFace::Kind::periodic:
      copy_layer(at(halo_cell), at(low ? halo_cell + n : halo_cell - n), layer);
      break;
    case BoundaryFace::Kind::edge:
      copy_layer(at(halo_cell), at(low ? h : h + n - 1), layer);
      break;
    case BoundaryFace::Kind::dirichlet:
    case BoundaryFace::Kind::neumann: {
      const std::int64_t mirror = low ? h + k - 1 : h + n - k;
      if (field.dtype() == Dtype::f32) {
        compute_layer<float>(at(halo_cell), at(mirror), view.inner, face, k);
      } else {
        UWJIT_ASSERT(field.dtype() == Dtype::f64, "fill_face: a computed face on an integer field");
        compute_layer<double>(at(halo_cell), at(mirror), view.inner, face, k);
      }
      break;
    }
    }
  }
}

// One end of a row: its halo element (padded index `to`) is element `from` of the same row,
// copied, reflected (dirichlet: 2 v - x) or shifted (neumann: x + g), as compute_layer does.
template <class T> struct RowEnd {
  std::int64_t to, from;
  BoundaryFace::Kind kind;
  T constant;
  RowEnd(const BoundaryFace& face, std::int64_t to, std::int64_t from)
      : to(to), from(from), kind(face.kind), constant{} {
    if constexpr (std::is_floating_point_v<T>) {
      constant =
          static_cast<T>(kind == BoundaryFace::Kind::dirichlet ? 2.0 * face.value : face.value);
    }
  }
  void fill(T* row) const noexcept {
    if constexpr (std::is_floating_point_v<T>) {
      if (kind == BoundaryFace::Kind::dirichlet) {
        row[to] = constant - row[from];
        return;
      }
      if (kind == BoundaryFace::Kind::neumann) {
        row[to] = row[from] + constant;
        return;
      }
    }
    std::memcpy(row + to, row + from, sizeof(T)); // bit for bit, whatever the value
  }
};

// The innermost axis with a halo of one: each slab is one row, whose two halo elements come
// from two of its own, both in one pass. The general path decided the kind and the size of each
// element's fill anew, which cost a small grid more than its kernel (heat 16³ in a batch spent
// 29 % of its steps there); here they are decided once per axis. T: the element type (integer
// fields only copy: check_fill refuses computed faces on them).
template <class T>
void fill_row_ends(Field& field, const AxisView& view, const Boundary& boundary, std::int64_t first,
                   std::int64_t last) {
  const std::int64_t n = view.n;
  // Padded indices: the low halo is 0, the high one n + 1, the interior 1 .. n; a face that
  // is not periodic takes its own end (edge's copy, the mirror of dirichlet and neumann).
  const bool periodic = boundary.low.kind == BoundaryFace::Kind::periodic;
  const RowEnd<T> low(boundary.low, 0, periodic ? n : 1);
  const RowEnd<T> high(boundary.high, n + 1, periodic ? 1 : n);
  T* const rows = static_cast<T*>(field.data());
  for (std::int64_t o = first; o < last; ++o) {
    T* const row = rows + o * view.padded();
    low.fill(row);
    high.fill(row);
  }
}

// Calls fill(at) for each slab in [first, last) of the axis's view, `at` giving a padded index's
// layer in that slab.
template <class Fill>
void for_each_slab(Field& field, const AxisView& view, std::int64_t first, std::int64_t last,
                   Fill fill) {
  const std::size_t element = codegen::size_of(field.dtype());
  auto* base = static_cast<std::byte*>(field.data());
  for (std::int64_t o = first; o < last; ++o) {
    std::byte* slab = base + static_cast<std::size_t>(o * view.padded() * view.inner) * element;
    fill([&](std::int64_t padded_index) {
      return slab + static_cast<std::size_t>(padded_index * view.inner) * element;
    });
  }
}

} // namespace

void check_fill(const Field& field, std::span<const Boundary> boundary) {
  if (boundary.size() != field.shape().size()) {
    throw Error(ErrorKind::usage, format("field \"{}\": {} boundaries for {} axes", field.name(),
                                         boundary.size(), field.shape().size()));
  }
  for (std::size_t d = 0; d < field.shape().size(); ++d) {
    if (const auto problem =
            detail::boundary_problem(boundary[d], field.shape()[d], field.halo()[d]);
        !problem.empty()) {
      throw Error(ErrorKind::usage, format("field \"{}\": axis {}: {}", field.name(), d, problem));
    }
    if (field.halo()[d] > 0 && (boundary[d].low.computed() || boundary[d].high.computed()) &&
        !detail::takes_computed_faces(field.dtype())) {
      throw Error(
          ErrorKind::usage,
          format("field \"{}\": axis {}: a {} boundary needs a floating-point field, not {}",
                 field.name(), d, to_string(boundary[d]), codegen::to_string(field.dtype())));
    }
    if (const auto problem = detail::f32_problem(boundary[d], field.dtype());
        field.halo()[d] > 0 && !problem.empty()) {
      throw Error(ErrorKind::usage, format("field \"{}\": axis {}: {}", field.name(), d, problem));
    }
  }
}

void fill_face(Field& field, std::size_t axis, Side side, const BoundaryFace& face) {
  if (field.halo()[axis] == 0) {
    return;
  }
  const AxisView view(field, axis);
  for_each_slab(field, view, 0, view.outer,
                [&](auto at) { fill_slab_face(field, view, side, face, at); });
}

void fill_faces(Field& field, std::size_t axis, const Boundary& boundary, std::int64_t first,
                std::int64_t last) {
  if (field.halo()[axis] == 0) {
    return;
  }
  // Both sides slab by slab: along the innermost axis a slab's high halo and the next slab's
  // low halo share a cache line, which one pass then loads once.
  const AxisView view(field, axis);
  if (view.inner == 1 && view.h == 1) {
    switch (field.dtype()) {
    case Dtype::f64:
      return fill_row_ends<double>(field, view, boundary, first, last);
    case Dtype::f32:
      return fill_row_ends<float>(field, view, boundary, first, last);
    case Dtype::i64:
      return fill_row_ends<std::int64_t>(field, view, boundary, first, last);
    case Dtype::i32:
      return fill_row_ends<std::int32_t>(field, view, boundary, first, last);
    case Dtype::i8:
    case Dtype::u8:
      return fill_row_ends<std::uint8_t>(field, view, boundary, first, last);
    }
  }
  for_each_slab(field, view, first, last, [&](auto at) {
    fill_slab_face(field, view, Side::low, boundary.low, at);
    fill_slab_face(field, view, Side::high, boundary.high, at);
  });
}

void fill_read_halos(Field& field, std::span<const Boundary> boundary, const ReadHalos& read) {
  check_fill(field, boundary);
  for (std::size_t d = 0; d < field.shape().size(); ++d) {
    if (field.halo()[d] > 0) {
      fill_read_faces(field, d, boundary[d], read, 0, read_slabs(field, d, read));
    }
  }
}

bool ReadHalos::every(std::size_t axis) const noexcept {
  for (std::size_t c = 0; c < m_masks.size(); ++c) {
    if (!reads(c, axis)) {
      return false;
    }
  }
  return true;
}

std::int64_t read_slabs(const Field& field, std::size_t axis, const ReadHalos& read) {
  std::int64_t count = 0;
  read.for_each_read_run(AxisView(field, axis).outer, axis,
                         [&](std::int64_t first, std::int64_t last) { count += last - first; });
  return count;
}

void fill_read_faces(Field& field, std::size_t axis, const Boundary& boundary,
                     const ReadHalos& read, std::int64_t first, std::int64_t last) {
  std::int64_t base = 0; // the runs' slabs counted from the first run's
  read.for_each_read_run(AxisView(field, axis).outer, axis,
                         [&](std::int64_t from, std::int64_t to) {
                           const std::int64_t lo = std::max(first, base);
                           const std::int64_t hi = std::min(last, base + to - from);
                           if (lo < hi) {
                             fill_faces(field, axis, boundary, from + lo - base, from + hi - base);
                           }
                           base += to - from;
                         });
}

} // namespace detail

namespace {
constexpr std::size_t k_alignment = 64;
constexpr std::size_t k_max_rank = 8;
} // namespace

void Field::Free::operator()(std::byte* p) const noexcept {
  ::operator delete[](p, std::align_val_t{k_alignment});
}

Field::Field(std::string name, Dtype dtype, std::vector<std::int64_t> shape, std::vector<int> halo)
    : m_name(std::move(name)), m_dtype(dtype), m_shape(std::move(shape)), m_halo(std::move(halo)) {
  if (!codegen::is_supported(m_dtype)) {
    throw Error(ErrorKind::usage, format("field \"{}\": unsupported dtype", m_name));
  }
  if (m_shape.empty() || m_shape.size() > k_max_rank) {
    throw Error(ErrorKind::usage, format("field \"{}\": needs 1 to {} axes, got {}", m_name,
                                         k_max_rank, m_shape.size()));
  }
  if (m_halo.size() != m_shape.size()) {
    throw Error(ErrorKind::usage, format("field \"{}\": {} halo widths for {} axes", m_name,
                                         m_halo.size(), m_shape.size()));
  }
  for (std::size_t d = 0; d < m_shape.size(); ++d) {
    if (m_shape[d] < 1 || m_halo[d] < 0) {
      throw Error(ErrorKind::usage, format("field \"{}\": axis {} has extent {} and halo {} "
                                           "(need extent >= 1, halo >= 0)",
                                           m_name, d, m_shape[d], m_halo[d]));
    }
  }
  m_strides.assign(m_shape.size(), 1);
  const auto element = static_cast<std::int64_t>(codegen::size_of(m_dtype));
  const auto too_large = [&] {
    throw Error(ErrorKind::usage,
                format("field \"{}\": shape {} with halos {} is too large to address", m_name,
                       shape_text(m_shape), shape_text({m_halo.begin(), m_halo.end()})));
  };
  for (std::size_t d = m_shape.size(); d-- > 0;) {
    const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / element / m_padded;
    if (m_shape[d] > limit - 2 * std::int64_t{m_halo[d]}) {
      too_large();
    }
    const std::int64_t padded = m_shape[d] + 2 * std::int64_t{m_halo[d]};
    m_interior *= m_shape[d];
    m_strides[d] = m_padded;
    m_padded *= padded;
  }
  m_bytes = static_cast<std::size_t>(m_padded) * codegen::size_of(m_dtype);
  m_storage.reset(allocate());
  std::memset(m_storage.get(), 0, m_bytes);
}

std::byte* Field::allocate() const {
  // Beyond what a 64-bit process's address space holds (2^47 bytes on x86-64 and most others),
  // nothing is asked of the allocator (some, e.g. AddressSanitizer's, abort instead of throwing).
  constexpr std::size_t k_address_space = std::size_t{1} << 47;
  try {
    if (m_bytes > k_address_space) {
      throw std::bad_alloc();
    }
    return static_cast<std::byte*>(
        ::operator new[](std::max<std::size_t>(m_bytes, 1), std::align_val_t{k_alignment}));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::usage,
                format("field \"{}\": out of memory: cannot allocate {} bytes ({} {} with halos "
                       "{})",
                       m_name, m_bytes, codegen::to_string(m_dtype), shape_text(m_shape),
                       shape_text({m_halo.begin(), m_halo.end()})));
  }
}

Field::Field(CloneOf clone)
    : m_name(clone.like.m_name), m_dtype(clone.like.m_dtype), m_shape(clone.like.m_shape),
      m_halo(clone.like.m_halo), m_strides(clone.like.m_strides), m_interior(clone.like.m_interior),
      m_padded(clone.like.m_padded), m_bytes(clone.like.m_bytes) {
  m_storage.reset(allocate());
  std::memcpy(m_storage.get(), clone.like.m_storage.get(), m_bytes);
}

Field Field::clone() const {
  return Field(CloneOf{*this});
}

void Field::copy_from(const Field& other) {
  if (other.m_dtype != m_dtype || other.m_shape != m_shape || other.m_halo != m_halo) {
    throw Error(
        ErrorKind::usage,
        format("field \"{}\": cannot copy field \"{}\" of another layout ({} {} halos {} "
               "into {} {} halos {})",
               m_name, other.m_name, codegen::to_string(other.m_dtype), shape_text(other.m_shape),
               shape_text({other.m_halo.begin(), other.m_halo.end()}), codegen::to_string(m_dtype),
               shape_text(m_shape), shape_text({m_halo.begin(), m_halo.end()})));
  }
  std::memcpy(m_storage.get(), other.m_storage.get(), m_bytes);
}

void Field::poison_halos() noexcept {
  const std::size_t size = codegen::size_of(m_dtype);
  std::array<std::byte, 8> poison{};
  auto set = [&](auto value) { std::memcpy(poison.data(), &value, sizeof(value)); };
  switch (m_dtype) {
  case Dtype::f32:
    set(std::numeric_limits<float>::quiet_NaN());
    break;
  case Dtype::f64:
    set(std::numeric_limits<double>::quiet_NaN());
    break;
  case Dtype::i8:
    set(std::numeric_limits<std::int8_t>::lowest());
    break;
  case Dtype::u8:
    set(std::numeric_limits<std::uint8_t>::max());
    break;
  case Dtype::i32:
    set(std::numeric_limits<std::int32_t>::lowest());
    break;
  case Dtype::i64:
    set(std::numeric_limits<std::int64_t>::lowest());
    break;
  }
  auto* bytes = static_cast<std::byte*>(data());
  auto fill = [&](std::int64_t from, std::int64_t count) {
    for (std::int64_t e = from; e < from + count; ++e) {
      std::memcpy(bytes + static_cast<std::size_t>(e) * size, poison.data(), size);
    }
  };
  // Row by row along the last axis: a row in the halo of a leading axis is all halo; any other
  // row has halo cells at its two ends only.
  const std::size_t last = m_shape.size() - 1;
  const std::int64_t row = m_shape[last] + 2 * m_halo[last];
  const std::int64_t h = m_halo[last];
  std::array<std::int64_t, k_max_rank> index{};
  for (std::int64_t start = 0; start < m_padded; start += row) {
    bool in_halo = false;
    for (std::size_t d = 0; d < last; ++d) {
      in_halo = in_halo || index[d] < m_halo[d] || index[d] >= m_halo[d] + m_shape[d];
    }
    if (in_halo) {
      fill(start, row);
    } else if (h > 0) {
      fill(start, h);
      fill(start + row - h, h);
    }
    for (std::size_t d = last; d-- > 0;) {
      if (++index[d] < m_shape[d] + 2 * m_halo[d]) {
        break;
      }
      index[d] = 0;
    }
  }
}

void Field::check_access(Dtype dtype, std::size_t indices) const {
  // The caller's mistake, not uwjit's: Error(usage) naming the field, without a source path.
  if (dtype != m_dtype) {
    throw Error(ErrorKind::usage, format("field \"{}\" holds {}, accessed as {}", m_name,
                                         codegen::to_string(m_dtype), codegen::to_string(dtype)));
  }
  if (indices != m_shape.size()) {
    throw Error(ErrorKind::usage, format("field \"{}\" has {} axes, accessed with {} indices",
                                         m_name, m_shape.size(), indices));
  }
}

double Field::value(std::span<const std::int64_t> index) const {
  if (index.size() != m_shape.size()) {
    throw Error(ErrorKind::usage, format("field \"{}\" has {} axes, read with {} indices", m_name,
                                         m_shape.size(), index.size()));
  }
  const std::int64_t at = offset(index);
  switch (m_dtype) {
  case Dtype::f32:
    return static_cast<const float*>(data())[at];
  case Dtype::f64:
    return static_cast<const double*>(data())[at];
  case Dtype::i8:
    return static_cast<const std::int8_t*>(data())[at];
  case Dtype::u8:
    return static_cast<const std::uint8_t*>(data())[at];
  case Dtype::i32:
    return static_cast<const std::int32_t*>(data())[at];
  case Dtype::i64:
    return static_cast<double>(static_cast<const std::int64_t*>(data())[at]);
  }
  return 0;
}

// Calls fn(padded element offset of a row's first interior cell) for each interior row (all axes
// but the last), in row-major order, without allocating.
template <class Fn> void Field::for_each_interior_row(Fn&& fn) const {
  const std::size_t rank = m_shape.size();
  std::array<std::int64_t, k_max_rank> index{};
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) {
    rows *= m_shape[d];
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t at = m_halo[rank - 1];
    for (std::size_t d = 0; d + 1 < rank; ++d) {
      at += (index[d] + m_halo[d]) * m_strides[d];
    }
    fn(at);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < m_shape[d]) {
        break;
      }
      index[d] = 0;
    }
  }
}

namespace {
// Signalling NaNs (the quiet bit clear) with a payload of their own: a load, store or copy keeps
// them, and no arithmetic makes one.
constexpr std::uint32_t k_unwritten_f32 = 0x7FA5BEEFu;
constexpr std::uint64_t k_unwritten_f64 = 0x7FF4DEADBEEFCAFEull;
} // namespace

void Field::mark_interior_unwritten() noexcept {
  if (m_dtype != Dtype::f32 && m_dtype != Dtype::f64) {
    return;
  }
  const std::int64_t row = m_shape.back();
  for_each_interior_row([&](std::int64_t at) {
    if (m_dtype == Dtype::f32) {
      std::fill_n(static_cast<std::uint32_t*>(data()) + at, row, k_unwritten_f32);
    } else {
      std::fill_n(static_cast<std::uint64_t*>(data()) + at, row, k_unwritten_f64);
    }
  });
}

std::optional<Field::Unwritten> Field::find_unwritten() const {
  if (m_dtype != Dtype::f32 && m_dtype != Dtype::f64) {
    return std::nullopt;
  }
  const std::int64_t row = m_shape.back();
  Unwritten found;
  std::int64_t first_at = -1;
  std::int64_t rows_before = 0;
  for_each_interior_row([&](std::int64_t at) {
    for (std::int64_t i = 0; i < row; ++i) {
      const bool marked =
          m_dtype == Dtype::f32
              ? static_cast<const std::uint32_t*>(data())[at + i] == k_unwritten_f32
              : static_cast<const std::uint64_t*>(data())[at + i] == k_unwritten_f64;
      if (marked) {
        if (found.count++ == 0) {
          first_at = rows_before * row + i;
        }
      }
    }
    ++rows_before;
  });
  if (found.count == 0) {
    return std::nullopt;
  }
  found.first.assign(m_shape.size(), 0);
  for (std::size_t d = m_shape.size(); d-- > 0;) {
    found.first[d] = first_at % m_shape[d];
    first_at /= m_shape[d];
  }
  return found;
}

void Field::copy_interior_to(std::span<std::byte> out) const {
  const std::size_t element = codegen::size_of(m_dtype);
  const std::size_t row = static_cast<std::size_t>(m_shape.back()) * element;
  UWJIT_ASSERT(out.size() == static_cast<std::size_t>(m_interior) * element,
               "Field::copy_interior_to: wrong buffer size");
  const auto* base = static_cast<const std::byte*>(data());
  std::size_t written = 0;
  for_each_interior_row([&](std::int64_t at) {
    std::memcpy(out.data() + written, base + static_cast<std::size_t>(at) * element, row);
    written += row;
  });
}

void Field::copy_interior_from(std::span<const std::byte> in) {
  const std::size_t element = codegen::size_of(m_dtype);
  const std::size_t row = static_cast<std::size_t>(m_shape.back()) * element;
  UWJIT_ASSERT(in.size() == static_cast<std::size_t>(m_interior) * element,
               "Field::copy_interior_from: wrong buffer size");
  auto* base = static_cast<std::byte*>(data());
  std::size_t read = 0;
  for_each_interior_row([&](std::int64_t at) {
    std::memcpy(base + static_cast<std::size_t>(at) * element, in.data() + read, row);
    read += row;
  });
}

bool Field::interior_equals(const Field& other) const {
  if (other.m_dtype != m_dtype || other.m_shape != m_shape) {
    return false;
  }
  const std::size_t element = codegen::size_of(m_dtype);
  const std::size_t row = static_cast<std::size_t>(m_shape.back()) * element;
  const auto* mine = static_cast<const std::byte*>(data());
  const auto* theirs = static_cast<const std::byte*>(other.data());
  // Same shape, but the halos may differ: walk both layouts row by row.
  std::vector<std::int64_t> their_rows;
  other.for_each_interior_row([&](std::int64_t at) { their_rows.push_back(at); });
  std::size_t r = 0;
  bool equal = true;
  for_each_interior_row([&](std::int64_t at) {
    equal =
        equal && std::memcmp(mine + static_cast<std::size_t>(at) * element,
                             theirs + static_cast<std::size_t>(their_rows[r]) * element, row) == 0;
    ++r;
  });
  return equal;
}

void Field::fill_halos(std::span<const Boundary> boundary) {
  detail::fill_read_halos(*this, boundary, {});
}

} // namespace uwjit::runtime
