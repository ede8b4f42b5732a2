#pragma once
/// @file support/tar.hpp
/// ustar/pax archives for the tar planes of CLI backends (`docker cp`, `wslc container cp`):
/// a writer that builds upload archives and an incremental reader that parses download
/// streams with every byte bounded before it is buffered (D-14, D-18, D-19).
///
/// Writer: POSIX ustar headers; a pax `x` extended header precedes an entry whenever a
/// field does not fit ustar exactly — a name or link target longer than 100 bytes or
/// containing non-ASCII bytes, uid/gid above 07777777, size above 077777777777, or an
/// mtime outside [0, 077777777777]. The pax header is named `PaxHeaders.0/<base name>`
/// (what `docker cp` itself emits). The ustar `prefix` split is never used, so every
/// long name takes one path through the reader.
///
/// Reader: feed bytes as they arrive and pull events; a caller can stop after the first
/// header. Understood: ustar (`prefix` joined when the magic is POSIX `ustar\0`), GNU
/// `ustar  ` magic, pax `x` records (`path`, `linkpath`, `size`, `uid`, `gid`, `mtime`,
/// `uname`, `gname`; others ignored), pax `g` (parsed, values ignored), GNU `L`/`K` long
/// name/link, octal and base-256 numeric fields. Only regular files (`0`, `\0`, `7`) and
/// unknown types carry a body; for links, directories, devices and fifos the size field is
/// read as 0, as Python's tarfile does.
///
/// Errors (both derive from `ValueError`, because the archive *content* is refused, not an
/// I/O channel):
/// - `TarFormatError`: malformed — bad checksum, bad octal/base-256/pax field, truncated
///   mid-entry, an empty name, a NUL inside a pax value.
/// - `TarLimitExceeded`: well-formed but over a cap — a body over `max_body_bytes` (refused
///   from its header, before any body byte is consumed), extended headers beyond
///   `max_extended_bytes` or `max_extended_headers`.

#include <cstdint>
#include <optional>
#include <functional>
#include <string>
#include <string_view>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::support {

/// The archive is malformed.
class TarFormatError : public ValueError {
public:
  using ValueError::ValueError;
};

/// The archive is well formed but exceeds a reader cap. `entry_name` / `entry_size` name the
/// offending entry when the cap is the body cap.
class TarLimitExceeded : public ValueError {
public:
  TarLimitExceeded(const std::string& message, std::string entry_name = {}, std::uint64_t entry_size = 0)
      : ValueError(message), entry_name_(std::move(entry_name)), entry_size_(entry_size) {}
  const std::string& entry_name() const noexcept { return entry_name_; }
  std::uint64_t entry_size() const noexcept { return entry_size_; }

private:
  std::string entry_name_;
  std::uint64_t entry_size_;
};

/// What an entry is, from its typeflag.
enum class TarEntryType {
  file,          ///< '0', '\0', '7'
  hard_link,     ///< '1'
  symlink,       ///< '2'
  char_device,   ///< '3'
  block_device,  ///< '4'
  directory,     ///< '5'
  fifo,          ///< '6'
  other,         ///< anything else (a body is still skipped by its size)
};

/// One entry's metadata, with pax / GNU extensions already applied.
struct TarEntry {
  std::string name{};       ///< as stored (no normalisation, no confinement: the caller's job)
  TarEntryType type = TarEntryType::file;
  char typeflag = '0';      ///< the raw typeflag byte
  std::uint64_t size = 0;   ///< body bytes that follow (0 for types without a body)
  std::string link_target{};  ///< symlink target or hard-link source
  std::uint32_t mode = 0644;
  std::uint64_t uid = 0;
  std::uint64_t gid = 0;
  std::int64_t mtime = 0;   ///< seconds since the epoch
  std::string uname{};
  std::string gname{};
};

// ---------------------------------------------------------------------------------------
// Writer

/// Ownership and times stamped on an entry the writer emits.
struct TarEntryMeta {
  std::uint32_t mode = 0644;  ///< permission bits (07777 is kept, the rest dropped)
  std::uint64_t uid = 0;
  std::uint64_t gid = 0;
  std::int64_t mtime = 0;
  std::string uname{};        ///< optional; longer than 32 bytes is dropped
  std::string gname{};
};

/// Builds an archive in memory, entry by entry. Names are written as given (callers pass
/// relative names such as `work/dir/file`); a directory name gets a trailing `/`.
///
/// @code
///   TarWriter w;
///   w.add_directory("work", {.mode = 0755, .uid = 1000, .gid = 1000});
///   w.add_file("work/a.txt", "hello", {.mode = 0644, .uid = 1000, .gid = 1000});
///   std::string archive = std::move(w).finish();
/// @endcode
/// A tar archive whose last file body is borrowed, for one-pass uploads: `head` (every block
/// up to that body), then `body`, then `tail_zeros` zero bytes (padding and the end blocks).
/// An uploader streams it instead of holding a copy of a large file inside an archive.
struct TarStream {
  std::string head;
  std::string_view body;  ///< borrowed: valid while the caller's bytes are
  std::size_t tail_zeros = 0;

  std::size_t size() const noexcept { return head.size() + body.size() + tail_zeros; }
  /// The whole archive as one string.
  std::string joined() const;
  /// What follows `head`, one piece per call: the body in `piece`-byte slices, then the
  /// zeros, then "" (a subprocess's stdin_source). Borrows `body` as the stream does.
  std::function<std::string()> after_head(std::size_t piece) const;
};

