#pragma once
// The core's own way into a Sandbox file batch (sandbox.hpp, do_file_batch): only the
// core's sources include this, so no host or backend opens a batch or calls into one.

#include "maf/sandbox/sandbox.hpp"

namespace maf::sandbox::detail {

struct FileBatchAccess {
  /// Runs `body(true)` under the backend's batch bracket, or `body(false)` — each call
  /// bracketed on its own — when the backend declines one.
  template <class Body>
  static boost::asio::awaitable<void> run(Sandbox& sandbox, Body& body) {
    const bool ran = co_await sandbox.do_file_batch([&]() -> boost::asio::awaitable<void> { co_await body(true); });
    if (!ran) co_await body(false);
  }
  static boost::asio::awaitable<std::optional<SandboxEntry>> stat_file(Sandbox& sandbox, bool batched,
                                                                       std::string path, std::string wd) {
    return sandbox.stat_file_in(batched, std::move(path), std::move(wd));
  }
  static boost::asio::awaitable<std::string> read_file(Sandbox& sandbox, bool batched, std::string path,
                                                       std::string wd, std::int64_t max_bytes) {
    return sandbox.read_file_in(batched, std::move(path), std::move(wd), max_bytes);
  }
};

}  // namespace maf::sandbox::detail
