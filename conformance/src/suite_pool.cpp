// POOL (docs/conformance.md "POOL", docs/pools.md): what a warm pool must never do, attacked
// through acquire alone — hand a sandbox to a second user with the first one's files or
// variables in it (PL-1), or hand one sandbox to two claimers (PL-2). Each claim is an acquire
// of a fresh key with the pool's spec; every key is disposed after.
#include <array>
#include <set>
#include <thread>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/sync.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kExec{Capability::Exec};
constexpr int kConcurrentClaims = 32;

SandboxKey claim_key(ProbeContext& c, const std::string& agent) {
  return SandboxKey{"conformance-pool", c.subject.sandbox().instance_id(), agent, ""};
}

void dispose_all(ProbeContext& c, std::vector<std::string>& problems) {
  auto& backend = *c.pool->backend;
  const std::string thread = c.subject.sandbox().instance_id();
  const auto purge = c.subject.runner()([&] { return backend.dispose_scope("conformance-pool", thread); });
  if (purge.undisposed) problems.push_back("disposing the claims failed: " + purge.undisposed->to_string());
}

void claimed_sandbox_is_fresh(ProbeContext& c) {
  auto& backend = *c.pool->backend;
  const SandboxSpec spec = *c.pool->spec;
  std::vector<std::string> problems;
  const SandboxKey first_key = claim_key(c, "pl1-first");
  auto first = c.subject.runner()([&] { return backend.acquire(first_key, spec); });
  const auto wrote = c.subject.runner()([&] {
    return first->exec(Command("echo secret > pl1-left.txt && echo 'export PL1_LEFT=1' >> \"$HOME/.profile\" 2>/dev/null; "
                               "test -e pl1-left.txt"),
                       ".", c.subject.exec_timeout());
  });
  if (wrote.exit_code != 0) problems.push_back("the first user could not write: " + describe(wrote));
  const std::string first_instance = first->instance_id();
  first.reset();
  if (auto failure = c.subject.runner()([&] { return backend.dispose(first_key, std::nullopt, std::nullopt); }))
    problems.push_back("disposing the first user failed: " + failure->to_string());
  // The next users of the pool's spec: none may see what the first one left.
  for (int i = 0; i < 3 && problems.empty(); ++i) {
    const SandboxKey next_key = claim_key(c, "pl1-next-" + std::to_string(i));
    auto next = c.subject.runner()([&] { return backend.acquire(next_key, spec); });
    if (next->instance_id() == first_instance) problems.push_back("a disposed sandbox was handed out again");
    const auto seen = c.subject.runner()([&] {
      return next->exec(Command("test -e pl1-left.txt || grep -qs PL1_LEFT \"$HOME/.profile\" || test -n \"$PL1_LEFT\""),
                        ".", c.subject.exec_timeout());
    });
    if (seen.exit_code == 0) problems.push_back("claim " + std::to_string(i) + " sees the previous user's file or variable");
  }
  dispose_all(c, problems);
  if (!problems.empty()) fail(join(problems));
}

void never_handed_out_twice(ProbeContext& c) {
  auto& backend = *c.pool->backend;
  const SandboxSpec spec = *c.pool->spec;
  std::vector<std::string> instances(kConcurrentClaims);
  std::vector<std::string> errors(kConcurrentClaims);
  std::vector<std::thread> claimers;
  for (int i = 0; i < kConcurrentClaims; ++i)
    claimers.emplace_back([&, i] {
      try {
        BlockingRunner run;
        const SandboxKey key = claim_key(c, "pl2-" + std::to_string(i));
        instances[static_cast<std::size_t>(i)] = run([&] { return backend.acquire(key, spec); })->instance_id();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(i)] = e.what();
      }
    });
  for (auto& t : claimers) t.join();
  std::vector<std::string> problems;
  std::set<std::string> distinct;
  for (int i = 0; i < kConcurrentClaims; ++i) {
    if (!errors[static_cast<std::size_t>(i)].empty()) problems.push_back("claim " + std::to_string(i) + " raised: " + errors[static_cast<std::size_t>(i)]);
    else if (!distinct.insert(instances[static_cast<std::size_t>(i)]).second)
      problems.push_back("instance " + instances[static_cast<std::size_t>(i)] + " was handed to two claimers");
  }
  dispose_all(c, problems);
  if (!problems.empty()) fail(join(problems));
}

const std::array kProbes{
    Probe{Suite::Pool, "PL-1", "a-claimed-sandbox-is-fresh",
          "a pooled sandbox carrying a previous user's files or variables leaks one tenant into another", kExec,
          &claimed_sandbox_is_fresh},
    Probe{Suite::Pool, "PL-2", "never-handed-out-twice",
          "two claimers sharing one sandbox share everything in it; 32 concurrent claims must get 32 sandboxes",
          kExec, &never_handed_out_twice},
};

}  // namespace

std::span<const Probe> pool_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
