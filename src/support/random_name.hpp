#pragma once
// Random lowercase hex names for per-call and per-run guest directories: unguessable by a
// concurrent guest program, so one run's files cannot be pre-planted by another.
#include <cstddef>
#include <string>

namespace maf::sandbox::detail {
std::string random_hex(std::size_t digits);
}
