#pragma once
// A host-tree double that streams — honestly, or with one flaw a STREAM probe must catch
// (docs/conformance.md "STREAM"). Its exec_stream runs the command on the host, as its exec
// does, through run_subprocess's chunk sinks and silence bound.
#include "host_tree_sandbox.hpp"

namespace maf::sandbox::conformance::test {

enum class StreamFlaw {
  None,
  AtExit,                 ///< holds every chunk until the program exited, then delivers them
  IdleAsDeadline,         ///< reports an expired read timeout as the command's deadline
  SparesGroup,            ///< the command leads a session of its own, which every stop misses
  NoCap,                  ///< applies no output cap
  FoldsStderr,            ///< delivers stderr as stdout
  HiddenFromHost,         ///< its processes are not visible as themselves on the runner's host (hidden_from_host)
  IgnoresStop,            ///< never passes the caller's stop on (STR-10): the program runs to its end
};

class StreamDouble final : public HostTreeSandbox {
public:
  StreamDouble(const std::filesystem::path& root, StreamFlaw flaw);

  /// The cap it applies to each stream (unless NoCap).
  static constexpr std::size_t kCap = std::size_t{16} << 20;

protected:
  boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) override;

private:
  StreamFlaw flaw_;
};

}  // namespace maf::sandbox::conformance::test
