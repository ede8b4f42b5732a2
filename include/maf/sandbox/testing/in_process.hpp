#pragma once
/// @file testing/in_process.hpp
/// The in-process test double (C-108…C-117): a Sandbox, a SandboxBackend and a host file
/// store that live entirely in memory.
///
/// Reached by name only — the umbrella header never includes it, so it cannot leak into
/// production code. It runs no program: `exec` and `run_code` are recorded and answered
/// from canned outputs (C-110, C-111). Its guest file system is four in-memory stores
/// (C-108) that answer exactly the shapes the real backends answer, so every policy the
/// `Sandbox` base class applies (gates, confinement, the ancestor-symlink walk, read caps)
/// runs unchanged against it. It checks shape, not escape safety: a seeded link has no
/// target (C-109).
///
/// Every member is safe to call from several threads; the accessors return copies.
///
/// @code
///   using namespace maf::sandbox;
///   auto sb = std::make_shared<testing::InProcessSandbox>(testing::InProcessSandboxOptions{
///       .outputs = {{"python", "3.12\n"}},
///       .seed_files = {{"/maf-sandbox/work/result.txt", std::string("ok")}}});
///   BlockingRunner run;
///   run([&] { return sb->exec(std::vector<std::string>{"python", "-V"}); });  // "3.12\n"
///   sb->commands().front().command;                                          // "python -V"
/// @endcode

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/declarations.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/entry.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox::testing {

/// Every capability the double can serve: enough for collect_outputs and the conformance
/// suites (C-108 serves all of them; which ones are *declared* is a test's choice).
inline constexpr CapabilitySet kInProcessCapabilities{Capability::Exec,     Capability::RunCode,
                                                      Capability::FilesIn,  Capability::FilesOut,
                                                      Capability::FilesList, Capability::FilesDelete};

/// A seeded entry (C-109): a string is a regular file's bytes (text is UTF-8 already in
/// C++); `EntryKind::Symlink` a target-less link; `EntryKind::Directory` an explicit
/// directory; any other kind (`Other`, and `File` given as a bare kind) a non-regular entry.
using SeedValue = std::variant<std::string, EntryKind>;

/// Produces the exception `exec`/`run_code` should raise, fresh per call.
using RaisesFactory = std::function<std::exception_ptr()>;

struct InProcessSandboxOptions {
  /// Marker -> stdout, scanned in insertion order; the first marker that is a substring of
  /// the command (or program) wins (C-110).
  std::vector<std::pair<std::string, std::string>> outputs{};
  /// Raised by every exec/run_code after recording it; `raises_factory` wins when both set.
  std::exception_ptr raises{};
  RaisesFactory raises_factory{};
  /// stdout when no marker matches.
  std::string default_stdout{};
  /// Initial guest entries. Relative keys are resolved under `storage_base`.
  std::map<std::string, SeedValue> seed_files{};
  /// What the sandbox *declares*; methods outside it raise NotImplementedError (C-35).
  CapabilitySet capabilities = kInProcessCapabilities;
  std::string backend_name = "in-process";
  std::string kind = "in-process";
  /// The directory "." names; it exists from the start (C-53) and is listed in directories().
  std::string storage_base = "/maf-sandbox/work";
  std::string instance_id = "in-process-0";
};

/// One recorded exec (C-110): the command as a string (an argv is POSIX-joined first), the
/// resolved absolute working directory, and the caller's bound.
struct RecordedCommand {
  std::string command;
  std::string working_directory;
  std::chrono::milliseconds timeout;
  friend bool operator==(const RecordedCommand&, const RecordedCommand&) = default;
};

/// One recorded run_code (C-111).
struct RecordedProgram {
  std::string code;
  std::chrono::milliseconds timeout;
  friend bool operator==(const RecordedProgram&, const RecordedProgram&) = default;
};

/// How often each protected hook ran, and how many bytes do_read_file handed back — so a test
/// can prove e.g. that an over-cap file was refused from its stat before any byte was read.
struct HookCounts {
  std::int64_t exec = 0;
  std::int64_t run_code = 0;
  std::int64_t lstat = 0;
  std::int64_t write_file = 0;
  std::int64_t read_file = 0;
  std::int64_t list_dir = 0;
  std::int64_t remove = 0;
  std::int64_t bytes_read = 0;
  std::int64_t reclaim = 0;  ///< do_reclaim (docs/tools.md "The cleanup ladder")
  std::int64_t reset = 0;    ///< do_reset (SNAPSHOT)
};

/// The in-process Sandbox (C-108…C-113). Isolation `none`; backend name `in-process`.
class InProcessSandbox : public Sandbox {
public:
  explicit InProcessSandbox(InProcessSandboxOptions options = {});

  // --- recorded calls (C-108) ---
  std::vector<RecordedCommand> commands() const;
  std::vector<RecordedProgram> programs() const;
  HookCounts hook_counts() const;

  // --- canned answers, settable at any time ---
  void set_raises(std::exception_ptr error);
  void set_raises_factory(RaisesFactory factory);
  void set_outputs(std::vector<std::pair<std::string, std::string>> outputs);
  void set_default_stdout(std::string text);

  // --- guest state (C-108, C-112) ---
  /// Normalised absolute guest path -> bytes: the public store.
  std::map<std::string, std::string> contents() const;
  /// UTF-8 view of contents(); throws ValueError naming the first path whose bytes are not
  /// valid UTF-8. A copy, so writing to it changes nothing.
  std::map<std::string, std::string> files() const;
  std::set<std::string> symlinks() const;
  std::set<std::string> non_regular() const;
  /// Explicit directories only; implicit ones (parents of stored paths) are not listed.
  std::set<std::string> directories() const;
  /// Plant one entry (C-109) at a guest path (relative = under storage_base), replacing
  /// whatever was at that exact path. Planting bypasses confinement: it is the test's hand.
  void seed(const std::string& path, SeedValue value);
  /// Drop a path and everything below it from all four stores.
  void erase(const std::string& path);
  /// The unconfined, no-follow answer for any absolute path (C-112, C-113), for assertions.
  std::optional<GuestStat> lstat_now(const std::string& absolute_path) const;

  // --- cleanup rungs (docs/tools.md "The cleanup ladder") ---
  /// The double runs no program, so reclaim removes the directory from the stores directly
  /// (what `rm -rf` as the guest would do); set an error to make the next reclaims fail.
  void set_reclaim_error(std::exception_ptr error);
  /// reset (only reachable when SNAPSHOT is declared) restores the stores as they were after
  /// construction and seeding; set an error to make the next resets fail.
  void set_reset_error(std::exception_ptr error);
  /// What reclaim was asked to remove, in order, with the bound it was given.
  struct RecordedReclaim {
    std::string directory;
    std::chrono::milliseconds timeout;
  };
  std::vector<RecordedReclaim> reclaimed() const;

  /// Called, outside the lock, at the start of every public file operation (before the
  /// ancestor walk): lets a test change the guest between two phases of a caller, e.g. grow
  /// a file between collect_outputs' stat and its read. Pass {} to remove.
  void set_operation_hook(std::function<void(FileOperation)> hook);

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override;
  boost::asio::awaitable<ExecReport> do_run_code(const std::string& code, std::chrono::milliseconds timeout,
                                                 std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_write_file(const std::string& absolute_path, const std::string& content) override;
  boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path, std::int64_t max_bytes) override;
  boost::asio::awaitable<std::vector<GuestDirEntry>> do_list_dir(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_remove(const std::string& absolute_path, bool recursive) override;
  boost::asio::awaitable<void> do_reclaim(const std::string& absolute_directory, std::chrono::milliseconds timeout,
                                          std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<void> do_reset(std::chrono::milliseconds timeout,
                                        std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<void> do_file_operation(FileOperation operation,
                                                 std::function<boost::asio::awaitable<void>()> body) override;

private:
  /// Record-then-answer shared by exec and run_code (C-110, C-111).
  ExecResult answer(const std::string& text);
  std::optional<GuestStat> lstat_locked(const std::string& path) const;
  void erase_locked(const std::string& path, bool with_children);
  std::string absolute(const std::string& path) const;

  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> outputs_;
  std::exception_ptr raises_;
  RaisesFactory raises_factory_;
  std::string default_stdout_;
  std::map<std::string, std::string> contents_;
  std::set<std::string> symlinks_;
  std::set<std::string> non_regular_;
  std::set<std::string> directories_;
  std::vector<RecordedCommand> commands_;
  std::vector<RecordedProgram> programs_;
  HookCounts counts_;
  std::function<void(FileOperation)> operation_hook_;
  std::exception_ptr reclaim_error_;
  std::exception_ptr reset_error_;
  std::vector<RecordedReclaim> reclaimed_;
  /// The four stores after construction: what reset restores.
  struct Snapshot {
    std::map<std::string, std::string> contents;
    std::set<std::string> symlinks, non_regular, directories;
  } snapshot_;
};

/// C-115: the defaults of every axis except egress_modes = {ALLOWLIST, CLOSED}. Override by
/// copying this, not by building a bare BackendDeclarations (which enforces no egress).
inline const BackendDeclarations kFakeBackendDeclarations = [] {
  BackendDeclarations d;
  d.egress_modes = EgressSet{Egress::Allowlist, Egress::Closed};
  return d;
}();

/// One dispose() call as the backend received it.
struct DisposeRequest {
  SandboxKey key;
  std::optional<std::string> kind;
  std::optional<std::string> instance_id;
  friend bool operator==(const DisposeRequest&, const DisposeRequest&) = default;
};

struct InProcessSandboxBackendOptions {
  /// The one sandbox every acquire returns; a fresh InProcessSandbox when null.
  std::shared_ptr<InProcessSandbox> sandbox{};
  std::string name = "in-process";
  /// A string so a test can hand the router an unknown rung (C-62).
  std::string isolation = "none";
  BackendDeclarations declarations = kFakeBackendDeclarations;
};

/// The in-process SandboxBackend (C-115, C-116): returns the one shared sandbox for every key
/// and kind, and records what it was asked.
class InProcessSandboxBackend : public SandboxBackend {
public:
  explicit InProcessSandboxBackend(InProcessSandboxBackendOptions options = {});

  std::string name() const override { return name_; }
  std::string isolation() const override { return isolation_; }
  const BackendDeclarations& declarations() const override { return declarations_; }

  /// C-116: records, then raises dispose_error if set, else returns dispose_failure.
  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string> instance_id) override;
  /// C-116: records (scope, thread_id), returns ScopePurge{purge_count, purge_failure}.
  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override;

  const std::shared_ptr<InProcessSandbox>& sandbox() const noexcept { return sandbox_; }

  std::vector<SandboxKey> keys() const;
  std::vector<SandboxSpec> specs() const;
  /// The keys dispose() was called with, in order.
  std::vector<SandboxKey> disposed() const;
  /// The full dispose() calls, kind and instance included (C-72).
  std::vector<DisposeRequest> dispose_requests() const;
  std::vector<std::pair<std::string, std::string>> purged() const;

  void set_acquire_error(std::exception_ptr error);
  void set_dispose_error(std::exception_ptr error);
  void set_dispose_failure(std::optional<DisposalFailure> failure);
  void set_purge_count(int count);
  void set_purge_failure(std::optional<DisposalFailure> failure);

protected:
  /// C-116: raises acquire_error (recording nothing) or records key and spec and returns
  /// the shared sandbox.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                              AcquirePlan plan) override;

private:
  std::shared_ptr<InProcessSandbox> sandbox_;
  std::string name_;
  std::string isolation_;
  BackendDeclarations declarations_;

  mutable std::mutex mutex_;
  std::vector<SandboxKey> keys_;
  std::vector<SandboxSpec> specs_;
  std::vector<DisposeRequest> dispose_requests_;
  std::vector<std::pair<std::string, std::string>> purged_;
  std::exception_ptr acquire_error_;
  std::exception_ptr dispose_error_;
  std::optional<DisposalFailure> dispose_failure_;
  int purge_count_ = 1;
  std::optional<DisposalFailure> purge_failure_;
};

/// A host file store in memory (C-117): a copy of `files`; a miss reads as absent.
class InMemoryStore {
public:
  explicit InMemoryStore(std::map<std::string, std::string> files = {}) : files_(std::move(files)) {}

  std::optional<std::string> read(const std::string& name) const;
  /// Every name, sorted.
  std::vector<std::string> list() const;
  /// list() shaped as CallerContext::list_files (the store argument is ignored). The
  /// returned callable shares this store's lifetime: keep the store alive while it is used.
  std::function<boost::asio::awaitable<std::vector<std::string>>(std::string)> list_files() const;

private:
  std::map<std::string, std::string> files_;
};

}  // namespace maf::sandbox::testing
