#pragma once
/// @file wslc/container_list.hpp
/// Parsing `wslc container list --format json` in all three recorded shapes (wslc.md C-24…
/// C-26): the 2.9.4 sorted, indented array; the ≈2.9.8 compact object per line; and the
/// 2.9.10+ Docker `ps` line (`ID`, comma-joined `Names`, `State` as a word). CRLF or LF,
/// blank lines, `[]`, `null` and empty output all read as they should; junk reads as nothing
/// and never throws — a listing that cannot be read selects nothing rather than guessing.

#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::wslc {

enum class ListedState { Running, Stopped, Other };

struct ListedContainer {
  std::vector<std::string> names;  ///< without a leading '/'
  std::string id;                  ///< 64 hex (array shapes) or 12 hex (Docker shape)
  ListedState state = ListedState::Other;
};

std::vector<ListedContainer> parse_container_list(std::string_view text);

/// W-14: the entry whose names include `name` exactly (the filter is a substring match,
/// so `N-proxy` comes back for `N`); null when none does.
const ListedContainer* find_exact(const std::vector<ListedContainer>& listed, std::string_view name);

}  // namespace maf::sandbox::wslc
