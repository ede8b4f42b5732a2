// One ACAS sandbox; see acas_sandbox.hpp.
#include "acas_sandbox.hpp"

#include <array>
#include <tuple>

#include <spdlog/spdlog.h>

#include "guest_scripts.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "said.hpp"

namespace maf::sandbox::acas::detail {
namespace {

std::chrono::milliseconds ms_of(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

std::string files_path(const std::string& id, const char* sub = "") {
  return "/sandboxes/" + id + "/files" + sub;
}

// a guest refusal's last stderr line, C locale, mapped onto the core's types.
[[noreturn]] void raise_guest_refusal(const std::string& path, const std::string& err) {
  std::string last = err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  if (auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
  const std::string msg = said("write_file '") + path + "' refused by the guest: " + last;
  if (last.find("Permission denied") != std::string::npos) throw PermissionError(msg);
  if (last.find("Is a directory") != std::string::npos) throw IsADirectoryError(msg);
  if (last.find("Not a directory") != std::string::npos || last.find("File exists") != std::string::npos)
    throw NotADirectoryError(msg);
  if (last.find("No such file or directory") != std::string::npos) throw FileNotFoundError(msg);
  throw SandboxShellTransferFailed(msg);
}

}  // namespace

AcasSandbox::AcasSandbox(std::shared_ptr<AcasSandboxBackend::State> state, std::shared_ptr<Record> record,
                         CapabilitySet capabilities, std::string storage_base)
    : Sandbox(Descriptor{.backend_name = "acas",
                         .kind = record->kind,
                         .capabilities = capabilities,
                         .storage_base = std::move(storage_base),
                         .instance_id = record->id}),
      state_(std::move(state)),
      record_(std::move(record)) {}

Clock::time_point AcasSandbox::read_deadline() const { return Clock::now() + ms_of(state_->config.read_timeout_seconds); }

boost::asio::awaitable<ClientCache::Lease> AcasSandbox::lease() { co_return co_await state_->lease(record_->binding); }

boost::asio::awaitable<ExecAnswer> AcasSandbox::control_exec(Service& svc, const std::string& id,
                                                            std::string command, std::string working_directory,
                                                            Clock::time_point deadline, std::size_t budget) {
  nlohmann::json body = nlohmann::json::object();
  body["command"] = std::move(command);
  body["workingDirectory"] = std::move(working_directory);
  ServiceCall c{"POST", "/sandboxes/" + id + "/executeShellCommand", {}, body.dump(), "application/json",
                RetryClass::Exec, deadline, budget, "exec", true};
  auto r = co_await svc.call(std::move(c));
  if (r.overflowed)
    throw SandboxExecOutputLimitExceeded(said("exec answer exceeded the control budget of ") + std::to_string(budget) +
                                         " bytes");
  Service::expect(r, {200}, "exec");
  // only identity encoding; a compressed body is never guessed at.
  if (!r.content_encoding.empty() && r.content_encoding != "identity")
    throw AcasResponseInvalid(said("invalid execution response (Content-Encoding ") + r.content_encoding + ")");
  co_return parse_exec_answer(r.body);
}

boost::asio::awaitable<ExecReport> AcasSandbox::captured_exec(Service& svc, const std::string& id,
                                                              const std::string& shell_line,
                                                              const std::string& working_directory,
                                                              Clock::time_point deadline) {
  const std::int64_t limit = svc.config().exec_output_limit_bytes;
  const std::string token = "maf-exec-" + random_hex32();
  auto launch = co_await control_exec(svc, id, capture_launch_script(token, shell_line, limit), working_directory,
                                      deadline, 64 * 1024);
  if (launch.exit_code != 0 || !launch.stderr_text.empty())
    throw SandboxOutputError(said("exec capture failed to launch (status ") + std::to_string(launch.exit_code) +
                             (launch.exit_code == 127 ? ", a capture tool is missing" : "") + "): " +
                             launch.stderr_text.substr(0, 200));
  // One byte over the limit is what the readers keep to make "over" visible.
  CaptureManifest manifest = parse_capture_manifest(launch.stdout_text, token, limit + 1);
  // The program ran to its end; its capture stays unread in the guest's scratch, so the
  // sandbox is not reused — the core abandons it through do_abandon (EXE-2).
  if (manifest.stdout_size > limit || manifest.stderr_size > limit)
    co_return ExecReport::over_cap("exec_output_limit_bytes", static_cast<std::uint64_t>(limit),
                                   manifest.stdout_size > limit ? "stdout" : "stderr", "its capture was not read",
                                   /*abandon=*/true);
  ExecResult result;
  result.exit_code = manifest.exit_code;
  // Not a braced list iterated across co_await (GCC 12 miscompiles that).
  const std::array<std::tuple<char, std::int64_t, std::string*>, 2> streams{
      std::tuple{'o', manifest.stdout_size, &result.stdout_bytes},
      std::tuple{'e', manifest.stderr_size, &result.stderr_bytes}};
  for (const auto& [stream, size, target] : streams) {
    // The manifest gives the size (at most the limit): growing by appends would reallocate
    // by doubling and at the last step hold the stream about twice.
    target->reserve(static_cast<std::size_t>(size));
    for (std::int64_t i = 0; i * kChunkBytes < size; ++i) {
      auto chunk = co_await control_exec(svc, id, capture_chunk_script(token, stream, i), "/", deadline,
                                         4 * static_cast<std::size_t>(kChunkBytes));
      const std::string& out = chunk.stdout_text;
      const std::string framing = token + "\n";
      if (chunk.exit_code != 0 || !chunk.stderr_text.empty() || out.size() > 2 * static_cast<std::size_t>(kChunkBytes) ||
          out.rfind(framing, 0) != 0 || out.size() < 2 * framing.size() ||
          out.compare(out.size() - framing.size(), framing.size(), framing) != 0)
        throw SandboxOutputError(said("exec capture chunk ") + std::to_string(i) + " was refused");
      std::string decoded = base64_decode(out.substr(framing.size(), out.size() - 2 * framing.size()));
      const std::int64_t expected = std::min(kChunkBytes, size - i * kChunkBytes);
      if (static_cast<std::int64_t>(decoded.size()) != expected)
        throw SandboxOutputError(said("exec capture chunk ") + std::to_string(i) + " has the wrong length");
      target->append(decoded);
    }
  }
  auto cleanup = co_await control_exec(svc, id, capture_cleanup_script(token), "/", deadline, 4096);
  if (cleanup.exit_code != 0)
    logger()->warn("backend 'acas': exec scratch {} in sandbox {} was not removed: {}", "/tmp/" + token, id, cleanup.stderr_text);
  co_return result;
}

boost::asio::awaitable<ExecReport> AcasSandbox::do_exec(const ExecRequest& request) {
  Admission admitted(state_);
  auto lease = co_await this->lease();
  Service& svc = lease.service();
  std::exception_ptr failure;
  std::optional<std::string> throttled;
  bool timed_out = false;
  try {
    co_return co_await captured_exec(svc, record_->id, request.shell_line, request.working_directory,
                                     request.deadline);
  } catch (const AcasThrottledPastDeadline& e) {
    throttled = e.what();
  } catch (const TimeoutError&) {
    timed_out = true;
  } catch (...) {
    failure = std::current_exception();
  }
  // A-26's one exception: the throttled request was answered and nothing ran; the sandbox is kept.
  if (throttled) co_return ExecReport::deadline_expired("nothing ran: " + *throttled);
  // anything else may have left the guest mid-command; the sandbox is not reused. A
  // timeout is ended the way an over-cap capture is — by the core, through do_abandon (EXE-2)
  // — so both endings take one path; a failure is no report, and ends it here.
  if (timed_out)
    co_return ExecReport::deadline_expired("the request was abandoned and the sandbox is not reused", /*abandon=*/true);
  co_await state_->invalidate(svc, record_, "exec failed");
  std::rethrow_exception(failure);
}

boost::asio::awaitable<void> AcasSandbox::do_abandon() {
  auto lease = co_await this->lease();
  // A-26 for an exec the core abandons: timed out, or its capture over the cap. The core says
  // the program was stopped (HT-T4, EXE-1) only if this returns: a deletion that failed
  // stopped nothing this backend can vouch for, and says so.
  const bool deleted =
      co_await state_->invalidate(lease.service(), record_, "exec abandoned (timed out or over its cap)");
  if (!deleted)
    throw OSError(said("deleting sandbox ") + record_->id +
                  " failed after its exec was abandoned; it is retained for a later dispose");
}

boost::asio::awaitable<std::optional<GuestStat>> AcasSandbox::do_lstat(const std::string& absolute_path) {
  Admission admitted(state_);
  auto lease = co_await this->lease();
  co_return co_await lstat(lease.service(), absolute_path);
}

boost::asio::awaitable<std::optional<GuestStat>> AcasSandbox::lstat(Service& svc, const std::string& absolute_path) {
  ServiceCall c{"GET", files_path(record_->id, "/stat"), one_query("path", absolute_path), std::nullopt, "application/json",
                RetryClass::Read, read_deadline(), 1 << 20, "files.stat"};
  auto r = co_await svc.call(std::move(c));
  if (r.status == 404) co_return std::nullopt;
  Service::expect(r, {200}, "files.stat");
  auto entry = parse_entry(std::string_view(r.body));
  co_return GuestStat{entry.kind, entry.size_bytes};
}

boost::asio::awaitable<void> AcasSandbox::do_prepare_storage_base(const StorageBaseWalk& walk) {
  if (walk.complete()) co_return;
  Admission admitted(state_);
  auto lease = co_await this->lease();
  Service& svc = lease.service();
  const auto deadline = read_deadline();
  // The levels the walk found missing, outermost first, each one single-level mkdir. A level
  // a guest makes between the walk and its mkdir (a link included) is the same residual the
  // old stat-then-mkdir walk had; the emulator's mkdir refuses an existing entry (E-25), so
  // there it fails the acquire rather than being made through.
  for (std::size_t i = walk.first_missing; i < walk.chain.size(); ++i) {
    const std::string& level = walk.chain[i];
    ServiceCall c{"POST", files_path(record_->id, "/mkdir"), {}, json_path_body(level), "application/json",
                  RetryClass::Idempotent, deadline, 1 << 20, "files.mkdir"};
    auto mk = co_await svc.call(std::move(c));
    Service::expect(mk, {200, 201, 204}, "files.mkdir " + level);
  }
}

boost::asio::awaitable<std::string> AcasSandbox::do_read_file(const std::string& absolute_path, std::int64_t max_bytes) {
  Admission admitted(state_);
  auto lease = co_await this->lease();
  Service& svc = lease.service();
  ServiceCall c{"GET", files_path(record_->id), one_query("path", absolute_path), std::nullopt, "application/json",
                RetryClass::Read, read_deadline(), static_cast<std::size_t>(max_bytes) + 1, "files.get"};
  HttpResponse r;
  try {
    r = co_await svc.call(std::move(c));
  } catch (const TimeoutError&) {
    // a FIFO stats as a file and never serves; the read timeout turns the hang
    // into a refusal. The sandbox stays whole.
    throw TimeoutError(said("read_file '") + absolute_path + "' got no bytes within read_timeout_seconds=" +
                       std::to_string(state_->config.read_timeout_seconds) +
                       "; a guest can make an entry that stats as a file but never serves (e.g. a FIFO)");
  }
  if (r.overflowed)
    throw SandboxTransferCapExceeded(said("guest file '") + absolute_path + "' holds more than max_bytes=" +
                                     std::to_string(max_bytes));
  if (r.status == 404) throw FileNotFoundError(said("guest file '") + absolute_path + "' does not exist");
  Service::expect(r, {200}, "files.get");
  co_return std::move(r.body);
}

boost::asio::awaitable<std::vector<GuestDirEntry>> AcasSandbox::do_list_dir(const std::string& absolute_path) {
  Admission admitted(state_);
  auto lease = co_await this->lease();
  Service& svc = lease.service();
  ServiceCall c{"GET", files_path(record_->id, "/list"), one_query("path", absolute_path), std::nullopt, "application/json",
                RetryClass::Read, read_deadline(), std::size_t{16} << 20, "files.list"};
  auto r = co_await svc.call(std::move(c));
  if (r.status == 404) throw FileNotFoundError(said("guest directory '") + absolute_path + "' does not exist");
  Service::expect(r, {200}, "files.list");
  std::vector<GuestDirEntry> out;
  const std::string prefix = absolute_path == "/" ? "/" : absolute_path + "/";
  for (auto& e : parse_dir_listing(r.body)) {
    // every entry a direct child of the listed directory.
    if (e.path.rfind(prefix, 0) != 0 || e.path.size() == prefix.size() ||
        e.path.find('/', prefix.size()) != std::string::npos)
      throw AcasEntryPayloadIncomplete(said("list_dir '") + absolute_path + "' returned '" + e.path +
                                       "', not a direct child");
    std::string name = e.path.substr(prefix.size());
    if (name == "." || name == "..") throw AcasEntryPayloadIncomplete(said("list_dir returned '") + e.path + "'");
    out.push_back(GuestDirEntry{std::move(name), GuestStat{e.kind, e.size_bytes}});
  }
  co_return out;
}

boost::asio::awaitable<void> AcasSandbox::do_write_file(const std::string& absolute_path, const std::string& content) {
  Admission admitted(state_);
  auto lease = co_await this->lease();
  Service& svc = lease.service();
  // always as the guest, over exec; never the file plane.
  if (absolute_path.find_first_of(std::string("\0\r\n", 3)) != std::string::npos)
    throw ValueError(said("write_file path contains NUL, CR or LF"));
  const auto slash = absolute_path.rfind('/');
  const std::string parent = slash == 0 ? "/" : absolute_path.substr(0, slash);
  const std::string leaf = absolute_path.substr(slash + 1);
  if (leaf.empty() || leaf == "." || leaf == "..") throw ValueError(said("write_file path has no file name"));
  const std::string staged = (parent == "/" ? "" : parent) + "/.maf-" + random_hex32() + ".part";
  const auto deadline = read_deadline();
  std::optional<ExecAnswer> refused;
  std::exception_ptr failure;
  bool between = false;  // the deadline passed with no command in flight
  try {
    // Each command is made when it is sent: all of them made first would hold the content a
    // second time, a third larger in base64, for the whole transfer.
    const std::size_t chunks = (content.size() + kChunkBytes - 1) / kChunkBytes;
    for (std::size_t step = 0; step < chunks + 2; ++step) {
      std::string script;
      if (step == 0) script = write_begin_script(parent, absolute_path, staged);
      else if (step <= chunks)
        script = write_chunk_script(
            staged, base64_encode(std::string_view(content).substr((step - 1) * kChunkBytes, kChunkBytes)));
      else script = write_commit_script(absolute_path, staged);
      auto answer = co_await control_exec(svc, record_->id, std::move(script), "/", deadline, 4096);
      if (answer.exit_code != 0) {
        refused = std::move(answer);
        break;
      }
    }
  } catch (const AcasThrottledPastDeadline&) {
    between = true;  // answered 429 and never re-sent: nothing ran
  } catch (const DeadlineBeforeSend&) {
    between = true;
  } catch (...) {
    failure = std::current_exception();
  }
  if (refused || between) {
    // take the staged file back (own 10 s bound); the sandbox stays whole.
    bool cleaned = false;
    try {
      auto r = co_await control_exec(svc, record_->id, write_abort_script(staged), "/",
                                     Clock::now() + std::chrono::seconds(10), 4096);
      cleaned = r.exit_code == 0;
    } catch (const std::exception&) {
    }
    if (!cleaned) {
      co_await state_->invalidate(svc, record_, "write_file left a staged file behind");
      throw SandboxShellTransferUnfinished(said("write_file '") + absolute_path + "' could not remove its staged file " +
                                          staged + "; the sandbox was invalidated");
    }
    if (refused) raise_guest_refusal(absolute_path, refused->stderr_text);
    throw SandboxShellTransferFailed(said("write_file '") + absolute_path + "' ran out of read_timeout_seconds=" +
                                     std::to_string(state_->config.read_timeout_seconds) +
                                     " between commands; the staged file was removed and the sandbox kept");
  }
  if (failure) {
    // a command that failed in flight leaves the guest's state unknown.
    std::string cause;
    bool cancelled = false;
    try {
      std::rethrow_exception(failure);
    } catch (const Cancelled&) {
      cancelled = true;  // not a failure (C-106): it stays a cancellation
    } catch (const std::exception& e) {
      cause = e.what();
    }
    co_await state_->invalidate(svc, record_, "write_file failed in flight");
    if (cancelled) std::rethrow_exception(failure);
    throw SandboxShellTransferUnfinished(said("write_file '") + absolute_path + "' failed in flight (" + cause +
                                         "); the sandbox was invalidated");
  }
}

boost::asio::awaitable<void> AcasSandbox::do_remove(const std::string& absolute_path, bool recursive) {
  Admission admitted(state_);
  auto lease = co_await this->lease();
  Service& svc = lease.service();
  const auto deadline = read_deadline();
  auto r = co_await control_exec(svc, record_->id, remove_script(absolute_path, recursive), "/", deadline, 64 * 1024);
  if (r.exit_code != 0)
    throw OSError(said("removing '") + absolute_path + "' failed in the guest: " + r.stderr_text.substr(0, 300));
  if (co_await lstat(svc, absolute_path))
    throw OSError(said("'") + absolute_path + "' is still present after removal");
}

}  // namespace maf::sandbox::acas::detail
