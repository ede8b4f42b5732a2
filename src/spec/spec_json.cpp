// SandboxSpec <-> JSON (spec_json.hpp). Every refusal goes through field_error so the
// message always starts with the field that failed.
#include "maf/sandbox/spec_json.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 18> kSpecFields{
    "kind",       "image",        "image_id",      "egress_allow",
    "work_dir",   "labels",       "requires",      "min_isolation",
    "declared_outputs", "files_in", "files_out",   "outputs_named_at_call_time",
    "egress",     "requires_os_family", "isolation_scope", "resources",
    "attached_identity", "min_snapshot_fidelity"};

[[noreturn]] void field_error(const std::string& field, const std::string& what) {
  throw ValueError("spec field '" + field + "': " + what);
}

[[noreturn]] void type_error(const std::string& field, std::string_view wanted, const json& got) {
  field_error(field, "expected " + std::string(wanted) + ", got " + std::string(got.type_name()));
}

void refuse_unknown_keys(const json& object, const std::string& where, std::initializer_list<std::string_view> known) {
  for (const auto& item : object.items()) {
    bool found = false;
    for (auto k : known) found = found || k == item.key();
    if (found) continue;
    std::string valid;
    for (auto k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
    field_error(where, "unknown key '" + item.key() + "' (known: " + valid + ")");
  }
}

std::string read_string(const json& value, const std::string& field) {
  if (!value.is_string()) type_error(field, "a string", value);
  return value.get<std::string>();
}

std::optional<std::string> read_optional_string(const json& value, const std::string& field) {
  if (value.is_null()) return std::nullopt;
  return read_string(value, field);
}

bool read_bool(const json& value, const std::string& field) {
  if (!value.is_boolean()) type_error(field, "true or false", value);
  return value.get<bool>();
}

const json& read_array(const json& value, const std::string& field) {
  if (!value.is_array()) type_error(field, "an array", value);
  return value;
}

const json& read_object(const json& value, const std::string& field) {
  if (!value.is_object()) type_error(field, "an object", value);
  return value;
}

/// parse_enum's message, prefixed with the field.
template <class E>
E read_enum(const json& value, const std::string& field) {
  const std::string text = read_string(value, field);
  try {
    return parse_enum<E>(text);
  } catch (const ValueError& e) {
    field_error(field, e.what());
  }
}

template <class E>
std::optional<E> read_optional_enum(const json& value, const std::string& field) {
  if (value.is_null()) return std::nullopt;
  return read_enum<E>(value, field);
}

std::string indexed(const std::string& field, std::size_t i) { return field + "[" + std::to_string(i) + "]"; }

std::int64_t read_positive_count(const json& value, const std::string& field) {
  if (!value.is_number_integer()) type_error(field, "an integer", value);
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    field_error(field, "value is too large");
  const auto n = value.get<std::int64_t>();
  if (n < 1) field_error(field, "must be at least 1, got " + std::to_string(n));
  return n;
}

TransferLimits read_limits(const json& value, const std::string& field) {
  read_object(value, field);
  refuse_unknown_keys(value, field, {"max_bytes_per_file", "max_total_bytes", "max_files"});
  // TransferLimits has no per-field defaults (C-21), so a partial object is refused.
  std::array<std::int64_t, 3> n{};
  const std::array<const char*, 3> names{"max_bytes_per_file", "max_total_bytes", "max_files"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string sub = field + "." + names[i];
    if (!value.contains(names[i])) field_error(sub, "is required");
    n[i] = read_positive_count(value.at(names[i]), sub);
  }
  return TransferLimits(n[0], n[1], n[2]);
}

EgressEntry read_egress_entry(const json& value, const std::string& field) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_object()) type_error(field, "a host string or an object {\"host\", \"methods\", \"paths\"}", value);
  refuse_unknown_keys(value, field, {"host", "methods", "paths"});
  if (!value.contains("host")) field_error(field + ".host", "is required");
  std::string host = read_string(value.at("host"), field + ".host");
  std::optional<std::vector<std::string>> methods;
  if (value.contains("methods") && !value.at("methods").is_null()) {
    methods.emplace();
    const auto& list = read_array(value.at("methods"), field + ".methods");
    for (std::size_t i = 0; i < list.size(); ++i)
      methods->push_back(read_string(list[i], indexed(field + ".methods", i)));
  }
  std::optional<std::vector<std::string>> paths;
  if (value.contains("paths") && !value.at("paths").is_null()) {
    paths.emplace();
    const auto& list = read_array(value.at("paths"), field + ".paths");
    for (std::size_t i = 0; i < list.size(); ++i) paths->push_back(read_string(list[i], indexed(field + ".paths", i)));
  }
  try {
    return EgressRule(std::move(host), std::move(methods), std::move(paths));
  } catch (const ValueError& e) {
    field_error(field, e.what());
  }
}

