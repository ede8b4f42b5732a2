#pragma once
/// @file exec_report.hpp
/// What a backend's `do_exec` / `do_run_code` reports (docs/writing-a-backend.md "How an
/// exec ends", EXE-1…EXE-4): the program's result when it exited by itself, or which bound
/// stopped it and how. The core (`Sandbox::exec`) raises one error type for each ending, the
/// same on every backend — SandboxProgramTimeout for the deadline, SandboxTransferCapExceeded
/// for an output cap — so a host catches one thing, and a backend never builds the error.
///
/// Light: no Asio. A plain ExecResult converts to `Exited`, so `co_return result;` reports it.

#include <cstdint>
#include <string>
#include <utility>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"

namespace maf::sandbox {

struct ExecReport {
  enum class End {
    Exited,           ///< the program exited by itself: `result` is what it did
    DeadlineExpired,  ///< the request's deadline passed; the backend stopped it (C-40)
    OverCap,          ///< a stream passed the backend's output cap; the backend stopped it
  };
  End end = End::Exited;
  ExecResult result{};  ///< Exited only
  /// OverCap: the cap's name as the backend's configuration spells it, e.g.
  /// "max_exec_output_bytes"; its value; which output went over it ("stdout", "stderr",
  /// "stdout and stderr together").
  std::string cap_name{};
  std::uint64_t cap_bytes = 0;
  std::string cap_output{};
  /// How the backend stopped the program, for the message: "it was killed", "wslc was
  /// stopped". Never empty for an ending other than Exited.
  std::string stopped{};
  /// The program can only be stopped with its sandbox (killing the client does not reach it:
  /// Docker D-13, wslc W-28): the core ends the sandbox through the backend's `do_abandon`
  /// before it raises, so every abandon takes the backend's one teardown path.
  bool abandon = false;
  /// DeadlineExpired: whether the stop was delivered and what it reached, carried on the
  /// raised SandboxProgramTimeout. An abandon that ended the sandbox reached the group.
  SandboxProgramTimeout::Signal signal = SandboxProgramTimeout::Signal::Unknown;
  SandboxProgramTimeout::Reach reach = SandboxProgramTimeout::Reach::Nothing;

  ExecReport() = default;
  ExecReport(ExecResult exited) : result(std::move(exited)) {}  // NOLINT: implicit on purpose

  static ExecReport deadline_expired(std::string stopped, bool abandon = false) {
    ExecReport r;
    r.end = End::DeadlineExpired;
    r.stopped = std::move(stopped);
    r.abandon = abandon;
    return r;
  }
  /// The deadline passed and the backend itself killed the program's whole process group.
  static ExecReport group_killed_at_deadline(std::string stopped) {
    ExecReport r = deadline_expired(std::move(stopped));
    r.signal = SandboxProgramTimeout::Signal::Sent;
    r.reach = SandboxProgramTimeout::Reach::Group;
    return r;
  }
  static ExecReport over_cap(std::string cap_name, std::uint64_t cap_bytes, std::string output, std::string stopped,
                             bool abandon = false) {
    ExecReport r;
    r.end = End::OverCap;
    r.cap_name = std::move(cap_name);
    r.cap_bytes = cap_bytes;
    r.cap_output = std::move(output);
    r.stopped = std::move(stopped);
    r.abandon = abandon;
    return r;
  }
};

}  // namespace maf::sandbox
