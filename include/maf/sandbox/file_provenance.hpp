#pragma once
/// @file file_provenance.hpp
/// FileStoreProvenance (docs/tools.md "Provenance of stored text", rules PROV-1…PROV-6): the
/// integrity of the text a host's file store holds, recorded where the host writes and read
/// where a tool reads. A tool call that reads stored text into a sandbox carries that text's
/// integrity into its result: an untrusted or unknown read weakens the call's derived items,
/// a trusted read never promotes them, and `requires_file_integrity` refuses weak or unknown
/// inputs before anything runs (sandboxed_tool.hpp).
///
/// The record is only as good as its wiring: the host must route every write to the store
/// through record_write (a write that bypasses it leaves a stale entry — the record describes
/// what was written through it, not what is on disk), and tools must name their reads
/// (SandboxedToolOptions::file_inputs, SandboxToolSession::record_file_read). One record is
/// shared by everyone who writes or reads the store; it is safe to use from any thread.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "maf/sandbox/content_labels.hpp"

namespace maf::sandbox {

class FileStoreProvenance {
public:
  /// Records that `path` now holds content of `integrity` — the integrity of what the writer
  /// wrote, replacing whatever the path held before (a rewrite with untrusted text weakens
  /// it; a rewrite with trusted text restores it). `path` is relative to the store: ValueError
  /// (naming it) when it is empty, absolute, holds a NUL, or climbs out with "..". "a/./b"
  /// and "a//b" name "a/b".
  void record_write(std::string_view path, Integrity integrity);
  /// What was last recorded for `path`; nullopt = unknown (never written through the record,
  /// or forgotten). Same path rules as record_write.
  std::optional<Integrity> integrity(std::string_view path) const;
  /// The path was deleted or replaced outside the record: its integrity is unknown again.
  void forget(std::string_view path);

  /// The store-relative form record_write keys by (the rules above), for messages and tests.
  static std::string normalize(std::string_view path);

private:
  mutable std::mutex mutex_;
  std::map<std::string, Integrity, std::less<>> entries_;
};

}  // namespace maf::sandbox
