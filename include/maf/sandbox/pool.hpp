#pragma once
/// @file pool.hpp
/// A warm pool's shape (docs/pools.md POOL-1…POOL-6): sandboxes made ahead of time for one
/// spec, so an acquire claims a ready one instead of creating it.
///
/// A backend that offers pools takes a list of these in its configuration. The pool key is
/// the whole spec (`pool_key`): its policy, limits, egress, image, kind and work base all
/// take part, so a pooled sandbox never serves a spec it was not made for (POOL-2).

#include <chrono>
#include <cstddef>
#include <string>

#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

struct PoolConfig {
  /// What every sandbox of the pool is made for; only an identical spec claims one.
  SandboxSpec spec;
  /// How many ready sandboxes the pool keeps.
  std::size_t size = 1;
  /// Whether a claim is followed by making a replacement in the background.
  bool refill = true;
  /// A ready sandbox older than this is disposed, never claimed (POOL-5).
  std::chrono::seconds max_age{std::chrono::minutes(10)};
};

/// The pool key of `spec`: its canonical JSON (spec_to_json), every field included.
std::string pool_key(const SandboxSpec& spec);

}  // namespace maf::sandbox
