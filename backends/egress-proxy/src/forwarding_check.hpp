#pragma once
/// @file forwarding_check.hpp
/// The proxy's start-up refusal to run inside a router (issue 22).
///
/// The proxy is dual-homed: on the sandbox's internal network and on the outbound one. If
/// its network namespace forwards packets, a guest that can write raw frames (spoofed
/// source, a priority tag the bridge's netfilter skips) is routed straight past the
/// allowlist. The backends create the proxy with forwarding off (`--sysctl`); this check
/// makes the proxy itself refuse to serve when that did not happen (an engine or a wslc
/// that dropped the setting), so a missing setting is a loud start-up failure, never a
/// silently open path.

#include <functional>
#include <optional>
#include <string>

namespace maf::sandbox::egress_proxy {

/// Reads one /proc/sys file's text; nullopt when it does not exist or cannot be read.
using ReadSysctl = std::function<std::optional<std::string>(const std::string& path)>;

/// Why this namespace must not serve, or nullopt when it forwards nothing: IPv4 forwarding
/// (`/proc/sys/net/ipv4/ip_forward`) must read 0 — an unreadable file is refused, since
/// nothing then shows it is off; IPv6 forwarding (`…/ipv6/conf/all/forwarding`) must read
/// 0 where it exists (a kernel without IPv6 has no such file and forwards no IPv6).
std::optional<std::string> forwarding_problem(const ReadSysctl& read);

}  // namespace maf::sandbox::egress_proxy
