// FileStoreProvenance (docs/tools.md "Provenance of stored text"): one map behind one mutex.
// Paths are keyed in one normal form so "a/./b" written and "a//b" read are the same entry;
// a path that could mean something outside the store is refused rather than guessed at.
#include "maf/sandbox/file_provenance.hpp"

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {

std::string FileStoreProvenance::normalize(std::string_view path) {
  auto refuse = [&](const char* why) {
    return ValueError("FileStoreProvenance: store path '" + std::string(path) + "' " + why);
  };
  if (path.empty()) throw refuse("is empty");
  if (path.find('\0') != std::string_view::npos) throw refuse("holds a NUL byte");
  if (path.front() == '/') throw refuse("is absolute; store paths are relative to the store");
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part == "..") throw refuse("climbs out with '..'");
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    start = end + 1;
  }
  if (out.empty()) throw refuse("names the store itself, not a file in it");
  return out;
}

void FileStoreProvenance::record_write(std::string_view path, Integrity integrity) {
  std::string key = normalize(path);
  std::lock_guard guard(mutex_);
  entries_.insert_or_assign(std::move(key), integrity);
}

std::optional<Integrity> FileStoreProvenance::integrity(std::string_view path) const {
  const std::string key = normalize(path);
  std::lock_guard guard(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void FileStoreProvenance::forget(std::string_view path) {
  const std::string key = normalize(path);
  std::lock_guard guard(mutex_);
  entries_.erase(key);
}

}  // namespace maf::sandbox
