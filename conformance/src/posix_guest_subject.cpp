#include "maf/sandbox/conformance/posix_guest_subject.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "maf/sandbox/conformance/results.hpp"
#include "maf/sandbox/paths.hpp"
#include "probe_support.hpp"

namespace maf::sandbox::conformance {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string hex(std::string_view bytes) {
  std::string out;
  char buf[3];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    out += buf;
  }
  return out;
}

std::string detail_of(const ExecResult& r) {
  std::string err = r.stderr_bytes.substr(0, 200);
  return "exit " + std::to_string(r.exit_code) + (err.empty() ? "" : ", stderr: " + trim(err));
}

}  // namespace

PosixGuestSubject::PosixGuestSubject(BlockingRunner& runner, std::shared_ptr<Sandbox> sandbox,
                                     CapabilitySet capabilities, std::optional<Egress> enforced_egress,
                                     std::optional<std::string> working_directory)
    : runner_(runner),
      sandbox_(std::move(sandbox)),
      capabilities_(capabilities),
      egress_(enforced_egress),
      working_directory_(normalize_guest_path(working_directory.value_or(sandbox_->storage_base()))) {
  if (working_directory_.empty() || working_directory_.front() != '/')
    throw ConformanceUsageError("PosixGuestSubject: working directory '" + working_directory_ +
                                "' must be an absolute guest path");
}

ExecResult PosixGuestSubject::exec(Command command, std::string working_directory, std::chrono::milliseconds timeout) {
  return runner_([&] { return sandbox_->exec(command, working_directory, timeout); });
}

void PosixGuestSubject::plant_file(const std::string& absolute_path, std::string_view bytes) {
  const std::string parent = guest_dirname(absolute_path);
  const std::string wd = parent.empty() ? "/" : parent;
  const std::string content(bytes);
  runner_([&] { return sandbox_->write_file(absolute_path, content, wd); });
}

void PosixGuestSubject::plant_symlink(const std::string& absolute_path, const std::string& target) {
  const auto r = exec(std::vector<std::string>{"ln", "-sfn", target, absolute_path}, "/", exec_timeout_);
  if (r.exit_code != 0)
    throw std::runtime_error("planting link " + absolute_path + " -> " + target + " failed: exit " +
                             std::to_string(r.exit_code) + ", stderr: " + r.stderr_bytes);
}

FetchOutcome PosixGuestSubject::fetch_url(const std::string& url, std::chrono::milliseconds timeout) {
  // curl's own bound is 5/6 of the exec bound so curl answers before the exec is killed.
  char max_time[32];
  std::snprintf(max_time, sizeof max_time, "%.3f", static_cast<double>(timeout.count()) * 5.0 / 6.0 / 1000.0);
  // curl when the guest has it (EG-1, EG-2). Otherwise an HTTP/1.0 GET over `nc`,
  // through $http_proxy when set: busybox wget is no substitute (the static build segfaults
  // on an internal network). The script prints the status, or 000 when no HTTP answer came
  // back, and exits 0 only when one did — curl's shape. http:// URLs only.
  const std::string whole_seconds = std::to_string(std::max<long long>(1, timeout.count() * 5 / 6 / 1000));
  const auto r = exec(std::vector<std::string>{
                          "sh", "-c",
                          "if command -v curl >/dev/null 2>&1; then\n"
                          "  exec curl -s -o /dev/null -w '%{http_code}' --max-time \"$1\" \"$0\"\n"
                          "fi\n"
                          "case \"$0\" in http://*) ;; *) printf 000; exit 2;; esac\n"
                          "rest=${0#http://}; hostport=${rest%%/*}; path=/${rest#*/}\n"
                          "[ \"$rest\" = \"$hostport\" ] && path=/\n"
                          "proxy=${http_proxy:-$HTTP_PROXY}\n"
                          "if [ -n \"$proxy\" ]; then p=${proxy#http://}; p=${p%%/*}; line=\"GET $0 HTTP/1.0\"\n"
                          "else p=$hostport; line=\"GET $path HTTP/1.0\"; fi\n"
                          "case \"$p\" in *:*) h=${p%:*}; n=${p##*:};; *) h=$p; n=80;; esac\n"
                          "status=$(printf '%s\\r\\nHost: %s\\r\\n\\r\\n' \"$line\" \"$hostport\" | nc -w \"$2\" \"$h\" \"$n\" "
                          "| head -n 1 | sed -n 's/^HTTP\\/[0-9.]* \\([0-9][0-9][0-9]\\).*/\\1/p')\n"
                          "printf '%s' \"${status:-000}\"; [ -n \"$status\" ]\n",
                          url, max_time, whole_seconds},
                      working_directory_, timeout);
  return FetchOutcome{r.exit_code, trim(r.stdout_bytes)};
}

