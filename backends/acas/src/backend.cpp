// AcasSandboxBackend: get-or-create, warm reuse, disposal (A-1… …A-53). The core's
// `acquire` runs around do_acquire (ACQ-1…ACQ-4): the declaration checks, the storage base,
// the per-identity lock, and the base walk, whose missing levels the sandbox makes (A-13,
// AcasSandbox::do_prepare_storage_base).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include <algorithm>
#include <cctype>

#include <spdlog/spdlog.h>

#include "acas_sandbox.hpp"
#include "guest_scripts.hpp"
#include "probes.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "response.hpp"
#include "said.hpp"
#include "state.hpp"

namespace maf::sandbox::acas {
namespace {

using detail::Clock;
using detail::Record;
using detail::RetryClass;
using detail::ServiceCall;
using nlohmann::json;

// how long a completed removal verdict refuses cold acquires of the same image.
constexpr auto kRemovalHintWindow = std::chrono::seconds(60);

std::chrono::milliseconds ms_of(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// the wire keys of the reserved labels. Values go through the shared digest mapping
// (support/labels.hpp), so create and every selector agree byte for byte.
constexpr const char* kReserved[] = {"scope", "thread", "agent", "kind", "call"};

std::map<std::string, std::string> create_labels(const SandboxKey& key, const SandboxSpec& spec) {
  std::map<std::string, std::string> labels;
  for (const auto& [k, v] : spec.labels()) labels[k] = support::label_value(v);
  labels["scope"] = support::label_value(key.scope);
  labels["thread"] = support::label_value(key.thread_id);
  labels["agent"] = support::label_value(key.agent_id);
  labels["kind"] = support::label_value(spec.kind());
  if (!key.call_id.empty()) labels["call"] = support::label_value(key.call_id);
  return labels;
}

std::string selector(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string s;
  for (const auto& [k, v] : pairs) s += (s.empty() ? "" : ",") + k + "=" + support::label_value(v);
  return s;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Non-coroutine builders (GCC 12: no initializer_list inside a coroutine body).
json disk_by_id(const std::string& id) {
  json j = json::object();
  j["id"] = id;
  return j;
}
json disk_by_name(const std::string& name) {
  json j = json::object();
  j["name"] = name;
  j["isPublic"] = true;
  return j;
}
std::vector<std::pair<std::string, std::string>> key_pairs(const SandboxKey& key, const std::string& kind) {
  std::vector<std::pair<std::string, std::string>> pairs{
      {"scope", key.scope}, {"thread", key.thread_id}, {"agent", key.agent_id}, {"kind", kind}};
  if (!key.call_id.empty()) pairs.emplace_back("call", key.call_id);
  return pairs;
}
std::string scope_selector(const std::string& scope, const std::string& thread) {
  return selector({{"scope", scope}, {"thread", thread}});
}
json lifecycle_body(const AcasConfig& c) {
  return json{{"autoSuspendPolicy", {{"enabled", true}, {"interval", c.auto_suspend_seconds}, {"mode", "Memory"}}},
              {"autoDeletePolicy", {{"enabled", true}, {"deleteIntervalInSeconds", c.auto_delete_seconds}}}};
}
json create_body(const json& disk, const json& lifecycle, const std::map<std::string, std::string>& labels,
                 const SandboxSpec& spec) {
  json rules = json::array();
  for (const auto& entry : spec.egress_allow())
    rules.push_back({{"pattern", egress_entry_host(entry)}, {"action", "Allow"}});
  return json{{"sourcesRef", {{"diskImage", disk}}},
              {"resources", {{"cpu", "1000m"}, {"memory", "2048Mi"}}},
              {"lifecycle", lifecycle},
              {"labels", labels},
              // egress comes from the spec only; CLOSED is an empty allow list.
              {"egressPolicy", {{"defaultAction", "Deny"}, {"trafficInspection", "Full"}, {"hostRules", rules}}}};
}

const BackendDeclarations kAcasDeclarations = [] {
  BackendDeclarations d;
  // the seed's ceiling; never RUN_CODE, SNAPSHOT, RECLAIM or EGRESS_METHODS.
  d.capabilities = CapabilitySet{Capability::Exec,      Capability::FilesIn,     Capability::FilesOut,
                                 Capability::FilesList, Capability::FilesDelete, Capability::HostTools};
  const TransferLimits each{32LL << 20, 128LL << 20, 128};
  d.limits = SandboxLimits{each, each};
  d.egress_modes = EgressSet{Egress::Allowlist, Egress::Closed};
  d.os_families = OsFamilySet{OsFamily::Posix};
  d.isolation_scopes = IsolationScopeSet{IsolationScope::Conversation, IsolationScope::Call};
  return d;
}();

}  // namespace

namespace detail {
std::string held_key(const SandboxKey& key, const std::string& kind) {
  return support::length_prefixed({key.scope, key.thread_id, key.agent_id, key.call_id, kind});
}
}  // namespace detail

// ---- State ----------------------------------------------------------------------------

AcasSandboxBackend::State::State(AcasConfig c)
    : config(std::move(c)),
      clients(config),
      default_binding(std::make_shared<detail::Binding>(detail::Binding{"default", "default", {}})) {}

std::shared_ptr<const detail::Binding> AcasSandboxBackend::State::resolve(const AcasCredentialRequest& request) const {
  if (!config.credential_resolver) return default_binding;
  const std::string what = to_string(request.operation) + " of scope '" + request.scope + "'";
  AcasCredentialBinding b;
  try {
    b = config.credential_resolver(request);
  } catch (const std::exception&) {
    // the resolver's text is the provider's; never quoted, never a fall-back.
    throw AcasCredentialError(said("the credential resolver failed for ") + what);
  }
  if (b.authority.empty() || b.generation.empty() || !b.create_credential)
    throw AcasCredentialError(said("the credential resolver gave an incomplete binding for ") + what +
                              " (authority, generation and create_credential are required)");
  return std::make_shared<detail::Binding>(detail::Binding{std::move(b.authority), std::move(b.generation),
                                                           std::move(b.create_credential)});
}

boost::asio::awaitable<detail::ClientCache::Lease> AcasSandboxBackend::State::lease(
    std::shared_ptr<const detail::Binding> binding) {
  co_return co_await clients.lease(std::move(binding), Clock::now() + ms_of(config.client_wait_seconds));
}

void AcasSandboxBackend::State::admit() {
  std::lock_guard g(m);
  if (closing) throw AcasCredentialError(said("the backend is closing or closed"));
  ++admitted;
}

void AcasSandboxBackend::State::leave() {
  std::lock_guard g(m);
  --admitted;
}

boost::asio::awaitable<std::optional<DisposalFailure>> AcasSandboxBackend::State::delete_sandbox(detail::Service& svc,
                                                                                             std::string id) {
  const auto deadline = Clock::now() + ms_of(config.delete_timeout_seconds);
  try {
    ServiceCall call_1{"DELETE", "/sandboxes/" + id, {}, std::nullopt, "application/json",
                                               RetryClass::Read, deadline, 1 << 20, "delete"};
    auto r = co_await svc.call(std::move(call_1));
    // R-23 / E-14: 200 the first time, 204 while deleting or gone; the SDK's 404 is "gone" too.
    if (r.status != 200 && r.status != 202 && r.status != 204 && r.status != 404)
      co_return DisposalFailure{kDisposalRefused, "sandbox " + id + ": delete answered HTTP " +
                                                      std::to_string(r.status) + ": " + detail::problem_summary(r.body)};
    if (r.status == 404) co_return std::nullopt;
    for (;;) {
      ServiceCall call_2{"GET", "/sandboxes/" + id, {}, std::nullopt, "application/json",
                                                 RetryClass::Read, deadline, 1 << 20, "get"};
      auto g = co_await svc.call(std::move(call_2));
      if (g.status == 404) co_return std::nullopt;
      if (g.status != 200)
        co_return DisposalFailure{kDisposalRefused, "sandbox " + id + ": polling the deletion answered HTTP " +
                                                        std::to_string(g.status)};
      co_await support::sleep_for(std::min(ms_of(config.poll_interval_seconds),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
    }
  } catch (const TimeoutError& e) {
    co_return DisposalFailure{kDisposalTimeout, "sandbox " + id + ": " + e.what()};
  } catch (const AcasTransportError& e) {
    co_return DisposalFailure{kDisposalUnreachable, "sandbox " + id + ": " + e.what()};
  } catch (const AcasCredentialError& e) {
    co_return DisposalFailure{kDisposalUnreachable, "sandbox " + id + ": " + e.what()};
  } catch (const std::exception& e) {
    co_return DisposalFailure{kDisposalUnknown, "sandbox " + id + ": " + e.what()};
  }
}

boost::asio::awaitable<bool> AcasSandboxBackend::State::invalidate(detail::Service& svc, std::shared_ptr<Record> record,
                                                                   std::string why) {
  {
    std::lock_guard g(m);
    record->invalidated = true;
    auto it = held.find(detail::held_key(record->key, record->kind));
    if (it != held.end() && it->second == record) held.erase(it);
  }
  logger()->info("backend 'acas': sandbox {} invalidated ({}); deleting it", record->id, why);
  auto failure = co_await delete_sandbox(svc, record->id);
  if (failure) {
    std::lock_guard g(m);
    retained.push_back(detail::Retained{record->id, record->key, record->kind});
  }
  co_return !failure;
}

// ---- Backend --------------------------------------------------------------------------

AcasSandboxBackend::AcasSandboxBackend(AcasConfig config) : state_(std::make_shared<State>(std::move(config))) {}

AcasSandboxBackend::~AcasSandboxBackend() {
  // The HTTP workers belong to the state, which sandboxes may outlive us holding.
}

const BackendDeclarations& AcasSandboxBackend::declarations() const { return kAcasDeclarations; }

namespace {

// A-1…A-3: which disk image a spec names.
boost::asio::awaitable<json> resolve_image(AcasSandboxBackend::State& s, detail::Service& svc, const SandboxSpec& spec) {
  if (spec.image_id() && !spec.image_id()->empty()) co_return disk_by_id(*spec.image_id());
  const std::string image = spec.image() && !spec.image()->empty() ? *spec.image() : s.config.default_image;
  if (image.empty())
    throw ValueError(said("kind '") + spec.kind() +
                     "' names no image: give spec.image a prebuilt name without a tag (e.g. 'python-3.13') or an "
                     "imported 'repository:tag', or spec.image_id (or configure default_image)");
  const auto deadline = Clock::now() + ms_of(s.config.request_timeout_seconds);
  if (image.find('/') == std::string::npos && image.find(':') == std::string::npos) {
    {
      std::lock_guard g(s.m);
      if (s.public_image_hits.count(image)) co_return disk_by_name(image);
    }
    auto items = co_await svc.list_all("/diskimages/public", {}, deadline, "images.public");
    std::vector<std::string> names;
    for (const auto& item : items)
      if (auto n = detail::public_image_name(item)) names.push_back(*n);
    std::sort(names.begin(), names.end());
    if (std::find(names.begin(), names.end(), image) != names.end()) {
      std::lock_guard g(s.m);
      s.public_image_hits[image] = true;
      co_return disk_by_name(image);
    }
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    // [seed] a bare name the service lacks is refused before any create, catalogue shown.
    throw ValueError(said("kind '") + spec.kind() + "' asks for image '" + image +
                     "', which this sandbox group does not prebuild. " +
                     (names.empty() ? std::string("Its prebuilt catalogue is empty.")
                                    : "It provides: " + list + ".") +
                     " A name without a tag names a prebuilt image; an imported image needs its tag "
                     "('repository:tag').");
  }
  std::string ref = image;
  const auto slash = image.find('/');
  const std::string first = slash == std::string::npos ? std::string() : image.substr(0, slash);
  const bool names_registry =
      slash != std::string::npos && (first.find('.') != std::string::npos || first.find(':') != std::string::npos ||
                                     first == "localhost");
  if (!s.config.registry.empty() && !names_registry) ref = s.config.registry + "/" + image;
  {
    std::lock_guard g(s.m);
    if (auto it = s.imported_ids.find(ref); it != s.imported_ids.end()) co_return disk_by_id(it->second);
  }
  auto items = co_await svc.list_all("/diskimages", {}, deadline, "images.list");
  std::vector<std::string> ids;
  for (const auto& item : items)
    if (auto pair = detail::imported_image(item); pair && pair->second == ref) ids.push_back(pair->first);
  std::sort(ids.begin(), ids.end());
  if (ids.empty())
    throw ValueError(said("kind '") + spec.kind() + "' asks for image '" + ref +
                     "', which is not imported into this sandbox group; import it first (scripts/import_disk_image.py "
                     "in the Python family, or the service's PUT diskimages)");
  if (ids.size() > 1) {
    std::string list;
    for (const auto& i : ids) list += (list.empty() ? "" : ", ") + i;
    throw ValueError(said("image '") + ref + "' is imported more than once (" + list + "); pin one with spec.image_id");
  }
  std::lock_guard g(s.m);
  s.imported_ids[ref] = ids.front();
  co_return disk_by_id(ids.front());
}

// T-6: a create whose answer was lost or was a 5xx may still have made a sandbox. Never
// replay it; find what carries its labels and delete it.
boost::asio::awaitable<void> reconcile_lost_create(AcasSandboxBackend::State& s, detail::Service& svc, const SandboxKey& key,
                                                   const std::string& kind) {
  try {
    auto items = co_await svc.list_all("/sandboxes", detail::one_query("labels", selector(key_pairs(key, kind))),
                                             Clock::now() + ms_of(s.config.request_timeout_seconds), "list");
    for (const auto& item : items) {
      auto doc = detail::parse_sandbox_document(item);
      {
        std::lock_guard g(s.m);
        bool ours = false;
        for (const auto& [k, r] : s.held) ours = ours || r->id == doc.id;
        if (ours) continue;
      }
      if (co_await s.delete_sandbox(svc, doc.id)) {
        std::lock_guard g(s.m);
        s.retained.push_back(detail::Retained{doc.id, key, kind});
      }
    }
  } catch (const std::exception& e) {
    logger()->warn("backend 'acas': could not reconcile a failed create for {}: {}", to_string(key), e.what());
  }
}

// true when the held sandbox is Running (resumed if need be); false when it
// is gone or unusable and must be replaced. 401/403 propagate.
boost::asio::awaitable<bool> ensure_running(AcasSandboxBackend::State& s, detail::Service& svc, Record& record) {
  const auto deadline = Clock::now() + ms_of(s.config.create_timeout_seconds);
  bool resumed = false;
  for (;;) {
    ServiceCall call_3{"GET", "/sandboxes/" + record.id, {}, std::nullopt,
                                                 "application/json", RetryClass::Read, deadline, 1 << 20, "get"};
    auto r = co_await svc.call(std::move(call_3));
    if (r.status == 401 || r.status == 403) detail::Service::expect(r, {200}, "get");
    if (r.status != 200) co_return false;
    auto doc = detail::parse_sandbox_document(std::string_view(r.body));
    if (doc.state == "Running") co_return true;
    if (doc.state == "Stopped" || doc.state == "Suspended" || doc.state == "Idle") {
      if (doc.stopped_reason == "Disabled") co_return false;
      if (!resumed) {
        resumed = true;
        // always `{}`, a body-less resume may hang (CYRUS C7).
        ServiceCall call_4{"POST", "/sandboxes/" + record.id + "/resume", {}, "{}",
                                                      "application/json", RetryClass::Idempotent, deadline, 1 << 20,
                                                      "resume"};
        auto rr = co_await svc.call(std::move(call_4));
        if (rr.status == 401 || rr.status == 403) detail::Service::expect(rr, {200}, "resume");
      }
    } else if (doc.state != "Resuming" || Clock::now() >= deadline) {
      co_return false;
    }
    co_await support::sleep_for(ms_of(s.config.poll_interval_seconds));
  }
}

boost::asio::awaitable<std::shared_ptr<Record>> create_sandbox(AcasSandboxBackend::State& s, detail::Service& svc,
                                                               std::shared_ptr<const detail::Binding> binding,
                                                               const SandboxKey& key, const SandboxSpec& spec,
                                                               std::set<std::string> hosts) {
  json disk = co_await resolve_image(s, svc, spec);
  json lifecycle = lifecycle_body(s.config);
  json body = create_body(disk, lifecycle, create_labels(key, spec), spec);
  const auto deadline = Clock::now() + ms_of(s.config.create_timeout_seconds);
  detail::HttpResponse r;
  std::exception_ptr lost;
  try {
    ServiceCall call_5{"PUT", "/sandboxes", {}, body.dump(), "application/json",
                                            RetryClass::Create, deadline, 1 << 20, "create"};
    r = co_await svc.call(std::move(call_5));
  } catch (const AcasTransportError& e) {
    if (!e.maybe_sent()) throw;
    lost = std::current_exception();
  } catch (const TimeoutError&) {
    lost = std::current_exception();
  }
  if (lost || r.status >= 500) {
    co_await reconcile_lost_create(s, svc, key, spec.kind());
    if (lost) std::rethrow_exception(lost);
  }
  detail::Service::expect(r, {200, 201, 202}, "create");
  auto doc = detail::parse_sandbox_document(std::string_view(r.body));
  auto record = std::make_shared<Record>();
  record->id = doc.id;
  record->key = key;
  record->kind = spec.kind();
  record->mode = spec.egress();
  record->hosts = std::move(hosts);
  record->binding = std::move(binding);
  {
    // registered before anything can fail, so dispose/dispose_scope reach it.
    std::lock_guard g(s.m);
    s.held[detail::held_key(key, spec.kind())] = record;
  }
  // poll to Running (404 tolerated until the deadline).
  std::string state = doc.state;
  while (state != "Running") {
    if (state == "Failed" || state == "Deleting" || Clock::now() >= deadline) {
      co_await s.invalidate(svc, record, "create ended in state '" + state + "'");
      throw RuntimeError(said("sandbox ") + record->id + " did not reach Running (state '" + state + "')");
    }
    co_await support::sleep_for(ms_of(s.config.poll_interval_seconds));
    ServiceCall call_6{"GET", "/sandboxes/" + record->id, {}, std::nullopt,
                                                 "application/json", RetryClass::Read, deadline, 1 << 20, "get"};
    auto g = co_await svc.call(std::move(call_6));
    if (g.status == 200) state = detail::parse_sandbox_document(std::string_view(g.body)).state;
  }
  // the lifecycle POST; a non-auth failure is a warning, 401/403 refuse.
  ServiceCall call_7{"POST", "/sandboxes/" + record->id + "/lifecycle", {}, lifecycle.dump(),
                                                "application/json", RetryClass::Idempotent,
                                                Clock::now() + ms_of(s.config.request_timeout_seconds), 1 << 20,
                                                "lifecycle"};
  detail::HttpResponse lc;
  try {
    lc = co_await svc.call(std::move(call_7));
  } catch (const AcasTransportError& e) {
    // any non-auth failure is a warning; the create body carries the policy as well.
    logger()->warn("backend 'acas': lifecycle policy for sandbox {} got no answer: {}", record->id, e.what());
    co_return record;
  } catch (const TimeoutError& e) {
    logger()->warn("backend 'acas': lifecycle policy for sandbox {} timed out: {}", record->id, e.what());
    co_return record;
  }
  if (lc.status == 401 || lc.status == 403) {
    co_await s.invalidate(svc, record, "lifecycle refused");
    detail::Service::expect(lc, {200}, "lifecycle");
  } else if (lc.status >= 300) {
    logger()->warn("backend 'acas': lifecycle policy for sandbox {} answered HTTP {}", record->id, lc.status);
  }
  co_return record;
}

}  // namespace

boost::asio::awaitable<std::shared_ptr<Sandbox>> AcasSandboxBackend::do_acquire(SandboxKey key, SandboxSpec spec,
                                                                                AcquirePlan plan) {
  // Before this runs the core has refused, before any request or credential (ACQ-1), what
  // the declarations do not serve — A-9's method-scoped rules (they require egress_methods,
  // C-9, which A-70 never declares) and unrestricted egress (not in {allowlist, closed}) —
  // and a work_dir that is not an absolute, normalised POSIX path (ACQ-2).
  auto s = state_;
  Admission admitted(s);
  for (const auto& [k, v] : spec.labels()) {
    for (const char* r : kReserved)
      if (k == r) throw ValueError(said("spec label '") + k + "' uses a reserved key");
    if (!support::is_valid_label_key(k)) throw ValueError(said("spec label key '") + k + "' is not [A-Za-z0-9._-]+");
  }
  detail::Service::validate_endpoint(s->config);
  // one binding for the whole acquire, resolved before any request; a new sandbox
  // keeps it (A-61: so does the lease, across every helper below).
  AcasCredentialRequest credential_request{key.scope, key.thread_id, AcasCredentialOperation::Acquire,
                                           key.agent_id, key.call_id, spec.kind()};
  auto binding = s->resolve(credential_request);
  auto lease = co_await s->lease(binding);
  detail::Service& svc = lease.service();
  const auto conversation = std::pair{key.scope, key.thread_id};
  const std::string rk = detail::held_key(key, spec.kind());
  {
    // the core holds this identity's lock (ACQ-3) for the whole of do_acquire, so one
    // get-or-create runs per identity. A-16 is checked under it, which is still sound: a
    // purge or a retained deletion that began while this acquire waited for the lock is seen
    // here, before any request; and an acquire waiting for the lock sends nothing, so
    // dispose_scope need not count it — the acquire it waits behind is counted
    // (`acquiring`) from here to its end.
    std::lock_guard g(s->m);
    // no acquire while a purge or a retained deletion covers this identity.
    if (s->purging[conversation] > 0)
      throw SandboxOutputError(said("a dispose_scope for ") + key.scope + "/" + key.thread_id + " is running");
    for (const auto& r : s->retained)
      if (r.key == key)
        throw SandboxOutputError(said("sandbox ") + r.id + " of " + to_string(key) +
                                 " still awaits deletion; dispose it first");
    ++s->acquiring[conversation];
  }
  struct Leave {
    std::shared_ptr<State> s;
    std::pair<std::string, std::string> c;
    ~Leave() {
      std::lock_guard g(s->m);
      --s->acquiring[c];
    }
  } leave{s, conversation};

  std::set<std::string> hosts;
  for (const auto& entry : spec.egress_allow()) hosts.insert(lower(egress_entry_host(entry)));
  std::shared_ptr<Record> record;
  {
    std::lock_guard g(s->m);
    if (auto it = s->held.find(rk); it != s->held.end()) record = it->second;
  }
  if (record && (record->mode != spec.egress() || record->hosts != hosts))
    throw AcasEgressPolicyConflict(said("sandbox ") + record->id + " of " + to_string(key) + " kind '" + spec.kind() +
                                   "' holds a different egress policy; dispose the kind before changing it");
  if (record && !co_await ensure_running(*s, svc, *record)) {
    logger()->info("backend 'acas': held sandbox {} is gone or unusable; replacing it", record->id);
    std::lock_guard g(s->m);
    if (auto it = s->held.find(rk); it != s->held.end() && it->second == record) s->held.erase(it);
    record.reset();
  }
  const CapabilitySet needs = spec.requires_capabilities();
  // A-14's hint is keyed by what the spec names, before any resolution.
  const std::string image = spec.image().value_or(spec.image_id() ? std::string() : s->config.default_image);
  const std::string image_key = spec.image_id().value_or("") + '\n' + image;
  const std::string image_name = spec.image_id().value_or(image);
  const bool fresh = !record;
  if (fresh) {
    // a verdict taken on this image within 60 s refuses, before any create, what it
    // would refuse on the new sandbox. A refusal does not extend the window.
    std::lock_guard g(s->m);
    if (auto it = s->removal_hints.find(image_key);
        it != s->removal_hints.end() && Clock::now() - it->second.second < kRemovalHintWindow) {
      const CapabilitySet refused = needs.intersection(detail::refused_by(it->second.first));
      if (!refused.empty())
        throw SandboxCapabilityNotSupported(
            said("kind '") + spec.kind() + "' needs " + refused.to_string() + ", which image '" + image_name +
            "' does not serve: its removal-compatibility probe was '" + detail::to_string(it->second.first) +
            "' less than 60 s ago (the guest cannot remove what the file plane writes)");
    }
  }
  if (fresh) record = co_await create_sandbox(*s, svc, binding, key, spec, hosts);

  // A-13 comes after do_acquire: the core walks plan.storage_base through the sandbox's
  // files/stat and the sandbox makes the missing levels. No probe below depends on the base:
  // each runs from `/` and writes only under `/.maf-authority-<hex>` or `/tmp` (probes.cpp).
  const bool needs_removal = needs.contains(Capability::Exec) || needs.contains(Capability::FilesOut) ||
                             needs.contains(Capability::HostTools) || needs.contains(Capability::FilesDelete);
  if (needs_removal && !record->removal) {
    const auto verdict = co_await detail::removal_probe(svc, record->id);
    record->removal = verdict;
    std::lock_guard g(s->m);
    s->removal_hints[image_key] = {verdict, Clock::now()};
  }
  if (record->removal) {
    const CapabilitySet refused = needs.intersection(detail::refused_by(*record->removal));
    if (!refused.empty()) {
      const std::string why = said("kind '") + spec.kind() + "' needs " + refused.to_string() + ", which sandbox " +
                              record->id + " of image '" + image_name + "' does not serve: its removal-compatibility "
                              "probe was '" + detail::to_string(*record->removal) +
                              "' (the guest cannot remove what the file plane writes, e.g. a non-root user)";
      // a sandbox made for this acquire and refused is not kept.
      if (fresh) co_await s->invalidate(svc, record, "removal-compatibility probe refused the spec");
      throw SandboxCapabilityNotSupported(why);
    }
    bool warn = false;
    if (*record->removal == detail::RemovalVerdict::Fail && needs.contains(Capability::Exec)) {
      std::lock_guard g(s->m);
      warn = s->removal_warned.insert(image_name + '\n' + spec.kind()).second;
    }
    if (warn)
      logger()->warn("backend 'acas': image '{}' (kind '{}') failed the removal-compatibility probe; EXEC is served, files "
                     "the file plane writes cannot be removed by the guest",
                     image_name, spec.kind());
  }
  co_await detail::run_command_probes(svc, s, record, spec, image_name);
  co_return std::make_shared<detail::AcasSandbox>(
      s, record, detail::served_capabilities(kAcasDeclarations.capabilities, record->removal), plan.storage_base);
}

boost::asio::awaitable<std::optional<DisposalFailure>> AcasSandboxBackend::dispose(SandboxKey key,
                                                                                   std::optional<std::string> kind,
                                                                                   std::optional<std::string> instance_id) {
  auto s = state_;
  Admission admitted(s);
  // the cleanup authority resolved for this dispose, not the creator's.
  AcasCredentialRequest credential_request{key.scope, key.thread_id, AcasCredentialOperation::Dispose,
                                           key.agent_id, key.call_id, kind};
  auto lease = co_await s->lease(s->resolve(credential_request));
  detail::Service& svc = lease.service();
  std::vector<detail::Retained> targets;
  {
    std::lock_guard g(s->m);
    for (auto it = s->held.begin(); it != s->held.end();) {
      const auto& r = *it->second;
      if (r.key == key && (!kind || r.kind == *kind) && (!instance_id || r.id == *instance_id)) {
        targets.push_back({r.id, r.key, r.kind});
        it = s->held.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = s->retained.begin(); it != s->retained.end();) {
      if (it->key == key && (!kind || it->kind == *kind) && (!instance_id || it->id == *instance_id)) {
        targets.push_back(*it);
        it = s->retained.erase(it);
      } else {
        ++it;
      }
    }
  }
  // [seed] dispose reaches the sandboxes this process knows; label discovery is A-50's
  // unpinned extension, not taken.
  std::vector<DisposalFailure> failures;
  for (const auto& t : targets) {
    if (auto f = co_await s->delete_sandbox(svc, t.id)) {
      failures.push_back(*f);
      std::lock_guard g(s->m);
      s->retained.push_back(t);
    }
  }
  co_return fold(failures);
}

boost::asio::awaitable<ScopePurge> AcasSandboxBackend::dispose_scope(std::string scope, std::string thread_id) {
  auto s = state_;
  Admission admitted(s);
  AcasCredentialRequest credential_request{scope, thread_id, AcasCredentialOperation::DisposeScope, {}, {}, {}};
  auto lease = co_await s->lease(s->resolve(credential_request));
  detail::Service& svc = lease.service();
  const auto conversation = std::pair{scope, thread_id};
  bool acquire_active = false;
  {
    std::lock_guard g(s->m);
    ++s->purging[conversation];
    acquire_active = s->acquiring[conversation] > 0;
  }
  std::vector<DisposalFailure> failures;
  std::vector<detail::Retained> targets;
  try {
    // from the service, by label, so another replica's sandboxes are found too.
    auto items = co_await svc.list_all("/sandboxes", detail::one_query("labels", scope_selector(scope, thread_id)),
                                       Clock::now() + ms_of(s->config.request_timeout_seconds), "list");
    for (const auto& item : items) {
      auto doc = detail::parse_sandbox_document(item);
      targets.push_back({doc.id, SandboxKey{scope, thread_id, {}, {}}, {}});
    }
  } catch (const std::exception& e) {
    failures.push_back(DisposalFailure{kDisposalUnlisted, std::string("listing by label failed: ") + e.what()});
  }
  {
    std::lock_guard g(s->m);
    for (auto it = s->held.begin(); it != s->held.end();) {
      if (it->second->key.scope == scope && it->second->key.thread_id == thread_id) {
        targets.push_back({it->second->id, it->second->key, it->second->kind});
        it = s->held.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = s->retained.begin(); it != s->retained.end();) {
      if (it->key.scope == scope && it->key.thread_id == thread_id) {
        targets.push_back(*it);
        it = s->retained.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::set<std::string> done;
  int disposed = 0;
  for (const auto& t : targets) {
    if (!done.insert(t.id).second) continue;
    if (auto f = co_await s->delete_sandbox(svc, t.id)) {
      failures.push_back(*f);
      std::lock_guard g(s->m);
      s->retained.push_back(t);
    } else {
      ++disposed;
    }
  }
  if (acquire_active)
    failures.push_back(DisposalFailure{kDisposalUnknown, "an acquire for this scope/thread was in progress; retry"});
  {
    std::lock_guard g(s->m);
    --s->purging[conversation];
  }
  co_return ScopePurge{disposed, fold(failures)};
}

boost::asio::awaitable<void> AcasSandboxBackend::close() {
  auto s = state_;
  {
    std::lock_guard g(s->m);
    s->closing = true;  // no new operation is admitted from here on
  }
  const auto bound = ms_of(s->config.client_close_seconds);
  const auto deadline = Clock::now() + bound;
  int running = 0;
  for (;;) {
    {
      std::lock_guard g(s->m);
      running = s->admitted;
    }
    if (running == 0 || Clock::now() >= deadline) break;
    co_await support::sleep_for(std::chrono::milliseconds(20));
  }
  // Admitted operations drained (or out of time): no lease from now on, then every client
  // not leased closes on its owner executor. Sandboxes are never deleted here.
  s->clients.refuse();
  std::vector<std::string> left = co_await s->clients.close_all(bound);
  if (running > 0) left.insert(left.begin(), std::to_string(running) + " operation(s) still running");
  if (!left.empty()) {
    std::string list;
    for (const auto& l : left) list += (list.empty() ? "" : "; ") + l;
    throw AcasClientCloseError(said("close() left resources open after client_close_seconds=") +
                               std::to_string(s->config.client_close_seconds) + ": " + list +
                               " (a later close() retries them)");
  }
}

}  // namespace maf::sandbox::acas
