#pragma once
/// @file call_defaults.hpp
/// The bounds a sandbox call takes when its caller names none. Apart from sandbox.hpp so the
/// light entry (<maf/sandbox.hpp>) can default its arguments without the coroutine API.

#include <chrono>
#include <cstdint>

namespace maf::sandbox {

/// The default exec/run_code bound when a caller names none.
inline constexpr std::chrono::milliseconds kDefaultExecTimeout{60'000};

/// The default cap of a read_file that names none: 16 MiB, the same order as the default
/// per-file output cap; a larger file is refused (SandboxTransferCapExceeded), never cut.
inline constexpr std::int64_t kDefaultReadCapBytes = std::int64_t{16} << 20;

/// The default bound of Sandbox::reclaim and of a tool call's directory removal (C-120).
inline constexpr std::chrono::milliseconds kDefaultReclaimTimeout{30'000};

}  // namespace maf::sandbox
