#pragma once
/// @file support/guest_stream.hpp
/// Streaming exec through an engine's own exec verb (Docker CLI and Engine API, WSLC):
/// the pieces every such backend needs to stop a streamed program *inside the guest*,
/// because killing the client, or dropping its connection, never reaches it (docker.md
/// "Streaming exec", wslc.md).
///
/// - A wrapper (`guest_stream_argv`) that runs the program verbatim after printing one
///   header line on stdout: `maf-exec-stream <pid>\n`. The pid is its own, and the program
///   replaces it (`exec`), so the header names the program's pid — and its process group,
///   since the engine starts each exec as the leader of a session of its own (runc's
///   setsid; the wrapper refuses, exit 125, when it is not). Everything the program starts
///   stays in that group unless it leaves it on purpose.
/// - A killer (`guest_group_kill_argv`), run as a second exec: SIGKILL to that group, then
///   a wait until no live member is left (zombies count as gone: a container's init may
///   never reap them). With no header seen, it finds the wrapper by the token in its argv.
/// - A gate (`GuestStreamGate`) between the transport and the core's ExecOutputSink: it
///   strips the header, holds back whatever arrives before it (the engine's own complaint
///   when the program never started), enforces the backend's per-stream cap and forwards
///   every other byte as it is read.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/exec_stream.hpp"

namespace maf::sandbox::support {

/// Exit status of the wrapper when the exec does not lead its own process group (so a
/// stop could not reach what it starts): nothing was run.
inline constexpr int kGuestStreamNotLeader = 125;

/// A fresh token naming one streamed exec (hex, no shell metacharacters).
std::string guest_stream_token();

/// The argv that runs `program` (verbatim; a shell line is {"sh", "-c", line}) under the
/// header-printing wrapper. Needs `sh` in the guest.
std::vector<std::string> guest_stream_argv(const std::string& token, const std::vector<std::string>& program);

/// The argv of the exec that stops the streamed program: its group when `pgid` is known,
/// else whatever still runs with `token` in its argv. Exits 0 once nothing of it is alive,
/// 3 when something survived the wait.
std::vector<std::string> guest_group_kill_argv(const std::string& token, const std::optional<std::string>& pgid);

/// Between a transport's reads and the core's sink (see the file comment). Not thread-safe:
/// fed by one read loop, in reading order.
class GuestStreamGate {
public:
  /// How `cap` counts: each stream on its own, or both together.
  enum class CapScope { PerStream, Together };
  /// At most `cap` bytes (per stream, or both streams together) reach the sink; `cap_name`
  /// is the setting that says so.
  GuestStreamGate(ExecOutputSink& sink, std::uint64_t cap, std::string cap_name,
                  CapScope scope = CapScope::PerStream);

  /// One chunk as read. False: stop reading (a cap passed, or the handler threw).
  bool feed(OutputStream stream, std::string_view bytes);

  /// The header was seen: the program runs (or ran) under the wrapper.
  bool started() const noexcept { return pgid_.has_value(); }
  /// The program's pid and process group, from the header.
  const std::optional<std::string>& pgid() const noexcept { return pgid_; }
  /// The stream that passed the cap, if one did.
  const std::optional<OutputStream>& over_cap() const noexcept { return over_cap_; }
  /// The handler threw (ExecOutputSink::deliver returned false).
  bool stopped() const noexcept { return stopped_; }
  std::uint64_t cap() const noexcept { return cap_; }
  const std::string& cap_name() const noexcept { return cap_name_; }

  /// Everything that arrived with no header before it (stdout's then stderr's): the
  /// engine's or the wrapper's own words when the program never started.
  std::string preamble() const { return pre_stdout_ + pre_stderr_; }
  /// For a program that never started: hand the preamble to the sink as stderr (what
  /// plain exec reports as the command's stderr), under the cap.
  void deliver_preamble();

private:
  bool forward(OutputStream stream, std::string_view bytes);

  ExecOutputSink& sink_;
  std::uint64_t cap_;
  std::string cap_name_;
  CapScope scope_;
  std::optional<std::string> pgid_;
  bool no_header_ = false;  ///< stdout began with something else: never a header now
  std::string pre_stdout_, pre_stderr_;
  std::optional<OutputStream> over_cap_;
  bool stopped_ = false;
};

}  // namespace maf::sandbox::support
