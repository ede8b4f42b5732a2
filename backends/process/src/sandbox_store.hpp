#pragma once
// The process backend's on-disk state, laid out by conversation (issue 55): a sandbox lives
// at `<root>/<conversation>/<name>/` where `<conversation>` is derived from (scope, thread)
// alone, so dispose, dispose_scope and the unclean checks list one conversation's directory
// and read only its sandboxes' records — their cost follows what they touch, not how many
// sandboxes the root holds. The layout is the state itself (no index to keep in step): any
// replica over the same root derives the same directory and finds what another made, a
// sandbox whose host was killed included. `reap` walks every conversation, once per call.
//
// Names: `<conversation>` is support::sandbox_name(kConversationPrefix, {scope, thread}),
// `<name>` the sandbox's own support::sandbox_name, as before. The root also holds the
// `.staging-` and `.trash-` directories of acquires and disposals in flight.
//
// A root laid out before issue 55 (sandboxes directly under the root) is migrated at
// construction: each sandbox directory is renamed into its conversation's directory
// (docs/backends/process.md "State layout").
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/key.hpp"
#include "maf/sandbox/resource_limits.hpp"

namespace maf::sandbox::process {

/// Every sandbox directory's name starts with this.
inline constexpr std::string_view kNamePrefix = "maf-sandbox-process-";
/// Every conversation directory's name starts with this (itself under kNamePrefix, so a
/// listing of the root still names the backend).
inline constexpr std::string_view kConversationPrefix = "maf-sandbox-process-conversation-";

/// What `meta.json` records of one sandbox.
struct Record {
  std::filesystem::path dir;
  SandboxKey key;
  std::string kind;
  std::string instance_id;
  std::string work_base;
  std::int64_t created_unix = 0;
  /// The bounds it was created with (LIM-5); TTL and idle timeout are measured from here.
  ResourceLimits resources{};
};

/// Which version of a record file was read: a warm acquire compares it with one stat
/// instead of reading the record again (a rewritten or recreated file differs in inode or
/// change time).
struct RecordVersion {
  dev_t dev = 0;
  ino_t ino = 0;
  std::int64_t ctime_ns = 0;
  std::int64_t mtime_ns = 0;
  off_t size = 0;
  friend bool operator==(const RecordVersion&, const RecordVersion&) = default;
};
/// The version of `<dir>/meta.json` now; nullopt when there is none.
std::optional<RecordVersion> record_version(const std::filesystem::path& dir);

/// `<dir>/meta.json`, parsed; nullopt when absent, half-written or foreign.
std::optional<Record> read_record(const std::filesystem::path& dir);

class SandboxStore {
public:
  explicit SandboxStore(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const noexcept { return root_; }
  /// `<root>/<conversation of (scope, thread)>`.
  std::filesystem::path conversation_dir(std::string_view scope, std::string_view thread_id) const;
  std::filesystem::path sandbox_dir(const SandboxKey& key, const std::string& name) const {
    return conversation_dir(key.scope, key.thread_id) / name;
  }

  /// The records in one conversation's directory (one listing; nothing else is read).
  std::vector<Record> conversation_records(std::string_view scope, std::string_view thread_id) const;
  /// Every record under the root: each conversation's, and any left directly under the
  /// root by a backend from before issue 55 (reap walks everything, once per call).
  std::vector<Record> all_records() const;

  /// Renames a built sandbox from `staging` to `dir` (inside its conversation directory,
  /// made as needed). A concurrent disposal may remove an empty conversation directory
  /// between the two steps; that is retried. Returns 0 or the rename's errno.
  int place(const std::filesystem::path& staging, const std::filesystem::path& dir) const;
  /// Removes the conversation directory holding `sandbox_dir` if it is empty (another
  /// sandbox of the conversation, or one being placed, keeps it).
  void forget_conversation_if_empty(const std::filesystem::path& sandbox_dir) const;
  /// The same by conversation: a host killed between making the directory and renaming its
  /// sandbox in leaves it empty, and the conversation's disposal removes it.
  void forget_conversation_if_empty(std::string_view scope, std::string_view thread_id) const;
  /// Removes every empty conversation directory (reap: it walks everything anyway).
  void forget_empty_conversations() const noexcept;

  /// Moves each sandbox directory of the pre-issue-55 layout (directly under the root) into
  /// its conversation's directory. Returns how many moved; logs what could not be.
  int migrate_flat_layout() const;

private:
  std::filesystem::path root_;
};

}  // namespace maf::sandbox::process
