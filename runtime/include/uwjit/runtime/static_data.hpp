// StaticArray, StaticData and static_data_hash: large arrays that never change during a run,
// bound to kernels as external buffers and never compiled into them.
#pragma once

#include <uwjit/codegen/dtype.hpp>
#include <uwjit/runtime/value.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace uwjit::runtime {

using codegen::Dtype;

/// How a static array is distributed when the domain is split over processes (MPI ranks):
/// every process gets the whole array, or each gets a slab along shard_axis.
enum class Replication { replicate, shard };

/// "replicate" or "shard".
[[nodiscard]] std::string_view to_string(Replication replication) noexcept;

class StaticArray;

/// A box of an array's elements: per axis, the index of the first element and how many.
struct ArrayBox {
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> extent;
  friend bool operator==(const ArrayBox&, const ArrayBox&) = default;
};

namespace detail {
/// Where the runtime puts the contents of computed arrays (one copy per node under MPI).
struct StaticPlacement;
} // namespace detail

/// A read-only view of contiguous, row-major data (the last axis varies fastest) with its dtype,
/// shape and distribution policy, named by its key in a node's static data.
///
/// Ownership: shared. The StaticArray holds a std::shared_ptr<const void> to the data, so the
/// data lives as long as any copy of the array (copies are cheap and share it). To wrap memory
/// owned elsewhere, pass a shared_ptr with a no-op deleter (or the aliasing constructor of a
/// shared_ptr that owns the memory); the caller then guarantees the memory outlives every copy.
/// The contents must not change while a kernel may read them. Immutable; thread-safe to share.
class StaticArray {
public:
  /// Validates everything at construction; throws Error(usage) naming the key and the rule:
  ///   - the key is a C identifier (kernels read the array through an accessor of that name);
  ///   - data is not null; dtype is one of f32, f64, i8, u8, i32, i64;
  ///   - the shape has 0 to 8 axes, each at least 1 (no zero-size arrays), and its element count
  ///     fits in 63 bits of bytes; a shape of 0 axes, (), is a scalar of one element, which a
  ///     kernel reads as `key()` (rebinding another value of the same dtype compiles nothing);
  ///   - replicate forbids a shard_axis; shard needs one in [0, ndim).
  StaticArray(std::string key, std::shared_ptr<const void> data, Dtype dtype,
              std::vector<std::int64_t> shape, Replication replication = Replication::replicate,
              std::optional<int> shard_axis = std::nullopt);

  /// An array that owns `values` (moved in). Besides the rules above, values.size() must equal
  /// the product of the shape.
  template <class T>
  [[nodiscard]] static StaticArray from_vector(std::string key, std::vector<T> values,
                                               std::vector<std::int64_t> shape,
                                               Replication replication = Replication::replicate,
                                               std::optional<int> shard_axis = std::nullopt) {
    check_count(key, values.size(), shape);
    auto owned = std::make_shared<std::vector<T>>(std::move(values));
    std::shared_ptr<const void> data(owned, owned->data());
    return StaticArray(std::move(key), std::move(data), codegen::dtype_of<T>, std::move(shape),
                       replication, shard_axis);
  }

  /// A scalar (shape ()) holding `value`; always replicated.
  template <class T> [[nodiscard]] static StaticArray scalar(std::string key, T value) {
    return from_vector(std::move(key), std::vector<T>{value}, {});
  }

