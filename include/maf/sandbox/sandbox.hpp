#pragma once
/// @file sandbox.hpp
/// The Sandbox interface (C-35…C-50): what a host or a workload kind does with an acquired
/// sandbox.
///
/// The public methods are non-virtual and `final` in spirit (the spdlog sink pattern): they
/// gate on the declared capability (C-35), resolve the working directory (C-99), apply the
/// lexical confinement and the ancestor-symlink walk (C-43…C-50, C-100…C-103), enforce
/// `max_bytes` (C-47) — and only then call the backend's protected `do_…` hook with an
/// absolute, confined guest path. No backend can forget a check.
///
/// What remains a backend's duty: stopping a program at the deadline of exec/run_code (C-40,
/// C-41) and at its output caps — and *reporting* that (ExecReport), while the core raises
/// the one error type for each (EXE-1) — no-follow semantics in its own hooks, creating
/// parents on write, and stopping early on over-cap reads where it can.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "maf/sandbox/call_defaults.hpp"
#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/command.hpp"
#include "maf/sandbox/entry.hpp"
#include "maf/sandbox/exec_input.hpp"
#include "maf/sandbox/exec_report.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/exec_stream.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/named_argument.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/snapshot.hpp"

namespace maf::sandbox {

/// What a backend's do_exec receives, already resolved.
struct ExecRequest {
  Command command;
  /// What `sh -c` runs: the shell string, or the argv quoted element-wise (C-37).
  std::string shell_line;
  /// Absolute, normalised guest directory the command runs in (C-38, C-99).
  std::string working_directory;
  /// The caller's bound; the wall-clock deadline is `deadline` (C-40).
  std::chrono::milliseconds timeout;
  std::chrono::steady_clock::time_point deadline;
  /// exec_stream only: the longest silence tolerated on both streams (STR-4); zero for exec.
  std::chrono::milliseconds read_timeout{0};
  /// Variables added to or overriding the guest's base environment, validated (ENV-2, ENV-3);
  /// empty unless the backend declares Capability::ExecEnv. Never put on a command line.
  std::map<std::string, std::string> environment{};
  /// Bytes for the program's stdin, then end of file; absent: stdin closed from the start
  /// (STDIN-1). Present only when the backend declares Capability::ExecStdin.
  std::optional<std::string> stdin_bytes{};
  /// exec_stream only: the caller's stop (STR-10). Once it is requested the backend ends the
  /// program's whole process group as it does at the deadline and reports
  /// StreamOutcome::End::Stopped; the core raises Cancelled.
  std::stop_token stop{};
  /// exec_stream only: the streamed stdin (STDIN-6), present only when the backend declares
  /// Capability::ExecStdinStream. The backend takes its read end for the program's stdin and
  /// stops the program (then throws Cancelled) once its abort_token is requested.
  std::shared_ptr<StdinStream> stdin_stream{};
};

/// A guest entry as a backend's unconfined, no-follow stat sees it.
struct GuestStat {
  EntryKind kind = EntryKind::Other;
  std::optional<std::int64_t> size_bytes;  ///< absent = unknown; always absent for links
};

/// One child of a listed directory.
struct GuestDirEntry {
  std::string name;  ///< one path segment
  GuestStat stat;
};

/// What the core's walk of a storage base found at acquire (ACQ-4), handed to the sandbox's
/// do_prepare_storage_base: the walk stops at the first missing component and has already
/// refused a link (ValueError) or a non-directory (NotADirectoryError) before it.
struct StorageBaseWalk {
  /// The storage base, absolute and normalised; never "/" (the core walks nothing there).
  std::string base;
  /// The base's cumulative components below "/", outermost first ("/a", "/a/b").
  std::vector<std::string> chain;
  /// Index in `chain` of the first missing component; `chain.size()` when all are directories.
  std::size_t first_missing = 0;
  bool complete() const noexcept { return first_missing == chain.size(); }
};

/// Which public operation a do_… hook is serving; lets a backend bracket a whole operation
/// (ancestor walk included), e.g. Docker's freeze around the tar plane.
enum class FileOperation { Write, Stat, Read, List, Remove };

namespace detail {
struct FileBatchAccess;  // the core's own way into a batch (collect_outputs); src/seam/file_batch.hpp
}

class Sandbox {
public:
  virtual ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  /// The backend's name, for messages.
  const std::string& backend_name() const noexcept { return descriptor_.backend_name; }
  /// The workload kind this sandbox serves, for messages.
  const std::string& kind() const noexcept { return descriptor_.kind; }
  /// The backend's declared capabilities (not the spec's requirements).
  CapabilitySet capabilities() const noexcept { return descriptor_.capabilities; }
  /// Absolute guest directory that "." and relative working directories resolve under.
  const std::string& storage_base() const noexcept { return descriptor_.storage_base; }
  /// Names this physical instance, so a disposal can target it and not a replacement (C-72).
  const std::string& instance_id() const noexcept { return descriptor_.instance_id; }

