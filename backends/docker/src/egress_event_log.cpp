// The JSON-lines egress event log (egress_events.hpp): the observer a JSON-configured plugin
// can have.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "maf/sandbox/docker/egress_events.hpp"
#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {
namespace {

/// Owns the descriptor; shared by every copy of the observer (std::function copies it).
class AppendOnlyFile {
 public:
  explicit AppendOnlyFile(const std::string& path)
      : path_(path), fd_(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ < 0)
      throw ValueError(said("configuration key 'egress_event_log' names '" + path +
                            "', which cannot be opened for appending: " + std::strerror(errno)));
  }
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  AppendOnlyFile& operator=(const AppendOnlyFile&) = delete;
  ~AppendOnlyFile() { ::close(fd_); }

  /// One write(2) per line: O_APPEND places it whole at the end, whoever else appends.
  void append_line(const std::string& line) const {
    const ssize_t n = ::write(fd_, line.data(), line.size());
    if (n < 0) throw OSError("egress event log '" + path_ + "': " + std::strerror(errno));
    if (static_cast<std::size_t>(n) != line.size())
      throw OSError("egress event log '" + path_ + "': short write (" + std::to_string(n) + " of " +
                    std::to_string(line.size()) + " bytes; the disk may be full)");
  }

 private:
  std::string path_;
  int fd_;
};

nlohmann::json to_json(const EgressEvent& event) {
  nlohmann::json j;
  j["proxy"] = event.proxy;
  if (event.key)
    j["key"] = {{"scope", event.key->scope},
                {"thread_id", event.key->thread_id},
                {"agent_id", event.key->agent_id},
                {"call_id", event.key->call_id}};
  else
    j["key"] = nullptr;
  j["decisions"] = nlohmann::json::array();
  for (const auto& d : event.decisions)
    j["decisions"].push_back({{"decision", d.decision}, {"host", d.host}, {"port", d.port}});
  j["truncated"] = event.truncated;
  return j;
}

}  // namespace

EgressObserver egress_event_log(const std::string& path) {
  if (path.empty()) throw ValueError(said("configuration key 'egress_event_log' must not be empty"));
  auto file = std::make_shared<const AppendOnlyFile>(path);
  return [file](const EgressEvent& event) {
    // Guest-influenced host names are escaped by the JSON writer; invalid UTF-8 is replaced
    // rather than refused, so one odd name never loses the whole event.
    file->append_line(to_json(event).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  };
}

}  // namespace maf::sandbox::docker
