// `container list --format json` in the three recorded shapes (wslc.md C-24…C-26, T-7).
#include "maf/sandbox/wslc/container_list.hpp"

#include <nlohmann/json.hpp>

namespace maf::sandbox::wslc {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::string strip_slash(std::string name) {
  if (!name.empty() && name.front() == '/') name.erase(0, 1);
  return name;
}

/// C-24 state numbers: 2 running; 1 created and 3 exited are stopped; 0 (invalid, also
/// paused/restarting) and 4 (deleted) are neither.
ListedState from_number(long long n) {
  if (n == 2) return ListedState::Running;
  if (n == 1 || n == 3) return ListedState::Stopped;
  return ListedState::Other;
}

ListedState from_word(const std::string& w) {
  if (w == "running") return ListedState::Running;
  if (w == "created" || w == "exited" || w == "dead") return ListedState::Stopped;
  return ListedState::Other;
}

/// One object of any shape; false when it names no container.
bool read_entry(const nlohmann::json& j, ListedContainer& out) {
  if (!j.is_object()) return false;
  if (auto it = j.find("Name"); it != j.end() && it->is_string()) {  // array / compact lines
    // An empty name (`""` or `"/"`) names nothing real (found by fuzz_wslc_list).
    if (std::string one = strip_slash(it->get<std::string>()); !one.empty()) out.names.push_back(std::move(one));
  } else if (auto it2 = j.find("Names"); it2 != j.end() && it2->is_string()) {  // Docker shape
    const std::string all = it2->get<std::string>();
    std::size_t start = 0;
    while (start <= all.size()) {
      const std::size_t comma = all.find(',', start);
      std::string one = strip_slash(std::string(trim(all.substr(start, comma - start))));
      if (!one.empty()) out.names.push_back(std::move(one));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (out.names.empty()) return false;
  for (const char* key : {"Id", "ID"})
    if (auto it = j.find(key); it != j.end() && it->is_string()) out.id = it->get<std::string>();
  if (auto it = j.find("State"); it != j.end()) {
    if (it->is_number_integer()) out.state = from_number(it->get<long long>());
    else if (it->is_string()) out.state = from_word(it->get<std::string>());
  }
  return true;
}

void read_value(const nlohmann::json& j, std::vector<ListedContainer>& out) {
  if (j.is_array()) {
    for (const auto& item : j) read_value(item, out);
    return;
  }
  ListedContainer entry;
  if (read_entry(j, entry)) out.push_back(std::move(entry));
}

}  // namespace

std::vector<ListedContainer> parse_container_list(std::string_view text) {
  std::vector<ListedContainer> out;
  const std::string_view body = trim(text);
  if (body.empty()) return out;
  // The whole text first (the 2.9.4 array spans lines), then line by line (C-25, C-26).
  try {
    read_value(nlohmann::json::parse(body), out);
    return out;
  } catch (const nlohmann::json::exception&) {
  }
  std::size_t start = 0;
  while (start < body.size()) {
    std::size_t nl = body.find('\n', start);
    if (nl == std::string_view::npos) nl = body.size();
    const std::string_view line = trim(body.substr(start, nl - start));
    start = nl + 1;
    if (line.empty()) continue;
    try {
      read_value(nlohmann::json::parse(line), out);
    } catch (const nlohmann::json::exception&) {
      // Junk selects nothing; the other lines still count.
    }
  }
  return out;
}

const ListedContainer* find_exact(const std::vector<ListedContainer>& listed, std::string_view name) {
  for (const auto& entry : listed)
    for (const auto& n : entry.names)
      if (n == name) return &entry;
  return nullptr;
}

}  // namespace maf::sandbox::wslc
