#pragma once
// What every subcommand shares: parsed arguments, the reporter, the phase reached, the
// blocking runner, and the readers for the inputs (spec, config, rung, key, duration).

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.hpp"
#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/isolation.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/router_options.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/sync.hpp"
#include "report.hpp"

namespace maf::sandbox::cli {

struct Session {
  explicit Session(Args parsed) : args(std::move(parsed)), reporter(args.flag("json")) {}
  Args args;
  Reporter reporter;
  Phase phase = Phase::Input;
  BlockingRunner run;
};

/// A JSON document from a file; ValueError naming the file and what it is for.
nlohmann::json read_json_file(const std::filesystem::path& file, std::string_view what);

/// `--config F` as a JSON object, or `{}`.
nlohmann::json backend_config(const Args& args);

/// `--spec F` through spec_from_json.
SandboxSpec load_spec(const std::filesystem::path& file);

/// The spec `run` and `mcp` serve without --spec: kind `cli`, requiring exec, files_in and
/// files_out, the backend's default image.
SandboxSpec minimal_spec();

/// `--min-isolation R` parsed per C-1 (ValueError for an unknown rung), default microvm.
Isolation min_isolation(const Args& args);

/// `--scope/--thread/--agent/--call`, each defaulting to "cli" (call: empty).
SandboxKey key_from(const Args& args);

/// "90", "90s", "15m", "2h", "7d" -> seconds; ValueError otherwise.
std::chrono::seconds parse_duration(const std::string& text, std::string_view option);

/// The router's options: `--min-isolation`'s floor (lowered, as every subcommand does) and
/// `--max-identity-scope S` (docs/cli.md "Credentials"; default none: a credential is refused).
RouterOptions router_options(const Args& args, Isolation floor);

/// `--credential NAME=env:VAR|file:PATH` (repeatable) as the router's credential source
/// (credential_source_from); none given: nothing attached. Every credential the specs name
/// must have one when any spec names a credential: UsageError naming the first without.
/// A value is never printed.
void attach_credentials(const Args& args, SandboxRouter& router, const std::vector<SandboxSpec>& specs);

/// The global registry's backend `--backend`, built from `--config`. Moves the phase to
/// Backend.
std::shared_ptr<SandboxBackend> create_backend(Session& session, const nlohmann::json& config);

}  // namespace maf::sandbox::cli