DeclaredOutput read_declared_output(const json& value, const std::string& field) {
  read_object(value, field);
  refuse_unknown_keys(value, field, {"path", "disposition", "media_type", "required", "name"});
  DeclaredOutput out;
  if (!value.contains("path")) field_error(field + ".path", "is required");
  out.path = read_string(value.at("path"), field + ".path");
  if (value.contains("disposition"))
    out.disposition = read_enum<OutputDisposition>(value.at("disposition"), field + ".disposition");
  if (value.contains("media_type")) out.media_type = read_optional_string(value.at("media_type"), field + ".media_type");
  if (value.contains("required")) out.required = read_bool(value.at("required"), field + ".required");
  if (value.contains("name")) out.name = read_optional_string(value.at("name"), field + ".name");
  return out;
}

/// "resources" (docs/limits.md): every key optional; the ranges are ResourceLimits' own
/// (LIM-2), whose message is prefixed with the field.
ResourceLimits read_resources_object(const json& value, const std::string& field) {
  read_object(value, field);
  refuse_unknown_keys(value, field, {"memory_bytes", "cpus", "processes", "ttl_seconds", "idle_timeout_seconds"});
  auto integer = [&](const char* key) -> std::optional<std::int64_t> {
    if (!value.contains(key) || value.at(key).is_null()) return std::nullopt;
    const json& v = value.at(key);
    const std::string sub = field + "." + key;
    if (!v.is_number_integer()) type_error(sub, "an integer", v);
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      field_error(sub, "value is too large");
    return v.get<std::int64_t>();
  };
  ResourceLimits::Fields f;
  f.memory_bytes = integer("memory_bytes");
  f.processes = integer("processes");
  if (auto ttl = integer("ttl_seconds")) f.ttl = std::chrono::seconds(*ttl);
  if (auto idle = integer("idle_timeout_seconds")) f.idle_timeout = std::chrono::seconds(*idle);
  if (value.contains("cpus") && !value.at("cpus").is_null()) {
    if (!value.at("cpus").is_number()) type_error(field + ".cpus", "a number", value.at("cpus"));
    f.cpus = value.at("cpus").get<double>();
  }
  try {
    return ResourceLimits(f);
  } catch (const ValueError& e) {
    field_error(field, e.what());
  }
}

/// One "attached_identity" entry (docs/policy.md CRED-1): the value is never a field.
AttachedCredential read_credential(const json& value, const std::string& field) {
  read_object(value, field);
  refuse_unknown_keys(value, field,
                      {"name", "hosts", "header", "format", "env", "lifetime", "sharing", "allow_http", "allow_wildcard"});
  AttachedCredential::Fields f;
  if (!value.contains("name")) field_error(field + ".name", "is required");
  f.name = read_string(value.at("name"), field + ".name");
  const std::string where = field + " ('" + f.name + "')";
  if (!value.contains("hosts")) field_error(where + ".hosts", "is required (the egress_allow hosts it may be sent to)");
  const auto& hosts = read_array(value.at("hosts"), where + ".hosts");
  for (std::size_t i = 0; i < hosts.size(); ++i) f.hosts.push_back(read_string(hosts[i], indexed(where + ".hosts", i)));
  if (value.contains("header")) f.header = read_string(value.at("header"), where + ".header");
  if (value.contains("format")) f.format = read_string(value.at("format"), where + ".format");
  if (value.contains("env")) f.env = read_optional_string(value.at("env"), where + ".env");
  if (value.contains("lifetime")) f.lifetime = read_enum<CredentialLifetime>(value.at("lifetime"), where + ".lifetime");
  if (value.contains("sharing")) f.sharing = read_enum<CredentialSharing>(value.at("sharing"), where + ".sharing");
  if (value.contains("allow_http")) f.allow_http = read_bool(value.at("allow_http"), where + ".allow_http");
  if (value.contains("allow_wildcard")) f.allow_wildcard = read_bool(value.at("allow_wildcard"), where + ".allow_wildcard");
  try {
    return AttachedCredential(std::move(f));
  } catch (const ValueError& e) {
    field_error(field, e.what());
  }
}

