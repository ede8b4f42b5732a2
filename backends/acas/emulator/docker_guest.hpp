#pragma once
// The emulator's Docker side (E-20…E-26): one container per sandbox, driven through the
// docker CLI. Kept apart from the HTTP server so that translation unit is the only one that
// pays for Beast.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace maf::sandbox::acas::emulator {

/// What a file-plane script reports. `status` is the HTTP status the route answers.
struct GuestAnswer {
  int status = 200;
  std::string body;    ///< bytes (download) or script output (stat/list)
  std::string detail;  ///< for ProblemDetails on failure
};

/// Raw exec result before the service's decoding (E-23).
struct GuestExec {
  std::string stdout_bytes;
  std::string stderr_bytes;
  int exit_code = 0;
  bool truncated = false;
  bool killed = false;  ///< E-23: the over-cap command's process group was killed in the container
};

class DockerGuest {
public:
  /// `docker` is the client binary; `helper` the host path of a static busybox (E-21).
  DockerGuest(std::string docker, std::string helper, std::string instance_label);

  /// E-20: starts the container and returns its id. Throws std::runtime_error with docker's stderr.
  boost::asio::awaitable<std::string> start(const std::string& image, const std::string& sandbox_id);
  boost::asio::awaitable<void> remove(const std::string& container);
  /// E-15/E-17: `docker pause` / `docker unpause` (Memory-mode suspend, approximated).
  boost::asio::awaitable<void> pause(const std::string& container, bool paused);
  /// Removes every container carrying this instance's label (E-26).
  boost::asio::awaitable<void> reap();

  /// E-22/E-23: runs `command` as the image user from `working_directory`.
  boost::asio::awaitable<GuestExec> exec(const std::string& container, const std::string& command,
                                         const std::string& working_directory, std::size_t cap);

  // The file plane (E-25), as root through the helper.
  boost::asio::awaitable<GuestAnswer> stat(const std::string& container, const std::string& path);
  boost::asio::awaitable<GuestAnswer> list(const std::string& container, const std::string& path);
  boost::asio::awaitable<GuestAnswer> download(const std::string& container, const std::string& path,
                                               std::chrono::milliseconds fifo_read_max);
  boost::asio::awaitable<GuestAnswer> upload(const std::string& container, const std::string& path, bool create_dirs,
                                             int mode, std::string bytes);
  boost::asio::awaitable<GuestAnswer> remove_path(const std::string& container, const std::string& path, bool recursive);
  boost::asio::awaitable<GuestAnswer> mkdir(const std::string& container, const std::string& path);
  /// Out-of-band command for tests (the control plane's docker-exec): root or the image user.
  boost::asio::awaitable<GuestExec> run_out_of_band(const std::string& container, const std::string& script, bool as_root);

private:
  boost::asio::awaitable<GuestAnswer> file_script(const std::string& container, const char* script,
                                                  std::vector<std::string> args, std::optional<std::string> stdin_bytes = {},
                                                  std::optional<std::chrono::milliseconds> timeout = {});
  std::string docker_;
  std::string helper_;
  std::string instance_label_;
};

/// Builds the file entry's JSON text (E-25) from a `%F|%s|%a|%Y|<rest>` stat line.
std::string entry_json(const std::string& stat_line, const std::string& requested_path, const std::string& link_target);

}  // namespace maf::sandbox::acas::emulator
