// `maf-sandbox dispose-scope` and `maf-sandbox reap`: bulk disposal through a backend.
#include <fmt/core.h>

#include "commands.hpp"
#include "maf/sandbox/errors.hpp"
#include "render.hpp"

namespace maf::sandbox::cli {
namespace {

/// An incomplete purge is reported, and is a backend failure for the exit code.
int report_purge(Session& session, const std::string& what, const ScopePurge& purge) {
  nlohmann::json j = purge_json(purge);
  j["backend"] = session.args.required("backend");
  std::string human = fmt::format("{}: disposed {}\n", what, purge.disposed);
  if (purge.undisposed) human += fmt::format("  not everything was disposed: {}\n", purge.undisposed->to_string());
  session.reporter.result(j, human);
  return purge.undisposed ? kExitBackend : kExitOk;
}

}  // namespace

int cmd_dispose_scope(Session& session) {
  const std::string scope = session.args.required("scope");
  const std::string thread = session.args.required("thread");
  const nlohmann::json config = backend_config(session.args);
  auto backend = create_backend(session, config);
  session.phase = Phase::Work;
  session.reporter.progress("disposing every sandbox of " + scope + "/" + thread);
  const ScopePurge purge = session.run([&] { return backend->dispose_scope(scope, thread); });
  return report_purge(session, "dispose-scope " + scope + "/" + thread, purge);
}

int cmd_reap(Session& session) {
  const std::optional<std::string> scope = session.args.get("scope");
  if (session.args.flag("expired")) {
    if (session.args.get("older-than"))
      throw UsageError("reap: --expired and --older-than are two different reaps; give one");
    auto backend = create_backend(session, backend_config(session.args));
    session.phase = Phase::Work;
    if (!backend->supports_reap_expired())
      throw NotImplementedError("backend '" + backend->name() + "' does not offer reap --expired");
    session.reporter.progress("reaping sandboxes past their ttl or idle timeout");
    const ScopePurge purge = session.run([&] { return backend->reap_expired(scope); });
    return report_purge(session, "reap --expired", purge);
  }
  const auto older_than = parse_duration(session.args.required("older-than"), "older-than");
  const nlohmann::json config = backend_config(session.args);
  auto backend = create_backend(session, config);
  session.phase = Phase::Work;
  if (!backend->supports_reap())
    throw NotImplementedError("backend '" + backend->name() + "' does not offer reap");
  session.reporter.progress("reaping sandboxes older than " + std::to_string(older_than.count()) + "s");
  const ScopePurge purge = session.run([&] { return backend->reap(older_than, scope); });
  return report_purge(session, "reap", purge);
}

}  // namespace maf::sandbox::cli
