// The proxy's start-up refusal to serve inside a router (forwarding_check.hpp, issue 22).
#include <catch2/catch.hpp>

#include <map>

#include "forwarding_check.hpp"
#include "options.hpp"

using namespace maf::sandbox::egress_proxy;

namespace {

ReadSysctl files(std::map<std::string, std::string> contents) {
  return [contents](const std::string& path) -> std::optional<std::string> {
    auto it = contents.find(path);
    return it == contents.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

const std::string kV4 = "/proc/sys/net/ipv4/ip_forward";
const std::string kV6 = "/proc/sys/net/ipv6/conf/all/forwarding";

}  // namespace

TEST_CASE("issue-22: a namespace forwarding nothing may serve") {
  CHECK_FALSE(forwarding_problem(files({{kV4, "0\n"}, {kV6, "0\n"}})));
  CHECK_FALSE(forwarding_problem(files({{kV4, "0\n"}})));  // no IPv6 in this kernel
}

TEST_CASE("issue-22: IPv4 or IPv6 forwarding on, or an unreadable ip_forward, refuses to serve, naming the setting") {
  auto v4 = forwarding_problem(files({{kV4, "1\n"}, {kV6, "0\n"}}));
  REQUIRE(v4);
  CHECK_THAT(*v4, Catch::Contains("net.ipv4.ip_forward=1"));
  auto v6 = forwarding_problem(files({{kV4, "0\n"}, {kV6, "1\n"}}));
  REQUIRE(v6);
  CHECK_THAT(*v6, Catch::Contains("net.ipv6.conf.all.forwarding=1"));
  auto unreadable = forwarding_problem(files({}));
  REQUIRE(unreadable);
  CHECK_THAT(*unreadable, Catch::Contains("cannot read /proc/sys/net/ipv4/ip_forward"));
  CHECK(forwarding_problem(files({{kV4, ""}})));  // an empty answer shows nothing is off
}

TEST_CASE("issue-22: only --unsafe-allow-forwarding lifts the check, and it takes no value") {
  auto none = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  auto no_file = [](const std::string&) -> std::string { return {}; };
  CHECK_FALSE(parse_options({}, none, no_file).allow_forwarding);
  auto o = parse_options({"--unsafe-allow-forwarding", "--allow", "a.test"}, none, no_file);
  CHECK(o.allow_forwarding);
  CHECK(o.allow.describe() == "a.test");
}
