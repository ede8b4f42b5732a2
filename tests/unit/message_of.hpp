#pragma once
// The message of the exception of type E that f() throws; a test failure when f() throws
// nothing (an exception of another type propagates, so Catch2 names it).
#include <catch2/catch.hpp>

#include <string>

namespace maf::sandbox::test {

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("the expected error was not raised");
  return {};
}

}  // namespace maf::sandbox::test
