#include <uwjit/comm/comm.hpp>

#include <uwjit/common/error.hpp>

#include <algorithm>
#include <cstring>

namespace uwjit::comm {

std::vector<std::string> SerialComm::all_gather(std::string_view mine) {
  return {std::string(mine)};
}

std::string SerialComm::broadcast(std::string bytes, int root) {
  UWJIT_ASSERT(root == 0, "serial broadcast from a rank other than 0");
  return bytes;
}

void SerialComm::send_receive(std::span<const std::byte> send, int dest,
                              std::span<std::byte> receive, int source, int /*tag*/) {
  UWJIT_ASSERT(dest == 0 && source == 0, "serial send_receive with another rank");
  UWJIT_ASSERT(send.size() == receive.size(), "serial send_receive of different sizes");
  std::memmove(receive.data(), send.data(), send.size());
}

namespace {
// Transfers with oneself complete when both halves are posted; the second to arrive copies.
class DoneRequest final : public Comm::Request {
public:
  void wait() override {}
};
} // namespace

std::unique_ptr<Comm::Request> SerialComm::start_receive(std::span<std::byte> receive, int source,
                                                         int tag) {
  UWJIT_ASSERT(source == 0, "serial receive from another rank");
  if (auto send = m_sends.find(tag); send != m_sends.end()) {
    UWJIT_ASSERT(send->second.size() == receive.size(), "serial receive of a different size");
    std::copy(send->second.begin(), send->second.end(), receive.begin());
    m_sends.erase(send);
  } else {
    m_receives.emplace(tag, receive);
  }
  return std::make_unique<DoneRequest>();
}

std::unique_ptr<Comm::Request> SerialComm::start_send(std::span<const std::byte> send, int dest,
                                                      int tag) {
  UWJIT_ASSERT(dest == 0, "serial send to another rank");
  if (auto receive = m_receives.find(tag); receive != m_receives.end()) {
    UWJIT_ASSERT(receive->second.size() == send.size(), "serial send of a different size");
    std::copy(send.begin(), send.end(), receive->second.begin());
    m_receives.erase(receive);
  } else {
    m_sends.emplace(tag, std::vector<std::byte>(send.begin(), send.end()));
  }
  return std::make_unique<DoneRequest>();
}

std::unique_ptr<Comm> SerialComm::split_node() {
  return std::make_unique<SerialComm>();
}

} // namespace uwjit::comm
