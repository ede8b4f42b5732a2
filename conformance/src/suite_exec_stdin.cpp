// EXEC_STDIN (docs/conformance.md "EXEC_STDIN"; docs/exec-input.md STDIN-1…STDIN-5): one-shot
// stdin, attacked through the public surface. What a backend must show before it may declare
// EXEC_STDIN: a shell reads its program from stdin (SI-1); bytes pass a filter exactly, also
// more than a pipe holds (SI-2); without stdin a reader sees end of file at once, never a
// terminal and never the host's stdin (SI-3); stdin past the cap is refused before anything
// runs (SI-4); and a program that never reads its stdin is not failed for it (SI-5).
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kStdin{Capability::ExecStdin};

void a_shell_reads_its_program(ProbeContext& c) {
  // Three lines, the last without a newline: each must be run, in order, and nothing else.
  const auto r = exec_with(c, Command({"sh", "-s"}),
                           ExecInput{.stdin_bytes = "x=from-stdin\nprintf '%s|' \"$x\"\nprintf 'last line'"});
  if (r.exit_code != 0 || r.stdout_text() != "from-stdin|last line")
    fail("`sh -s` did not run the program it read from stdin: " + describe(r));
}

void bytes_pass_a_filter_exactly(ProbeContext& c) {
  const std::string payload = fidelity_payload();
  const auto r = exec_with(c, Command({"cat"}), ExecInput{.stdin_bytes = payload});
  if (r.exit_code != 0 || r.stdout_bytes != payload) fail("`cat` did not return its stdin byte for byte: " + describe(r));
  // More than any pipe or socket buffer holds: the input must be written while the output is
  // read, or both sides wait on each other until the deadline.
  std::string large(2 * 1024 * 1024, '\0');
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>((i * 131) % 251);
  const auto big = exec_with(c, Command({"cat"}), ExecInput{.stdin_bytes = large});
  if (big.exit_code != 0 || big.stdout_bytes != large)
    fail("2 MiB through `cat` came back as " + std::to_string(big.stdout_bytes.size()) + " bytes" +
         (big.stdout_bytes == large.substr(0, big.stdout_bytes.size()) ? "" : ", changed") + " (exit " +
         std::to_string(big.exit_code) + ")");
}

void closed_by_default(ProbeContext& c) {
  // `cat` on an open, silent stdin waits until the deadline: it must see end of file at once.
  const auto r = exec(c, Command({"sh", "-c", "if [ -t 0 ]; then echo tty; fi; cat; echo eof"}));
  if (r.exit_code != 0 || r.stdout_text() != "eof\n")
    fail("without stdin, a reader must see end of file at once (no terminal): " + describe(r));
  const auto empty = exec_with(c, Command({"sh", "-c", "cat; echo eof"}), ExecInput{.stdin_bytes = std::string()});
  if (empty.exit_code != 0 || empty.stdout_text() != "eof\n")
    fail("empty stdin must read as end of file: " + describe(empty));
}

void past_the_cap_refused(ProbeContext& c) {
  const std::string marker = c.paths.in_work("si4-ran");
  expect_refusal<SandboxTransferCapExceeded>(
      "stdin of kMaxExecStdinBytes + 1 bytes", "SandboxTransferCapExceeded", [&] {
        exec_with(c, Command({"touch", marker}), ExecInput{.stdin_bytes = std::string(kMaxExecStdinBytes + 1, 'x')});
      });
  if (present(c, marker)) fail("a command whose stdin was refused ran anyway (it made " + marker + ")");
}

void a_program_that_never_reads(ProbeContext& c) {
  const auto r = exec_with(c, Command({"sh", "-c", "echo done"}), ExecInput{.stdin_bytes = std::string(4 << 20, 'z')});
  if (r.exit_code != 0 || r.stdout_text() != "done\n")
    fail("a program that ignores 4 MiB of stdin must end as it would without it: " + describe(r));
}

constexpr std::array<Probe, 5> kProbes{{
    {Suite::ExecStdin, "SI-1", "a-shell-reads-its-program",
     "`python -` and `sh -s` take their program on stdin: the agent's way to run code without a file", kStdin,
     a_shell_reads_its_program},
    {Suite::ExecStdin, "SI-2", "bytes-pass-a-filter-exactly",
     "a filter's input changed, cut, or deadlocked against its output is wrong data or a hang", kStdin,
     bytes_pass_a_filter_exactly},
    {Suite::ExecStdin, "SI-3", "closed-by-default",
     "a program left waiting on an open stdin hangs until its deadline: the commonest agent bug in the field",
     kStdin, closed_by_default},
    {Suite::ExecStdin, "SI-4", "past-the-cap-refused",
     "stdin is a transfer into the sandbox: unbounded, it is memory the host spends on the guest's behalf", kStdin,
     past_the_cap_refused},
    {Suite::ExecStdin, "SI-5", "a-program-that-never-reads",
     "input the program did not want (a closed pipe) is not the program's failure", kStdin,
     a_program_that_never_reads},
}};

}  // namespace

std::span<const Probe> exec_stdin_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
