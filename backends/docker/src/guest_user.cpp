// The image user of a container (D-25): Config.User, then its /etc/passwd and /etc/group
// read over the tar plane, then `id`; remembered per container and, for a container this
// acquire created, per image (memory.hpp).
#include <sstream>

#include <spdlog/spdlog.h>

#include "freeze.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "memory.hpp"
#include "tar_plane.hpp"

namespace maf::sandbox::docker {

using boost::asio::awaitable;

namespace {

bool is_number(const std::string& s) {
  return !s.empty() && s.size() <= 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

/// The passwd line for `name` (by name) or for `uid` (by number): {uid, primary gid}.
std::optional<std::pair<long long, long long>> passwd_lookup(const std::string& text, const std::string& user,
                                                             bool by_uid) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = split(line, ':');
    if (f.size() < 4 || !is_number(f[2]) || !is_number(f[3])) continue;
    if ((by_uid ? f[2] : f[0]) == user) return std::pair{std::stoll(f[2]), std::stoll(f[3])};
  }
  return std::nullopt;
}

std::optional<long long> group_lookup(const std::string& text, const std::string& group) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = split(line, ':');
    if (f.size() >= 3 && f[0] == group && is_number(f[2])) return std::stoll(f[2]);
  }
  return std::nullopt;
}

}  // namespace

awaitable<std::optional<std::string>> DockerSandboxBackend::read_account_file(const std::string& container,
                                                                              const std::string& path) {
  // A tar-plane read (D-25): bounded, regular file only; anything else, or any
  // failure, counts as unreadable and resolution moves on.
  constexpr std::size_t kMaxAccountFile = 1 << 20;
  try {
    ArchiveGet got = co_await transport_->archive_get(container, path, detail::kRetryPrefix + kMaxAccountFile);
    if (got.status == ArchiveStatus::Absent) co_return std::nullopt;
    auto first = detail::parse_first_entry(got.bytes, got.cut, true, path);
    if (first.need_more || first.entry.type != support::TarEntryType::file) co_return std::nullopt;
    co_return first.body;
  } catch (const Error&) {
    co_return std::nullopt;
  }
}

awaitable<detail::GuestUser> DockerSandboxBackend::resolve_guest_user(const std::string& container,
                                                                                 const std::string& id,
                                                                                 const std::string& fresh_image,
                                                                                 const SandboxSpec& spec) {
  // Per container ID, and per image ID for a container this acquire created: the image
  // user comes from the image's Config.User and its account files (we pass no --user), so a
  // fresh container of the same image resolves alike (issue 24).
  if (auto known = memory_->guest_user(container, id, fresh_image)) co_return *known;
  // Order: Config.User, /etc/passwd, /etc/group, then `id` (D-25).
  std::optional<long long> uid, gid;
  std::string user;
  bool user_readable = true;
  try {
    user = co_await transport_->config_user(container);
  } catch (const Error&) {
    user_readable = false;
  }
  if (user_readable && user.empty()) {
    uid = 0;
    gid = 0;
  } else if (user_readable) {
    const auto colon = user.find(':');
    const std::string user_part = user.substr(0, colon);
    const std::optional<std::string> group_part =
        colon == std::string::npos ? std::nullopt : std::optional(user.substr(colon + 1));
    if (is_number(user_part)) uid = std::stoll(user_part);
    if (group_part && is_number(*group_part)) gid = std::stoll(*group_part);
    const bool need_passwd = !uid || (!group_part && !gid);
    if (need_passwd) {
      if (auto passwd = co_await read_account_file(container, "/etc/passwd")) {
        // [port decision] a numeric uid with no group: the passwd entry *by uid* gives the gid.
        if (auto entry = passwd_lookup(*passwd, uid ? std::to_string(*uid) : user_part, uid.has_value())) {
          if (!uid) uid = entry->first;
          if (!group_part) gid = entry->second;
        }
      }
    }
    if (group_part && !gid)
      if (auto group = co_await read_account_file(container, "/etc/group")) gid = group_lookup(*group, *group_part);
  }
  auto ask_id = [&](const char* flag) -> awaitable<std::optional<long long>> {
    try {
      auto slot = detail::freeze_slot(co_await transport_->endpoint(), container);
      auto outcome = co_await detail::exec_respecting_freeze(*transport_, *slot, [&] {
        ExecCall call;
        call.container = container;
        call.argv = {"id", flag};
        call.working_directory = "/";
        call.timeout = config_.command_timeout();
        call.max_stdout = call.max_stderr = 4096;
        return call;
      });
      std::string out = outcome.stdout_bytes;
      while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
      if (outcome.exit_code == 0 && is_number(out)) co_return std::stoll(out);
    } catch (const Error&) {
    }
    co_return std::nullopt;
  };
  if (!uid) uid = co_await ask_id("-u");
  if (!gid) gid = co_await ask_id("-g");
  if (uid && gid) {
    const detail::GuestUser resolved{*uid, *gid, true};
    memory_->record_guest_user(container, id, fresh_image, resolved);
    co_return resolved;
  }
  const auto needs = spec.requires_capabilities();
  if (needs.contains(Capability::FilesOut) || needs.contains(Capability::HostTools))
    throw SandboxCapabilityNotSupported(
        "backend 'docker' cannot serve workload kind '" + spec.kind() + "' in container " + container +
        ": the image user '" + user +
        "' does not resolve to a uid and gid (Config.User, /etc/passwd, /etc/group, id), so inputs cannot be owned "
        "by the guest; files_out and host_tools need that. The next acquire retries");
  logger()->warn("backend 'docker': the image user '{}' of container {} does not resolve; workload kind '{}' gets "
                 "root-owned (0:0) inputs",
                 user, container, spec.kind());
  co_return detail::GuestUser{0, 0, false};  // not cached: resolution is retried on the next acquire
}

}  // namespace maf::sandbox::docker