  /// An array whose contents are computed on demand: `fill` receives zeroed storage of the
  /// array's size and writes the elements. Nothing runs until the contents are first needed
  /// (data(), values(), binding to a kernel); then fill runs once per process, or, for a
  /// replicate array under a sharded Simulation (see SimulationOptions::share_on_node), once per
  /// node, into memory that the node's ranks share read-only: one copy per node instead of one
  /// per rank. Build large replicate arrays (weights, tables, factors) this way.
  /// fill must write the same contents in every call and every process. If it throws, whoever
  /// asked for the contents gets the exception and a later request calls fill again. Copies of
  /// the array share the contents and the one call of fill. The rules of the constructor apply.
  template <class T>
  [[nodiscard]] static StaticArray computed(std::string key, std::vector<std::int64_t> shape,
                                            std::function<void(std::span<T>)> fill,
                                            Replication replication = Replication::replicate,
                                            std::optional<int> shard_axis = std::nullopt) {
    if (!fill) {
      reject_empty_fill(key);
    }
    auto bytes_fill = [fill = std::move(fill)](std::span<std::byte> storage) {
      fill(std::span<T>(reinterpret_cast<T*>(storage.data()), storage.size() / sizeof(T)));
    };
    return StaticArray(std::move(key), std::move(bytes_fill), codegen::dtype_of<T>,
                       std::move(shape), replication, shard_axis);
  }

  /// An array computed one box at a time: `fill(box, storage)` writes the elements of `box` (an
  /// ArrayBox of this array's axes) into storage of the box's size, row-major. A sharded
  /// Simulation asks each rank for its slab only (part()), so that no rank ever holds the whole
  /// array of a shard-mode array; serially, fill gets the whole array as one box. Otherwise as
  /// computed(): nothing runs until the contents are needed, once per process, and fill must
  /// write the same elements for the same box in every call and process.
  template <class T>
  [[nodiscard]] static StaticArray
  computed_by_box(std::string key, std::vector<std::int64_t> shape,
                  std::function<void(const ArrayBox&, std::span<T>)> fill,
                  Replication replication = Replication::shard, std::optional<int> shard_axis = 0) {
    if (!fill) {
      reject_empty_fill(key);
    }
    auto bytes_fill = [fill = std::move(fill)](const ArrayBox& box, std::span<std::byte> storage) {
      fill(box, std::span<T>(reinterpret_cast<T*>(storage.data()), storage.size() / sizeof(T)));
    };
    return StaticArray(std::move(key), std::move(bytes_fill), codegen::dtype_of<T>,
                       std::move(shape), replication, shard_axis);
  }

  /// The elements in `box`, as an array of the box's shape with the same key, dtype,
  /// replication and shard axis: for an array made by computed_by_box, a computed array whose
  /// fill computes the box alone; for any other, a copy of the box's elements (the whole array
  /// is read). Throws Error(usage) if `box` does not lie within the shape. Thread-safe.
  [[nodiscard]] StaticArray part(const ArrayBox& box) const;

  /// Whether the contents are computed box by box (made by computed_by_box).
  [[nodiscard]] bool is_computed_by_box() const noexcept;

  [[nodiscard]] const std::string& key() const noexcept { return m_key; }
  /// The contents (computed arrays compute them here, the first time; that may throw).
  [[nodiscard]] const void* data() const;
  /// The contents' owner (computed arrays compute them here, the first time).
  [[nodiscard]] const std::shared_ptr<const void>& shared_data() const;
  /// Whether the contents are computed on demand (made by computed()).
  [[nodiscard]] bool is_computed() const noexcept { return m_production != nullptr; }
  [[nodiscard]] Dtype dtype() const noexcept { return m_dtype; }
  [[nodiscard]] const std::vector<std::int64_t>& shape() const noexcept { return m_shape; }
  [[nodiscard]] int ndim() const noexcept { return static_cast<int>(m_shape.size()); }
  [[nodiscard]] std::int64_t element_count() const noexcept { return m_count; }
  [[nodiscard]] std::size_t size_bytes() const;
  [[nodiscard]] Replication replication() const noexcept { return m_replication; }
  [[nodiscard]] std::optional<int> shard_axis() const noexcept { return m_shard_axis; }

  /// The elements as T; throws Error(usage) if T is not the array's dtype.
  template <class T> [[nodiscard]] std::span<const T> values() const {
    check_dtype(codegen::dtype_of<T>);
    return {static_cast<const T*>(data()), static_cast<std::size_t>(m_count)};
  }

private:
  friend struct detail::StaticPlacement;
  struct Production; // a computed array's fill, and its contents once computed

