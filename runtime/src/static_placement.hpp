// Where the contents of computed static arrays go when the runtime, not the array, decides: the
// node-shared placement (node_shared.cpp) puts one copy per node in shared memory.
#pragma once

#include <uwjit/runtime/static_data.hpp>

#include <cstddef>
#include <memory>
#include <span>

namespace uwjit::runtime::detail {

struct StaticPlacement {
  /// Makes `storage` (writable, array.size_bytes() long, kept alive by `owner`) the contents of
  /// computed `array` by filling it; if the contents were computed already in this process,
  /// copies them into it instead (the array keeps its own copy). Throws what the fill throws.
  static void place(const StaticArray& array, std::span<std::byte> storage,
                    const std::shared_ptr<const void>& owner);
  /// Makes `contents` (array.size_bytes() bytes that hold what the fill would write) the
  /// contents of computed `array` without calling its fill, unless they were computed already
  /// (then returns false and the array keeps its own copy).
  static bool adopt(const StaticArray& array, std::shared_ptr<const void> contents);
};

} // namespace uwjit::runtime::detail
