// The wrapper, the killer and the gate of a streamed exec through an engine (guest_stream.hpp).
#include "maf/sandbox/support/guest_stream.hpp"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <random>
#include <sstream>

namespace maf::sandbox::support {

namespace {

constexpr std::string_view kHeaderPrefix = "maf-exec-stream ";
/// A header line is the prefix, at most 20 digits and a newline; anything longer is not one.
constexpr std::size_t kMaxHeader = 64;

// $0 is the token (found by the killer when no header was read). The pgid check reads
// /proc/$$/stat (pid, comm, state, ppid, pgrp); without /proc the engine's usual setsid is
// assumed. The header is written before `exec`, so it precedes every byte of the program on
// stdout; stderr bytes read before it are held by the gate.
constexpr const char* kWrapper = R"SH(g=$$
read -r _ _ _ _ g _ < /proc/$$/stat 2>/dev/null || g=$$
if [ "$g" != "$$" ]; then
  echo "maf-exec-stream: this exec does not lead its own process group (pid $$, group $g); a stop could not reach what it starts" >&2
  exit 125
fi
printf 'maf-exec-stream %s\n' "$$"
exec "$@"
)SH";

// $1 the token, $2 the group (may be empty). Zombies are gone for this purpose: the
// container's init (`sleep infinity`) never reaps the orphans a killed program leaves.
constexpr const char* kKiller = R"SH(t=$1
g=$2
if [ -z "$g" ]; then
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    case "$(cat "$d/cmdline" 2>/dev/null)" in *"$t"*) g=$p; break;; esac
  done
  [ -n "$g" ] || exit 0
fi
alive() {
  for s in /proc/[0-9]*/stat; do
    read -r l < "$s" 2>/dev/null || continue
    set -- ${l##*) }
    [ "$1" != Z ] && [ "$3" = "$g" ] && return 0
  done
  return 1
}
hit() { kill -KILL "-$g" 2>/dev/null || kill -s KILL -- "-$g" 2>/dev/null; }
hit
i=0
while alive; do
  i=$((i+1))
  [ "$i" -gt 300 ] && exit 3
  hit
  sleep 0.01 2>/dev/null || sleep 1
done
exit 0
)SH";

}  // namespace

std::string guest_stream_token() {
  std::random_device rd;
  std::ostringstream out;
  out << "maf-exec-stream-" << std::hex << std::setfill('0');
  for (int i = 0; i < 4; ++i) out << std::setw(8) << rd();
  return out.str();
}

std::vector<std::string> guest_stream_argv(const std::string& token, const std::vector<std::string>& program) {
  std::vector<std::string> argv{"sh", "-c", kWrapper, token};
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> guest_group_kill_argv(const std::string& token, const std::optional<std::string>& pgid) {
  return {"sh", "-c", kKiller, "maf-exec-stream-stop", token, pgid.value_or("")};
}

GuestStreamGate::GuestStreamGate(ExecOutputSink& sink, std::uint64_t cap, std::string cap_name, CapScope scope)
    : sink_(sink), cap_(cap), cap_name_(std::move(cap_name)), scope_(scope) {}

bool GuestStreamGate::forward(OutputStream stream, std::string_view bytes) {
  const std::uint64_t used = scope_ == CapScope::Together
                                ? sink_.total(OutputStream::Stdout) + sink_.total(OutputStream::Stderr)
                                : sink_.total(stream);
  const std::uint64_t room = cap_ - std::min(cap_, used);
  const bool over = bytes.size() > room;
  if (over) bytes = bytes.substr(0, static_cast<std::size_t>(room));
  if (!sink_.deliver(stream, bytes)) {
    stopped_ = true;
    return false;
  }
  if (over) {
    over_cap_ = stream;
    return false;
  }
  return true;
}

bool GuestStreamGate::feed(OutputStream stream, std::string_view bytes) {
  if (stopped_ || over_cap_) return false;
  if (started()) return forward(stream, bytes);
  // Before the header: held. A bound keeps a program that never started from growing it.
  std::string& held = stream == OutputStream::Stdout ? pre_stdout_ : pre_stderr_;
  // Never below a header's length, whatever the cap: a small cap must not hide the header.
  const std::size_t bound =
      std::max(kMaxHeader, static_cast<std::size_t>(std::min<std::uint64_t>(cap_, std::uint64_t{1} << 20)) + 1);
  held.append(bytes.substr(0, std::min(bytes.size(), bound - std::min(bound, held.size()))));
  if (stream == OutputStream::Stderr || no_header_) return true;
  const std::size_t newline = pre_stdout_.find('\n');
  if (newline == std::string::npos) {
    const bool could_be = pre_stdout_.size() < kMaxHeader &&
                          kHeaderPrefix.substr(0, std::min(kHeaderPrefix.size(), pre_stdout_.size())) ==
                              std::string_view(pre_stdout_).substr(0, std::min(kHeaderPrefix.size(), pre_stdout_.size()));
    if (!could_be) no_header_ = true;
    return true;
  }
  const std::string line = pre_stdout_.substr(0, newline);
  const std::string digits = line.size() > kHeaderPrefix.size() ? line.substr(kHeaderPrefix.size()) : std::string();
  if (line.compare(0, kHeaderPrefix.size(), kHeaderPrefix) != 0 || digits.empty() || digits.size() > 20 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    no_header_ = true;
    return true;
  }
  pgid_ = digits;
  const std::string rest = pre_stdout_.substr(newline + 1);
  const std::string err = std::move(pre_stderr_);
  pre_stdout_.clear();
  pre_stderr_.clear();
  if (!err.empty() && !forward(OutputStream::Stderr, err)) return false;
  return rest.empty() || forward(OutputStream::Stdout, rest);
}

void GuestStreamGate::deliver_preamble() {
  if (started() || stopped_ || over_cap_) return;
  const std::string text = preamble();
  pre_stdout_.clear();
  pre_stderr_.clear();
  if (!text.empty()) forward(OutputStream::Stderr, text);
}

}  // namespace maf::sandbox::support
