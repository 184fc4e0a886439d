#include <uwjit/comm/verdict.hpp>

#include <uwjit/common/error.hpp>

#include <cstdint>
#include <new>
#include <span>
#include <string>

namespace uwjit::comm {

namespace {

// What a rank tells the others: "" for success; else the kind as one digit, then the message. A
// foreign exception (not a uwjit::Error: a host's or a node's own code) is told as usage,
// naming the rank, since the message of such an exception rarely says where it happened.
struct Outcome {
  std::string told;
  bool foreign = false;
};

Outcome encode(const std::exception_ptr& outcome, int rank) {
  if (!outcome) {
    return {};
  }
  const std::string usage = std::to_string(static_cast<int>(ErrorKind::usage));
  const std::string place = "rank " + std::to_string(rank) + ": ";
  try {
    std::rethrow_exception(outcome);
  } catch (const Error& error) {
    return {std::to_string(static_cast<int>(error.kind())) + error.what(), false};
  } catch (const std::bad_alloc&) {
    // Not foreign: a bare "std::bad_alloc" says nothing; every rank raises this instead.
    return {usage + place + "out of memory: an allocation failed (std::bad_alloc)", false};
  } catch (const std::exception& error) {
    return {usage + place + error.what(), true};
  } catch (...) {
    return {usage + place + "an exception that is not a std::exception", true};
  }
}

} // namespace

void agree(Collectives& comm, const std::exception_ptr& mine) {
  // First how many failed, in 8 bytes whatever the rank count (the common case ends here); the
  // failures' messages only when there are some.
  std::uint64_t failed = mine ? 1 : 0;
  comm.all_reduce_sum(std::span<std::uint64_t>(&failed, 1));
  if (failed == 0) {
    return;
  }
  const Outcome own = encode(mine, comm.rank());
  const auto outcomes = comm.all_gather(own.told);
  for (const auto& outcome : outcomes) {
    if (!outcome.empty()) {
      if (own.foreign) {
        std::rethrow_exception(mine); // as this rank would raise it serially
      }
      const int kind = outcome.front() - '0';
      const bool known = kind >= 0 && kind <= static_cast<int>(k_last_error_kind);
      throw Error(known ? static_cast<ErrorKind>(kind) : ErrorKind::internal, outcome.substr(1));
    }
  }
}

} // namespace uwjit::comm
