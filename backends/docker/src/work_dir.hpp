#pragma once
// The work directory (the storage base, D-14, D-16): the one tar for a missing suffix, the
// frozen preparation behind the core's unfrozen walk (ACQ-4), and what it teaches per image.
// The upload between create and start (prepare_before_start) is a member of the backend
// (work_dir.cpp); it makes the core's later walk complete.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "freeze.hpp"
#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "memory.hpp"

namespace maf::sandbox::docker::detail {

/// The work directory's one tar (D-14) for the missing suffix chain[first_missing..]:
/// intermediate directories root's, the base the image user's, all 0755.
std::string work_dir_tar(const std::vector<std::string>& chain, std::size_t first_missing, const GuestUser& user);

/// Who is preparing, and for whom (DockerSandbox::do_prepare_storage_base's parts).
struct StorageBaseTarget {
  DockerTransport& transport;
  FreezeSlot& freeze;
  const std::string& container;
  const std::string& container_id;
  const std::string& kind;
  GuestUser user;
  DockerMemory& memory;
  /// The image ID of a container this acquire created, else empty: its finding is the image's.
  const std::string& fresh_image;
};

/// ACQ-4's hook for Docker. A complete walk (the core's unfrozen one: a check that licenses
/// no write needs no freeze) is only recorded. Otherwise, under one freeze: every component
/// stat'ed again from the top (a guest can race the unfrozen walk), existing directories left
/// exactly as they are, a link or a non-directory refused, and one tar for the missing suffix.
boost::asio::awaitable<void> prepare_storage_base(const StorageBaseTarget& target, const StorageBaseWalk& walk);

}  // namespace maf::sandbox::docker::detail
