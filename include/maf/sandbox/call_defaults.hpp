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

/// The default bound of every cleanup rung a caller runs without naming one: Sandbox::reclaim
/// (a tool call's directory removal, C-120), Sandbox::reset, and the rungs a released call
/// owes. Named for the cleanup, not for one rung ("reclaim" is the Reclaim rung only:
/// docs/architecture.md "Glossary").
inline constexpr std::chrono::milliseconds kDefaultCleanupTimeout{30'000};

/// The earlier name of kDefaultCleanupTimeout, which it bounded as well when it said "reclaim".
[[deprecated("use kDefaultCleanupTimeout: it bounds every cleanup rung, not only Reclaim")]]
inline constexpr std::chrono::milliseconds kDefaultReclaimTimeout = kDefaultCleanupTimeout;

}  // namespace maf::sandbox