RawFrameAttempt PosixGuestSubject::send_raw_frames(const std::string& destination, std::uint16_t port,
                                                   const std::string& spoofed_source, const std::string& token,
                                                   std::chrono::milliseconds timeout) {
  using Result = RawFrameAttempt::Result;
  if (!raw_frame_tool_guest_) {
    if (!raw_frame_tool_host_.empty()) {
      std::ifstream in(raw_frame_tool_host_, std::ios::binary);
      if (!in) throw ConformanceUsageError("cannot read the raw-frame tool '" + raw_frame_tool_host_ + "'");
      const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      const std::string guest = working_directory_ + "/.maf-sandbox-rawframe";
      plant_file(guest, bytes);
      const auto r = exec(std::vector<std::string>{"chmod", "0755", guest}, "/", exec_timeout_);
      if (r.exit_code != 0)
        throw std::runtime_error("making the planted raw-frame tool executable failed: " + detail_of(r));
      raw_frame_tool_guest_ = guest;
    } else {
      const auto r = exec(Command("command -v maf-sandbox-rawframe || true"), "/", exec_timeout_);
      raw_frame_tool_guest_ = trim(r.stdout_bytes);
    }
  }
  if (raw_frame_tool_guest_->empty())
    return {Result::NoTool, "the guest has no maf-sandbox-rawframe (plant one with set_raw_frame_tool)"};
  try {
    const auto r = exec(std::vector<std::string>{*raw_frame_tool_guest_, destination, std::to_string(port),
                                                 spoofed_source, token},
                        "/", timeout);
    const std::string detail = trim(r.stdout_bytes) + " (" + detail_of(r) + ")";
    // The tool's exit codes (rawframe.cpp): 0 sent, 3 socket refused, 4 no neighbour.
    if (r.exit_code == 0) return {Result::Sent, detail};
    if (r.exit_code == 3) return {Result::Refused, detail};
    if (r.exit_code == 4) return {Result::NoNeighbour, detail};
    return {Result::NoTool, "maf-sandbox-rawframe did not run: " + detail};
  } catch (const TimeoutError& e) {
    return {Result::NoTool, std::string("maf-sandbox-rawframe timed out: ") + e.what()};
  }
}

const std::string& PosixGuestSubject::network_tool() {
  if (!network_tool_) {
    const auto r = exec(Command("if command -v bash >/dev/null 2>&1; then echo bash; "
                                "elif command -v busybox >/dev/null 2>&1 && busybox --list 2>/dev/null | grep -qx nc; "
                                "then echo busybox-nc; "
                                "elif command -v python3 >/dev/null 2>&1; then echo python3; fi"),
                        "/", exec_timeout_);
    network_tool_ = trim(r.stdout_bytes);
  }
  return *network_tool_;
}

GuestAttempt PosixGuestSubject::attempt(std::string tool, std::vector<std::string> argv,
                                        std::chrono::milliseconds timeout, ReachedBy reached_by) {
  GuestAttempt a{std::move(tool), false, {}};
  try {
    // The exec bound is longer than the tool's own, so the tool's verdict is what we read.
    const auto r = exec(std::move(argv), "/", timeout + std::chrono::seconds(5));
    a.reached = reached_by == ReachedBy::ExitZero ? r.exit_code == 0
                                                  : r.stdout_bytes.find("answered") != std::string::npos;
    a.detail = detail_of(r);
  } catch (const TimeoutError& e) {
    a.detail = std::string("timed out: ") + e.what();  // nothing got through within the bound
  }
  return a;
}

GuestAttempt PosixGuestSubject::connect_tcp(const std::string& host, std::uint16_t port,
                                            std::chrono::milliseconds timeout) {
  GuestAttempt a{network_tool(), false, {}};
  const std::string p = std::to_string(port);
  const std::string secs = std::to_string(std::max<long long>(1, timeout.count() / 1000));
  std::vector<std::string> argv;
  if (a.tool == "bash") {
    argv = {"bash", "-c", "exec 3<>\"/dev/tcp/$0/$1\"", host, p};
  } else if (a.tool == "busybox-nc") {
    argv = {"busybox", "nc", "-w", secs, host, p};
  } else if (a.tool == "python3") {
    argv = {"python3", "-c", "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), float(sys.argv[3]))",
            host, p, secs};
  } else {
    return a;
  }
  return attempt(std::move(a.tool), std::move(argv), timeout, ReachedBy::ExitZero);
}

GuestAttempt PosixGuestSubject::query_dns(const std::string& host, std::uint16_t port, std::string_view query,
                                          std::chrono::milliseconds timeout) {
  GuestAttempt a{network_tool(), false, {}};
  const std::string p = std::to_string(port);
  const std::string secs = std::to_string(std::max<long long>(1, timeout.count() / 1000));
  std::vector<std::string> argv;
  if (a.tool == "bash") {
    // bash's /dev/udp gives a connected UDP socket; any byte read back is an answer.
    argv = {"bash", "-c",
            "exec 3<>\"/dev/udp/$0/$1\" || exit 3; printf \"$2\" >&3 || exit 3; "
            "if IFS= read -r -t \"$3\" -n 1 -d '' _ <&3; then echo answered; fi",
            host, p, detail::printf_octal(query), secs};
  } else if (a.tool == "busybox-nc") {
    argv = {"sh", "-c",
            "n=$(printf \"$2\" | busybox nc -u -w \"$3\" \"$0\" \"$1\" | head -c 1 | wc -c); "
            "[ \"$n\" -gt 0 ] && echo answered; exit 0",
            host, p, detail::printf_octal(query), secs};
  } else if (a.tool == "python3") {
    argv = {"python3", "-c",
            "import socket,sys\n"
            "f,t,pr,_,addr=socket.getaddrinfo(sys.argv[1],int(sys.argv[2]),0,socket.SOCK_DGRAM)[0]\n"
            "s=socket.socket(f,t,pr); s.settimeout(float(sys.argv[4]))\n"
            "s.sendto(bytes.fromhex(sys.argv[3]),addr)\n"
            "s.recvfrom(512); print('answered')\n",
            host, p, hex(query), secs};
  } else {
    return a;
  }
  return attempt(std::move(a.tool), std::move(argv), timeout, ReachedBy::AnsweredLine);
}

}  // namespace maf::sandbox::conformance