  /// Run an argv or a shell line (EXEC). TimeoutError means exactly "`timeout` expired".
  boost::asio::awaitable<ExecResult> exec(Command command, std::string working_directory = ".",
                                          std::chrono::milliseconds timeout = kDefaultExecTimeout);
  /// exec with the command's own environment and stdin (docs/exec-input.md): the same
  /// ExecResult and errors, after `input` is validated (SandboxEnvironmentRefused,
  /// SandboxTransferCapExceeded for stdin past kMaxExecStdinBytes) and its capabilities
  /// checked (NotImplementedError naming exec_env / exec_stdin).
  /// `input` is copied before this returns (a named one may go before the awaitable runs); a
  /// braced temporary is refused at compile time (AGENT-1: name it first).
  boost::asio::awaitable<ExecResult> exec(Command command, const ExecInput& input, std::string working_directory = ".",
                                          std::chrono::milliseconds timeout = kDefaultExecTimeout);
  /// Refused at compile time: GCC 12 destroys a braced ExecInput temporary in a co_await
  /// expression twice (docs/tools.md "GCC 12 and temporaries").
  template <class Refused = ExecInput>
  boost::asio::awaitable<ExecResult> exec(Command, ExecInput&&, std::string = ".",
                                          std::chrono::milliseconds = kDefaultExecTimeout) {
    static_assert(detail::kNamedArgumentRequired<Refused>,
                  "name the input first: `const ExecInput input{...}; co_await sandbox.exec(command, input);` — "
                  "GCC 12 destroys a braced temporary in a co_await expression twice");
    return {};
  }
  /// Run an argv or a shell line and hand its stdout and stderr to `on_output` as they arrive
  /// (EXEC_STREAM; docs/streaming.md). The three bounds are apart: `options.timeout` is the
  /// command's deadline (TimeoutError), `options.read_timeout` the longest silence
  /// (SandboxStreamIdle), the backend's output caps the most it may write
  /// (SandboxTransferCapExceeded); each ends the program before the error is raised, and so
  /// does a handler that throws (its exception propagates unchanged).
  /// `options` is copied before this returns; a braced temporary is refused at compile time
  /// (AGENT-1: name it first, or use the overload without options).
  boost::asio::awaitable<StreamedExit> exec_stream(Command command, OutputHandler on_output,
                                                   const ExecStreamOptions& options);
  /// exec_stream with the default ExecStreamOptions.
  boost::asio::awaitable<StreamedExit> exec_stream(Command command, OutputHandler on_output);
  /// Refused at compile time: GCC 12 destroys a braced ExecStreamOptions temporary in a
  /// co_await expression twice (docs/tools.md "GCC 12 and temporaries").
  template <class Refused = ExecStreamOptions>
  boost::asio::awaitable<StreamedExit> exec_stream(Command, OutputHandler, ExecStreamOptions&&) {
    static_assert(detail::kNamedArgumentRequired<Refused>,
                  "name the options first: `const ExecStreamOptions options{...}; co_await sandbox.exec_stream(command, "
                  "handler, options);` — GCC 12 destroys a braced temporary in a co_await expression twice");
    return {};
  }
  /// Run a program in the backend's runtime (RUN_CODE). Deadline is wall-clock from the call.
  boost::asio::awaitable<ExecResult> run_code(std::string code,
                                              std::chrono::milliseconds timeout = kDefaultExecTimeout);
  /// Write bytes (FILES_IN); text is UTF-8 bytes. Replaces; creates parents; refuses links.
  boost::asio::awaitable<void> write_file(std::string path, std::string content,
                                          std::string working_directory = ".");
  /// Describe without following (FILES_OUT); absent when nothing is there.
  boost::asio::awaitable<std::optional<SandboxEntry>> stat_file(std::string path,
                                                                std::string working_directory = ".");
  /// Read a regular file (FILES_OUT); over `max_bytes` -> SandboxTransferCapExceeded, never
  /// truncated.
  boost::asio::awaitable<std::string> read_file(std::string path, std::string working_directory = ".",
                                                std::int64_t max_bytes = kDefaultReadCapBytes);
  /// One level of a directory (FILES_LIST); links listed as links.
  boost::asio::awaitable<std::vector<SandboxEntry>> list_dir(std::string path,
                                                             std::string working_directory = ".");
  /// Remove (FILES_DELETE); missing is success; a directory needs `recursive`; links are
  /// unlinked, never followed.
  boost::asio::awaitable<void> remove(std::string path, std::string working_directory = ".",
                                      bool recursive = false);

