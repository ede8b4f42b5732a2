#pragma once
// The backend's shared state: held sandboxes (`held`, A-5), retained failed
// deletions, purge/acquire admission and the operations counter
// close() drains. Shared by the backend and every AcasSandbox it hands out, so a
// sandbox can invalidate itself after the caller dropped the backend.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "maf/sandbox/acas/backend.hpp"
#include "client_cache.hpp"
#include "service.hpp"

namespace maf::sandbox::acas::detail {

/// A-14's removal-compatibility verdict: can the guest remove what the file plane made?
enum class RemovalVerdict { Pass, Fail, Inconclusive };

/// One sandbox this process created and still holds.
struct Record {
  std::string id;
  SandboxKey key;
  std::string kind;
  Egress mode = Egress::Closed;
  std::set<std::string> hosts;  ///< lower-cased (A-9)
  /// completed verdicts and passed probes live on the held sandbox; failures are
  /// not cached (the next acquire re-runs them).
  std::optional<RemovalVerdict> removal;
  bool sh_passed = false;
  bool host_tools_passed = false;
  bool capture_passed = false;
  bool invalidated = false;
  /// the acquire's binding; every later exec, file and polling request of this
  /// sandbox, and its deletion after a failure, lease a client of it.
  std::shared_ptr<const Binding> binding;
};

struct Retained {
  std::string id;
  SandboxKey key;
  std::string kind;
};

/// The key of `held`: (scope, thread, agent, call, kind), injectively encoded.
std::string held_key(const SandboxKey& key, const std::string& kind);

}  // namespace maf::sandbox::acas::detail

namespace maf::sandbox::acas {

struct AcasSandboxBackend::State : std::enable_shared_from_this<AcasSandboxBackend::State> {
  explicit State(AcasConfig c);

  AcasConfig config;
  detail::ClientCache clients;
  /// No resolver: every operation shares this binding (the credential chain).
  std::shared_ptr<const detail::Binding> default_binding;

  std::mutex m;
  /// The sandboxes this process acquired and still holds, by held_key. One
  /// get-or-create per identity is the core's acquire lock (ACQ-3), not a lock here.
  std::map<std::string, std::shared_ptr<detail::Record>> held;
  std::vector<detail::Retained> retained;
  std::map<std::pair<std::string, std::string>, int> purging;    ///< (scope, thread) -> purges running
  std::map<std::pair<std::string, std::string>, int> acquiring;  ///< (scope, thread) -> acquires running
  std::map<std::string, bool> public_image_hits;                 ///< A-2: hits cached, misses not
  std::map<std::string, std::string> imported_ids;               ///< A-3: reference -> id
  /// the last completed removal verdict per (image_id, image), with when it was taken;
  /// it refuses cold acquires for 60 s and never licenses a sandbox.
  std::map<std::string, std::pair<detail::RemovalVerdict, detail::Clock::time_point>> removal_hints;
  std::set<std::string> removal_warned;  ///< A-14: (image, kind) warned once about a failed verdict
  int admitted = 0;
  bool closing = false;

  /// Admits one operation; throws AcasCredentialError once close() began.
  void admit();
  void leave();

  /// the binding for one operation, before any request. Throws AcasCredentialError
  /// (never quoting the resolver) and never falls back to the default chain.
  std::shared_ptr<const detail::Binding> resolve(const AcasCredentialRequest& request) const;
  /// A lease on a client of `binding`, waiting at most client_wait_seconds.
  boost::asio::awaitable<detail::ClientCache::Lease> lease(std::shared_ptr<const detail::Binding> binding);

  /// Deletes one sandbox and waits for 404. Never throws.
  boost::asio::awaitable<std::optional<DisposalFailure>> delete_sandbox(detail::Service& service, std::string id);
  /// drop from `held`, delete, retain on failure. `service` is the caller's
  /// lease, which holds the record's binding. True when the sandbox was deleted (and
  /// so everything running in it ended), false when it was retained.
  boost::asio::awaitable<bool> invalidate(detail::Service& service, std::shared_ptr<detail::Record> record,
                                          std::string why);
};

/// Scope guard over admit()/leave().
class Admission {
public:
  explicit Admission(std::shared_ptr<AcasSandboxBackend::State> s) : s_(std::move(s)) { s_->admit(); }
  Admission(const Admission&) = delete;
  ~Admission() { s_->leave(); }

private:
  std::shared_ptr<AcasSandboxBackend::State> s_;
};

}  // namespace maf::sandbox::acas
