// The JSON-lines events file (events_file.hpp).
#include "events_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::cli {
namespace {

class EventsFile final : public SandboxObserver {
public:
  EventsFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~EventsFile() override { ::close(fd_); }
  EventsFile(const EventsFile&) = delete;
  EventsFile& operator=(const EventsFile&) = delete;

  void on_event(const SandboxEvent& event) override {
    const std::string line = event_to_json(event) + "\n";
    // One write per line under O_APPEND: lines never interleave, whichever thread writes.
    const ssize_t n = ::write(fd_, line.data(), line.size());
    if (n < 0) throw OSError("events file '" + path_ + "': " + std::strerror(errno));
    if (static_cast<std::size_t>(n) != line.size())
      throw OSError("events file '" + path_ + "': short write (" + std::to_string(n) + " of " +
                    std::to_string(line.size()) + " bytes)");
  }

private:
  std::string path_;
  int fd_;
};

}  // namespace

std::shared_ptr<SandboxObserver> events_file(const std::string& path) {
  if (path.empty()) throw ValueError("--events needs a file path");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw ValueError("--events: '" + path + "' cannot be opened for appending: " + std::strerror(errno));
  return std::make_shared<EventsFile>(path, fd);
}

}  // namespace maf::sandbox::cli
