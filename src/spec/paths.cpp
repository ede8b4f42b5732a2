// Guest path arithmetic (C-95…C-103), ported from posixpath semantics.
#include "maf/sandbox/paths.hpp"

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {
namespace {

std::vector<std::string_view> split(std::string_view p) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i <= p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    parts.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

}  // namespace

std::string normalize_guest_path(std::string_view path) {
  if (path.empty()) return ".";
  std::size_t initial = 0;
  if (path[0] == '/') {
    initial = 1;
    if (path.size() > 1 && path[1] == '/' && (path.size() == 2 || path[2] != '/')) initial = 2;
  }
  std::vector<std::string_view> out;
  for (std::string_view comp : split(path)) {
    if (comp.empty() || comp == ".") continue;
    if (comp != ".." || (initial == 0 && out.empty()) || (!out.empty() && out.back() == ".."))
      out.push_back(comp);
    else if (!out.empty())
      out.pop_back();
  }
  std::string result(initial, '/');
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i) result += '/';
    result.append(out[i]);
  }
  return result.empty() ? "." : result;
}

std::string join_guest_path(std::string_view base, std::string_view path) {
  if (!path.empty() && path[0] == '/') return std::string(path);
  if (base.empty() || base.back() == '/') return std::string(base) + std::string(path);
  return std::string(base) + "/" + std::string(path);
}

std::string guest_dirname(std::string_view path) {
  const std::size_t i = path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1;
  std::string head(path.substr(0, i));
  if (!head.empty() && head != std::string(head.size(), '/')) {
    while (!head.empty() && head.back() == '/') head.pop_back();
  }
  return head;
}

std::optional<std::string> guest_path_relative_to(std::string_view path, std::string_view base) {
  const std::string p = normalize_guest_path(path);
  const std::string b = normalize_guest_path(base);
  if (p == b) return std::string();
  const std::string prefix = (!b.empty() && b.back() == '/') ? b : b + "/";
  if (p.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return p.substr(prefix.size());
}

std::string confine_resolve_guest_path(std::string_view path, std::string_view working_directory) {
  if (path.find('\\') != std::string_view::npos)
    throw ValueError("guest path '" + std::string(path) + "' contains a backslash; guest paths are POSIX");
  const std::string wd = normalize_guest_path(working_directory);
  const std::string resolved = normalize_guest_path(join_guest_path(wd, path));
  if (!guest_path_relative_to(resolved, wd))
    throw ValueError("guest path '" + std::string(path) + "' resolves to '" + resolved +
                     "', outside the working directory '" + wd + "'");
  return resolved;
}

std::string resolve_working_directory(std::string_view working_directory, std::string_view storage_base) {
  if (working_directory.find('\\') != std::string_view::npos)
    throw ValueError("working directory '" + std::string(working_directory) +
                     "' contains a backslash; guest paths are POSIX");
  if (!working_directory.empty() && working_directory[0] == '/') return normalize_guest_path(working_directory);
  const std::string base = normalize_guest_path(storage_base);
  const std::string resolved = normalize_guest_path(join_guest_path(base, working_directory));
  if (!guest_path_relative_to(resolved, base))
    throw ValueError("relative working directory '" + std::string(working_directory) +
                     "' escapes the storage base '" + base + "'");
  return resolved;
}

std::vector<std::string> guest_path_and_ancestors(std::string_view path, std::string_view working_directory) {
  const std::string wd = normalize_guest_path(working_directory);
  std::vector<std::string> chain;
  std::string acc;
  for (std::string_view seg : split(wd)) {
    if (seg.empty()) continue;
    acc += "/";
    acc.append(seg);
    chain.push_back(acc);
  }
  if (wd.empty() || wd[0] != '/') {
    // A relative working directory has no filesystem root to walk from; the chain is its
    // own cumulative prefixes (callers resolve working directories to absolute first).
    for (auto& c : chain) c.erase(0, 1);
  }
  const auto rel = guest_path_relative_to(path, wd);
  if (rel && !rel->empty()) {
    std::string cur = chain.empty() ? std::string() : chain.back();
    for (std::string_view seg : split(*rel)) {
      if (seg.empty()) continue;
      cur += "/";
      cur.append(seg);
      chain.push_back(cur);
    }
  }
  return chain;
}

boost::asio::awaitable<void> refuse_symlinked_ancestors(UnconfinedStat stat, std::string path,
                                                       std::string working_directory, bool include_self) {
  const std::string target = include_self ? normalize_guest_path(path) : guest_dirname(normalize_guest_path(path));
  const std::string wd = normalize_guest_path(working_directory);
  // C-98: the working directory and all its ancestors are always walked, then the
  // segments of `target` below it.
  const std::vector<std::string> chain = guest_path_and_ancestors(target, wd);
  for (const std::string& dir : chain) {
    const auto kind = co_await stat(dir);
    if (!kind) co_return;
    if (*kind == EntryKind::Symlink)
      throw ValueError("guest path component '" + dir + "' is a symbolic link; refusing to follow it (working directory '" +
                       wd + "')");
    if (*kind != EntryKind::Directory)
      throw NotADirectoryError("guest path component '" + dir + "' is not a directory (it is a " +
                               std::string(to_string(*kind)) + ")");
  }
}

boost::asio::awaitable<std::string> confine_resolve_guest_write_path(UnconfinedStat stat, std::string path,
                                                                    std::string working_directory) {
  const std::string resolved = confine_resolve_guest_path(path, working_directory);
  if (resolved == normalize_guest_path(working_directory))
    throw ValueError("guest path '" + path + "' names the working directory itself; a file name is required");
  co_await refuse_symlinked_ancestors(stat, resolved, working_directory, false);
  if (auto leaf = co_await stat(resolved); leaf && *leaf == EntryKind::Symlink)
    throw ValueError("guest path '" + path + "' is a symbolic link; refusing to write through it");
  co_return resolved;
}

}  // namespace maf::sandbox
