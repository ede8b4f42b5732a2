#pragma once
/// @file emulator.hpp
/// A local double of the ACAS data plane (E-1…E-71): REST over HTTP/1.1 on loopback, each
/// sandbox a real Docker container, plus a control plane under `/_emulator/` for tests
/// (fault rules, the request log, out-of-band guest commands). The same control operations
/// are reachable in-process through `control()`.
///
/// One io_context thread serves everything: docker CLI calls are asynchronous children
/// (support/subprocess.hpp), so a slow exec never blocks another request.

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace maf::sandbox::acas::emulator {

struct EmulatorOptions {
  std::uint16_t port = 0;  ///< 0 = ephemeral (E-1)
  /// API bearer token for the alias "default"; more aliases through control("PUT", "/config").
  std::string token = "emulator-token";
  /// Token for `/_emulator/…`; empty = the control plane needs no token (loopback only).
  std::string control_token;
  std::string docker = "docker";
  /// Host path of a static busybox bind-mounted into every container (E-21).
  std::string helper = "/bin/busybox";
  std::string subscription = "sub";
  std::string resource_group = "rg";
  std::string sandbox_group = "group";
  /// `{"public": [{"name", "image"}], "imported": [{"id", "base", "image"}]}`; `image` is the
  /// local Docker image a sandbox of that entry runs. Null = the test images of
  /// scripts/docker-test-images under prebuilt names `busybox`, `busybox-nonroot`, `busybox-nosh`.
  nlohmann::json catalogue;
  /// Label on every container of this instance (E-20); random when empty.
  std::string instance;
};

class Emulator {
public:
  explicit Emulator(EmulatorOptions options);
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  /// Binds, reaps leftovers of this instance, starts serving on a background thread.
  void start();
  /// Serves on the calling thread until SIGINT/SIGTERM (the CLI); prints the base URL first.
  void run_foreground();
  /// Deletes every container of this instance and stops the thread. Idempotent.
  void stop();

  std::uint16_t port() const;
  /// `http://127.0.0.1:<port>`
  std::string base_url() const;
  /// `/subscriptions/<sub>/resourceGroups/<rg>/sandboxGroups/<group>`
  std::string group_path() const;
  const std::string& instance() const;

  /// The control plane, thread-safe: e.g. `control("POST", "/faults", rule)`,
  /// `control("GET", "/requests")`, `control("GET", "/sandboxes")`. Throws std::runtime_error
  /// when the control route answers an error.
  nlohmann::json control(const std::string& method, const std::string& path, nlohmann::json body = nullptr);

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace maf::sandbox::acas::emulator
