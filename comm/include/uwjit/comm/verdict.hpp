// The one verdict idiom of collective work: every rank contributes its outcome, and either every
// rank raises or none does. Never a rank that throws while the others wait.
#pragma once

#include <uwjit/comm/comm.hpp>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace uwjit::comm {

/// Collective: each rank gives `mine`, null if its part succeeded, else the exception it caught.
/// If no rank failed, returns. Otherwise every rank throws: the same uwjit::Error, with the kind
/// and message of the lowest failing rank's exception, except on a rank whose own exception is
/// not a uwjit::Error (a host's or a node's own code, e.g. a Python exception carried through
/// C++): that rank rethrows its own, as it would serially, so its type survives. Such a foreign
/// exception counts elsewhere as ErrorKind::usage, with the message `rank R: ` and its what().
/// One all-reduce of 8 bytes per call when every rank succeeded (memory and traffic independent
/// of the rank count); an all-gather of the messages only when some rank failed.
void agree(Collectives& comm, const std::exception_ptr& mine);

/// Collective: runs `body` on every rank, then agree()s on its outcome. Returns body's result
/// when every rank succeeded; else throws on every rank (see agree).
template <class Body> auto together(Collectives& comm, Body&& body) -> std::invoke_result_t<Body&> {
  using Result = std::invoke_result_t<Body&>;
  if constexpr (std::is_void_v<Result>) {
    std::exception_ptr mine;
    try {
      body();
    } catch (...) {
      mine = std::current_exception();
    }
    agree(comm, mine);
  } else {
    std::exception_ptr mine;
    std::optional<Result> result;
    try {
      result.emplace(body());
    } catch (...) {
      mine = std::current_exception();
    }
    agree(comm, mine);
    return std::move(*result);
  }
}

} // namespace uwjit::comm
