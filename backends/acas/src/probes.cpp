// Acquire-time probes; see probes.hpp.
#include "probes.hpp"

#include <spdlog/spdlog.h>

#include "acas_sandbox.hpp"
#include "guest_scripts.hpp"
#include "maf/sandbox/logging.hpp"
#include "response.hpp"
#include "said.hpp"

namespace maf::sandbox::acas::detail {
namespace {

// one bound for preparation, exec and observation, another for the cleanup.
constexpr auto kRemovalProbeBound = std::chrono::seconds(30);

std::chrono::milliseconds ms_of(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// Built outside coroutines (GCC 12: no braced lists inside a coroutine body).
Query path_and(const std::string& path, const char* key) {
  Query q = one_query("path", path);
  q.emplace_back(key, "true");
  return q;
}

// R-31 without the ancestor walk: the probe's own paths, made by the probe.
boost::asio::awaitable<std::optional<EntryPayload>> stat_path(Service& svc, const std::string& id,
                                                              std::string path, Clock::time_point deadline) {
  ServiceCall c{"GET", "/sandboxes/" + id + "/files/stat", one_query("path", path), std::nullopt, "application/json",
                RetryClass::Read, deadline, 1 << 20, "files.stat (removal probe)"};
  auto r = co_await svc.call(std::move(c));
  if (r.status == 404) co_return std::nullopt;
  Service::expect(r, {200}, "files.stat (removal probe)");
  co_return parse_entry(std::string_view(r.body));
}

boost::asio::awaitable<RemovalVerdict> observe_removal(Service& svc, std::string id, std::string dir,
                                                       std::string file) {
  const auto deadline = Clock::now() + kRemovalProbeBound;
  ServiceCall put{"PUT", "/sandboxes/" + id + "/files", path_and(file, "createDirs"), std::string("probe"),
                  "application/octet-stream", RetryClass::Idempotent, deadline, 1 << 20, "files.put (removal probe)"};
  auto uploaded = co_await svc.call(std::move(put));
  Service::expect(uploaded, {200, 201, 204}, "files.put (removal probe)");
  auto made = co_await stat_path(svc, id, file, deadline);
  if (!made || made->kind != EntryKind::File) co_return RemovalVerdict::Inconclusive;
  std::string command = removal_probe_script(file);
  std::string root = "/";
  auto rm = co_await AcasSandbox::control_exec(svc, id, std::move(command), std::move(root), deadline, 4096);
  auto after_dir = co_await stat_path(svc, id, dir, deadline);
  auto after_file = co_await stat_path(svc, id, file, deadline);
  const bool dir_kept = after_dir && after_dir->kind == EntryKind::Directory;
  if (dir_kept && !after_file && rm.exit_code == 0) co_return RemovalVerdict::Pass;
  if (after_file && rm.exit_code == 1) co_return RemovalVerdict::Fail;
  co_return RemovalVerdict::Inconclusive;
}

}  // namespace

std::string to_string(RemovalVerdict verdict) {
  switch (verdict) {
    case RemovalVerdict::Pass: return "pass";
    case RemovalVerdict::Fail: return "fail";
    case RemovalVerdict::Inconclusive: return "inconclusive";
  }
  return "inconclusive";
}

CapabilitySet refused_by(RemovalVerdict verdict) {
  switch (verdict) {
    case RemovalVerdict::Pass: return {};
    case RemovalVerdict::Fail: return {Capability::FilesOut, Capability::HostTools, Capability::FilesDelete};
    case RemovalVerdict::Inconclusive: return {Capability::FilesDelete};
  }
  return {Capability::FilesDelete};
}

CapabilitySet served_capabilities(CapabilitySet ceiling, std::optional<RemovalVerdict> verdict) {
  if (!verdict) return ceiling.difference(CapabilitySet{Capability::FilesDelete});
  return ceiling.difference(refused_by(*verdict));
}

boost::asio::awaitable<RemovalVerdict> removal_probe(Service& svc, std::string id) {
  const std::string dir = "/.maf-authority-" + random_hex32();
  const std::string file = dir + "/probe";
  std::optional<RemovalVerdict> verdict;
  std::exception_ptr failure;
  try {
    verdict = co_await observe_removal(svc, id, dir, file);
  } catch (...) {
    failure = std::current_exception();
  }
  // Always, whatever happened above; 404 means nothing was made.
  std::string left;
  try {
    ServiceCall c{"DELETE", "/sandboxes/" + id + "/files", path_and(dir, "recursive"), std::nullopt,
                  "application/json", RetryClass::Idempotent, Clock::now() + kRemovalProbeBound, 1 << 20,
                  "files.delete (removal probe)"};
    auto r = co_await svc.call(std::move(c));
    if (r.status != 200 && r.status != 204 && r.status != 404)
      left = "HTTP " + std::to_string(r.status) + ": " + problem_summary(r.body);
  } catch (const std::exception& e) {
    left = e.what();
  }
  if (failure) std::rethrow_exception(failure);
  if (!left.empty())
    throw OSError(said("the removal-compatibility probe of sandbox ") + id + " could not delete " + dir + " (" + left +
                  "); the probe is incomplete and the next acquire runs it again");
  co_return *verdict;
}

boost::asio::awaitable<void> run_command_probes(Service& svc, std::shared_ptr<AcasSandboxBackend::State> s,
                                                std::shared_ptr<Record> record, SandboxSpec spec, std::string image) {
  const CapabilitySet needs = spec.requires_capabilities();
  const bool exec = needs.contains(Capability::Exec);
  const bool host_tools = needs.contains(Capability::HostTools);
  if (!exec && !host_tools) co_return;
  const auto deadline =
      Clock::now() + std::min(ms_of(s->config.probe_timeout_seconds), ms_of(s->config.read_timeout_seconds));
  auto refuse = [&](const std::string& probe, const std::string& why) {
    return SandboxCapabilityNotSupported(said("the '") + probe + "' probe failed for kind '" + spec.kind() +
                                         "' on image '" + image + "': " + why);
  };
  std::string why;
  if (exec && !host_tools && !record->sh_passed) {
    try {
      std::string command = "sh -c 'exit 0'";
      std::string root = "/";
      auto sh = co_await AcasSandbox::control_exec(svc, record->id, std::move(command), std::move(root), deadline, 4096);
      if (sh.exit_code != 0) why = "exit status " + std::to_string(sh.exit_code);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) throw refuse("sh", why);
    record->sh_passed = true;
  }
  if (host_tools && !record->host_tools_passed) {
    try {
      const std::string missing = "/tmp/maf-host-tools-probe-" + random_hex32();
      std::string command = host_tools_probe_script(missing);
      std::string root = "/";
      auto r = co_await AcasSandbox::control_exec(svc, record->id, std::move(command), std::move(root), deadline, 4096);
      if (r.exit_code != 0) why = "exit status " + std::to_string(r.exit_code);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) throw refuse("host-tools", why);
    // A pass also proves what the `sh` probe would.
    record->host_tools_passed = record->sh_passed = true;
  }
  if (!record->capture_passed) {
    try {
      const std::string command = "printf x";
      const std::string root = "/";
      auto report = co_await AcasSandbox::captured_exec(svc, record->id, command, root, deadline);
      const ExecResult& r = report.result;
      if (report.end != ExecReport::End::Exited) why = "the capture of one byte went over its cap";
      else if (r.exit_code != 0 || r.stdout_bytes != "x" || !r.stderr_bytes.empty()) why = "unexpected result";
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      // a failed capture probe invalidates and deletes the sandbox.
      co_await s->invalidate(svc, record, "exec-capture probe failed");
      throw refuse("exec-capture", why);
    }
    record->capture_passed = true;
  }
}

}  // namespace maf::sandbox::acas::detail
