#pragma once
/// @file conformance/subject.hpp
/// The seam a backend fills so the suites can attack it (docs/conformance.md "Running it against a backend").
///
/// A subject owns nothing the suites judge; it hands them an *already acquired* sandbox and
/// the guest-side moves the public surface deliberately does not offer: planting a link
/// (creating a link is the guest's move; a sandbox offering it would arm the attacker),
/// fetching a URL, opening a TCP connection, asking a DNS server. Those moves are virtual
/// so a Windows or distroless guest writes its own subject while the probes stay unchanged.
///
/// The suites are synchronous: every awaitable of the sandbox is run on `runner()`, which
/// must be the BlockingRunner the sandbox was acquired on (sync.hpp: a backend may bind I/O
/// objects to the executor an operation first ran on).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox::conformance {

/// What a guest-side network attempt (EGRESS_CLOSED) found.
struct GuestAttempt {
  /// The guest tool that made the attempt ("bash", "busybox-nc", "python3"); empty when the
  /// guest has none, in which case the attempt proves nothing and the probe fails.
  std::string tool;
  /// The attempt got through: a TCP connection was established, or a DNS answer arrived.
  bool reached = false;
  /// Exit code and stderr of the guest command, for the failure message.
  std::string detail;
};

/// What an EGRESS fetch found (EG-1, EG-2).
struct FetchOutcome {
  int exit_code = 0;
  std::string http_code;  ///< trimmed `%{http_code}`, e.g. "200" or "000"
  bool reached() const noexcept { return exit_code == 0 && !http_code.empty() && http_code.front() == '2'; }
};

/// What a raw-frame attempt (EGRESS EG-3) did inside the guest. Whether a frame *arrived* is
/// never the guest's word: the attack is one-way, so the runner's listener judges.
struct RawFrameAttempt {
  enum class Result {
    NoTool,       ///< the guest has no way to write raw frames: nothing attempted, nothing proven
    Refused,      ///< the guest could not open a raw socket (no CAP_NET_RAW): nothing left
    NoNeighbour,  ///< the guest knew no next hop to address a frame to: nothing left
    Sent,         ///< frames left the guest's interface
  };
  Result result = Result::NoTool;
  std::string detail;  ///< the tool's own line, exit code, stderr (for messages)
};

/// What the backend promises about the host boundary (docs/conformance.md "HOST_INTEGRITY, in detail").
/// The default is the strictest: a subject that says nothing is held to all of it.
struct HostBoundaryClaims {
  /// The backend promises a boundary between guest and host at all. False for the `none`
  /// and `runtime` rungs (the guest *is* a host process): HOST_INTEGRITY's gate then refuses,
  /// since attacking a boundary never promised proves nothing.
  bool promised = true;
  /// The guest may run as a uid that *is* host root — a container engine without user
  /// namespace remapping, rung `container` or above — because other confinement stands in
  /// for the uid. HI-4 then checks that confinement instead: /proc/sys mounted read-only and
  /// no CAP_SYS_ADMIN in the guest's effective set. False: the guest must not be host root.
  bool root_confined_by_engine = false;
  /// Every guest process runs under a seccomp filter (HI-5 checks `Seccomp: 2`). False: the
  /// backend promises none and HI-5 is skipped with that reason (never a pass).
  bool seccomp = true;
};

/// The claims a backend of isolation rung `isolation` ("os_process", "container", …) makes
/// by default: no boundary below `os_process`; root is allowed only from `container` up;
/// seccomp is claimed everywhere a boundary is.
HostBoundaryClaims default_host_boundary_claims(std::string_view isolation);

class ConformanceSubject {
public:
  virtual ~ConformanceSubject();

  /// The sandbox under attack, already acquired.
  virtual Sandbox& sandbox() = 0;
  /// The runner the sandbox was acquired on; every call of the suites goes through it.
  virtual BlockingRunner& runner() = 0;
  /// Absolute guest path every relative probe path resolves against.
  virtual std::string working_directory() const = 0;
  /// The backend's *own* declared set, unfiltered: it decides the gate and the skips.
  virtual CapabilitySet capabilities() const = 0;
  /// The egress mode the sandbox was acquired with, when the backend declares enforcing it;
  /// absent when it enforces none (EGRESS and EGRESS_CLOSED are then refused by their gate).
  virtual std::optional<Egress> enforced_egress() const = 0;
  /// Bound of every exec the suites run (EX-7 uses its own 1 s bound).
  virtual std::chrono::milliseconds exec_timeout() const { return std::chrono::seconds(60); }
  /// What HOST_INTEGRITY holds the backend to; the strictest claims unless overridden.
  virtual HostBoundaryClaims host_boundary() const { return {}; }

  /// Create a regular file at an absolute guest path, creating parents. Anywhere: the
  /// hostile layout lives partly *outside* the working directory.
  virtual void plant_file(const std::string& absolute_path, std::string_view bytes) = 0;
  /// Create a link at `absolute_path` pointing at `target`, replacing what is there.
  virtual void plant_symlink(const std::string& absolute_path, const std::string& target) = 0;

  /// EGRESS: fetch `url` from inside the guest, bounded by `timeout`.
  virtual FetchOutcome fetch_url(const std::string& url, std::chrono::milliseconds timeout) = 0;
  /// EGRESS_CLOSED: open a TCP connection from inside the guest to `host`:`port` (an IP
  /// literal), bounded by `timeout`.
  virtual GuestAttempt connect_tcp(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout) = 0;
  /// EGRESS_CLOSED: send the DNS query `query` (raw bytes) over UDP to `host`:`port` from
  /// inside the guest and report whether any answer came back within `timeout`.
  virtual GuestAttempt query_dns(const std::string& host, std::uint16_t port, std::string_view query,
                                 std::chrono::milliseconds timeout) = 0;
  /// EGRESS EG-3: from inside the guest, write IPv4/UDP frames through a raw packet socket to
  /// every next hop the guest knows (its ARP neighbours: a proxy, a gateway) — untagged and
  /// priority-tagged (802.1Q VID 0) — addressed to `destination`:`port` with the source
  /// `spoofed_source` and `token` as payload. The default has no tool (NoTool), which fails
  /// the probe: an attack never made proves nothing.
  virtual RawFrameAttempt send_raw_frames(const std::string& destination, std::uint16_t port,
                                          const std::string& spoofed_source, const std::string& token,
                                          std::chrono::milliseconds timeout);
};

}  // namespace maf::sandbox::conformance
