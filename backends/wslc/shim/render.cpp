#include "render.hpp"

#include <sys/utsname.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace wslc_shim {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

/// RFC 3339 (Docker's `Created`, `StartedAt`, `FinishedAt`) to epoch seconds, UTC only as
/// Docker writes them; fractions dropped.
long long epoch_seconds(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6) return 0;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<long long>(timegm(&tm));
}

/// C-24: 1 created, 2 running, 3 exited (dead too), 4 deleted (removing), 0 otherwise.
int state_number(const std::string& status) {
  if (status == "created") return 1;
  if (status == "running") return 2;
  if (status == "exited" || status == "dead") return 3;
  if (status == "removing") return 4;
  return 0;  // paused, restarting
}

std::string architecture() {
  utsname u{};
  if (::uname(&u) == 0 && std::string_view(u.machine) == "aarch64") return "arm64";
  return "amd64";
}

}  // namespace

std::string newline() { return env_or("WSLC_SHIM_NEWLINE", "crlf") == "lf" ? "\n" : "\r\n"; }
bool japanese() { return env_or("WSLC_SHIM_LOCALE", "en") == "ja"; }
std::string shim_version() { return env_or("WSLC_SHIM_VERSION", "2.9.4.0"); }

ListShape list_shape() {
  const std::string shape = env_or("WSLC_SHIM_LIST_SHAPE", "");
  if (shape == "array") return ListShape::Array;
  if (shape == "jsonl-legacy") return ListShape::JsonlLegacy;
  if (shape == "docker") return ListShape::Docker;
  int v[4] = {0, 0, 0, 0};
  std::sscanf(shim_version().c_str(), "%d.%d.%d.%d", &v[0], &v[1], &v[2], &v[3]);
  const long long key = v[0] * 1'000'000LL + v[1] * 1'000LL + v[2];
  if (key < 2'009'008LL) return ListShape::Array;
  if (key < 2'009'010LL) return ListShape::JsonlLegacy;
  return ListShape::Docker;
}

std::string clean_docker_message(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  const std::string all(text);
  while (start < all.size()) {
    std::size_t nl = all.find('\n', start);
    if (nl == std::string::npos) nl = all.size();
    std::string line = trim(std::string_view(all).substr(start, nl - start));
    start = nl + 1;
    if (line.empty() || (line.rfind("See '", 0) == 0 && line.find("--help") != std::string::npos) ||
        (line.rfind("Run '", 0) == 0 && line.find("--help") != std::string::npos))
      continue;
    for (std::string_view prefix : {"docker: ", "Error response from daemon: ", "Error: "})
      if (line.rfind(prefix, 0) == 0) line.erase(0, prefix.size());
    if (line.rfind("Error response from daemon: ", 0) == 0) line.erase(0, 27);
    if (!out.empty()) out += ' ';
    out += line;
  }
  return out;
}

std::string container_not_found(std::string_view name) {
  return japanese() ? "コンテナー '" + std::string(name) + "' が見つかりません。"
                    : "Container '" + std::string(name) + "' not found.";
}

std::string container_not_running(std::string_view id) {
  return japanese() ? "コンテナー '" + std::string(id) + "' が実行されていません。"
                    : "Container '" + std::string(id) + "' is not running.";
}

std::string network_not_found(std::string_view name) {
  return japanese() ? "ネットワークが見つかりません: '" + std::string(name) + "'"
                    : "Network not found: '" + std::string(name) + "'";
}

std::string error_text(std::string_view message, std::string_view symbol) {
  std::string out = std::string(message) + newline();
  if (!symbol.empty()) out += (japanese() ? "エラー コード: " : "Error code: ") + std::string(symbol) + newline();
  return out;
}

std::string render_from_inspect(const std::vector<nlohmann::json>& inspected, ListShape shape) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& doc : inspected) {
    const auto state = doc.value("State", nlohmann::json::object());
    const std::string status = state.value("Status", "");
    std::string name = doc.value("Name", "");
    if (!name.empty() && name[0] == '/') name.erase(0, 1);
    nlohmann::json item;  // nlohmann's object is a sorted map: C-24's sorted keys for free
    item["CreatedAt"] = epoch_seconds(doc.value("Created", ""));
    item["Id"] = doc.value("Id", "");
    item["Image"] = doc.value("Config", nlohmann::json::object()).value("Image", "");
    item["Name"] = name;
    item["Ports"] = nlohmann::json::array();
    item["State"] = state_number(status);
    item["StateChangedAt"] =
        epoch_seconds(status == "running" ? state.value("StartedAt", "") : state.value("FinishedAt", ""));
    items.push_back(std::move(item));
  }
  if (shape == ListShape::Array) return replace_all(items.dump(2), "\n", newline()) + newline();
  std::string out;
  for (const auto& item : items) out += item.dump() + newline();
  return out;
}

std::string render_from_ps(const std::vector<nlohmann::json>& ps_lines) {
  std::string out;
  for (auto line : ps_lines) {
    if (!line.contains("HealthStatus")) line["HealthStatus"] = "";
    line["Platform"] = {{"architecture", architecture()}, {"os", "linux"}};
    out += line.dump() + newline();
  }
  return out;
}

}  // namespace wslc_shim
