#pragma once
// The seccomp program every process-sandbox guest runs under, compiled once with libseccomp
// and handed to bubblewrap (`--seccomp FD`), which installs it just before exec'ing the
// command — after it has set up the namespaces the filter then forbids creating again.
//
// Allow by default, EPERM for the calls container engines' default profiles deny an
// unprivileged guest (the list and each reason: docs/backends/process.md, "Seccomp").
#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::process {

/// One denied call and why: the table docs/backends/process.md reproduces.
struct DeniedSyscall {
  std::string_view name;
  std::string_view reason;
};
const std::vector<DeniedSyscall>& denied_syscalls();

/// The compiled BPF program (native architecture; any other architecture is killed, so a
/// 32-bit `int 0x80` cannot go around the table). Throws OSError naming what libseccomp
/// refused.
std::string compile_seccomp_program();

/// A fresh O_CLOEXEC memfd holding `program`, positioned at 0: bubblewrap reads it to EOF,
/// so every run needs its own. Throws OSError.
int seccomp_program_fd(const std::string& program);

/// `program` in a memfd sealed against every change (write, grow, shrink, further seals),
/// made once per backend (issue 55). Throws OSError.
int sealed_program_fd(const std::string& program);

/// A new read-only open of the sealed memfd `sealed` (through /proc/self/fd): its own file
/// offset at 0, so concurrent bubblewraps each read the whole program. -1 when /proc cannot
/// reopen it (the caller then writes a fresh memfd).
int reopen_program_fd(int sealed) noexcept;

}  // namespace maf::sandbox::process
