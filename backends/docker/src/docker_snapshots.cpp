// Snapshots and pause of a Docker sandbox (issue 49; docs/backends/docker.md "Snapshots and
// pause"). A snapshot is the work tree's tar stream as the engine's archive endpoint gives it
// (files, modes, owners, links as links), read under the freeze like every tar-plane call and
// kept by this process (snapshot_store.hpp). A restore stops every guest process, removes the
// base and puts the stream back under the freeze: what a process held is not kept (work_tree
// fidelity), and nothing made after the snapshot survives it. Pause is the freeze held.
#include "docker_sandbox.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "said.hpp"

namespace maf::sandbox::docker::detail {

using boost::asio::awaitable;

namespace {

// Stops every guest process but the container's own: PID 1 and, under `--init`, the
// workload command it started (the lowest other pid: it ran before any exec). Zombies are
// already dead. Rounds, because a guest may fork while it is swept; a guest that keeps
// making processes past them is refused (exit 3), never restored under. Builtins only in
// the sweep, so the sweeper starts no process of its own there.
constexpr const char* kStopGuestScript = R"sh(
init_pid=1; main=
if [ "$1" = init ]; then
  for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" -gt 1 ] || continue
    if [ -z "$main" ] || [ "$p" -lt "$main" ]; then main=$p; fi; done
fi
self=$$; round=0
while :; do
  left=
  for d in /proc/[0-9]*; do p=${d#/proc/}
    case "$p" in "$init_pid"|"$self"|"$main") continue;; esac
    stat=; read -r stat < "$d/stat" 2>/dev/null || continue
    case "$stat" in *") Z "*|*") X "*) continue;; esac
    kill -9 "$p" 2>/dev/null && left=1
  done
  [ -z "$left" ] && break
  round=$((round+1)); [ "$round" -lt 50 ] || { echo "guest processes kept appearing" >&2; exit 3; }
done
rm -rf -- "$2" || exit 4
mkdir -p -- "$3" || exit 5
)sh";

}  // namespace

awaitable<KeptTree> DockerSandbox::read_work_tree(std::uint64_t room) {
  ArchiveGet got;
  const std::string base = storage_base();
  co_await run_frozen(*p_.transport, *p_.freeze, p_.container, [&]() -> awaitable<void> {
    got = co_await p_.transport->archive_get(p_.container, base, static_cast<std::size_t>(room) + 1);
  });
  KeptTree tree;
  if (got.status == ArchiveStatus::Absent) {
    tree.absent = true;
    co_return tree;
  }
  if (got.cut || got.bytes.size() > room)
    throw SandboxSnapshotBudgetExceeded(
        said("the work tree " + base + " of container " + p_.container + " is larger than the " +
             std::to_string(room) + " bytes left of snapshot_budget_bytes=" +
             std::to_string(p_.memory->snapshots.budget()) + "; nothing was kept"));
  tree.tar = std::move(got.bytes);
  co_return tree;
}

awaitable<void> DockerSandbox::keep_reset_tree() {
  // Past the budget the acquire still serves: a later reset() is refused, naming why.
  try {
    KeptTree tree = co_await read_work_tree(p_.memory->snapshots.room());
    p_.memory->snapshots.keep(p_.container, p_.container_id, tree, /*reset=*/true);
  } catch (const SandboxSnapshotBudgetExceeded& e) {
    logger()->warn("backend 'docker': container {} keeps no acquire-time tree, so reset() is refused: {}",
                   p_.container, e.what());
  }
}

KeptTree DockerSandbox::kept_tree(const std::string& id) {
  return p_.memory->snapshots.tree_of(p_.container, p_.container_id, id);
}

awaitable<void> DockerSandbox::put_work_tree(const KeptTree& tree, std::chrono::steady_clock::time_point deadline) {
  const std::string base = storage_base();
  const std::string parent = guest_dirname(base);
  const auto remaining = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
  };
  auto make_call = [&] {
    ExecCall call;
    call.container = p_.container;
    call.argv = {"sh", "-c", kStopGuestScript, "maf-sandbox-restore", p_.config && p_.config->init ? "init" : "no-init",
                 base, parent};
    call.working_directory.assign(1, '/');
    // Root reaches every guest process and file; without its capabilities (cap_drop_all)
    // the image user stops and removes what it owns, which is what its guest could make.
    if (!p_.cap_drop_all) call.user = "0";
    call.timeout = std::min(remaining(), p_.command_timeout);
    return call;
  };
  ExecOutcome stopped = co_await exec_respecting_freeze(*p_.transport, *p_.freeze, make_call);
  if (stopped.exit_code != 0)
    throw OSError(said("restoring the work tree " + base + " of container " + p_.container +
                       ": stopping the guest and clearing the tree failed (exit " +
                       std::to_string(stopped.exit_code) + "): " + stopped.stderr_bytes));
  if (tree.absent) co_return;  // the snapshot found no base: none is what it kept
  const std::string tar = tree.tar;
  co_await run_frozen(*p_.transport, *p_.freeze, p_.container, [&]() -> awaitable<void> {
    co_await p_.transport->archive_put(p_.container, parent, tar);
  });
}

awaitable<SnapshotInfo> DockerSandbox::do_snapshot() {
  KeptTree tree = co_await read_work_tree(p_.memory->snapshots.room());
  co_return p_.memory->snapshots.keep(p_.container, p_.container_id, tree);
}

awaitable<void> DockerSandbox::do_restore(const std::string& snapshot_id, std::chrono::milliseconds,
                                          std::chrono::steady_clock::time_point deadline) {
  KeptTree tree = kept_tree(snapshot_id);
  co_await put_work_tree(tree, deadline);
}

awaitable<void> DockerSandbox::do_reset(std::chrono::milliseconds, std::chrono::steady_clock::time_point deadline) {
  auto tree = p_.memory->snapshots.reset_tree(p_.container, p_.container_id);
  if (!tree)
    throw OSError(said("container " + p_.container + " (kind '" + kind() +
                       "') has no acquire-time tree to reset to: it expired, its container was replaced, or the "
                       "acquire kept none (no storage base)"));
  co_await put_work_tree(*tree, deadline);
}

awaitable<void> DockerSandbox::do_release_snapshot(const std::string& snapshot_id) {
  p_.memory->snapshots.release(p_.container, p_.container_id, snapshot_id);
  co_return;
}

awaitable<std::vector<SnapshotInfo>> DockerSandbox::do_snapshots() {
  co_return p_.memory->snapshots.held(p_.container, p_.container_id);
}

awaitable<void> DockerSandbox::do_pause() {
  co_await hold_pause(*p_.transport, *p_.freeze, p_.container, p_.container_id);
}

awaitable<void> DockerSandbox::do_resume() {
  co_await release_pause(*p_.transport, *p_.freeze, p_.container);
}

}  // namespace maf::sandbox::docker::detail
