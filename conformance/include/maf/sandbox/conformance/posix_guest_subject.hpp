#pragma once
/// @file conformance/posix_guest_subject.hpp
/// The shipped subject for a Linux guest (docs/conformance.md "Running it against a backend"): plants through the public
/// file surface and `ln`, and makes its network attempts with whatever the guest has.
///
/// Guest utilities it needs: `sh`, `ln` (planting); `curl`, else `nc` (EGRESS, http:// only);
/// `maf-sandbox-rawframe` for EG-3 (planted from the host, set_raw_frame_tool); for EGRESS_CLOSED one of
/// bash (its /dev/tcp and /dev/udp), busybox `nc`, or python3, tried in that order. A guest
/// with none of them makes the EGRESS_CLOSED probes *fail* with that reason: a connection
/// never attempted proves nothing.
///
/// @code
///   BlockingRunner run;
///   auto sandbox = run([&] { return backend->acquire(key, spec); });
///   PosixGuestSubject subject(run, sandbox, backend->declarations().capabilities, Egress::Closed);
///   check_files_out(subject);  // throws ConformanceFailure naming every failed probe
/// @endcode

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/conformance/subject.hpp"

namespace maf::sandbox::conformance {

class PosixGuestSubject : public ConformanceSubject {
public:
  /// `capabilities` must be the backend's declared set; `enforced_egress` the mode the
  /// sandbox was acquired with if the backend declares it (else absent). The working
  /// directory defaults to the sandbox's storage base.
  PosixGuestSubject(BlockingRunner& runner, std::shared_ptr<Sandbox> sandbox, CapabilitySet capabilities,
                    std::optional<Egress> enforced_egress, std::optional<std::string> working_directory = {});

  Sandbox& sandbox() override { return *sandbox_; }
  BlockingRunner& runner() override { return runner_; }
  std::string working_directory() const override { return working_directory_; }
  CapabilitySet capabilities() const override { return capabilities_; }
  std::optional<Egress> enforced_egress() const override { return egress_; }
  std::chrono::milliseconds exec_timeout() const override { return exec_timeout_; }
  void set_exec_timeout(std::chrono::milliseconds timeout) { exec_timeout_ = timeout; }
  HostBoundaryClaims host_boundary() const override { return host_boundary_; }
  /// What the backend claims about the host boundary (default: the strictest).
  void set_host_boundary(HostBoundaryClaims claims) { host_boundary_ = claims; }

  /// write_file with the working directory set to the path's parent, so it can plant
  /// outside the subject's working directory.
  void plant_file(const std::string& absolute_path, std::string_view bytes) override;
  /// exec `ln -sfn target path`; a non-zero exit is a harness error (std::runtime_error)
  /// naming path, target, exit code and stderr.
  void plant_symlink(const std::string& absolute_path, const std::string& target) override;

  FetchOutcome fetch_url(const std::string& url, std::chrono::milliseconds timeout) override;
  GuestAttempt connect_tcp(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout) override;
  GuestAttempt query_dns(const std::string& host, std::uint16_t port, std::string_view query,
                         std::chrono::milliseconds timeout) override;

  /// EG-3 through `maf-sandbox-rawframe` (conformance/tools/rawframe.cpp, a static binary):
  /// the one set with set_raw_frame_tool, else one on the guest's PATH, else NoTool.
  RawFrameAttempt send_raw_frames(const std::string& destination, std::uint16_t port,
                                  const std::string& spoofed_source, const std::string& token,
                                  std::chrono::milliseconds timeout) override;
  /// The host path of a `maf-sandbox-rawframe` binary to plant in the guest (needs files_in
  /// and exec) at `W/.maf-sandbox-rawframe` on first use; the build's copy is
  /// `$<TARGET_FILE:maf-sandbox-rawframe>`.
  void set_raw_frame_tool(std::string host_path) { raw_frame_tool_host_ = std::move(host_path); }

  /// The guest network tool EGRESS_CLOSED uses: "bash", "busybox-nc", "python3" or "" (none).
  /// Asked once, then remembered.
  const std::string& network_tool();

private:
  enum class ReachedBy { ExitZero, AnsweredLine };
  /// Run one guest-side network attempt; a timeout reads as "did not get through".
  GuestAttempt attempt(std::string tool, std::vector<std::string> argv, std::chrono::milliseconds timeout,
                       ReachedBy reached_by);
  ExecResult exec(Command command, std::string working_directory, std::chrono::milliseconds timeout);

  BlockingRunner& runner_;
  std::shared_ptr<Sandbox> sandbox_;
  CapabilitySet capabilities_;
  std::optional<Egress> egress_;
  std::string working_directory_;
  std::chrono::milliseconds exec_timeout_{std::chrono::seconds(60)};
  std::optional<std::string> network_tool_;
  std::string raw_frame_tool_host_;
  std::optional<std::string> raw_frame_tool_guest_;  ///< planted or found; "" when none
  HostBoundaryClaims host_boundary_{};
};

}  // namespace maf::sandbox::conformance
