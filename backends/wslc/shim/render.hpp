#pragma once
// What the wslc shim prints the way wslc does (wslc.md S-5…S-7): CRLF line ends unless
// WSLC_SHIM_NEWLINE=lf, the `Error code:` shape (ja-JP with WSLC_SHIM_LOCALE=ja), Docker's
// messages cleaned of the client's prefixes, and the three `container list` shapes.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace wslc_shim {

enum class ListShape { Array, JsonlLegacy, Docker };

/// The line end wslc's own output uses.
std::string newline();
bool japanese();
/// `$WSLC_SHIM_VERSION`, default 2.9.4.0.
std::string shim_version();
/// S-7: $WSLC_SHIM_LIST_SHAPE, else from the version (<2.9.8 array, <2.9.10 legacy lines).
ListShape list_shape();

/// Docker's text without `docker: `, `Error response from daemon: ` and the `See '…--help'`
/// line, trimmed.
std::string clean_docker_message(std::string_view text);

/// The localized messages of S-5.
std::string container_not_found(std::string_view name);
std::string container_not_running(std::string_view id);
std::string network_not_found(std::string_view name);

/// `message NL prefix SYMBOL NL` (no symbol line when `symbol` is empty, C-19).
std::string error_text(std::string_view message, std::string_view symbol);

/// C-24 / C-25 from `docker inspect` documents; C-26 from `docker ps --format '{{json .}}'`
/// lines. Empty lists render as `[]` (array) or nothing.
std::string render_from_inspect(const std::vector<nlohmann::json>& inspected, ListShape shape);
std::string render_from_ps(const std::vector<nlohmann::json>& ps_lines);

}  // namespace wslc_shim
