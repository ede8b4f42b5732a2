// ustar + pax writer. Every field that does not fit ustar exactly goes into a pax `x`
// record instead of being truncated or split, so there is a single long-name path.

#include <algorithm>
#include <array>

#include "maf/sandbox/support/tar.hpp"

namespace maf::sandbox::support {
namespace {

constexpr std::size_t kBlock = 512;
constexpr std::uint64_t kMaxOctal7 = 07777777;       // 8-byte fields: uid, gid, mode
constexpr std::uint64_t kMaxOctal11 = 077777777777;  // 12-byte fields: size, mtime

bool is_plain_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f;
  });
}

void put_string(std::array<char, kBlock>& block, std::size_t offset, std::size_t length, std::string_view value) {
  std::copy_n(value.data(), std::min(length, value.size()), block.data() + offset);
}

/// `length - 1` zero-padded octal digits and a NUL, the form every tar reads.
void put_octal(std::array<char, kBlock>& block, std::size_t offset, std::size_t length, std::uint64_t value) {
  for (std::size_t i = length - 1; i-- > 0;) {
    block[offset + i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  block[offset + length - 1] = '\0';
}

/// One pax record: "<len> <key>=<value>\n", where <len> counts its own digits.
std::string pax_record(std::string_view key, std::string_view value) {
  const std::size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  std::size_t total = body + 1;
  while (std::to_string(total).size() + body != total) total = std::to_string(total).size() + body;
  return std::to_string(total) + " " + std::string(key) + "=" + std::string(value) + "\n";
}

std::string pax_header_name(std::string_view name) {
  std::string_view base = name;
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  if (const auto slash = base.rfind('/'); slash != std::string_view::npos) base.remove_prefix(slash + 1);
  std::string out = "PaxHeaders.0/";
  for (char c : base) {
    if (out.size() == 100) break;
    out += is_plain_ascii(std::string_view(&c, 1)) ? c : '_';
  }
  return out;
}

std::array<char, kBlock> header_block(std::string_view name, char typeflag, std::uint64_t size, std::string_view link,
                                      const TarEntryMeta& meta) {
  std::array<char, kBlock> b{};
  put_string(b, 0, 100, name);
  put_octal(b, 100, 8, meta.mode & 07777);
  put_octal(b, 108, 8, std::min(meta.uid, kMaxOctal7));
  put_octal(b, 116, 8, std::min(meta.gid, kMaxOctal7));
  put_octal(b, 124, 12, std::min(size, kMaxOctal11));
  put_octal(b, 136, 12, static_cast<std::uint64_t>(std::clamp<std::int64_t>(meta.mtime, 0, static_cast<std::int64_t>(kMaxOctal11))));
  b[156] = typeflag;
  put_string(b, 157, 100, link);
  put_string(b, 257, 6, std::string_view("ustar\0", 6));
  put_string(b, 263, 2, "00");
  if (meta.uname.size() <= 32 && is_plain_ascii(meta.uname)) put_string(b, 265, 32, meta.uname);
  if (meta.gname.size() <= 32 && is_plain_ascii(meta.gname)) put_string(b, 297, 32, meta.gname);
  put_octal(b, 329, 8, 0);
  put_octal(b, 337, 8, 0);
  // The checksum is computed with its own field read as spaces, then stored as 6 octal
  // digits, NUL, space.
  std::fill_n(b.data() + 148, 8, ' ');
  unsigned sum = 0;
  for (char c : b) sum += static_cast<unsigned char>(c);
  put_octal(b, 148, 7, sum);
  b[155] = ' ';
  return b;
}

void pad_to_block(std::string& out, std::uint64_t size) {
  if (const auto rem = size % kBlock) out.append(kBlock - rem, '\0');
}

}  // namespace

void TarWriter::emit(std::string_view name, char typeflag, std::uint64_t size, std::string_view link,
                     const TarEntryMeta& meta) {
  if (body_remaining_ != 0) throw ValueError("tar writer: a new entry '" + std::string(name) + "' began while the previous file still owed " + std::to_string(body_remaining_) + " body bytes");
  if (name.empty()) throw ValueError("tar writer: an entry name is empty");
  std::string records;
  if (name.size() > 100 || !is_plain_ascii(name)) records += pax_record("path", name);
  if (link.size() > 100 || !is_plain_ascii(link)) records += pax_record("linkpath", link);
  if (meta.uid > kMaxOctal7) records += pax_record("uid", std::to_string(meta.uid));
  if (meta.gid > kMaxOctal7) records += pax_record("gid", std::to_string(meta.gid));
  if (size > kMaxOctal11) records += pax_record("size", std::to_string(size));
  if (meta.mtime < 0 || static_cast<std::uint64_t>(meta.mtime) > kMaxOctal11)
    records += pax_record("mtime", std::to_string(meta.mtime));
  if (meta.uname.size() > 32 || !is_plain_ascii(meta.uname)) records += pax_record("uname", meta.uname);
  if (meta.gname.size() > 32 || !is_plain_ascii(meta.gname)) records += pax_record("gname", meta.gname);
  if (!records.empty()) {
    TarEntryMeta pax_meta{.mode = 0644, .uid = meta.uid, .gid = meta.gid, .mtime = meta.mtime};
    const auto block = header_block(pax_header_name(name), 'x', records.size(), {}, pax_meta);
    out_.append(block.data(), block.size());
    out_ += records;
    pad_to_block(out_, records.size());
  }
  const auto block = header_block(name, typeflag, size, link, meta);
  out_.append(block.data(), block.size());
}

void TarWriter::add_directory(std::string_view name, const TarEntryMeta& meta) {
  std::string n(name);
  if (n.empty() || n.back() != '/') n += '/';
  emit(n, '5', 0, {}, meta);
}

void TarWriter::add_file(std::string_view name, std::string_view content, const TarEntryMeta& meta) {
  // One allocation for the entry, its padding and the end-of-archive blocks: growing by
  // doubling would briefly hold the old and the new buffer — for one large file, three times
  // the payload at peak (the caller's bytes, the old buffer, the new). Reserved pages that are
  // never written cost no memory; a long PAX path may still cost one more growth.
  const std::size_t padded = (content.size() + kBlock - 1) / kBlock * kBlock;
  out_.reserve(out_.size() + 4 * kBlock + 2 * name.size() + padded + 2 * kBlock);
  begin_file(name, content.size(), meta);
  append_body(content);
  end_body();
}

void TarWriter::add_symlink(std::string_view name, std::string_view target, const TarEntryMeta& meta) {
  emit(name, '2', 0, target, meta);
}

void TarWriter::add_hard_link(std::string_view name, std::string_view target, const TarEntryMeta& meta) {
  emit(name, '1', 0, target, meta);
}

void TarWriter::begin_file(std::string_view name, std::uint64_t size, const TarEntryMeta& meta) {
  emit(name, '0', size, {}, meta);
  body_remaining_ = size;
  body_size_ = size;
}

void TarWriter::append_body(std::string_view bytes) {
  if (bytes.size() > body_remaining_)
    throw ValueError("tar writer: body longer than the " + std::to_string(body_size_) + " bytes its header declared");
  out_ += bytes;
  body_remaining_ -= bytes.size();
}

void TarWriter::end_body() {
  if (body_remaining_ != 0)
    throw ValueError("tar writer: body " + std::to_string(body_remaining_) + " bytes short of the " +
                     std::to_string(body_size_) + " its header declared");
  pad_to_block(out_, body_size_);
  body_size_ = 0;
}

TarStream TarWriter::finish_with_file(std::string_view name, std::string_view content, const TarEntryMeta& meta) && {
  begin_file(name, content.size(), meta);
  TarStream stream;
  stream.head = std::move(out_);
  stream.body = content;
  stream.tail_zeros = (kBlock - content.size() % kBlock) % kBlock + 2 * kBlock;  // padding, end blocks
  return stream;
}

std::string TarStream::joined() const {
  std::string out;
  out.reserve(size());
  out.append(head);
  out.append(body);
  out.append(tail_zeros, '\0');
  return out;
}

std::function<std::string()> TarStream::after_head(std::size_t piece) const {
  return [body = body, zeros = tail_zeros, piece = std::max<std::size_t>(piece, 1), at = std::size_t{0},
          zeros_sent = false]() mutable -> std::string {
    if (at < body.size()) {
      const std::size_t n = std::min(piece, body.size() - at);
      at += n;
      return std::string(body.substr(at - n, n));
    }
    if (zeros_sent || zeros == 0) return {};
    zeros_sent = true;
    return std::string(zeros, '\0');
  };
}

std::string TarWriter::finish() && {
  if (body_remaining_ != 0) throw ValueError("tar writer: finished while a file body was incomplete");
  out_.append(2 * kBlock, '\0');
  return std::move(out_);
}

}  // namespace maf::sandbox::support
