#pragma once
/// @file support/shell.hpp
/// POSIX argv quoting, byte-for-byte compatible with Python's shlex.quote / shlex.join
/// (C-121): the in-process double records joined commands and tests match on them.

#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::support {

/// Empty -> ''; only [A-Za-z0-9_@%+=:,./-] -> unchanged; otherwise single-quoted with each
/// embedded ' written as '"'"'.
std::string shell_quote(std::string_view argument);

/// Each argument quoted, joined by single spaces.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace maf::sandbox::support
