#pragma once
/// @file named_argument.hpp
/// The compile-time refusal behind every public awaitable that takes an aggregate a host fills
/// with designated initialisers (AGENT-1, docs/tools.md "GCC 12 and temporaries"): GCC 12
/// destroys a braced aggregate temporary of a co_await expression twice, in the *caller's*
/// frame, whatever the callee does with it — so such a parameter is taken as `const T&` from a
/// named object, and an overload for `T&&` whose body holds `static_assert(kNamedArgumentRequired<T>,
/// "...")` turns the temporary into a compile error that says what to write instead.

namespace maf::sandbox::detail {

/// False for every type; dependent, so the static_assert fires only when the overload is used.
template <class>
inline constexpr bool kNamedArgumentRequired = false;

}  // namespace maf::sandbox::detail
