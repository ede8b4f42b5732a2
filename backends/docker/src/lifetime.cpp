// A workload's lifetime (lifetime.hpp, LIM-7): the engine's Created and the ttl label, and
// the acquire's check of them (past_ttl).
#include "lifetime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {
namespace detail {

std::optional<std::int64_t> parse_rfc3339(const std::string& text) {
  int y, mo, d, h, mi, s;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) != 6)
    return std::nullopt;
  std::size_t i = static_cast<std::size_t>(consumed);
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == digits) return std::nullopt;
  }
  long offset = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    int oh, om, n = 0;
    if (std::sscanf(text.c_str() + i + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5) return std::nullopt;
    offset = (text[i] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != text.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<std::int64_t>(timegm(&tm)) - offset;
}

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::optional<std::int64_t> ttl_label(const std::map<std::string, std::string>& labels) {
  auto it = labels.find(std::string(support::kLabelTtl));
  if (it == labels.end() || it->second.empty() || it->second.size() > 12 ||
      !std::all_of(it->second.begin(), it->second.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const std::int64_t seconds = std::stoll(it->second);
  return seconds > 0 ? std::optional(seconds) : std::nullopt;
}

}  // namespace detail

using detail::now_unix;
using detail::parse_rfc3339;
using detail::ttl_label;

boost::asio::awaitable<bool> DockerSandboxBackend::past_ttl(const std::string& container) {
  auto text = co_await transport_->inspect_container(container);
  if (!text) co_return false;  // gone meanwhile: the acquire creates it
  const auto doc = nlohmann::json::parse(*text, nullptr, false);
  std::map<std::string, std::string> labels;
  std::optional<std::int64_t> created;
  if (doc.is_object()) {
    if (auto c = doc.find("Created"); c != doc.end() && c->is_string()) created = parse_rfc3339(c->get<std::string>());
    const auto config = doc.find("Config");
    if (config != doc.end() && config->is_object())
      if (auto l = config->find("Labels"); l != config->end() && l->is_object())
        for (const auto& [k, v] : l->items())
          if (v.is_string()) labels[k] = v.get<std::string>();
  }
  const auto ttl = ttl_label(labels);
  if (!ttl) co_return false;  // created without a lifetime bound (by a configuration that set none)
  // An unreadable creation time cannot be judged young: the bound is not kept, so refuse.
  if (!created)
    throw OSError(said("container " + container +
                       " carries a ttl but the engine's creation time of it is unreadable; not handing it out"));
  co_return now_unix() >= *created + *ttl;
}

}  // namespace maf::sandbox::docker
