// HTTP/1.1 inside a terminated tunnel (tunnel_http.hpp).
#include "tunnel_http.hpp"

namespace maf::sandbox::egress_proxy {
namespace {

constexpr std::size_t kMaxChunkLine = 4096;

TunnelParse refuse_in_tunnel(int status, std::string reason) {
  TunnelParse r;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

TunnelParse parse_tunnel_request(std::string_view head, const Target& tunnel, std::size_t max_head_bytes,
                                 bool check_host) {
  SplitResult split = split_request_head(head, max_head_bytes);
  if (!split.head) return refuse_in_tunnel(split.status, std::move(split.reason));
  const RequestHead& h = *split.head;
  if (h.target.front() != '/') return refuse_in_tunnel(400, "request target is not origin-form ('/path') inside a tunnel");
  if (h.method == "CONNECT") return refuse_in_tunnel(400, "CONNECT inside a tunnel");

  TunnelRequest r;
  r.method = std::string(h.method);
  r.target = std::string(h.target);
  r.version = std::string(h.version);
  int hosts = 0, lengths = 0;
  for (const auto& f : h.fields) {
    if (ascii_iequals(f.name, "host")) {
      ++hosts;
      const auto authority = parse_authority(f.value, /*port_required=*/false);
      if (!authority) return refuse_in_tunnel(400, "malformed Host header");
      if (check_host && (authority->first != tunnel.host || authority->second.value_or(443) != tunnel.port))
        return refuse_in_tunnel(403, "Host header names " + std::string(f.value) + " but the tunnel was opened to " +
                               tunnel.host + ":" + std::to_string(tunnel.port));
    } else if (ascii_iequals(f.name, "content-length")) {
      ++lengths;
      if (f.value.empty() || f.value.size() > 18 || f.value.find_first_not_of("0123456789") != std::string_view::npos)
        return refuse_in_tunnel(400, "malformed Content-Length");
      r.framing = BodyFraming::Length;
      r.content_length = std::stoull(std::string(f.value));
    } else if (ascii_iequals(f.name, "transfer-encoding")) {
      if (!ascii_iequals(f.value, "chunked") || r.framing == BodyFraming::Chunked)
        return refuse_in_tunnel(400, "a transfer coding other than one 'chunked'");
      r.framing = BodyFraming::Chunked;
    } else if (ascii_iequals(f.name, "upgrade")) {
      r.upgrade = true;
    }
    if (ascii_iequals(f.name, "proxy-authorization") || ascii_iequals(f.name, "proxy-connection")) continue;
    r.fields.append(f.name).append(": ").append(f.value).append("\r\n");
  }
  if (hosts != 1) return refuse_in_tunnel(400, hosts == 0 ? "no Host header" : "more than one Host header");
  if (lengths > 1) return refuse_in_tunnel(400, "more than one Content-Length");
  TunnelParse ok;
  ok.request = std::move(r);
  return ok;
}

std::string tunnel_upstream_head(const TunnelRequest& request, std::string_view upstream_target) {
  std::string out;
  out.reserve(request.fields.size() + upstream_target.size() + 32);
  out.append(request.method).append(" ").append(upstream_target).append(" ").append(request.version).append("\r\n");
  out.append(request.fields).append("\r\n");
  return out;
}

ChunkedScanner::Step ChunkedScanner::feed(std::string_view bytes) {
  Step step;
  std::size_t i = 0;
  auto fail = [&] {
    step.error = true;
    step.consumed = i;
    return step;
  };
  while (i < bytes.size()) {
    const char c = bytes[i];
    switch (state_) {
      case State::Data: {
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size() - i));
        remaining_ -= take;
        i += take;
        if (remaining_ == 0) state_ = State::DataCr;
        continue;
      }
      case State::Size:
        if (const int d = hex_digit(c); d >= 0) {
          if (++size_digits_ > 15) return fail();
          remaining_ = remaining_ * 16 + static_cast<std::uint64_t>(d);
        } else if (size_digits_ == 0) {
          return fail();
        } else if (c == ';' || c == ' ' || c == '\t') {
          state_ = State::Ext;
        } else if (c == '\r') {
          state_ = State::SizeLf;
        } else {
          return fail();
        }
        break;
      case State::Ext:
        if (c == '\r') state_ = State::SizeLf;
        else if (c == '\n' || (static_cast<unsigned char>(c) < 0x20 && c != '\t')) return fail();
        break;
      case State::SizeLf:
        if (c != '\n') return fail();
        size_digits_ = 0;
        line_ = 0;
        state_ = remaining_ == 0 ? State::Trailer : State::Data;
        trailer_empty_ = true;
        ++i;
        continue;
      case State::DataCr:
        if (c != '\r') return fail();
        state_ = State::DataLf;
        break;
      case State::DataLf:
        if (c != '\n') return fail();
        state_ = State::Size;
        line_ = 0;
        break;
      case State::Trailer:
        if (c == '\r') {
          state_ = trailer_empty_ ? State::LastLf : State::TrailerLf;
        } else if (c == '\n' || (static_cast<unsigned char>(c) < 0x20 && c != '\t')) {
          return fail();
        } else {
          trailer_empty_ = false;
        }
        break;
      case State::TrailerLf:
        if (c != '\n') return fail();
        state_ = State::Trailer;
        trailer_empty_ = true;
        line_ = 0;
        ++i;
        continue;
      case State::LastLf:
        if (c != '\n') return fail();
        ++i;
        step.consumed = i;
        step.done = true;
        *this = ChunkedScanner{};
        return step;
    }
    if (++line_ > kMaxChunkLine) return fail();
    ++i;
  }
  step.consumed = i;
  return step;
}

}  // namespace maf::sandbox::egress_proxy
