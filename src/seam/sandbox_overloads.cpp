// The Sandbox's exec and exec_stream overloads that are not coroutines (AGENT-1, docs/tools.md
// "GCC 12 and temporaries"): each makes its default, or copies the caller's named input or
// options, here — outside any co_await expression — and hands the coroutine its own copy.
#include "maf/sandbox/sandbox.hpp"

#include <utility>

namespace maf::sandbox {

boost::asio::awaitable<ExecResult> Sandbox::exec(Command command, std::string working_directory,
                                                 std::chrono::milliseconds timeout) {
  return exec_with_input(std::move(command), ExecInput{}, std::move(working_directory), timeout);
}

boost::asio::awaitable<ExecResult> Sandbox::exec(Command command, const ExecInput& input, std::string working_directory,
                                                 std::chrono::milliseconds timeout) {
  return exec_with_input(std::move(command), input, std::move(working_directory), timeout);
}

boost::asio::awaitable<StreamedExit> Sandbox::exec_stream(Command command, OutputHandler on_output,
                                                          const ExecStreamOptions& options) {
  return exec_stream_with(std::move(command), std::move(on_output), options);
}

boost::asio::awaitable<StreamedExit> Sandbox::exec_stream(Command command, OutputHandler on_output) {
  return exec_stream_with(std::move(command), std::move(on_output), ExecStreamOptions{});
}

}  // namespace maf::sandbox
