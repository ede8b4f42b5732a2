#pragma once
// One acquired wslc container as a maf::sandbox::Sandbox (wslc.md W-20…W-30). The public
// Sandbox methods confine the path and walk its ancestors through do_lstat (the engine
// stat); this class adds exec, the one-entry tar upload and nothing else: every other
// operation is refused by the core's capability gate (W-2, W-30).

#include <memory>
#include <optional>
#include <string>

#include "file_plane.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/wslc/runner.hpp"

namespace maf::sandbox::wslc::detail {

/// W-6, W-7: 8 MiB per written file (the core default) and for one exec's output.
inline constexpr std::size_t kMaxFileBytes = std::size_t{8} << 20;
inline constexpr std::size_t kMaxExecOutputBytes = std::size_t{8} << 20;

struct WslcSandboxParts {
  std::shared_ptr<WslcRunner> runner;
  std::string container;
  std::string kind;
  std::string instance_id;
  std::string storage_base;
  CapabilitySet capabilities;
  std::chrono::milliseconds command_timeout{60'000};
};

class WslcSandbox final : public Sandbox {
public:
  explicit WslcSandbox(WslcSandboxParts parts);
  const std::string& container_name() const noexcept { return p_.container; }

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override;
  boost::asio::awaitable<void> do_abandon() override;
  boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) override;
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_write_file(const std::string& absolute_path, const std::string& content) override;
  /// W-18 over the core's walk (ACQ-4): a missing base is made by one tar holding the base
  /// as a single directory entry (0755, root); the engine makes its missing parents the same
  /// way and leaves existing directories alone. A complete walk makes nothing.
  boost::asio::awaitable<void> do_prepare_storage_base(const StorageBaseWalk& walk) override;

private:
  /// Stop a streamed program in the guest (its whole group, support/guest_stream.hpp): wslc
  /// killed on the host leaves it running (W-28). OSError when something of it survives.
  boost::asio::awaitable<void> stop_streamed(const std::string& token, const std::optional<std::string>& pgid);
  WslcSandboxParts p_;
  FilePlane plane_;
};

}  // namespace maf::sandbox::wslc::detail
