#include <uwjit/runtime/static_data.hpp>

#include "static_placement.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <mutex>

namespace uwjit::runtime {

std::string_view to_string(Replication replication) noexcept {
  return replication == Replication::shard ? "shard" : "replicate";
}

namespace {

constexpr int k_max_axes = 8;

[[noreturn]] void reject(std::string_view key, std::string_view rule) {
  throw Error(ErrorKind::usage, format("static array \"{}\": {}", key, rule));
}

// The element count, or nullopt when the array's bytes would not fit in 63 bits.
std::optional<std::int64_t> checked_count(const std::vector<std::int64_t>& shape,
                                          std::size_t element_size) {
  const auto limit = std::numeric_limits<std::int64_t>::max() /
                     static_cast<std::int64_t>(std::max<std::size_t>(element_size, 1));
  std::int64_t count = 1;
  for (const std::int64_t n : shape) {
    if (n > limit / count) {
      return std::nullopt;
    }
    count *= n;
  }
  return count;
}

} // namespace

struct StaticArray::Production {
  std::function<void(std::span<std::byte>)> fill;
  // Arrays computed box by box: the fill of the whole array's boxes, and the box of the whole
  // array this one holds (fill above computes it).
  BoxFill box_fill;
  ArrayBox box;
  std::once_flag once;
  std::shared_ptr<const void> contents; // set once, inside `once`
};

StaticArray::StaticArray(std::string key, std::shared_ptr<const void> data, Dtype dtype,
                         std::vector<std::int64_t> shape, Replication replication,
                         std::optional<int> shard_axis)
    : m_key(std::move(key)), m_data(std::move(data)), m_dtype(dtype), m_shape(std::move(shape)),
      m_replication(replication), m_shard_axis(shard_axis) {
  validate();
  if (m_data == nullptr) {
    reject(m_key, "the data pointer is null");
  }
}

StaticArray::StaticArray(std::string key, std::function<void(std::span<std::byte>)> fill,
                         Dtype dtype, std::vector<std::int64_t> shape, Replication replication,
                         std::optional<int> shard_axis)
    : m_key(std::move(key)), m_production(std::make_shared<Production>()), m_dtype(dtype),
      m_shape(std::move(shape)), m_replication(replication), m_shard_axis(shard_axis) {
  validate();
  m_production->fill = std::move(fill);
}

StaticArray::StaticArray(std::string key, BoxFill fill, Dtype dtype,
                         std::vector<std::int64_t> shape, Replication replication,
                         std::optional<int> shard_axis, ArrayBox box)
    : StaticArray(std::move(key), std::function<void(std::span<std::byte>)>(), dtype,
                  std::move(shape), replication, shard_axis) {
  if (box.extent.empty()) {
    box = {std::vector<std::int64_t>(m_shape.size(), 0), m_shape};
  }
  m_production->fill = [fill, box](std::span<std::byte> storage) { fill(box, storage); };
  m_production->box_fill = std::move(fill);
  m_production->box = std::move(box);
}

bool StaticArray::is_computed_by_box() const noexcept {
  return m_production != nullptr && static_cast<bool>(m_production->box_fill);
}

StaticArray StaticArray::part(const ArrayBox& box) const {
  bool inside = box.offset.size() == m_shape.size() && box.extent.size() == m_shape.size();
  for (std::size_t a = 0; inside && a < m_shape.size(); ++a) {
    inside =
        box.offset[a] >= 0 && box.extent[a] >= 1 && box.extent[a] <= m_shape[a] - box.offset[a];
  }
  if (!inside) {
    reject(m_key, format("the part at {} of extent {} does not lie within its shape {}",
                         shape_text(box.offset), shape_text(box.extent), shape_text(m_shape)));
  }
  if (is_computed_by_box()) {
    // Offsets into the whole array of which this one may itself be a part.
    ArrayBox whole = box;
    for (std::size_t a = 0; a < m_shape.size(); ++a) {
      whole.offset[a] += m_production->box.offset[a];
    }
    return StaticArray(m_key, m_production->box_fill, m_dtype, box.extent, m_replication,
                       m_shard_axis, std::move(whole));
  }
  const std::size_t element = codegen::size_of(m_dtype);
  std::int64_t count = 1;
  for (const std::int64_t n : box.extent) {
    count *= n;
  }
  auto bytes = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(count) * element);
  const auto* source = static_cast<const std::byte*>(data());
  // Row by row (the last axis is contiguous in both).
  const std::size_t row =
      static_cast<std::size_t>(m_shape.empty() ? 1 : box.extent.back()) * element;
  std::vector<std::int64_t> index(m_shape.size(), 0);
  for (std::size_t written = 0; written < bytes->size(); written += row) {
    std::int64_t at = 0;
    for (std::size_t a = 0; a < m_shape.size(); ++a) {
      at = at * m_shape[a] + index[a] + box.offset[a];
    }
    std::memcpy(bytes->data() + written, source + static_cast<std::size_t>(at) * element, row);
    for (std::size_t a = m_shape.size() - 1; m_shape.size() > 0 && a-- > 0;) {
      if (++index[a] < box.extent[a]) {
        break;
      }
      index[a] = 0;
    }
  }
  std::shared_ptr<const void> contents(bytes, bytes->data());
  return StaticArray(m_key, std::move(contents), m_dtype, box.extent, m_replication, m_shard_axis);
}

