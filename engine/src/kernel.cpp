#include <uwjit/engine/kernel.hpp>

namespace uwjit::engine {

const char* to_string(Publication publication) noexcept {
  switch (publication) {
  case Publication::not_needed:
    return "not_needed";
  case Publication::published:
    return "published";
  case Publication::not_published:
    return "not_published";
  }
  return "not_needed";
}

const char* to_string(Tier tier) noexcept {
  switch (tier) {
  case Tier::memory:
    return "memory";
  case Tier::disk:
    return "disk";
  case Tier::compiled:
    return "compiled";
  case Tier::received:
    return "received";
  }
  return "compiled";
}

Kernel::Kernel(uwjit_kernel_fn function, std::shared_ptr<const void> code,
               std::shared_ptr<const KernelInfo> info)
    : m_function(function), m_counts{static_cast<int>(info->slots.state_in.size()),
                                     static_cast<int>(info->slots.state_out.size()),
                                     static_cast<int>(info->slots.statics.size()),
                                     static_cast<int>(info->slots.extents.size()),
                                     static_cast<int>(info->slots.integrals.size()),
                                     static_cast<int>(info->slots.params.size())},
      m_code(std::move(code)), m_info(std::move(info)) {}

} // namespace uwjit::engine
