#include "probe_support.hpp"

#include <cxxabi.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <cstdlib>
#include <memory>
#include <typeinfo>

namespace maf::sandbox::conformance {

void fail(std::string message) { throw ProbeFailed(std::move(message)); }

namespace detail {
namespace {
std::string wd_or_work(ProbeContext& ctx, std::string wd) { return wd.empty() ? ctx.paths.work : wd; }

/// exit 0 -> true, 1 -> false, anything else is a harness problem reported as a failure.
bool test_exit(ProbeContext& ctx, const std::string& what, const ExecResult& r) {
  if (r.exit_code == 0) return true;
  if (r.exit_code == 1) return false;
  (void)ctx;
  fail(what + " could not be answered by the guest: " + describe(r));
}
}  // namespace

std::string type_name(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string name = status == 0 && demangled ? demangled.get() : mangled;
  if (auto colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  return name;
}

ExecResult exec(ProbeContext& ctx, Command command, std::string wd, std::optional<std::chrono::milliseconds> timeout) {
  auto& s = ctx.subject;
  const auto bound = timeout.value_or(s.exec_timeout());
  wd = wd_or_work(ctx, std::move(wd));
  return s.runner()([&] { return s.sandbox().exec(command, wd, bound); });
}

ExecResult exec_with(ProbeContext& ctx, Command command, ExecInput input) {
  auto& s = ctx.subject;
  const std::string wd = ctx.paths.work;
  return s.runner()([&] { return s.sandbox().exec(command, input, wd, s.exec_timeout()); });
}

std::optional<SandboxEntry> stat(ProbeContext& ctx, std::string path, std::string wd) {
  wd = wd_or_work(ctx, std::move(wd));
  return ctx.subject.runner()([&] { return ctx.subject.sandbox().stat_file(path, wd); });
}

std::string read(ProbeContext& ctx, std::string path, std::string wd, std::int64_t max_bytes) {
  wd = wd_or_work(ctx, std::move(wd));
  return ctx.subject.runner()([&] { return ctx.subject.sandbox().read_file(path, wd, max_bytes); });
}

std::vector<SandboxEntry> list(ProbeContext& ctx, std::string path, std::string wd) {
  wd = wd_or_work(ctx, std::move(wd));
  return ctx.subject.runner()([&] { return ctx.subject.sandbox().list_dir(path, wd); });
}

void write(ProbeContext& ctx, std::string path, std::string content, std::string wd) {
  wd = wd_or_work(ctx, std::move(wd));
  ctx.subject.runner()([&] { return ctx.subject.sandbox().write_file(path, content, wd); });
}

void remove(ProbeContext& ctx, std::string path, std::string wd, bool recursive) {
  wd = wd_or_work(ctx, std::move(wd));
  ctx.subject.runner()([&] { return ctx.subject.sandbox().remove(path, wd, recursive); });
}

bool present(ProbeContext& ctx, const std::string& path, std::string wd) {
  // Two calls, never `-o`: `test -e` follows a link, `test -L` catches a dangling one.
  if (test_exit(ctx, "test -e " + path, exec(ctx, std::vector<std::string>{"test", "-e", path}, wd))) return true;
  return test_exit(ctx, "test -L " + path, exec(ctx, std::vector<std::string>{"test", "-L", path}, wd));
}

bool is_file(ProbeContext& ctx, const std::string& path, std::string wd) {
  return test_exit(ctx, "test -f " + path, exec(ctx, std::vector<std::string>{"test", "-f", path}, wd));
}

std::string fidelity_payload() {
  std::string p;
  for (int b = 0; b < 256; ++b) p.push_back(static_cast<char>(b));
  p += "text \xEF\xBF\xBD with CR LF\r\n and an arrow \xE2\x86\x92";
  p += "\xE2\x86";
  return p;
}

std::string printf_octal(std::string_view bytes) {
  static constexpr char digits[] = "01234567";
  std::string out;
  for (unsigned char b : bytes) {
    out += '\\';
    out += digits[(b >> 6) & 7];
    out += digits[(b >> 3) & 7];
    out += digits[b & 7];
  }
  return out;
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kMax = 200;
  std::string shown(text.substr(0, kMax));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = '?';
  return "'" + shown + (text.size() > kMax ? "…" : "") + "'";
}

std::string process_tag() {
  std::string digits = std::to_string(::getpid());
  return std::string(digits.size() < 7 ? 7 - digits.size() : 0, '0') + digits;
}

bool host_runs(const std::string& marker) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return false;
  bool found = false;
  const std::string self = std::to_string(::getpid());
  while (const dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || self == e->d_name) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    // Arguments are NUL-separated in cmdline; the marker is written with spaces.
    std::string cmdline = s.str();
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(marker) != std::string::npos) found = true;
  }
  ::closedir(proc);
  return found;
}


ProcessSighting::ProcessSighting(std::string marker) : marker_(std::move(marker)) {
  watcher_ = std::thread([this] {
    while (!stop_.load() && !seen_.load()) {
      if (host_runs(marker_)) seen_.store(true);
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

ProcessSighting::~ProcessSighting() { stop_watching(); }

void ProcessSighting::stop_watching() {
  stop_.store(true);
  if (watcher_.joinable()) watcher_.join();
}

bool ProcessSighting::await_seen() {
  for (int i = 0; i < 500 && !seen_.load(); ++i) {
    if (host_runs(marker_)) seen_.store(true);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return seen_.load();
}

void ProcessSighting::expect_gone(const std::string& what) {
  stop_watching();
  // A marker still running now is seen now: a stop that missed it is judged, not skipped.
  if (!seen_.load() && host_runs(marker_)) seen_.store(true);
  if (!seen_.load())
    throw ProbeNotApplicable("'" + marker_ + "' was never seen running on the runner's host (the guest's processes are "
                             "not visible here: a VM or a remote engine), so whether " + what +
                             " is gone could not be checked");
  // The stop may land asynchronously (an engine removing a container); a bounded while.
  for (int i = 0; i < 100; ++i) {
    if (!host_runs(marker_)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (host_runs(marker_)) fail("'" + marker_ + "' (" + what + ") still runs, though it was seen running before the stop");
}

std::string join(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string describe(const ExecResult& r) {
  return "stdout " + quoted(r.stdout_bytes) + ", stderr " + quoted(r.stderr_bytes) + ", exit " +
         std::to_string(r.exit_code);
}

}  // namespace detail
}  // namespace maf::sandbox::conformance