void StaticArray::reject_empty_fill(const std::string& key) {
  reject(key, "a computed array needs a fill function");
}

void StaticArray::validate() {
  if (!is_identifier(m_key)) {
    reject(m_key, "the key must be a C identifier (letters, digits, _; not starting with a digit)");
  }
  if (!codegen::is_supported(m_dtype)) {
    reject(m_key, format("unsupported dtype {} (accepted: f32, f64, i8, u8, i32, i64)",
                         static_cast<int>(m_dtype)));
  }
  if (m_shape.size() > k_max_axes) {
    reject(m_key,
           format("shape {} must have 0 (a scalar) to {} axes", shape_text(m_shape), k_max_axes));
  }
  for (std::size_t axis = 0; axis < m_shape.size(); ++axis) {
    if (m_shape[axis] < 1) {
      reject(m_key, format("shape {} has extent {} on axis {}: zero-size and negative extents "
                           "are not allowed",
                           shape_text(m_shape), m_shape[axis], axis));
    }
  }
  const auto count = checked_count(m_shape, codegen::size_of(m_dtype));
  if (!count) {
    reject(m_key, format("shape {} is too large to address", shape_text(m_shape)));
  }
  m_count = *count;
  if (m_replication != Replication::replicate && m_replication != Replication::shard) {
    reject(m_key, format("unknown replication {} (accepted: replicate, shard)",
                         static_cast<int>(m_replication)));
  }
  if (m_replication == Replication::replicate && m_shard_axis) {
    reject(m_key, format("replicate forbids a shard_axis (got {}); use Replication::shard to "
                         "split the array",
                         *m_shard_axis));
  }
  if (m_replication == Replication::shard) {
    if (!m_shard_axis) {
      reject(m_key, "shard needs a shard_axis");
    }
    if (*m_shard_axis < 0 || *m_shard_axis >= ndim()) {
      reject(m_key, format("shard_axis {} is out of range [0, {}) for shape {}", *m_shard_axis,
                           ndim(), shape_text(m_shape)));
    }
  }
}

const void* StaticArray::data() const {
  return shared_data().get();
}

const std::shared_ptr<const void>& StaticArray::shared_data() const {
  if (m_production == nullptr) {
    return m_data;
  }
  Production& p = *m_production;
  std::call_once(p.once, [&] {
    std::shared_ptr<std::vector<std::byte>> storage;
    try {
      storage = std::make_shared<std::vector<std::byte>>(size_bytes());
    } catch (const std::bad_alloc&) {
      reject(m_key, format("out of memory: cannot allocate {} bytes for its contents ({} {})",
                           size_bytes(), codegen::to_string(m_dtype), shape_text(m_shape)));
    }
    p.fill(*storage);
    p.contents = std::shared_ptr<const void>(storage, storage->data());
  });
  return p.contents;
}

void detail::StaticPlacement::place(const StaticArray& array, std::span<std::byte> storage,
                                    const std::shared_ptr<const void>& owner) {
  UWJIT_ASSERT(array.m_production != nullptr && storage.size() == array.size_bytes(),
               "placement of a computed array into storage of its size");
  StaticArray::Production& p = *array.m_production;
  bool filled = false;
  std::call_once(p.once, [&] {
    p.fill(storage);
    p.contents = std::shared_ptr<const void>(owner, storage.data());
    filled = true;
  });
  if (!filled) {
    std::memcpy(storage.data(), p.contents.get(), storage.size());
  }
}

bool detail::StaticPlacement::adopt(const StaticArray& array,
                                    std::shared_ptr<const void> contents) {
  UWJIT_ASSERT(array.m_production != nullptr && contents != nullptr,
               "adoption of contents by a computed array");
  StaticArray::Production& p = *array.m_production;
  bool adopted = false;
  std::call_once(p.once, [&] {
    p.contents = std::move(contents);
    adopted = true;
  });
  return adopted;
}

std::size_t StaticArray::size_bytes() const {
  return static_cast<std::size_t>(m_count) * codegen::size_of(m_dtype);
}

