#pragma once
/// @file exec_input.hpp
/// What one command is given beside its argv (docs/exec-input.md, ENV-1…ENV-7,
/// STDIN-1…STDIN-5): its own environment variables and the bytes on its stdin.
///
/// Both reach the guest without a shell and without touching any command line a process
/// listing shows: a secret a host hands one command (a token, a key) must not leak through
/// `ps`, an event, a log or a span. Light: no Asio.

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace maf::sandbox {

/// The most variables one command may be given (ENV-3).
inline constexpr std::size_t kMaxExecEnvVariables = 256;
/// The longest name (ENV-2) and value (ENV-3), in bytes.
inline constexpr std::size_t kMaxExecEnvNameBytes = 128;
inline constexpr std::size_t kMaxExecEnvValueBytes = 32 * 1024;
/// The most bytes all of one command's `NAME=VALUE` entries may hold together (ENV-3): well
/// under the kernel's execve bound (ARG_MAX), which the guest's base environment and argv share.
inline constexpr std::size_t kMaxExecEnvTotalBytes = 256 * 1024;
/// The most bytes one-shot stdin may carry (STDIN-2): the same order as a written file's
/// transfer; more is SandboxTransferCapExceeded, refused before anything runs.
inline constexpr std::size_t kMaxExecStdinBytes = std::size_t{16} << 20;

/// A command's own inputs. Every field's default is what exec did before it existed: the
/// guest's base environment unchanged, stdin closed (ENV-1, STDIN-1).
struct ExecInput {
  /// Variables added to, or overriding, the guest's base environment for this command only.
  /// Names are POSIX portable names (`[A-Za-z_][A-Za-z0-9_]*`); values are bytes without NUL.
  /// A name or value outside the bounds above is SandboxEnvironmentRefused naming it —
  /// never the value. Needs Capability::ExecEnv.
  std::map<std::string, std::string> environment{};
  /// Names whose values may appear in events (ExecEvent::env_public). Every other value is
  /// never shown anywhere — events carry the names only (ENV-5).
  std::set<std::string> public_names{};
  /// Bytes the program reads on stdin; stdin is closed after them. Absent: stdin is closed
  /// (reads see end of file) — never the host's, never a terminal (STDIN-1). Needs
  /// Capability::ExecStdin.
  std::optional<std::string> stdin_bytes{};
};

}  // namespace maf::sandbox
