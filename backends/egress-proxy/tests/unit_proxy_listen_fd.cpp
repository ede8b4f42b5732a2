// `--listen-fd N` (inherited_listener.hpp, issue 47): the descriptor named must be a socket
// in the listening state; the option leaves the arguments the parser sees; a unix-domain
// listener is told apart (it skips the forwarding check: docs/backends/process.md PE-8).
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "inherited_listener.hpp"

using namespace maf::sandbox::egress_proxy;

TEST_CASE("PE-8: --listen-fd takes a listening socket, tells a unix-domain one apart, and leaves the other arguments") {
  const int unix_listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;  // autobind: an abstract name of the kernel's choosing
  REQUIRE(::bind(unix_listener, reinterpret_cast<sockaddr*>(&addr), sizeof(sa_family_t)) == 0);
  REQUIRE(::listen(unix_listener, 1) == 0);
  std::vector<std::string> args{"--allow", "a.test", "--listen-fd", std::to_string(unix_listener), "--log", "x"};
  const auto got = take_inherited_listener(args);
  REQUIRE(got);
  CHECK(got->fd == unix_listener);
  CHECK(got->unix_domain);
  CHECK(args == std::vector<std::string>{"--allow", "a.test", "--log", "x"});

  const int tcp_listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(tcp_listener, reinterpret_cast<sockaddr*>(&in), sizeof in) == 0);
  REQUIRE(::listen(tcp_listener, 1) == 0);
  std::vector<std::string> tcp_args{"--listen-fd=" + std::to_string(tcp_listener)};
  const auto tcp = take_inherited_listener(tcp_args);
  REQUIRE(tcp);
  CHECK_FALSE(tcp->unix_domain);  // a TCP listener keeps the forwarding check
  CHECK(tcp_args.empty());

  std::vector<std::string> none{"--allow", "a.test"};
  CHECK_FALSE(take_inherited_listener(none));
  ::close(unix_listener);
  ::close(tcp_listener);
}

TEST_CASE("PE-8: --listen-fd refuses what is not a listening socket, naming the value") {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  auto refused = [](std::vector<std::string> args) {
    try {
      take_inherited_listener(args);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused({"--listen-fd", std::to_string(pair[0])}), Catch::Contains("not listening"));
  CHECK_THAT(refused({"--listen-fd", "three"}), Catch::Contains("'three' is not a descriptor number"));
  CHECK_THAT(refused({"--listen-fd"}), Catch::Contains("needs a descriptor number"));
  CHECK_THAT(refused({"--listen-fd", "987654"}), Catch::Contains("is not an open socket"));
  CHECK_THAT(refused({"--listen-fd", "0"}), Catch::Contains("--listen-fd 0"));
  ::close(pair[0]);
  ::close(pair[1]);
}