void StaticArray::check_count(const std::string& key, std::size_t count,
                              const std::vector<std::int64_t>& shape) {
  std::int64_t expected = 1;
  for (const std::int64_t n : shape) {
    if (n < 1) {
      return; // the constructor rejects the shape with its own message
    }
    if (expected > std::numeric_limits<std::int64_t>::max() / n) {
      return;
    }
    expected *= n;
  }
  if (static_cast<std::int64_t>(count) != expected) {
    reject(key, format("{} values do not fill shape {} ({} elements)", count, shape_text(shape),
                       expected));
  }
}

void StaticArray::check_dtype(Dtype wanted) const {
  if (wanted != m_dtype) {
    reject(m_key,
           format("holds {}, not {}", codegen::to_string(m_dtype), codegen::to_string(wanted)));
  }
}

StaticData& StaticData::add(StaticArray array) {
  std::string key = array.key();
  if (m_entries.count(key) != 0) {
    throw Error(ErrorKind::usage, format("static data: key \"{}\" is used twice", key));
  }
  m_entries.emplace(std::move(key), std::move(array));
  return *this;
}

StaticData& StaticData::add(std::string key, Value scalar) {
  if (key.empty()) {
    throw Error(ErrorKind::usage, "static data: a scalar with an empty key");
  }
  if (m_entries.count(key) != 0) {
    throw Error(ErrorKind::usage, format("static data: key \"{}\" is used twice", key));
  }
  m_entries.emplace(std::move(key), std::move(scalar));
  return *this;
}

StaticData& StaticData::replace(StaticArray array) {
  const auto found = m_entries.find(array.key());
  if (found == m_entries.end() || !std::holds_alternative<StaticArray>(found->second)) {
    throw Error(ErrorKind::usage, format("static data: no array \"{}\" to replace", array.key()));
  }
  found->second = std::move(array);
  return *this;
}

const StaticArray* StaticData::array(std::string_view key) const {
  const auto found = m_entries.find(key);
  return found == m_entries.end() ? nullptr : std::get_if<StaticArray>(&found->second);
}

const Value* StaticData::scalar(std::string_view key) const {
  const auto found = m_entries.find(key);
  return found == m_entries.end() ? nullptr : std::get_if<Value>(&found->second);
}

const StaticArray& StaticData::at(std::string_view key) const {
  if (const StaticArray* found = array(key)) {
    return *found;
  }
  throw Error(ErrorKind::usage, format("static data: no array \"{}\"", key));
}

namespace {

void append_length_prefixed(std::string& out, std::string_view text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

void append_value(std::string& out, const Value& value) {
  const auto& v = value.variant();
  switch (v.index()) {
  case 0:
    out += 'i';
    out += std::to_string(std::get<0>(v));
    break;
  case 1: {
    out += 'd';
    out += hex_text(std::bit_cast<std::uint64_t>(std::get<1>(v)));
    break;
  }
  case 2:
    out += 's';
    append_length_prefixed(out, std::get<2>(v));
    break;
  default: {
    const auto& items = std::get<3>(v);
    out += 't';
    out += std::to_string(items.size());
    out += '(';
    for (std::size_t i = 0; i < items.size(); ++i) {
      out += i == 0 ? "" : ",";
      append_value(out, items[i]);
    }
    out += ')';
  }
  }
}

} // namespace

std::string static_data_hash(const StaticData& data) {
  return static_data_hash(data, {});
}

std::string static_data_hash(const StaticData& data, const std::vector<FollowsDomain>& follows) {
  if (data.empty()) {
    return "0";
  }
  std::string text;
  for (const auto& [key, entry] : data.entries()) {
    if (const auto* array = std::get_if<StaticArray>(&entry)) {
      text += 'A';
      append_length_prefixed(text, key);
      text += ' ';
      text += codegen::to_string(array->dtype());
      text += ' ';
      text += std::to_string(array->ndim());
      text += ':';
      for (int axis = 0; axis < array->ndim(); ++axis) {
        text += axis == 0 ? "" : ",";
        const auto follow = std::find_if(follows.begin(), follows.end(), [&](const auto& f) {
          return f.key == key && f.axis == axis;
        });
        // 'd' never starts an extent's digits: the two cannot be confused.
        text += follow != follows.end()
                    ? "d" + std::to_string(follow->domain_axis)
                    : std::to_string(array->shape()[static_cast<std::size_t>(axis)]);
      }
      text += ' ';
      text += to_string(array->replication());
      text += ' ';
      text += array->shard_axis() ? std::to_string(*array->shard_axis()) : "-";
    } else {
      text += 'S';
      append_length_prefixed(text, key);
      text += ' ';
      append_value(text, std::get<Value>(entry));
    }
    text += '\n';
  }
  return cache::sha256_hex(text);
}

} // namespace uwjit::runtime