json credential_json(const AttachedCredential& c) {
  return {{"name", c.name()},
          {"hosts", c.hosts()},
          {"header", c.header()},
          {"format", c.format()},
          {"env", c.env()},
          {"lifetime", std::string(to_string(c.lifetime()))},
          {"sharing", std::string(to_string(c.sharing()))},
          {"allow_http", c.allow_http()},
          {"allow_wildcard", c.allow_wildcard()}};
}

json resources_json(const ResourceLimits& r) {
  json j = json::object();
  if (r.memory_bytes()) j["memory_bytes"] = *r.memory_bytes();
  if (r.cpus()) j["cpus"] = *r.cpus();
  if (r.processes()) j["processes"] = *r.processes();
  if (r.ttl()) j["ttl_seconds"] = r.ttl()->count();
  if (r.idle_timeout()) j["idle_timeout_seconds"] = r.idle_timeout()->count();
  return j;
}

json limits_to_json(const TransferLimits& limits) {
  return {{"max_bytes_per_file", limits.max_bytes_per_file()},
          {"max_total_bytes", limits.max_total_bytes()},
          {"max_files", limits.max_files()}};
}

}  // namespace

SandboxSpec spec_from_json(const json& j) {
  if (!j.is_object()) throw ValueError("spec must be a JSON object, got " + std::string(j.type_name()));
  for (const auto& item : j.items()) {
    bool known = false;
    for (auto k : kSpecFields) known = known || k == item.key();
    if (!known) field_error(item.key(), "is not a SandboxSpec field (docs/cli.md \"The spec file\")");
  }
  SandboxSpec::Fields f;
  if (!j.contains("kind")) field_error("kind", "is required");
  f.kind = read_string(j.at("kind"), "kind");
  if (j.contains("image")) f.image = read_optional_string(j.at("image"), "image");
  if (j.contains("image_id")) f.image_id = read_optional_string(j.at("image_id"), "image_id");
  if (j.contains("egress_allow")) {
    const auto& list = read_array(j.at("egress_allow"), "egress_allow");
    for (std::size_t i = 0; i < list.size(); ++i)
      f.egress_allow.push_back(read_egress_entry(list[i], indexed("egress_allow", i)));
  }
  if (j.contains("work_dir")) f.work_dir = read_optional_string(j.at("work_dir"), "work_dir");
  if (j.contains("labels"))
    for (const auto& [k, v] : read_object(j.at("labels"), "labels").items())
      f.labels[k] = read_string(v, "labels." + k);
  if (j.contains("requires")) {
    f.requires_capabilities = {};
    const auto& list = read_array(j.at("requires"), "requires");
    for (std::size_t i = 0; i < list.size(); ++i)
      f.requires_capabilities.insert(read_enum<Capability>(list[i], "requires"));
  }
  if (j.contains("min_isolation")) f.min_isolation = read_optional_enum<Isolation>(j.at("min_isolation"), "min_isolation");
  if (j.contains("declared_outputs")) {
    const auto& list = read_array(j.at("declared_outputs"), "declared_outputs");
    for (std::size_t i = 0; i < list.size(); ++i)
      f.declared_outputs.push_back(read_declared_output(list[i], indexed("declared_outputs", i)));
  }
  if (j.contains("files_in")) f.files_in = read_limits(j.at("files_in"), "files_in");
  if (j.contains("files_out")) f.files_out = read_limits(j.at("files_out"), "files_out");
  if (j.contains("outputs_named_at_call_time"))
    f.outputs_named_at_call_time = read_bool(j.at("outputs_named_at_call_time"), "outputs_named_at_call_time");
  if (j.contains("egress")) f.egress = read_enum<Egress>(j.at("egress"), "egress");
  if (j.contains("requires_os_family"))
    f.requires_os_family = read_optional_enum<OsFamily>(j.at("requires_os_family"), "requires_os_family");
  if (j.contains("isolation_scope"))
    f.isolation_scope = read_enum<IsolationScope>(j.at("isolation_scope"), "isolation_scope");
  if (j.contains("resources") && !j.at("resources").is_null()) f.resources = read_resources_object(j.at("resources"), "resources");
  if (j.contains("attached_identity") && !j.at("attached_identity").is_null()) {
    const auto& list = read_array(j.at("attached_identity"), "attached_identity");
    for (std::size_t i = 0; i < list.size(); ++i)
      f.attached_identity.push_back(read_credential(list[i], indexed("attached_identity", i)));
  }
  if (j.contains("min_snapshot_fidelity"))
    f.min_snapshot_fidelity = read_optional_enum<SnapshotFidelity>(j.at("min_snapshot_fidelity"), "min_snapshot_fidelity");
  return SandboxSpec(std::move(f));
}

