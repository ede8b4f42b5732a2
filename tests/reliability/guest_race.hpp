#pragma once
// A guest that swaps a checked parent directory for a link in a loop while the host reads
// through it (issue 15): the same race against every backend.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/core/demangle.hpp>

#include <map>
#include <string>
#include <typeinfo>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/sync.hpp"

namespace reliability {

/// The work dir gets sub/file.txt (the bytes the host may return) and /tmp/decoy/file.txt
/// (bytes from outside the work dir, which it must never return).
inline const std::string kSwapSetup =
    "mkdir -p sub /tmp/decoy && echo INSIDE > sub/file.txt && echo OUTSIDE > /tmp/decoy/file.txt";
/// Swaps sub/ for a link to /tmp/decoy and back until the host writes `stop`; prints the
/// number of swaps. `looping` tells the host the race is on.
inline const std::string kSwapLoop =
    "n=0; touch looping; while [ ! -e stop ]; do mv sub real && ln -s /tmp/decoy sub && rm sub && mv real sub;"
    " n=$((n+1)); done; echo $n";
inline const std::string kLeaked = "returned bytes from outside the work dir";

/// The error's type without its namespace, e.g. "ValueError".
inline std::string error_type(const std::exception& e) {
  std::string name = boost::core::demangle(typeid(e).name());
  return name.substr(name.rfind("::") == std::string::npos ? 0 : name.rfind("::") + 2);
}

/// Waits for the loop, then alternates `trials` reads and stats of sub/file.txt, counting
/// what each returned; writes `stop` at the end. Any maf::sandbox::Error is a typed refusal;
/// anything else propagates and fails the test.
inline boost::asio::awaitable<void> race_swapping_guest(maf::sandbox::Sandbox& sb, int trials,
                                                        std::map<std::string, int>& outcomes) {
  // Named locals only: GCC 12 mishandles temporaries built inside a co_await expression.
  for (int i = 0; i < 100000; ++i) {
    std::string looping = "looping", dot = ".";
    if (co_await sb.stat_file(std::move(looping), std::move(dot))) break;
  }
  for (int i = 0; i < trials; ++i) {
    std::string path = "sub/file.txt", dot = ".";
    std::string outcome;
    try {
      if (i % 2 == 0) {
        std::string bytes = co_await sb.read_file(std::move(path), std::move(dot), 1024);
        outcome = bytes == "INSIDE\n" ? "read: the work dir's bytes" : bytes == "OUTSIDE\n" ? kLeaked : "read: other bytes";
      } else {
        auto st = co_await sb.stat_file(std::move(path), std::move(dot));
        outcome = !st ? "stat: absent (mid-swap)"
                  : st->kind == maf::sandbox::EntryKind::File && st->size_bytes == 7 ? "stat: the work dir's file"
                  : st->size_bytes == 8 ? kLeaked
                                        : "stat: something else";
      }
    } catch (const maf::sandbox::Error& e) {
      outcome = (i % 2 == 0 ? "read refused: " : "stat refused: ") + error_type(e);
    }
    ++outcomes[outcome];
  }
  std::string stop = "stop", content = "x", dot = ".";
  co_await sb.write_file(std::move(stop), std::move(content), std::move(dot));
}


/// The whole race on one io_context (the backends assume one sandbox's operations share a
/// thread): the guest loop as one exec, the host's trials beside it. Returns the guest's
/// swap count; `outcomes` counts what the host saw.
inline int race(maf::sandbox::Sandbox& sb, int trials, std::map<std::string, int>& outcomes) {
  boost::asio::io_context io;
  std::exception_ptr failure;
  int swaps = -1;
  auto note = [&](std::exception_ptr e) {
    if (e && !failure) failure = e;
  };
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        maf::sandbox::Command loop(kSwapLoop);
        std::string dot = ".";
        maf::sandbox::ExecResult r = co_await sb.exec(std::move(loop), std::move(dot), std::chrono::minutes(5));
        swaps = std::stoi(r.stdout_text());
      },
      note);
  boost::asio::co_spawn(io, race_swapping_guest(sb, trials, outcomes), note);
  io.run();
  if (failure) std::rethrow_exception(failure);
  return swaps;
}

/// The same race with the loop detached inside the guest, for backends whose sandboxes keep
/// a command's orphans (Docker). No exec is then in flight while the host's calls freeze the
/// container: an exec that starts inside another call's freeze is refused by design (D-22).
inline int race_detached(maf::sandbox::Sandbox& sb, int trials, std::map<std::string, int>& outcomes) {
  maf::sandbox::BlockingRunner run;
  run([&] { return sb.exec("(" + kSwapLoop + ") >swaps 2>/dev/null &"); });
  run.run_void([&]() -> boost::asio::awaitable<void> { co_await race_swapping_guest(sb, trials, outcomes); });
  // The loop sees `stop` and writes its count.
  for (int i = 0; i < 1000; ++i) {
    const std::string count = run([&] { return sb.read_file("swaps", ".", 64); });
    if (!count.empty()) return std::stoi(count);
  }
  return -1;
}

}  // namespace reliability
