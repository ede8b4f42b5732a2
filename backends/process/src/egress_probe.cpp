// The construction-time proofs of the process backend's ALLOWLIST egress (egress_proxy.hpp):
// `allowlist` is declared only after a confined child, in a throwaway tree, reached an
// allowed listener through a real proxy and was refused a denied one (issue 47 item 3).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>

#include "egress_proxy.hpp"
#include "fd.hpp"
#include "guest_tree.hpp"
#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

/// A listener on the host's loopback; `port` 0 when none could be made.
struct LoopbackListener {
  Fd fd;
  int port = 0;
  LoopbackListener() : fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd && ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd.get(), 4) == 0 &&
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port = ntohs(addr.sin_port);
  }
  /// The kernel completes a connection into the backlog without accept(): one queued means
  /// someone got through.
  bool reached() const {
    const int c = ::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return false;
    ::close(c);
    return true;
  }
};

constexpr const char* kAllowedName = "allowed.maf-sandbox-probe.invalid";
constexpr const char* kDeniedName = "denied.maf-sandbox-probe.invalid";

}  // namespace

std::string probe_allowlist(const ProcessBackendConfig& config, const Boundary& boundary,
                            const EgressPrograms& programs) {
  LoopbackListener allowed, denied;
  if (allowed.port == 0 || denied.port == 0) return "no listener could be opened on the host's loopback";
  static std::atomic<unsigned> counter{0};
  const fs::path scratch = fs::temp_directory_path() / ("maf-sandbox-egress-probe-" + std::to_string(::getpid()) +
                                                        "-" + std::to_string(counter++));
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      try {
        end_egress_proxy(path.string());
        std::error_code ec;
        fs::remove_all(path, ec);
      } catch (const std::exception&) {
      }
    }
  } cleanup{scratch};
  try {
    fs::create_directories(scratch);
    fs::permissions(scratch, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    // Both names pinned to the host's loopback (pins skip the routability check), only one allowed.
    ProcessBackendConfig probe_config = config;
    probe_config.egress_proxy_args = {"--resolve", std::string(kAllowedName) + "=127.0.0.1", "--resolve",
                                      std::string(kDeniedName) + "=127.0.0.1"};
    probe_config.egress_upstream_ca_file.reset();
    const std::string allowed_target = std::string(kAllowedName) + ":" + std::to_string(allowed.port);
    const std::string denied_target = std::string(kDeniedName) + ":" + std::to_string(denied.port);
    write_egress_policy(scratch.string(), EgressPolicy{{allowed_target}, ""}, boundary);
    const GuestEgress egress =
        ensure_egress_proxy(probe_config, boundary, programs, scratch.string(), EgressPolicy{{allowed_target}, ""});
    // bash's /dev/tcp to the relay on the guest's loopback, one CONNECT each; the status
    // line of each answer is printed.
    const std::string script =
        "ask() { exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(kGuestProxyPort) +
        " || { echo \"$1 no-connection\"; return; }; printf 'CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' \"$2\" \"$2\" >&3; "
        "IFS= read -r -t 10 line <&3; echo \"$1 ${line%$'\\r'}\"; exec 3>&-; }; ask allowed " +
        allowed_target + "; ask denied " + denied_target;
    const auto r = run_in_scratch(config, boundary, {"bash", "-c", script}, &egress);
    const std::string out = r.stdout_bytes;
    const bool allowed_ok = out.find("allowed HTTP/1.1 200") != std::string::npos && allowed.reached();
    const bool denied_ok = out.find("denied HTTP/1.1 403") != std::string::npos && !denied.reached();
    if (allowed_ok && denied_ok) return {};
    std::string why = !allowed_ok ? "a confined child did not reach the allowed listener through the proxy"
                                  : "a confined child reached the denied listener";
    return why + " (exit " + std::to_string(r.exit_code) + ", stdout: " + (out.empty() ? "(none)" : out) +
           ", stderr: " + (r.stderr_bytes.empty() ? "(none)" : r.stderr_bytes) + ")";
  } catch (const std::exception& e) {
    return e.what();
  }
}

bool proxy_terminates(const ProcessBackendConfig& config, const EgressPrograms& programs) {
  return proxy_features(config, programs).find("tls-termination") != std::string::npos;
}

std::string proxy_features(const ProcessBackendConfig& config, const EgressPrograms& programs) {
  boost::asio::io_context io;
  support::SubprocessResult result;
  bool ran = false;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        support::SubprocessOptions o;
        o.argv = {programs.proxy, "--features"};
        o.cwd = "/";
        o.timeout = config.internal_timeout;
        o.max_stdout = 4096;
        o.max_stderr = 4096;
        result = co_await support::run_subprocess(std::move(o));
        ran = true;
      },
      [](std::exception_ptr) {});
  io.run();
  return ran && result.exit_code == 0 ? result.stdout_bytes : std::string();
}

}  // namespace maf::sandbox::process