  /// Remove `directory` and everything under it, as the guest program's own principal, so it
  /// never deletes more than the guest itself could (docs/tools.md "The cleanup ladder").
  /// Offered on every sandbox that can exec — a tool call's directory is removed this way
  /// after each call (C-120) — and behind no capability; `Capability::Reclaim` is the
  /// separate, proven claim that the RECLAIM cleanup rung is safe on this backend.
  /// `directory` must be absolute with at least two components, and is not the resolved
  /// `working_directory` itself (ValueError, naming it); missing is success; a removal the
  /// guest refuses is OSError naming the path and the guest's words; expiry is TimeoutError.
  boost::asio::awaitable<void> reclaim(std::string directory, std::string working_directory = ".",
                                       std::chrono::milliseconds timeout = kDefaultCleanupTimeout);
  /// Restore the guest tree to the snapshot the backend took when it created this sandbox
  /// (SNAPSHOT, the RESET cleanup rung, docs/tools.md "The cleanup ladder").
  /// NotImplementedError without SNAPSHOT.
  boost::asio::awaitable<void> reset(std::chrono::milliseconds timeout = kDefaultCleanupTimeout);

  /// Attach the observers that see this sandbox's exec, run_code, transfers, reclaim and
  /// reset, and the key their events carry (docs/observability.md, OBS-5). The router does
  /// this each time it hands the sandbox out, so every operation of the NVI is observed with
  /// no backend involved. Returns true when the same observer set was attached already —
  /// this sandbox was handed out before (a reuse). Thread-safe.
  bool attach_observers(std::shared_ptr<const ObserverSet> observers, const SandboxKey& key);
  /// The attached observers, or null.
  std::shared_ptr<const ObserverSet> observers() const;
  /// The key attached with them (empty when unobserved); what this sandbox's events carry.
  SandboxKey observed_key() const;

  /// Keep the sandbox's state now, at the backend's declared fidelity and never more
  /// (SNAPSHOT; docs/snapshots.md SNAP-3…SNAP-7): the returned id names it to restore,
  /// fork (SandboxBackend::fork) and release. SandboxSnapshotBudgetExceeded past the
  /// backend's budget; NotImplementedError without SNAPSHOT; SandboxPaused while paused
  /// only where the backend cannot snapshot a frozen sandbox.
  boost::asio::awaitable<SnapshotInfo> snapshot();
  /// Put back what snapshot `snapshot_id` kept (SNAP-3): every guest process is stopped
  /// first unless the fidelity is `memory`, so nothing runs that the snapshot did not keep.
  /// SandboxSnapshotNotFound for an id never taken, released or expired.
  boost::asio::awaitable<void> restore(std::string snapshot_id,
                                       std::chrono::milliseconds timeout = kDefaultCleanupTimeout);
  /// Free a snapshot (SNAP-5); an id not held is SandboxSnapshotNotFound.
  boost::asio::awaitable<void> release_snapshot(std::string snapshot_id);
  /// The snapshots this sandbox holds now, expired ones removed first (SNAP-6).
  boost::asio::awaitable<std::vector<SnapshotInfo>> snapshots();
  /// Freeze every guest process of the sandbox (PAUSE; SNAP-9). Until resume(), exec,
  /// exec_stream, run_code, reclaim, reset and restore throw SandboxPaused; file transfers
  /// still work. Pausing a paused sandbox is a no-op.
  boost::asio::awaitable<void> pause();
  /// Thaw what pause() froze; resuming a running sandbox is a no-op.
  boost::asio::awaitable<void> resume();
  /// Whether pause() froze this sandbox object and resume() has not thawed it.
  bool paused() const noexcept { return paused_.load(); }

protected:
  /// Deliver a backend's own event (e.g. an egress decision) to the attached observers, its
  /// context filled with this sandbox's key, backend, kind and instance. No-op unobserved.
  void notify(SandboxEvent event) const noexcept;

