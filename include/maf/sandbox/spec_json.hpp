#pragma once
/// @file spec_json.hpp
/// SandboxSpec <-> JSON, field names exactly as docs/cli.md "The spec file" (the `maf-sandbox` spec-file
/// format, docs/cli.md).
///
/// Reading is strict, because a spec is policy: a misspelt field that silently became a
/// default could widen what a workload gets. So unknown fields, wrong JSON types and bad
/// enum values are refused with ValueError naming the field, e.g.
/// `spec field 'egress': 'open' is not a valid Egress (valid: unrestricted, allowlist, closed)`.
/// Absent fields take the SandboxSpec defaults; `null` is accepted for the optional ones.
///
/// ```json
/// {"kind": "python", "image": "python:3.12", "egress": "allowlist",
///  "egress_allow": ["pypi.org", {"host": "api.example.com", "methods": ["GET"]}],
///  "requires": ["exec", "files_in", "files_out"], "min_isolation": "microvm",
///  "declared_outputs": [{"path": "out/report.csv", "media_type": "text/csv"}],
///  "files_out": {"max_bytes_per_file": 1048576, "max_total_bytes": 4194304, "max_files": 8}}
/// ```
///
/// nlohmann/json appears here on purpose: this header is not part of the umbrella header.

#include <nlohmann/json.hpp>

#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

/// Build (and so validate, C-18) a spec from a JSON object. Throws ValueError naming the
/// offending field; SandboxSpec's own validation errors pass through unchanged.
SandboxSpec spec_from_json(const nlohmann::json& json);

/// The spec's canonical form: every field present except absent optionals; `requires`
/// sorted by value. `spec_from_json(spec_to_json(s))` has the same fields as `s`.
nlohmann::json spec_to_json(const SandboxSpec& spec);

/// The `resources` object alone (docs/limits.md): `{"memory_bytes", "cpus", "processes",
/// "ttl_seconds", "idle_timeout_seconds"}`, each key optional — what a backend records beside
/// a sandbox to know its bounds later. `resources_from_json` refuses as spec_from_json does,
/// naming `field`.
nlohmann::json resources_to_json(const ResourceLimits& resources);
ResourceLimits resources_from_json(const nlohmann::json& json, const std::string& field = "resources");

}  // namespace maf::sandbox
