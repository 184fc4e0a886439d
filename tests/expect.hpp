// What the tests ask of errors and texts: the message of the usage error an action raises, and
// whether a text holds a part.
#pragma once

#include <uwjit/common/error.hpp>

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace uwjit_test {

/// Whether `text` holds `part`.
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

/// The message of the uwjit::Error that `action` throws, checked to be a usage error; "(no
/// error)" when it throws none.
template <class Action> std::string usage_error(Action&& action) {
  try {
    action();
  } catch (const uwjit::Error& error) {
    CHECK(error.kind() == uwjit::ErrorKind::usage);
    return error.what();
  }
  return "(no error)";
}

} // namespace uwjit_test
