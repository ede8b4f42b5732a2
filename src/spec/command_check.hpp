#pragma once
// The one check of a command before anything runs (docs/tools.md "Errors are results"): an
// empty or blank shell line, an empty argv or argv[0], and a NUL byte anywhere are refused —
// `sh -c ""` would "succeed" doing nothing, and a launcher would fail on it with guest paths in
// its text. Private to the core: Sandbox::exec / exec_stream, run_with_host_tools and the tool
// layer's session.exec apply it.
#include <string>

#include "maf/sandbox/command.hpp"

namespace maf::sandbox::detail {

/// What is wrong with `command`, or empty when nothing is.
std::string command_problem(const Command& command);

/// ValueError "<who>: <problem>" when command_problem says something.
void refuse_malformed_command(const std::string& who, const Command& command);

}  // namespace maf::sandbox::detail
