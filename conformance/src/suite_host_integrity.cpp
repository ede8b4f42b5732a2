// HOST_INTEGRITY (this port's own; docs/conformance.md "HOST_INTEGRITY, in detail"): whatever the guest runs, it cannot
// reach host root — not through the kernel's parameters, not through sysrq, not through a
// container engine's socket, not by *being* host root, not past a missing seccomp filter,
// and not by reading kernel memory, keys or timers.
//
// Every probe is one guest-side `sh` script printing `key=value` facts; the verdict is
// decided here from those facts, never from a kernel's message text, and nothing is timed.
// The write probes change nothing even when they fail: HI-1 writes back the exact value it
// just read, HI-2 opens without writing.
#include <array>
#include <filesystem>
#include <map>

#include "maf/sandbox/conformance/subject.hpp"
#include "maf/sandbox/conformance/suites.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kExec{Capability::Exec};

/// Runs `script` with the guest's sh; every `key=value` line it prints, in order. An exit
/// other than 0 means the guest could not answer (no sh, no /proc): the probe fails.
std::multimap<std::string, std::string> facts(ProbeContext& c, const std::string& what, const std::string& script) {
  const auto r = exec(c, std::vector<std::string>{"sh", "-c", script});
  if (r.exit_code != 0) fail(what + " could not be answered by the guest: " + describe(r));
  std::multimap<std::string, std::string> out;
  const std::string text = r.stdout_text();
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (const auto eq = line.find('='); eq != std::string::npos) out.emplace(line.substr(0, eq), line.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

std::string last(const std::multimap<std::string, std::string>& f, const std::string& key) {
  const auto [begin, end] = f.equal_range(key);
  return begin == end ? std::string() : std::prev(end)->second;
}

/// Every `key=` value, joined for a message ("" when none).
std::string all(const std::multimap<std::string, std::string>& f, const std::string& key) {
  std::string out;
  for (auto [it, end] = f.equal_range(key); it != end; ++it) out += (out.empty() ? "" : ", ") + it->second;
  return out;
}

/// A guest script printing `verdict=absent|written|opened|refused` for a write to `path`.
/// With `write_back`, a readable file gets its own value back in one write (the kernel ends
/// a value at the newline it printed), so nothing changes; otherwise — or when unreadable —
/// the file is only opened for appending, no byte written, so nothing is triggered.
std::string write_attempt(const std::string& path, bool write_back) {
  std::string script = "f=" + path + "\nif [ ! -e \"$f\" ]; then echo verdict=absent; exit 0; fi\n";
  if (write_back)
    script += "if v=$(cat \"$f\" 2>/dev/null); then\n"
              "  if (printf '%s\\n' \"$v\" > \"$f\") 2>/dev/null; then echo verdict=written; else echo verdict=refused; fi\n"
              "  exit 0\nfi\n";
  return script + "if (: >> \"$f\") 2>/dev/null; then echo verdict=opened; else echo verdict=refused; fi\n";
}

/// Fails unless the attempt was refused; `absent` is not applicable, with `absent_reason`.
void expect_write_refused(ProbeContext& c, const std::string& path, bool write_back, const std::string& absent_reason,
                          const std::string& consequence) {
  const std::string verdict = last(facts(c, "the write to " + path, write_attempt(path, write_back)), "verdict");
  if (verdict == "absent") throw ProbeNotApplicable(absent_reason);
  if (verdict == "written") fail("the guest wrote " + path + " (its own value back, so nothing changed): " + consequence);
  if (verdict == "opened") fail("the guest opened " + path + " for writing: " + consequence);
  if (verdict != "refused") fail("the guest's answer was not understood: verdict " + detail::quoted(verdict));
}

void kernel_parameter_write_refused(ProbeContext& c) {
  // core_pattern: a `|/path` value is run by the kernel as host root on the next crash.
  expect_write_refused(c, "/proc/sys/kernel/core_pattern", true,
                       "the guest has no /proc/sys/kernel/core_pattern to write",
                       "it can make the kernel run any program as host root");
}

void sysrq_not_writable(ProbeContext& c) {
  expect_write_refused(c, "/proc/sysrq-trigger", false,
                       "this kernel has no /proc/sysrq-trigger (CONFIG_MAGIC_SYSRQ off): nothing to attack",
                       "one byte reboots or crashes the host");
}

void no_engine_socket(ProbeContext& c) {
  const auto f = facts(c, "the engine-socket search",
                       "for p in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock "
                       "/var/run/containerd/containerd.sock /run/podman/podman.sock /run/crio/crio.sock "
                       "/run/buildkit/buildkitd.sock /run/user/*/docker.sock /run/user/*/podman/podman.sock; do\n"
                       "  [ -S \"$p\" ] && echo \"socket=$p\"\n"
                       "done; echo searched=yes\n");
  if (last(f, "searched") != "yes") fail("the guest did not finish the search");
  if (const std::string found = all(f, "socket"); !found.empty()) fail("a container engine's socket is in the guest (" + found + "): it starts a privileged container");
}

bool has_cap_sys_admin(const std::string& capeff_hex) {
  try {
    return (std::stoull(capeff_hex, nullptr, 16) >> 21) & 1U;  // CAP_SYS_ADMIN is bit 21
  } catch (const std::exception&) {
    return true;  // unreadable: not proven absent
  }
}

void guest_not_host_root(ProbeContext& c) {
  // /proc/self/uid_map shows only the innermost mapping (bubblewrap nests two namespaces), so
  // it cannot say whether the chain ends at host uid 0. The kernel's own /proc/sys belongs to
  // global root; the owner the guest sees for it equals the guest's uid iff that uid *is*
  // global root, however many namespaces lie between.
  const auto f = facts(c, "the guest's identity",
                       "set -- $(ls -lnd /proc/sys/kernel 2>/dev/null) && echo \"kernel_owner=$3\"\n"
                       "while read key a b rest; do\n"
                       "  [ \"$key\" = Uid: ] && echo \"uid=$b\"; [ \"$key\" = CapEff: ] && echo \"capeff=$a\"\n"
                       "done < /proc/self/status\n"
                       "while read id parent dev root point options rest; do\n"
                       "  [ \"$point\" = /proc/sys ] && echo \"proc_sys_options=$options\"\n"
                       "done < /proc/self/mountinfo; :\n");
  const std::string owner = last(f, "kernel_owner"), uid = last(f, "uid");
  if (uid.empty()) fail("the guest's /proc/self/status shows no Uid line");
  if (owner.empty()) throw ProbeNotApplicable("the guest has no /proc/sys/kernel to tell host root by");
  if (owner != uid) return;
  if (!c.subject.host_boundary().root_confined_by_engine)
    fail("the guest's uid " + uid + " is host root (it owns the kernel's /proc/sys), and the backend claims no "
         "engine confinement standing in for the uid: every kernel interface that checks only the uid is open");
  // The engine's confinement, checked rather than trusted: the top-most /proc/sys mount is
  // read-only and CAP_SYS_ADMIN (which could remount it) is not effective.
  std::string problems;
  const std::string options = last(f, "proc_sys_options");
  if (options.rfind("ro", 0) != 0 || (options.size() > 2 && options[2] != ','))
    problems += "/proc/sys is not mounted read-only (" + (options.empty() ? "not a mount" : options) + "); ";
  if (has_cap_sys_admin(last(f, "capeff"))) problems += "CAP_SYS_ADMIN is effective (CapEff " + last(f, "capeff") + "); ";
  if (!problems.empty())
    fail("the guest's uid " + uid + " is host root and the engine's confinement does not hold: " + problems);
}

void seccomp_active(ProbeContext& c) {
  if (!c.subject.host_boundary().seccomp)
    throw ProbeNotApplicable("the backend claims no seccomp filter; nothing to check");
  const auto f = facts(c, "the guest's seccomp mode",
                       "while read key value rest; do [ \"$key\" = Seccomp: ] && echo \"seccomp=$value\"; "
                       "done < /proc/self/status; :\n");
  const std::string mode = last(f, "seccomp");
  if (mode.empty()) fail("the guest's /proc/self/status has no Seccomp line: the kernel offers no filter");
  if (mode != "2") fail("the guest runs with seccomp mode " + mode + ", not 2 (filter), though the backend claims one");
}

void kernel_internals_masked(ProbeContext& c) {
  const auto f = facts(c, "the kernel-internals read",
                       "for p in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/timer_stats "
                       "/proc/latency_stats; do\n"
                       "  [ -e \"$p\" ] || continue\n"
                       "  n=$(head -c 64 \"$p\" 2>/dev/null | wc -c)\n"
                       "  [ \"${n:-0}\" -gt 0 ] && echo \"readable=$p\"\n"
                       "done; echo searched=yes\n");
  if (last(f, "searched") != "yes") fail("the guest did not finish the reads");
  if (const std::string found = all(f, "readable"); !found.empty())
    fail("the guest reads kernel internals (" + found + "): kernel memory, every user's keys, timer and scheduler "
         "state");
}

constexpr std::array<Probe, 6> kProbes{{
    {Suite::HostIntegrity, "HI-1", "a-kernel-parameter-write-is-refused",
     "kernel parameters are global: a core_pattern written once runs a program as host root (modprobe and binfmt_misc are the same class, behind the same mount; only core_pattern is attacked)",
     kExec, kernel_parameter_write_refused},
    {Suite::HostIntegrity, "HI-2", "sysrq-trigger-is-not-writable",
     "one byte to /proc/sysrq-trigger reboots, crashes or freezes the host", kExec, sysrq_not_writable},
    {Suite::HostIntegrity, "HI-3", "no-engine-socket-is-reachable",
     "a container engine's socket starts a privileged container: host root in one request", kExec, no_engine_socket},
    {Suite::HostIntegrity, "HI-4", "the-guest-is-not-host-root",
     "a guest that is host root passes every kernel check made on the uid alone, capabilities or not", kExec,
     guest_not_host_root},
    {Suite::HostIntegrity, "HI-5", "seccomp-is-active-where-declared",
     "the filter keeps the kernel's riskiest calls (keyring, bpf, mount, new namespaces) out of the guest's reach",
     kExec, seccomp_active},
    {Suite::HostIntegrity, "HI-6", "kernel-internals-are-masked",
     "kernel memory, keys and timers leak secrets and the addresses exploits need", kExec, kernel_internals_masked},
}};

}  // namespace

std::span<const Probe> host_integrity_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail

namespace maf::sandbox::conformance {

std::vector<std::string> host_integrity_skips_on_this_kernel() {
  std::error_code ec;
  return std::filesystem::exists("/proc/sysrq-trigger", ec) ? std::vector<std::string>{}
                                                            : std::vector<std::string>{"HI-2"};
}

}  // namespace maf::sandbox::conformance
