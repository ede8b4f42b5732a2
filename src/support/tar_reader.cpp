// Incremental ustar/pax/GNU reader. Every size is checked against its cap when its header
// is parsed, before a byte of the body it announces is consumed or buffered.

#include <algorithm>
#include <cstring>
#include <limits>

#include "maf/sandbox/support/tar.hpp"

namespace maf::sandbox::support {
namespace {

constexpr std::size_t kBlock = 512;

std::uint64_t padding_for(std::uint64_t size) { return (kBlock - size % kBlock) % kBlock; }

std::string field_string(const char* block, std::size_t offset, std::size_t length) {
  const char* begin = block + offset;
  return std::string(begin, strnlen(begin, length));
}

[[noreturn]] void malformed(const std::string& what, std::uint64_t offset) {
  throw TarFormatError("tar: malformed archive at byte " + std::to_string(offset) + ": " + what);
}

/// A numeric header field: octal (space/NUL padded) or, with bit 7 of the first byte set,
/// big-endian base-256. Negative base-256 values are refused: nothing we read can be one.
std::uint64_t field_number(const char* block, std::size_t offset, std::size_t length, const char* name,
                           std::uint64_t archive_offset) {
  const auto* f = reinterpret_cast<const unsigned char*>(block + offset);
  if (f[0] & 0x80) {
    if (f[0] & 0x40) malformed(std::string("negative base-256 ") + name, archive_offset);
    std::uint64_t v = f[0] & 0x3f;
    for (std::size_t i = 1; i < length; ++i) {
      if (v >> 56) malformed(std::string("base-256 ") + name + " overflows 64 bits", archive_offset);
      v = (v << 8) | f[i];
    }
    return v;
  }
  std::size_t i = 0;
  while (i < length && f[i] == ' ') ++i;
  std::uint64_t v = 0;
  for (; i < length && f[i] >= '0' && f[i] <= '7'; ++i) {
    if (v >> 61) malformed(std::string("octal ") + name + " overflows 64 bits", archive_offset);
    v = (v << 3) | (f[i] - '0');
  }
  for (; i < length; ++i)
    if (f[i] != ' ' && f[i] != '\0') malformed(std::string("bad octal digit in ") + name, archive_offset);
  return v;
}

bool parse_decimal(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

/// pax mtime: optional sign, seconds, optional fraction (dropped).
bool parse_pax_time(std::string_view s, std::int64_t& out) {
  const bool negative = !s.empty() && s.front() == '-';
  if (negative) s.remove_prefix(1);
  if (const auto dot = s.find('.'); dot != std::string_view::npos) {
    const auto fraction = s.substr(dot + 1);
    if (!std::all_of(fraction.begin(), fraction.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    s = s.substr(0, dot);
  }
  std::uint64_t v = 0;
  if (!parse_decimal(s, v) || v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
  out = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

TarEntryType type_of(char typeflag) {
  switch (typeflag) {
    case '0': case '\0': case '7': return TarEntryType::file;
    case '1': return TarEntryType::hard_link;
    case '2': return TarEntryType::symlink;
    case '3': return TarEntryType::char_device;
    case '4': return TarEntryType::block_device;
    case '5': return TarEntryType::directory;
    case '6': return TarEntryType::fifo;
    default: return TarEntryType::other;
  }
}

/// Python's tarfile reads a body only for regular files and types it does not know.
bool carries_body(TarEntryType type) { return type == TarEntryType::file || type == TarEntryType::other; }

}  // namespace

TarReader::TarReader(TarReaderLimits limits) : limits_(limits) {}

void TarReader::feed(std::string_view bytes) {
  if (state_ == State::done) return;
  if (pending_pos_ > 0) {  // compact, so memory tracks what is unconsumed
    pending_.erase(0, pending_pos_);
    pending_pos_ = 0;
  }
  pending_.append(bytes);
}

void TarReader::fail_truncated() const { malformed("truncated (input ended inside an entry)", offset_); }

TarReader::Event TarReader::next() {
  for (;;) {
    switch (state_) {
      case State::done:
        return {Event::end};

      case State::header: {
        if (available() < kBlock) {
          if (!finished_) return {};
          // Input ending cleanly between entries reads as the end; inside one, truncation.
          if (available() == 0 && extended_count_ == 0) {
            state_ = State::done;
            return {Event::end};
          }
          fail_truncated();
        }
        const char* block = pending_.data() + pending_pos_;
        pending_pos_ += kBlock;
        offset_ += kBlock;
        Event e = on_header_block(block);
        if (e.kind != Event::need_more) return e;
        continue;
      }

      case State::extended_body: {
        const auto want = remaining_ + padding_;
        const auto take = std::min<std::uint64_t>(available(), want);
        const auto body_part = std::min<std::uint64_t>(take, remaining_);
        extended_.append(pending_, pending_pos_, body_part);
        remaining_ -= body_part;
        padding_ -= take - body_part;
        pending_pos_ += take;
        offset_ += take;
        if (remaining_ + padding_ > 0) {
          if (finished_) fail_truncated();
          return {};
        }
        apply_extended();
        state_ = State::header;
        continue;
      }

      case State::body: {
        if (remaining_ == 0) {
          state_ = State::padding;
          continue;
        }
        if (available() == 0) {
          if (finished_) fail_truncated();
          return {};
        }
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(available(), remaining_));
        Event e{Event::body};
        e.data = std::string_view(pending_).substr(pending_pos_, take);
        pending_pos_ += take;
        offset_ += take;
        remaining_ -= take;
        return e;
      }

      case State::padding: {
        const auto take = std::min<std::uint64_t>(available(), padding_);
        pending_pos_ += take;
        offset_ += take;
        padding_ -= take;
        if (padding_ > 0) {
          if (finished_) fail_truncated();
          return {};
        }
        state_ = State::header;
        return {Event::entry_end};
      }
    }
  }
}

TarReader::Event TarReader::on_header_block(const char* block) {
  const std::uint64_t at = offset_ - kBlock;
  if (std::all_of(block, block + kBlock, [](char c) { return c == '\0'; })) {
    if (extended_count_ > 0) malformed("end-of-archive block right after an extended header", at);
    state_ = State::done;
    return {Event::end};
  }

  const auto stored_sum = field_number(block, 148, 8, "checksum", at);
  unsigned long sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i)
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
  if (sum != stored_sum) malformed("header checksum mismatch", at);

  const char typeflag = block[156];
  const std::uint64_t size = field_number(block, 124, 12, "size", at);

  if (typeflag == 'x' || typeflag == 'g' || typeflag == 'L' || typeflag == 'K') {
    // Extended metadata is collected in memory, so its size is refused before reading it.
    if (++extended_count_ > limits_.max_extended_headers)
      throw TarLimitExceeded("tar: more than " + std::to_string(limits_.max_extended_headers) +
                             " extended headers before one entry (at byte " + std::to_string(at) + ")");
    if (size > limits_.max_extended_bytes ||
        extended_bytes_ + kBlock + size + padding_for(size) + kBlock > limits_.max_extended_bytes)
      throw TarLimitExceeded("tar: extended headers exceed the " + std::to_string(limits_.max_extended_bytes) +
                             "-byte metadata budget (at byte " + std::to_string(at) + ")");
    extended_bytes_ += kBlock + size + padding_for(size);
    extended_type_ = typeflag;
    extended_.clear();
    remaining_ = size;
    padding_ = padding_for(size);
    state_ = State::extended_body;
    return {};
  }

  TarEntry e;
  e.typeflag = typeflag;
  e.type = type_of(typeflag);
  e.mode = static_cast<std::uint32_t>(field_number(block, 100, 8, "mode", at) & 07777);
  e.uid = field_number(block, 108, 8, "uid", at);
  e.gid = field_number(block, 116, 8, "gid", at);
  e.mtime = static_cast<std::int64_t>(field_number(block, 136, 12, "mtime", at) &
                                      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  e.size = size;
  e.name = field_string(block, 0, 100);
  e.link_target = field_string(block, 157, 100);
  const bool posix_ustar = std::memcmp(block + 257, "ustar\0", 6) == 0;
  const bool gnu_ustar = std::memcmp(block + 257, "ustar  \0", 8) == 0;
  if (posix_ustar || gnu_ustar) {
    e.uname = field_string(block, 265, 32);
    e.gname = field_string(block, 297, 32);
  }
  if (posix_ustar) {
    const auto prefix = field_string(block, 345, 155);
    if (!prefix.empty()) e.name = prefix + "/" + e.name;
  }
  if (has_path_) e.name = overrides_.name;
  if (has_link_) e.link_target = overrides_.link_target;
  if (has_size_) e.size = overrides_.size;
  if (has_uid_) e.uid = overrides_.uid;
  if (has_gid_) e.gid = overrides_.gid;
  if (has_mtime_) e.mtime = overrides_.mtime;
  if (has_uname_) e.uname = overrides_.uname;
  if (has_gname_) e.gname = overrides_.gname;
  has_path_ = has_link_ = has_size_ = has_uid_ = has_gid_ = has_mtime_ = has_uname_ = has_gname_ = false;
  extended_count_ = 0;
  extended_bytes_ = 0;

  if (e.name.empty()) malformed("entry with an empty name", at);
  if (!carries_body(e.type)) e.size = 0;
  if (e.size > limits_.max_body_bytes)
    throw TarLimitExceeded("tar: entry '" + e.name + "' is " + std::to_string(e.size) + " bytes, over the " +
                               std::to_string(limits_.max_body_bytes) + "-byte cap",
                           e.name, e.size);
  entry_ = std::move(e);
  remaining_ = entry_.size;
  padding_ = padding_for(entry_.size);
  state_ = State::body;
  Event out{Event::header};
  out.entry = &entry_;
  return out;
}

void TarReader::apply_extended() {
  const std::uint64_t at = offset_;
  if (extended_type_ == 'L' || extended_type_ == 'K') {
    const std::string value(extended_.c_str());  // NUL-terminated inside the body
    if (extended_type_ == 'L') {
      overrides_.name = value;
      has_path_ = true;
    } else {
      overrides_.link_target = value;
      has_link_ = true;
    }
    return;
  }
  const bool global = extended_type_ == 'g';
  std::string_view rest = extended_;
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    std::uint64_t length = 0;
    if (space == std::string_view::npos || !parse_decimal(rest.substr(0, space), length) || length <= space + 1 ||
        length > rest.size())
      malformed("bad pax record length", at);
    const std::string_view record = rest.substr(space + 1, length - space - 1);
    rest.remove_prefix(length);
    if (record.back() != '\n') malformed("pax record not newline-terminated", at);
    const auto eq = record.find('=');
    if (eq == std::string_view::npos || eq == 0) malformed("pax record without key=value", at);
    const auto key = record.substr(0, eq);
    const auto value = record.substr(eq + 1, record.size() - eq - 2);
    if (value.find('\0') != std::string_view::npos) malformed("NUL inside pax value", at);
    if (global) continue;  // parsed for validity; global values are not applied
    std::uint64_t number = 0;
    if (key == "path") {
      overrides_.name = value;
      has_path_ = !value.empty();
    } else if (key == "linkpath") {
      overrides_.link_target = value;
      has_link_ = !value.empty();
    } else if (key == "size" || key == "uid" || key == "gid") {
      if (!parse_decimal(value, number)) malformed("bad pax " + std::string(key), at);
      if (key == "size") {
        overrides_.size = number;
        has_size_ = true;
      } else if (key == "uid") {
        overrides_.uid = number;
        has_uid_ = true;
      } else {
        overrides_.gid = number;
        has_gid_ = true;
      }
    } else if (key == "mtime") {
      if (!parse_pax_time(value, overrides_.mtime)) malformed("bad pax mtime", at);
      has_mtime_ = true;
    } else if (key == "uname") {
      overrides_.uname = value;
      has_uname_ = true;
    } else if (key == "gname") {
      overrides_.gname = value;
      has_gname_ = true;
    }
  }
}

}  // namespace maf::sandbox::support
