#pragma once
/// @file paths.hpp
/// Guest path arithmetic (C-95…C-103), POSIX grammar only.
///
/// These helpers are for *guest* paths whatever the host OS, and must never be used on host
/// paths. The lexical checks cannot race; the ancestor walk (`refuse_symlinked_ancestors`)
/// asks the backend's own unconfined, no-follow stat, so a link planted by the guest in any
/// directory above the target — the working directory and its own ancestors included — is
/// refused before the backend touches the target.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/entry.hpp"

namespace maf::sandbox {

/// posixpath.normpath (C-95): collapses "//", drops ".", resolves ".." lexically (never
/// above "/"), strips a trailing "/", "" -> "."; exactly two leading slashes are kept.
std::string normalize_guest_path(std::string_view path);

/// posixpath.join for two parts: an absolute `path` replaces `base`.
std::string join_guest_path(std::string_view base, std::string_view path);

/// posixpath.dirname.
std::string guest_dirname(std::string_view path);

/// C-97: `path` relative to `base` ("" when equal), or absent when outside. A sibling that
/// shares a string prefix ("/w/sub2" vs "/w/sub") is outside.
std::optional<std::string> guest_path_relative_to(std::string_view path, std::string_view base);

/// C-96: resolve `path` against `working_directory` and refuse (ValueError naming both)
/// a backslash or anything that leaves the working directory. "" and "." name it.
std::string confine_resolve_guest_path(std::string_view path, std::string_view working_directory);

/// C-99: an absolute working directory is used as given (normalised); a relative one is
/// resolved under `storage_base` ("." is the base). [gap] A relative value escaping the base
/// is refused with ValueError (docs/policy.md).
std::string resolve_working_directory(std::string_view working_directory, std::string_view storage_base);

/// C-98: every cumulative prefix of normalise(wd) below "/" (so "/" itself is never listed),
/// then each further segment of `path` relative to `wd`.
std::vector<std::string> guest_path_and_ancestors(std::string_view path, std::string_view working_directory);

/// The backend's unconfined, no-follow (lstat-like) stat: the kind of the entry at an
/// absolute guest path, or absent when nothing is there (C-101).
using UnconfinedStat = std::function<boost::asio::awaitable<std::optional<EntryKind>>(const std::string& absolute_path)>;

/// The callback is taken by value: the coroutine starts lazily and must own what it calls.
/// C-100: walk the directory chain of `path` (or of its parent unless `include_self`),
/// outermost first: absent -> stop and accept; a link -> ValueError naming the component and
/// the working directory; any other non-directory -> NotADirectoryError. `path` must already
/// be confined.
boost::asio::awaitable<void> refuse_symlinked_ancestors(UnconfinedStat stat, std::string path,
                                                       std::string working_directory,
                                                       bool include_self = false);

/// C-102: confine; refuse the working directory itself; walk ancestors; refuse a leaf link.
/// Returns the resolved absolute path.
boost::asio::awaitable<std::string> confine_resolve_guest_write_path(UnconfinedStat stat,
                                                                    std::string path,
                                                                    std::string working_directory);

}  // namespace maf::sandbox
