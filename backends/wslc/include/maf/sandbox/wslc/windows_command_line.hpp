#pragma once
/// @file wslc/windows_command_line.hpp
/// W-41: the one command line a Windows process receives, built from an argv so that the
/// MSVC runtime's parser (the rules `CommandLineToArgvW` and the CRT apply) gives back exactly
/// that argv.
///
/// Windows has no argv at the process boundary: `CreateProcessW` takes a single UTF-16
/// string and the child re-splits it. A naive join would let a guest-chosen argument (a path,
/// a script body) split into several or swallow its neighbours, so every argument is quoted by
/// the inverse of the parser's rules:
///   - an argument with no space, tab, newline, vertical tab or `"` and not empty passes as is;
///   - otherwise it is wrapped in `"…"`; inside, a run of n backslashes followed by `"` becomes
///     2n+1 backslashes and `\"`, a run at the very end becomes 2n (so the closing quote stays
///     a quote), and any other run passes unchanged.
/// The program name (argv[0]) follows the parser's simpler first-token rule — no escapes at
/// all — so it is quoted when it holds whitespace and refused when it holds a `"`.
///
/// This port runs wslc as a Linux shim in CI, where argv reaches the child unchanged; the
/// builder is what a Windows process runner must use, and it is tested on every platform
/// against an independent parser of the documented rules (unit_wslc_windows_command_line).

#include <string>
#include <vector>

namespace maf::sandbox::wslc {

/// The UTF-16 command line for `argv` (UTF-8). Throws `ValueError` naming the argument's
/// index when `argv` is empty, when an argument is not valid UTF-8 or holds a NUL, or when
/// argv[0] is empty or holds a `"`.
std::u16string windows_command_line(const std::vector<std::string>& argv);

}  // namespace maf::sandbox::wslc
