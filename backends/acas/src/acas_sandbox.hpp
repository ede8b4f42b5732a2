#pragma once
// One ACAS sandbox as the core's Sandbox: exec over the capture protocol (A-23…A-27),
// write_file over exec (A-30…A-32), stat/read/list over the file plane (A-40…A-44),
// remove over exec. The core's NVI does confinement and the ancestor walk through
// do_lstat.

#include <memory>

#include "maf/sandbox/sandbox.hpp"
#include "response.hpp"
#include "state.hpp"

namespace maf::sandbox::acas::detail {

class AcasSandbox final : public Sandbox {
public:
  AcasSandbox(std::shared_ptr<AcasSandboxBackend::State> state, std::shared_ptr<Record> record,
              CapabilitySet capabilities, std::string storage_base);

  /// Runs one executeShellCommand as a control exec with `budget` bytes of answer.
  /// Used by probes and transfers; exceptions classified by the caller.
  static boost::asio::awaitable<ExecAnswer> control_exec(Service& service, const std::string& id,
                                                           std::string command, std::string working_directory,
                                                           Clock::time_point deadline, std::size_t budget);
  /// The exact-bytes exec, without invalidation.
  static boost::asio::awaitable<ExecReport> captured_exec(Service& service, const std::string& id,
                                                          const std::string& shell_line,
                                                          const std::string& working_directory,
                                                          Clock::time_point deadline);

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override;
  boost::asio::awaitable<void> do_abandon() override;
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_write_file(const std::string& absolute_path, const std::string& content) override;
  boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path, std::int64_t max_bytes) override;
  boost::asio::awaitable<std::vector<GuestDirEntry>> do_list_dir(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_remove(const std::string& absolute_path, bool recursive) override;
  /// A-13 over the core's walk (ACQ-4): one files/mkdir per missing level, outermost first,
  /// from walk.first_missing, never a guest command; a complete walk sends nothing.
  boost::asio::awaitable<void> do_prepare_storage_base(const StorageBaseWalk& walk) override;

private:
  Clock::time_point read_deadline() const;
  /// one lease per public operation, on the binding the sandbox was acquired with.
  boost::asio::awaitable<ClientCache::Lease> lease();
  /// do_lstat's body, for do_remove to run under its own lease.
  boost::asio::awaitable<std::optional<GuestStat>> lstat(Service& service, const std::string& absolute_path);
  std::shared_ptr<AcasSandboxBackend::State> state_;
  std::shared_ptr<Record> record_;
};

}  // namespace maf::sandbox::acas::detail
