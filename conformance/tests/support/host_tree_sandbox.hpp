#pragma once
// Test-only Sandbox doubles for the conformance self-tests.
//
// HostTreeSandbox maps guest paths 1:1 onto host paths (its storage base is a real host
// directory) and runs commands as plain host children: no isolation at all, but honest
// file semantics (no-follow, real links), so every file and exec suite can be run against
// it — and each `Flaw` breaks exactly one promise, to prove the named probes catch it.
// Its network is the host's: a subject that claims closed egress for it lies.
//
// TruncatingSandbox wraps the in-process double and hands back the first max_bytes bytes of
// an over-cap file instead of refusing (hiding the size so the core's stat check cannot
// catch it).
#include <filesystem>
#include <memory>
#include <string>

#include "maf/sandbox/conformance/posix_guest_subject.hpp"
#include "maf/sandbox/conformance/results.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

namespace maf::sandbox::conformance::test {

enum class Flaw {
  None,
  FollowLinks,             ///< stats, reads and writes through links (stat, not lstat; no O_NOFOLLOW)
  IgnoreWorkingDirectory,  ///< runs every command in "/"
  FoldStderr,              ///< appends stderr to stdout and reports none
  NormaliseExitCode,       ///< reports every non-zero exit as 1
  TimeoutAsOSError,        ///< reports the caller's expired bound as a plain OSError
  AppendOnWrite,           ///< appends to an existing file instead of replacing it
  FollowLinksWhenRemovingTrees,  ///< a recursive removal deletes what interior links point at
  ReclaimNothing,          ///< reclaim returns success and removes nothing
  ReclaimFollowsLinks,     ///< reclaim removes (host-side, as the host) through every link it meets
  ReclaimTakesTheParent,   ///< reclaim removes the directory's parent's other entries too
  ReclaimRefusesMissing,   ///< reclaim of a missing directory is an OSError
  ResetNothing,            ///< reset returns success and restores nothing
  ResetOnlyEmpties,        ///< reset empties the working directory: no mode, no deleted entry comes back
  ResetStrandsFilePlane,   ///< reset restores the tree, but every write after it fails (the file plane is left
                           ///< on what the reset replaced)
  BlindToHostToolCalls,    ///< its stat never sees a host-tools request (a file plane that lags a running exec)
  ForgesHostToolAnswers,   ///< its writes turn a host-tools refusal into a value
  TimeoutSparesSession,    ///< a command runs in a session of its own, which the timeout's stop misses
  EndsLeftoversOnNextExec, ///< one exec at a time: a new exec first kills every process left in the tree
  NoNewSession,            ///< the guest's `setsid` starts no session (a shim that only runs its command)
  ExitCodeAlwaysZero,      ///< reports every exit as 0
  HoldsFinishedExec,       ///< a host-tools launcher exec whose program ended is held to its deadline, reported expired
  TimeoutNeverSignals,     ///< at the deadline it gives up the wait, signals nothing, and says so (signal unknown)
  HiddenFromHost,          ///< its processes are not visible as themselves on the runner's host (as a VM's
                           ///< or a remote engine's are): every `sleep N` runs as `sleep 0N`
};

/// `text` with every "sleep " made "sleep 0": the same durations, under command lines the
/// probes' markers never match (HiddenFromHost, StreamFlaw::HiddenFromHost).
std::string hidden_from_host(std::string text);

class HostTreeSandbox : public Sandbox {
public:
  /// `root` is an existing, empty host directory; the storage base is `root/work`.
  /// `cleanup_rungs` adds Reclaim and/or Snapshot to the declared set: reclaim is the core's
  /// default (`rm -rf` over exec), reset restores a copy of `root/work` taken now (at
  /// `root/.snapshot-work`, outside the working directory). `cleanup_rungs` may also name
  /// HostTools or Background, which the double then declares (its exec and file plane serve
  /// them).
  HostTreeSandbox(const std::filesystem::path& root, Flaw flaw = Flaw::None, CapabilitySet cleanup_rungs = {});

  /// SIGKILL every process whose working directory is in this double's tree: what earlier
  /// execs left (EndsLeftoversOnNextExec does it before each exec; a test after a flaw).
  void kill_leftovers() const;

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override;
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_write_file(const std::string& absolute_path, const std::string& content) override;
  boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path, std::int64_t max_bytes) override;
  boost::asio::awaitable<std::vector<GuestDirEntry>> do_list_dir(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_remove(const std::string& absolute_path, bool recursive) override;
  boost::asio::awaitable<void> do_reclaim(const std::string& absolute_directory, std::chrono::milliseconds timeout,
                                          std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<void> do_reset(std::chrono::milliseconds timeout,
                                        std::chrono::steady_clock::time_point deadline) override;

private:
  std::filesystem::path work_;
  std::filesystem::path snapshot_;
  std::optional<GuestStat> stat_now(const std::string& path) const;
  Flaw flaw_;
  bool stranded_ = false;  ///< ResetStrandsFilePlane, after a reset
};

/// Refuses a read whose size *equals* the cap (an off-by-one), so CAP-2 can fail.
class OffByOneCapSandbox : public testing::InProcessSandbox {
public:
  using InProcessSandbox::InProcessSandbox;

protected:
  boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path, std::int64_t max_bytes) override;
};

class TruncatingSandbox : public testing::InProcessSandbox {
public:
  using InProcessSandbox::InProcessSandbox;

protected:
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) override;
  boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path, std::int64_t max_bytes) override;
};

/// A fresh host directory under the temp dir, removed on destruction.
class TempDir {
public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const noexcept { return path_; }

private:
  std::filesystem::path path_;
};

/// A double of type `D` over a fresh directory, and the POSIX subject that attacks it (no
/// egress claimed; 20 s per exec).
template <class D>
struct DoubleFixture {
  TempDir dir;
  BlockingRunner run;
  std::shared_ptr<D> sandbox;
  std::unique_ptr<PosixGuestSubject> subject;

  template <class... Args>
  explicit DoubleFixture(const std::string& prefix, Args&&... args) : dir(prefix) {
    sandbox = std::make_shared<D>(dir.path(), std::forward<Args>(args)...);
    subject = std::make_unique<PosixGuestSubject>(run, sandbox, sandbox->capabilities(), std::nullopt);
    subject->set_exec_timeout(std::chrono::seconds(20));
  }
};

/// "id: message" of every probe that did not pass, one per line (for a test's INFO).
std::string failure_messages(const std::vector<ProbeResult>& results);

}  // namespace maf::sandbox::conformance::test
