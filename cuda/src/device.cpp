#include <uwjit/cuda/device.hpp>

#include <algorithm>

namespace uwjit::cuda {

Context make_current(int ordinal) {
  const Driver& driver = Driver::get();
  const Api& api = driver.api();
  Device device = 0;
  driver.check(api.cuDeviceGet(&device, ordinal), "cuDeviceGet", ErrorKind::usage);
  Context context = nullptr;
  driver.check(api.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain",
               ErrorKind::usage);
  driver.check(api.cuCtxSetCurrent(context), "cuCtxSetCurrent", ErrorKind::usage);
  return context;
}

DeviceMemory::DeviceMemory(std::size_t bytes) : m_bytes(bytes) {
  const Driver& driver = Driver::get();
  driver.check(driver.api().cuMemAlloc_v2(&m_pointer, std::max<std::size_t>(bytes, 8)),
               "cuMemAlloc_v2", ErrorKind::io);
}

DeviceMemory::DeviceMemory(const void* host, std::size_t bytes) : DeviceMemory(bytes) {
  if (bytes > 0) {
    const Driver& driver = Driver::get();
    driver.check(driver.api().cuMemcpyHtoD_v2(m_pointer, host, bytes), "cuMemcpyHtoD_v2",
                 ErrorKind::io);
  }
}

DeviceMemory::~DeviceMemory() {
  (void)Driver::get().api().cuMemFree_v2(m_pointer);
}

void DeviceMemory::download(void* host) const {
  if (m_bytes > 0) {
    const Driver& driver = Driver::get();
    driver.check(driver.api().cuMemcpyDtoH_v2(host, m_pointer, m_bytes), "cuMemcpyDtoH_v2",
                 ErrorKind::io);
  }
}

void DeviceMemory::upload(const void* host) const {
  if (m_bytes > 0) {
    const Driver& driver = Driver::get();
    driver.check(driver.api().cuMemcpyHtoD_v2(m_pointer, host, m_bytes), "cuMemcpyHtoD_v2",
                 ErrorKind::io);
  }
}

PinnedMemory::PinnedMemory(std::size_t bytes) : m_bytes(bytes) {
  const Driver& driver = Driver::get();
  driver.check(driver.api().cuMemAllocHost_v2(&m_data, std::max<std::size_t>(bytes, 8)),
               "cuMemAllocHost_v2", ErrorKind::io);
}

PinnedMemory::~PinnedMemory() {
  (void)Driver::get().api().cuMemFreeHost(m_data);
}

} // namespace uwjit::cuda