  StaticArray(std::string key, std::function<void(std::span<std::byte>)> fill, Dtype dtype,
              std::vector<std::int64_t> shape, Replication replication,
              std::optional<int> shard_axis);
  using BoxFill = std::function<void(const ArrayBox&, std::span<std::byte>)>;
  StaticArray(std::string key, BoxFill fill, Dtype dtype, std::vector<std::int64_t> shape,
              Replication replication, std::optional<int> shard_axis, ArrayBox box = {});
  void validate();
  [[noreturn]] static void reject_empty_fill(const std::string& key);
  static void check_count(const std::string& key, std::size_t count,
                          const std::vector<std::int64_t>& shape);
  void check_dtype(Dtype wanted) const;

  std::string m_key;
  std::shared_ptr<const void> m_data;       // arrays given their data
  std::shared_ptr<Production> m_production; // computed arrays
  Dtype m_dtype;
  std::vector<std::int64_t> m_shape;
  std::int64_t m_count = 0;
  Replication m_replication;
  std::optional<int> m_shard_axis;
};

/// A node's static data: string key → StaticArray, or a bare scalar (Value: int64, double,
/// string, or a tuple of those). Keys are unique and iterated in sorted (byte) order.
/// Not thread-safe to modify; thread-safe to read.
class StaticData {
public:
  using Entry = std::variant<StaticArray, Value>;

  /// Adds `array` under its key; Error(usage) if the key is taken.
  StaticData& add(StaticArray array);
  /// Adds a bare scalar; Error(usage) if the key is empty or taken.
  StaticData& add(std::string key, Value scalar);
  /// Replaces the array under array.key(); Error(usage) if there is no array of that key.
  StaticData& replace(StaticArray array);

  /// The array or scalar of `key`, or nullptr.
  [[nodiscard]] const StaticArray* array(std::string_view key) const;
  [[nodiscard]] const Value* scalar(std::string_view key) const;
  /// The array of `key`; Error(usage) naming the key if there is none.
  [[nodiscard]] const StaticArray& at(std::string_view key) const;

  [[nodiscard]] const std::map<std::string, Entry, std::less<>>& entries() const noexcept {
    return m_entries;
  }
  [[nodiscard]] bool empty() const noexcept { return m_entries.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return m_entries.size(); }

private:
  std::map<std::string, Entry, std::less<>> m_entries;
};

/// A hash of `data` that is the same in every process, run and rank: "0" when `data` is empty,
/// otherwise the SHA-256 (64 lowercase hex digits, through uwjit::cache::sha256_hex) of this
/// text, one line per key in sorted order:
///
///   array:   A<len>:<key> <dtype> <ndim>:<d0>,<d1>,... <replication> <shard_axis or ->\n
///   scalar:  S<len>:<key> <value>\n
///   value:   i<decimal int64> | d<16 hex digits: the IEEE-754 bits> | s<len>:<bytes>
///            | t<count>(<value>,<value>,...)
///
/// Arrays contribute their key, dtype, shape, replication and shard axis, never their contents:
/// a new array of the same shape rebinds without recompiling; a shape, dtype or sharding change
/// recompiles. Scalars contribute their exact value. Thread-safe.
[[nodiscard]] std::string static_data_hash(const StaticData& data);

/// An axis of a static array that a kernel declares over a run-time domain extent: the array
/// takes that extent when the kernel runs, like the domain.
struct FollowsDomain {
  std::string key;     ///< the static array
  int axis = 0;        ///< its axis
  int domain_axis = 0; ///< the domain axis whose run-time extent it follows
  friend bool operator==(const FollowsDomain&, const FollowsDomain&) = default;
};

/// static_data_hash(data), with each axis in `follows` recorded as "follows domain axis d"
/// instead of its extent: changing the domain's run-time extent (and so those arrays' extents)
/// keeps the hash, and the kernel, the same. Every other extent stays in the hash.
[[nodiscard]] std::string static_data_hash(const StaticData& data,
                                           const std::vector<FollowsDomain>& follows);

} // namespace uwjit::runtime
