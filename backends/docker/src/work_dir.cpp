// The work directory (work_dir.hpp): the frozen preparation behind the core's walk, the
// per-image facts it records, and the upload into a created container before its start.
#include "work_dir.hpp"

#include <chrono>

#include "docker_sandbox.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "probes.hpp"
#include "said.hpp"
#include "tar_plane.hpp"

namespace maf::sandbox::docker {
namespace detail {

using boost::asio::awaitable;

std::string work_dir_tar(const std::vector<std::string>& chain, std::size_t first_missing, const GuestUser& user) {
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  support::TarWriter tar;
  for (std::size_t i = first_missing; i < chain.size(); ++i) {
    const bool is_base = i + 1 == chain.size();
    tar.add_directory(chain[i].substr(1), {.mode = 0755, .uid = static_cast<std::uint64_t>(is_base ? user.uid : 0),
                                           .gid = static_cast<std::uint64_t>(is_base ? user.gid : 0), .mtime = now});
  }
  return std::move(tar).finish();
}

awaitable<void> prepare_storage_base(const StorageBaseTarget& target, const StorageBaseWalk& walk) {
  // What a fresh container of an image showed is that image's (prepare_before_start).
  const auto record = [&](std::size_t first_missing) {
    if (!target.fresh_image.empty()) target.memory.record_work_dir(target.fresh_image, walk.base, first_missing);
  };
  // [port decision] (issue 24) The core's walk ran unfrozen: one that finds every component
  // a real directory writes nothing, and the freeze guards only a check that licenses a
  // write — the tar below. What it grants (the chain was real directories when looked at)
  // is all a frozen walk grants too: the guest may swap a component the moment either ends,
  // and every file operation walks the work directory's ancestors again under its own
  // freeze (docker.md "What the default path skips").
  if (walk.complete()) {
    record(walk.chain.size());
    co_return;
  }
  // Under one freeze: stat every component from "/" down again, leave existing directories
  // exactly as they are, send one tar for the missing suffix (D-14).
  co_await run_frozen(target.transport, target.freeze, target.container, [&]() -> awaitable<void> {
    const auto refuse = [&](const std::string& component, const char* what) {
      return said("storage base component '" + component + "' of '" + walk.base + "' (workload kind '" +
                  target.kind + "', instance " + target.container_id + ") " + what);
    };
    std::size_t first_missing = walk.chain.size();
    for (std::size_t i = 0; i < walk.chain.size(); ++i) {
      // The body-less stat where the transport has one, as the core's walk (do_lstat).
      auto entry = co_await probe(target.transport, target.container, target.container_id, walk.chain[i]);
      if (!entry) {
        first_missing = i;
        break;
      }
      if (entry->kind == EntryKind::Symlink)
        throw ValueError(refuse(walk.chain[i], "is a symbolic link, not a real directory; the base is not confined"));
      if (entry->kind != EntryKind::Directory) throw NotADirectoryError(refuse(walk.chain[i], "is not a directory"));
    }
    if (first_missing < walk.chain.size())
      co_await target.transport.archive_put(target.container, "/", work_dir_tar(walk.chain, first_missing, target.user));
    record(first_missing);
  });
}

}  // namespace detail

boost::asio::awaitable<void> DockerSandboxBackend::prepare_before_start(const std::string& container, const SandboxSpec& spec,
                                                           const AcquirePlan& plan) {
  const std::string& base = plan.storage_base;
  if (!plan.uses_storage_base || base == "/") co_return;
  // Nothing known for this base yet (the first fresh container): not even the inspect.
  if (!memory_->work_dir_known(base)) co_return;
  // [port decision] (issue 24) A created container runs nothing: no guest can swap a
  // component between a check and the upload, which is what the work directory's freeze guards
  // against, so the upload needs no freeze here — a stronger condition than one. It holds
  // exactly its image's files, so which components of `base` it has (real directories, the
  // rest missing) and its image user are what an earlier fresh container of the same image
  // ID showed (checked there under its freeze). Taken only when every probe the spec needs
  // passed for that image too, so the order of docs/backends/docker.md "Acquire, step by
  // step" (probes, identity, then the core's walk of the work directory) has nothing left
  // that could refuse before the directory exists. After the start the core walks the chain
  // again (ACQ-4): a base under a mount made at start (/dev, /proc, …) is not seen there and
  // is created under the freeze (detail::prepare_storage_base).
  auto state = co_await transport_->container_state(container);
  if (!state || state->image_id.empty()) co_return;
  const auto first_missing = memory_->work_dir_suffix(state->image_id, base);
  const auto user = memory_->image_user(state->image_id);
  if (!first_missing || !user || !memory_->image_passed_all(state->image_id, detail::probe_names(spec.requires_capabilities())))
    co_return;
  const auto chain = detail::cumulative_components(base);
  if (*first_missing >= chain.size()) co_return;  // the image has it all
  co_await transport_->archive_put(container, "/", detail::work_dir_tar(chain, *first_missing, *user));
}

}  // namespace maf::sandbox::docker
