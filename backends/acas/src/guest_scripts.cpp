// The guest-side shell; see guest_scripts.hpp.
#include "guest_scripts.hpp"

#include <random>

#include "maf/sandbox/support/shell.hpp"

namespace maf::sandbox::acas::detail {
namespace {
std::string q(std::string_view s) { return support::shell_quote(s); }
}  // namespace

std::string random_hex32() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 32; ++i) s.push_back(kHex[rng() % 16]);
  return s;
}

std::string capture_launch_script(std::string_view token, std::string_view shell_line, std::int64_t limit) {
  const std::string t = "/tmp/" + std::string(token);
  const std::string keep = std::to_string(limit + 1);
  // Readers keep limit+1 bytes (so "over the limit" is visible) and drain the rest, so the
  // program never blocks on a full pipe. The program runs under the caller's umask; the
  // scratch is private (077). 127 = a tool is missing, 125 = the scratch failed.
  return "for c in mkdir mkfifo head cat wc rm rmdir; do command -v \"$c\" >/dev/null 2>&1 || exit 127; done\n"
         "t=" + q(t) + "\n"
         "m=$(umask); umask 077\n"
         "mkdir \"$t\" || exit 125\n"
         "mkfifo \"$t/o.fifo\" \"$t/e.fifo\" || exit 125\n"
         "{ head -c " + keep + " > \"$t/o\"; cat > /dev/null; } < \"$t/o.fifo\" & a=$!\n"
         "{ head -c " + keep + " > \"$t/e\"; cat > /dev/null; } < \"$t/e.fifo\" & b=$!\n"
         "umask \"$m\"\n"
         "sh -c " + q(shell_line) + " > \"$t/o.fifo\" 2> \"$t/e.fifo\" < /dev/null\n"
         "rc=$?\n"
         "wait $a; wait $b\n"
         "os=$(wc -c < \"$t/o\") || exit 125\n"
         "es=$(wc -c < \"$t/e\") || exit 125\n"
         "printf '%s %d %d %d\\n' " + q(token) + " \"$rc\" $os $es\n";
}

std::string capture_chunk_script(std::string_view token, char stream, std::int64_t index) {
  const std::string t = "/tmp/" + std::string(token);
  const std::string f = std::string(1, stream);
  return "t=" + q(t) + "\n"
         "[ -L \"$t\" ] && exit 125\n"
         "[ -L \"$t/" + f + "\" ] && exit 125\n"
         "cd -P \"$t\" || exit 125\n"
         "printf '%s\\n' " + q(token) + "\n"
         "dd if=" + f + " bs=" + std::to_string(kChunkBytes) + " skip=" + std::to_string(index) +
         " count=1 2>/dev/null | base64 || exit 125\n"
         "printf '\\n%s\\n' " + q(token) + "\n";
}

std::string capture_cleanup_script(std::string_view token) {
  const std::string t = "/tmp/" + std::string(token);
  return "t=" + q(t) + "; rm -f \"$t/o\" \"$t/e\" \"$t/o.fifo\" \"$t/e.fifo\" && rmdir \"$t\"";
}

namespace {
std::string refuse_directory(std::string_view target) {
  return "{ [ ! -d " + q(target) + " ] || { echo 'Is a directory' >&2; exit 1; }; }";
}
}  // namespace

std::string write_begin_script(std::string_view parent, std::string_view target, std::string_view staged) {
  return "export LC_ALL=C; mkdir -p -- " + q(parent) + " && " + refuse_directory(target) + " && : > " + q(staged);
}

std::string write_chunk_script(std::string_view staged, std::string_view base64_chunk) {
  return "export LC_ALL=C; printf %s " + q(base64_chunk) + " | base64 -d >> " + q(staged);
}

std::string write_commit_script(std::string_view target, std::string_view staged) {
  return "export LC_ALL=C; " + refuse_directory(target) + " && mv -f -- " + q(staged) + " " + q(target);
}

std::string write_abort_script(std::string_view staged) { return "export LC_ALL=C; rm -f -- " + q(staged); }

std::string removal_probe_script(std::string_view file) { return "rm -- " + q(file); }

std::string host_tools_probe_script(std::string_view missing) {
  // mv must report the missing source as status 1 (not 127: the tool is there); nohup
  // must run a shell to completion.
  return "mkdir -p / || exit 2\n"
         "mv -f -- " + q(missing) + " " + q(std::string(missing) + "-to") + " 2>/dev/null; [ $? -eq 1 ] || exit 3\n"
         "nohup sh -c 'exit 0' >/dev/null 2>&1 || exit 4\n";
}

std::string remove_script(std::string_view path, bool recursive) {
  return std::string("export LC_ALL=C; rm ") + (recursive ? "-rf" : "-f") + " -- " + q(path);
}

}  // namespace maf::sandbox::acas::detail
