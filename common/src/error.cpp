#include <uwjit/common/error.hpp>

namespace uwjit {

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
  case ErrorKind::usage:
    return "usage";
  case ErrorKind::io:
    return "io";
  case ErrorKind::compile:
    return "compile";
  case ErrorKind::jit:
    return "jit";
  case ErrorKind::collective:
    return "collective";
  case ErrorKind::internal:
    return "internal";
  case ErrorKind::kernel:
    return "kernel";
  }
  return "internal";
}

namespace detail {
void assertion_failed(const char* condition, const char* file, int line, std::string_view message) {
  std::string text = "internal error: assertion `";
  text += condition;
  text += "` failed at ";
  text += file;
  text += ':';
  text += std::to_string(line);
  if (!message.empty()) {
    text += ": ";
    text += message;
  }
  throw Error(ErrorKind::internal, text);
}
} // namespace detail

} // namespace uwjit