json spec_to_json(const SandboxSpec& spec) {
  json j = json::object();
  j["kind"] = spec.kind();
  if (spec.image()) j["image"] = *spec.image();
  if (spec.image_id()) j["image_id"] = *spec.image_id();
  json allow = json::array();
  for (const auto& entry : spec.egress_allow()) {
    if (const auto* host = std::get_if<std::string>(&entry)) {
      allow.push_back(*host);
    } else {
      const auto& rule = std::get<EgressRule>(entry);
      json r = {{"host", rule.host()}};
      if (rule.methods()) r["methods"] = *rule.methods();
      if (rule.paths()) r["paths"] = *rule.paths();
      allow.push_back(std::move(r));
    }
  }
  j["egress_allow"] = std::move(allow);
  if (spec.work_dir()) j["work_dir"] = *spec.work_dir();
  j["labels"] = spec.labels();
  json requires_values = json::array();
  for (Capability c : spec.requires_capabilities().sorted()) requires_values.push_back(std::string(to_string(c)));
  j["requires"] = std::move(requires_values);
  if (spec.min_isolation()) j["min_isolation"] = std::string(to_string(*spec.min_isolation()));
  json outputs = json::array();
  for (const auto& o : spec.declared_outputs()) {
    json out = {{"path", o.path}, {"disposition", std::string(to_string(o.disposition))}, {"required", o.required}};
    if (o.media_type) out["media_type"] = *o.media_type;
    if (o.name) out["name"] = *o.name;
    outputs.push_back(std::move(out));
  }
  j["declared_outputs"] = std::move(outputs);
  j["files_in"] = limits_to_json(spec.files_in());
  j["files_out"] = limits_to_json(spec.files_out());
  j["outputs_named_at_call_time"] = spec.outputs_named_at_call_time();
  j["egress"] = std::string(to_string(spec.egress()));
  if (spec.requires_os_family()) j["requires_os_family"] = std::string(to_string(*spec.requires_os_family()));
  j["isolation_scope"] = std::string(to_string(spec.isolation_scope()));
  // Only when a bound is asked, so a spec file without bounds reads back unchanged.
  if (!spec.resources().empty()) j["resources"] = resources_json(spec.resources());
  if (!spec.attached_identity().empty()) {
    json creds = json::array();
    for (const auto& c : spec.attached_identity()) creds.push_back(credential_json(c));
    j["attached_identity"] = std::move(creds);
  }
  if (spec.min_snapshot_fidelity()) j["min_snapshot_fidelity"] = std::string(to_string(*spec.min_snapshot_fidelity()));
  return j;
}

json resources_to_json(const ResourceLimits& resources) { return resources_json(resources); }

ResourceLimits resources_from_json(const json& value, const std::string& field) {
  return read_resources_object(value, field);
}

}  // namespace maf::sandbox
