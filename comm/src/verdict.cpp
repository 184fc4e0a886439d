#include <uwjit/comm/verdict.hpp>

#include <uwjit/common/error.hpp>

#include <new>
#include <string>

namespace uwjit::comm {

namespace {

// "" for success; else the kind as one digit, then the message.
std::string encode(const std::exception_ptr& outcome) {
  if (!outcome) {
    return {};
  }
  try {
    std::rethrow_exception(outcome);
  } catch (const Error& error) {
    return std::to_string(static_cast<int>(error.kind())) + error.what();
  } catch (const std::bad_alloc&) {
    return std::to_string(static_cast<int>(ErrorKind::usage)) +
           "out of memory: an allocation failed (std::bad_alloc)";
  } catch (const std::exception& error) {
    return std::to_string(static_cast<int>(ErrorKind::usage)) + error.what();
  } catch (...) {
    return std::to_string(static_cast<int>(ErrorKind::usage)) + "an exception that is not a std::exception";
  }
}

} // namespace

void agree(Collectives& comm, const std::exception_ptr& mine) {
  const auto outcomes = comm.all_gather(encode(mine));
  for (const auto& outcome : outcomes) {
    if (!outcome.empty()) {
      const int kind = outcome.front() - '0';
      const bool known = kind >= 0 && kind <= static_cast<int>(k_last_error_kind);
      throw Error(known ? static_cast<ErrorKind>(kind) : ErrorKind::internal, outcome.substr(1));
    }
  }
}

} // namespace uwjit::comm
