// maf-sandbox-egress-relay: the guest's loopback end of the process backend's egress path
// (issue 47; docs/backends/process.md "Egress"). Run by bubblewrap as the first program of
// every command of an ALLOWLIST sandbox:
//
//   maf-sandbox-egress-relay PORT SOCKET -- COMMAND...
//
// It listens on 127.0.0.1:PORT in the guest's own network namespace (loopback only), then
// leaves a detached copy of itself relaying each connection, byte for byte, to the unix
// socket SOCKET (the host-side proxy's listener, bound into the guest), and execs COMMAND —
// so the command is the process the backend waits for, and the listener is up before it
// starts. The relay decides nothing and holds nothing: it runs as the guest, and a guest
// that connects to SOCKET itself, or kills the relay, gains nothing the proxy would not
// grant. It ends with the command's PID namespace.
//
// Static, like the proxy, so the guest's view of /usr need not hold its libraries.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kMaxLinks = 256;
constexpr std::size_t kBuffer = 64 * 1024;

/// One direction of a link: bytes read from `from`, not yet written to `to`.
struct Half {
  std::string pending;
  bool eof = false;      ///< `from` said it is done
  bool shut = false;     ///< `to` was told (shutdown SHUT_WR) after pending drained
};

struct Link {
  int client = -1;
  int upstream = -1;
  Half up;    ///< client -> upstream
  Half down;  ///< upstream -> client
  bool dead = false;
};

int connect_unix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    ::close(fd);
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

/// Reads what `from` has into `h` (bounded), marks EOF or death.
void pull(int from, Half& h, bool& dead) {
  if (h.eof || h.pending.size() >= kBuffer) return;
  char chunk[16 * 1024];
  const ssize_t n = ::read(from, chunk, sizeof chunk);
  if (n > 0) h.pending.append(chunk, static_cast<std::size_t>(n));
  else if (n == 0) h.eof = true;
  else if (errno != EAGAIN && errno != EINTR) dead = true;
}

/// Writes what `h` holds to `to`; once drained after EOF, half-closes `to`.
void push(int to, Half& h, bool& dead) {
  if (!h.pending.empty()) {
    const ssize_t n = ::send(to, h.pending.data(), h.pending.size(), MSG_NOSIGNAL);
    if (n > 0) h.pending.erase(0, static_cast<std::size_t>(n));
    else if (n < 0 && errno != EAGAIN && errno != EINTR) dead = true;
  }
  if (h.eof && h.pending.empty() && !h.shut) {
    ::shutdown(to, SHUT_WR);
    h.shut = true;
  }
}

[[noreturn]] void serve(int listener, const std::string& socket_path) {
  std::vector<std::unique_ptr<Link>> links;
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({listener, static_cast<short>(links.size() < kMaxLinks ? POLLIN : 0), 0});
    for (const auto& l : links) {
      short ce = 0, ue = 0;
      if (!l->up.eof && l->up.pending.size() < kBuffer) ce |= POLLIN;
      if (!l->down.pending.empty()) ce |= POLLOUT;
      if (!l->down.eof && l->down.pending.size() < kBuffer) ue |= POLLIN;
      if (!l->up.pending.empty()) ue |= POLLOUT;
      fds.push_back({l->client, ce, 0});
      fds.push_back({l->upstream, ue, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      std::_Exit(1);
    }
    for (std::size_t i = 0; i < links.size(); ++i) {
      Link& l = *links[i];
      const short ce = fds[1 + 2 * i].revents, ue = fds[2 + 2 * i].revents;
      if (ce & (POLLIN | POLLHUP | POLLERR)) pull(l.client, l.up, l.dead);
      if (ue & (POLLIN | POLLHUP | POLLERR)) pull(l.upstream, l.down, l.dead);
      push(l.upstream, l.up, l.dead);
      push(l.client, l.down, l.dead);
      if (l.dead || (l.up.shut && l.down.shut)) {
        ::close(l.client);
        ::close(l.upstream);
        l.dead = true;
      }
    }
    std::erase_if(links, [](const auto& l) { return l->dead; });
    if (fds[0].revents & POLLIN) {
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client < 0) continue;
      const int upstream = connect_unix(socket_path);
      if (upstream < 0) {
        ::close(client);  // no proxy: the client sees its connection closed, as with none
        continue;
      }
      auto l = std::make_unique<Link>();
      l->client = client;
      l->upstream = upstream;
      links.push_back(std::move(l));
    }
  }
}

[[noreturn]] void refuse(const std::string& what) {
  std::fprintf(stderr, "maf-sandbox-egress-relay: %s\n", what.c_str());
  std::exit(125);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || std::string(argv[3]) != "--")
    refuse("usage: maf-sandbox-egress-relay PORT SOCKET -- COMMAND...");
  const std::string port_text = argv[1];
  const std::string socket_path = argv[2];
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 1 || port > 65535) refuse("port '" + port_text + "' is not 1-65535");

  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0) refuse(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 128) != 0)
    refuse("cannot listen on 127.0.0.1:" + port_text + ": " + std::strerror(errno));

  // Two forks: the relay is nobody's child but the namespace's init, so a command that waits
  // for all its children (`wait` in a shell) never waits for it.
  const pid_t first = ::fork();
  if (first < 0) refuse(std::string("fork: ") + std::strerror(errno));
  if (first == 0) {
    if (::fork() != 0) std::_Exit(0);
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0)
      for (int fd : {0, 1, 2}) ::dup2(null, fd);
    std::signal(SIGPIPE, SIG_IGN);
    serve(listener, socket_path);
  }
  int status = 0;
  while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(listener);
  ::execvp(argv[4], argv + 4);
  // Word for word what bubblewrap says when it cannot exec the command, so the backend
  // reads it as it does without the relay (a set-up failure, never the program's status).
  std::fprintf(stderr, "bwrap: execvp %s: %s\n", argv[4], std::strerror(errno));
  return 1;
}