class TarWriter {
public:
  void add_directory(std::string_view name, const TarEntryMeta& meta);
  void add_file(std::string_view name, std::string_view content, const TarEntryMeta& meta);
  void add_symlink(std::string_view name, std::string_view target, const TarEntryMeta& meta);
  void add_hard_link(std::string_view name, std::string_view target, const TarEntryMeta& meta);

  /// For large files: the header for a `size`-byte file; append exactly `size` body bytes
  /// with `append_body`, then `end_body()` pads to the block.
  void begin_file(std::string_view name, std::uint64_t size, const TarEntryMeta& meta);
  void append_body(std::string_view bytes);
  void end_body();

  /// Bytes produced so far (a caller may stream them out and `clear_output()`).
  const std::string& output() const noexcept { return out_; }
  void clear_output() noexcept { out_.clear(); }
  /// Ends the archive with one file whose body is `content`, borrowed rather than copied:
  /// a one-pass upload (see TarStream) of exactly what add_file + finish() would make.
  TarStream finish_with_file(std::string_view name, std::string_view content, const TarEntryMeta& meta) &&;

  /// Appends the two zero blocks that end an archive and returns the whole output.
  std::string finish() &&;

private:
  void emit(std::string_view name, char typeflag, std::uint64_t size, std::string_view link,
            const TarEntryMeta& meta);
  std::string out_;
  std::uint64_t body_remaining_ = 0;
  std::uint64_t body_size_ = 0;
};

// ---------------------------------------------------------------------------------------
// Reader

/// Caps the reader enforces. The defaults are docs/backends/docker.md "Fixed constants".
struct TarReaderLimits {
  /// Largest body accepted; a bigger entry is refused from its header (TarLimitExceeded).
  std::uint64_t max_body_bytes = UINT64_MAX;
  /// Bytes of extended headers (pax x/g and GNU L/K, headers and bodies) plus the real
  /// header they precede; per entry.
  std::size_t max_extended_bytes = 64 * 1024;
  /// Extended headers preceding one real header.
  std::size_t max_extended_headers = 32;
};

/// An incremental, pull-style parser. Feed bytes with `feed()`, then call `next()` until it
/// answers `need_more`; call `finish()` at end of input. The reader holds only input fed
/// and not yet consumed plus at most `max_extended_bytes` of extended metadata: body bytes
/// are handed out as they arrive, never collected.
///
/// @code
///   TarReader r;
///   r.feed(chunk);
///   for (auto ev = r.next(); ev.kind != TarReader::Event::need_more; ev = r.next()) {
///     if (ev.kind == TarReader::Event::header) use(*ev.entry);            // stop here for a stat
///     else if (ev.kind == TarReader::Event::body) consume(ev.data);      // valid until next call
///     else if (ev.kind == TarReader::Event::end) break;
///   }
/// @endcode
class TarReader {
public:
  struct Event {
    enum Kind {
      need_more,   ///< feed more bytes (or finish())
      header,      ///< `entry` is the next entry; its body (if any) follows
      body,        ///< `data` is the next slice of the current entry's body
      entry_end,   ///< the current entry's body is complete
      end,         ///< end of archive (zero block, or input ended at an entry boundary)
    } kind = need_more;
    const TarEntry* entry = nullptr;  ///< for `header` (valid until the next header)
    std::string_view data{};          ///< for `body` (valid until the next feed() or next())
  };

  explicit TarReader(TarReaderLimits limits = {});

  /// Append input. Bytes after the end of the archive are ignored.
  void feed(std::string_view bytes);
  /// No more input will come; a following `next()` throws TarFormatError if an entry is
  /// incomplete and answers `end` at an entry boundary.
  void finish() noexcept { finished_ = true; }

  /// The next event. Throws TarFormatError / TarLimitExceeded; after a throw the reader is
  /// unusable.
  Event next();

  /// Total bytes consumed from the input so far.
  std::uint64_t offset() const noexcept { return offset_; }

private:
  enum class State { header, extended_body, body, padding, done };
  std::size_t available() const noexcept { return pending_.size() - pending_pos_; }
  Event on_header_block(const char* block);
  void apply_extended();
  [[noreturn]] void fail_truncated() const;

  TarReaderLimits limits_;
  std::string pending_;  ///< input not yet consumed, from pending_pos_
  std::size_t pending_pos_ = 0;
  bool finished_ = false;
  State state_ = State::header;
  std::uint64_t offset_ = 0;
  std::uint64_t remaining_ = 0;  ///< body or extended-body bytes still to come
  std::uint64_t padding_ = 0;    ///< zero bytes after them, up to the block
  char extended_type_ = 0;
  std::string extended_;         ///< the extended body being collected (bounded by the budget)
  std::size_t extended_count_ = 0;
  std::uint64_t extended_bytes_ = 0;
  TarEntry overrides_;           ///< pax / GNU values for the next real header
  bool has_path_ = false, has_link_ = false, has_size_ = false, has_uid_ = false, has_gid_ = false,
       has_mtime_ = false, has_uname_ = false, has_gname_ = false;
  TarEntry entry_;
};

}  // namespace maf::sandbox::support
