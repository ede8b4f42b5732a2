// The file-system sink (C-94): lands artifacts as files under one host directory.
//
// Confinement is judged on resolved paths (links followed), so a link planted in the root
// cannot carry an artifact out of it. It is a check, not a guarantee: resolve and write
// are two steps, and a concurrent swap of a directory in between wins.
#include "maf/sandbox/sink.hpp"

#include <fstream>
#include <system_error>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {
namespace {

namespace fs = std::filesystem;

/// `path` is strictly below `root`, component by component (so "/r2" is not under "/r").
bool strictly_inside(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator of the root adds an empty component
    if (p == path.end() || *p != *r) return false;
  }
  return p != path.end();
}

std::string default_display(const Artifact& artifact, const fs::path&) {
  return artifact.name + " (" + std::to_string(artifact.content.size()) + " bytes)";
}

class FileSystemSink final : public OutputSink {
public:
  FileSystemSink(fs::path root, DisplayFormatter display) : root_(std::move(root)), display_(std::move(display)) {}

  boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) override {
    // Messages name the artifact only: host paths are the host's business, never a model's.
    std::error_code ec;
    const fs::path destination = fs::weakly_canonical(root_ / fs::path(artifact.name), ec);
    if (ec || !strictly_inside(destination, root_))
      throw SandboxLandingNotConfined("artifact '" + artifact.name + "' would land outside the sink's directory");
    fs::create_directories(destination.parent_path(), ec);
    if (ec)
      throw OSError("cannot create the directory for artifact '" + artifact.name + "': " + ec.message());
    {
      std::ofstream out(destination, std::ios::binary | std::ios::trunc);
      out.write(artifact.content.data(), static_cast<std::streamsize>(artifact.content.size()));
      out.close();
      if (!out) throw OSError("cannot write artifact '" + artifact.name + "'");
    }
    std::string display = display_ ? display_(artifact, destination) : default_display(artifact, destination);
    co_return LandedArtifact{std::move(artifact.name), std::move(display), destination.string()};
  }

private:
  fs::path root_;
  DisplayFormatter display_;
};

}  // namespace

std::shared_ptr<OutputSink> make_file_system_sink(const std::filesystem::path& root, DisplayFormatter display) {
  // Resolved once, now: later deliveries are judged against where the root *was*.
  return std::make_shared<FileSystemSink>(fs::weakly_canonical(fs::absolute(root)), std::move(display));
}

}  // namespace maf::sandbox