  /// What a sandbox is, fixed at construction: the backend that made it, its workload kind,
  /// the capabilities it serves, the storage base its relative paths resolve under, and the
  /// instance a disposal names.
  struct Descriptor {
    std::string backend_name;
    std::string kind;
    CapabilitySet capabilities;
    std::string storage_base = "/maf-sandbox/work";
    std::string instance_id;
  };
  explicit Sandbox(Descriptor descriptor);

  /// Run `request` within `request.deadline` and the backend's output caps. For the
  /// program's own exit, return its ExecResult; when the deadline or a cap stopped it,
  /// report which (ExecReport::deadline_expired / over_cap) — do not throw for those: the
  /// core raises one type for each (EXE-1). Set `abandon` where only the sandbox's end stops
  /// the program; the core then calls do_abandon (EXE-2).
  virtual boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) = 0;
  /// Run `request` handing each chunk to `sink` as it is read, within `request.deadline`,
  /// `request.read_timeout` and the backend's own caps; stop the program (its whole process
  /// group) on any ending but its own exit, and report which (STR-2). Report, do not throw,
  /// for those endings: the core raises one type for each. Default refuses; only reached
  /// when EXEC_STREAM is declared.
  virtual boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest& request, ExecOutputSink& sink);
  /// Reports as do_exec does (EXE-3). Default refuses; only reached when RUN_CODE is declared.
  virtual boost::asio::awaitable<ExecReport> do_run_code(const std::string& code,
                                                         std::chrono::milliseconds timeout,
                                                         std::chrono::steady_clock::time_point deadline);
  /// End this sandbox through the backend's one teardown path (the same plan dispose and
  /// reap use), because a program an exec reported with `abandon` cannot be stopped any
  /// other way (EXE-2). Throw when the teardown fails; the core says so in the error it
  /// raises. Default refuses: a backend that reports `abandon` overrides it.
  virtual boost::asio::awaitable<void> do_abandon();
  /// Unconfined, no-follow stat of an absolute guest path (C-101); absent when missing.
  virtual boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) = 0;
  /// Write bytes at a confined path whose existing ancestors are directories; create missing
  /// parents; never create a link.
  virtual boost::asio::awaitable<void> do_write_file(const std::string& absolute_path,
                                                     const std::string& content) = 0;
  /// Read a path that do_lstat just reported as a regular file. May stop after
  /// `max_bytes + 1` bytes; must not follow a link swapped in since.
  virtual boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path,
                                                           std::int64_t max_bytes);
  /// Children of a directory, without following any.
  virtual boost::asio::awaitable<std::vector<GuestDirEntry>> do_list_dir(const std::string& absolute_path);
  /// Remove an existing entry; a link is unlinked; `recursive` removes a tree without
  /// following links inside it.
  virtual boost::asio::awaitable<void> do_remove(const std::string& absolute_path, bool recursive);
  /// Remove a validated, absolute, normalised directory as the guest's principal, from `/`.
  /// Default: `rm -rf -- <directory>` through do_exec (every backend execs as the guest);
  /// a non-zero exit is OSError with the guest's stderr. Override only for a cheaper path
  /// with the same principal.
  virtual boost::asio::awaitable<void> do_reclaim(const std::string& absolute_directory,
                                                  std::chrono::milliseconds timeout,
                                                  std::chrono::steady_clock::time_point deadline);
  /// Restore the acquire-time snapshot. Default refuses; only reached when SNAPSHOT is declared.
  virtual boost::asio::awaitable<void> do_reset(std::chrono::milliseconds timeout,
                                                std::chrono::steady_clock::time_point deadline);
  /// Brackets a whole file operation (walk + hook). Default: run `body` directly.
  virtual boost::asio::awaitable<void> do_file_operation(FileOperation operation,
                                                         std::function<boost::asio::awaitable<void>()> body);
  /// Brackets a batch of stat_file and read_file calls the core makes in a row on this
  /// sandbox — collect_outputs' stat and read phases (C-88…C-92) — with one bracket instead of
  /// one per call: the calls inside `body` run their walks and hooks without
  /// do_file_operation. Return true once `body` has run under the bracket; return false
  /// without running it to decline, and each call is then bracketed on its own. Only the
  /// core opens a batch, and a batch holds only those calls (never exec, never a sink).
  /// Default: declines.
  virtual boost::asio::awaitable<bool> do_file_batch(std::function<boost::asio::awaitable<void>()> body);

  /// Make what the core's walk of the storage base found missing (ACQ-4): the components
  /// `walk.chain[walk.first_missing..]`, each a directory, existing ones untouched, never
  /// through a link a guest swapped in since the walk (re-walk under the backend's own bracket
  /// where a guest can race it, as Docker's freeze does). Also called with a complete walk,
  /// so a backend may learn from it (Docker records it per image); there it must create
  /// nothing. Default: nothing for a complete walk, NotImplementedError otherwise — a backend
  /// whose do_acquire always makes the base needs no override.
  virtual boost::asio::awaitable<void> do_prepare_storage_base(const StorageBaseWalk& walk);

  /// The snapshot hooks (docs/snapshots.md): reached only when SNAPSHOT is declared; each
  /// default refuses with NotImplementedError.
  virtual boost::asio::awaitable<SnapshotInfo> do_snapshot();
  virtual boost::asio::awaitable<void> do_restore(const std::string& snapshot_id, std::chrono::milliseconds timeout,
                                                  std::chrono::steady_clock::time_point deadline);
  virtual boost::asio::awaitable<void> do_release_snapshot(const std::string& snapshot_id);
  virtual boost::asio::awaitable<std::vector<SnapshotInfo>> do_snapshots();
  /// Freeze / thaw every guest process (reached only when PAUSE is declared); defaults refuse.
  virtual boost::asio::awaitable<void> do_pause();
  virtual boost::asio::awaitable<void> do_resume();
  /// Throws SandboxPaused naming backend, kind and `method` while paused (SNAP-9).
  void refuse_if_paused(const char* method) const;

  /// Throws NotImplementedError naming backend, kind and the capability (C-35).
  void require_capability(Capability capability, const char* method) const;

