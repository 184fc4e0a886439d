// A GPU kernel's cubin: made from its PTX by the CUDA driver's linker, kept in memory and beside
// the cache entry, and served only to the driver version and sm that made it.
#include "engine_impl.hpp"
#include "timing.hpp"

#include <uwjit/common/format.hpp>
#include <uwjit/cuda/driver.hpp>

#include <cstring>

namespace uwjit::engine {

namespace {

// The PTX as the driver takes it: the text and its terminating NUL.
std::shared_ptr<const std::vector<char>> ptx_image(const PtxKernel& ptx) {
  auto bytes = std::make_shared<std::vector<char>>(ptx.ptx->begin(), ptx.ptx->end());
  bytes->push_back('\0');
  return bytes;
}

// Links `ptx` to a cubin for the current context's device; nullopt and `why` when the driver
// cannot.
std::optional<std::vector<char>> link(const cuda::Driver& driver, const PtxKernel& ptx,
                                      std::string& why) {
  const cuda::Api& api = driver.api();
  cuda::LinkState state = nullptr;
  if (const auto result = api.cuLinkCreate_v2(0, nullptr, nullptr, &state);
      result != cuda::k_success) {
    why = "cuLinkCreate_v2: " + driver.describe(result);
    return std::nullopt;
  }
  std::vector<char> text(ptx.ptx->begin(), ptx.ptx->end());
  text.push_back('\0');
  std::optional<std::vector<char>> cubin;
  auto result = api.cuLinkAddData_v2(state, cuda::k_jit_input_ptx, text.data(), text.size(),
                                     "uwjit.ptx", 0, nullptr, nullptr);
  if (result != cuda::k_success) {
    why = "cuLinkAddData_v2: " + driver.describe(result);
  } else {
    void* image = nullptr;
    std::size_t size = 0;
    result = api.cuLinkComplete(state, &image, &size);
    if (result != cuda::k_success) {
      why = "cuLinkComplete: " + driver.describe(result);
    } else {
      const auto* begin = static_cast<const char*>(image);
      cubin.emplace(begin, begin + size); // the driver's buffer goes with the link state
    }
  }
  (void)api.cuLinkDestroy(state);
  return cubin;
}

} // namespace

CudaImage Engine::cuda_image(const PtxKernel& ptx, std::string_view device_arch) {
  const cuda::Driver& driver = cuda::Driver::get();
  const std::string loader = format("cuda driver {} {}", driver.version(), device_arch);
  const auto key = cache::Key::parse(ptx.info->key);
  UWJIT_ASSERT(key.has_value(), "cuda_image: a PtxKernel without a key");
  Impl& impl = *m_impl;
  {
    const std::lock_guard<std::mutex> guard(impl.images_mutex);
    if (const auto found = impl.images.find({*key, loader}); found != impl.images.end()) {
      return {found->second, true, "memory", 0};
    }
  }
  CudaImage image;
  if (impl.store) {
    auto found = impl.store->lookup_binary(*key, loader);
    if (found.hit()) {
      image = {std::make_shared<const std::vector<char>>(std::move(found.bytes)), true, "disk", 0};
    } else if (found.status == cache::BinaryLookup::Status::stale) {
      impl.logger.info("key={}: the cubin on disk was made by {}, not {}: linking the PTX again",
                       key->hex(), found.detail, loader);
    }
  }
  if (!image.bytes) {
    const auto start = detail::Clock::now();
    std::string why;
    auto cubin = link(driver, ptx, why);
    if (!cubin) {
      impl.logger.info("key={}: the driver cannot link a cubin ({}); it loads the PTX", key->hex(),
                       why);
      return {ptx_image(ptx), false, "the driver could not link a cubin (" + why + ")", 0};
    }
    image = {std::make_shared<const std::vector<char>>(std::move(*cubin)), true, "linked",
             detail::ms_since(start)};
    if (impl.store) {
      const auto published = impl.store->publish_binary(*key, loader, *image.bytes);
      if (!published.published()) {
        impl.logger.info("key={}: cubin not published: {}", key->hex(), published.reason);
      }
    }
  }
  const std::lock_guard<std::mutex> guard(impl.images_mutex);
  impl.images.emplace(std::make_pair(*key, loader), image.bytes);
  return image;
}

} // namespace uwjit::engine