private:
  friend struct detail::FileBatchAccess;
  friend class SandboxBackend;  // the acquire's walk of the storage base (ACQ-4): do_lstat, do_prepare_storage_base
  /// ExecReport → the result, or the one error type for its ending (EXE-1), after
  /// do_abandon when the report asks it (EXE-2). `what` names the operation ("exec").
  // The coroutines behind exec(…, input, …) and exec_stream: they own their copies.
  boost::asio::awaitable<ExecResult> exec_with_input(Command command, ExecInput input, std::string working_directory,
                                                     std::chrono::milliseconds timeout);
  boost::asio::awaitable<StreamedExit> exec_stream_with(Command command, OutputHandler on_output,
                                                        ExecStreamOptions options);
  boost::asio::awaitable<ExecResult> settle_exec(ExecReport report, const char* what, std::chrono::milliseconds timeout);
  /// stat_file and read_file, bracketed by do_file_operation unless a batch brackets them.
  boost::asio::awaitable<std::optional<SandboxEntry>> stat_file_in(bool batched, std::string path,
                                                                   std::string working_directory);
  boost::asio::awaitable<std::string> read_file_in(bool batched, std::string path, std::string working_directory,
                                                   std::int64_t max_bytes);
  boost::asio::awaitable<void> bracketed(bool batched, FileOperation operation,
                                         std::function<boost::asio::awaitable<void>()> body);
  struct Observation {
    std::shared_ptr<const ObserverSet> observers;
    SandboxKey key;
  };
  std::shared_ptr<const Observation> observation() const;
  /// read_file after the capability gate: confinement, the walk, the cap and the hook.
  boost::asio::awaitable<std::string> read_confined(bool batched, std::string path, std::string working_directory,
                                                    std::int64_t max_bytes);
  void deliver(const Observation& observation, SandboxEvent event) const noexcept;
  /// Runs one snapshot/pause hook and, when observed, delivers its SnapshotEvent (OBS-13);
  /// `taken`, when given, is read after the hook: the id and size of the snapshot it took.
  boost::asio::awaitable<void> observed_snapshot_op(SnapshotOperation operation, std::string id,
                                                    std::function<boost::asio::awaitable<void>()> hook,
                                                    const SnapshotInfo* taken = nullptr);

  Descriptor descriptor_;
  mutable std::mutex observation_mutex_;
  std::shared_ptr<const Observation> observation_;
  std::atomic<bool> paused_{false};
};

}  // namespace maf::sandbox
