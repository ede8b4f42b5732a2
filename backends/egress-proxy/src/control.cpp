// The proxy's control channel (control.hpp).
#include "control.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <iostream>
#include <stdexcept>

namespace maf::sandbox::egress_proxy {

namespace asio = boost::asio;
using asio::awaitable;
using local = asio::local::stream_protocol;

namespace {

/// `@name` is Linux's abstract namespace: a leading NUL, no file, scoped to the network
/// namespace (in Docker: the proxy's container alone).
local::endpoint endpoint_of(const std::string& address) {
  if (!address.empty() && address.front() == '@') return local::endpoint(std::string(1, '\0') + address.substr(1));
  return local::endpoint(address);
}

}  // namespace

ControlChannel::ControlChannel(asio::io_context& io, ProxyOptions& options, DecisionLog& log,
                               std::function<std::size_t()> close_disallowed)
    : io_(io), options_(options), log_(log), close_disallowed_(std::move(close_disallowed)) {}

void ControlChannel::listen(const std::string& address) {
  local::acceptor acceptor(io_);
  boost::system::error_code ec;
  acceptor.open(local(), ec);
  if (!ec) acceptor.bind(endpoint_of(address), ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on control address '" + address + "': " + ec.message());
  asio::co_spawn(io_, accept_loop(std::move(acceptor)), asio::detached);
}

awaitable<void> ControlChannel::accept_loop(local::acceptor acceptor) {
  for (;;) {
    boost::system::error_code ec;
    auto socket = std::make_shared<Socket>(io_);
    co_await acceptor.async_accept(*socket, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
  }
}

awaitable<void> ControlChannel::serve(std::shared_ptr<Socket> socket) {
  asio::streambuf in(kMaxControlLine + 1);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n = co_await asio::async_read_until(*socket, in, '\n', asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;  // closed, or a line past kMaxControlLine (not_found): the connection ends
    std::string line(asio::buffers_begin(in.data()), asio::buffers_begin(in.data()) + static_cast<std::ptrdiff_t>(n) - 1);
    in.consume(n);
    std::string reply;
    try {
      reply = handle(parse_control_line(line), socket);
    } catch (const std::exception& e) {
      reply = error_line(0, e.what());
    }
    if (reply.empty()) continue;  // an answer is not replied to
    reply += '\n';
    co_await asio::async_write(*socket, asio::buffer(reply), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
  }
  if (decider_ == socket) {
    // The decider went away: whatever it was asked is denied now, not at the timeout.
    decider_.reset();
    for (auto& [id, p] : pending_) p->wake->cancel();
  }
  boost::system::error_code ignored;
  socket->close(ignored);
}

std::string ControlChannel::handle(const ControlMessage& m, const std::shared_ptr<Socket>& socket) {
  switch (m.op) {
    case ControlOp::Update: {
      // Brokered credentials terminate every allowed host for the proxy's life (CRED-8):
      // an update there could not take a host away, so it is refused rather than half-done.
      if (!options_.credentials.empty())
        return error_line(m.id, "this proxy brokers credentials, which fix its hosts for its life: no live update");
      Allowlist next;
      try {
        next = Allowlist::parse(m.allow);
      } catch (const std::exception& e) {
        return error_line(m.id, e.what());
      }
      if (!options_.broken_control) options_.allow = std::move(next);  // the double acknowledges, changes nothing
      const std::size_t closed = close_disallowed_();
      log_.line(updated_line(options_.allow.describe(), closed));
      return ok_line(m.id, options_.allow.describe(), closed);
    }
    case ControlOp::Decide:
      if (decider_ && decider_ != socket) return error_line(0, "a decider is already attached");
      decider_ = socket;
      return ok_line(0, options_.allow.describe(), 0);
    case ControlOp::Answer: {
      if (socket != decider_) return error_line(m.id, "only the attached decider answers asks");
      const auto it = pending_.find(m.id);
      if (it == pending_.end()) return error_line(m.id, "no open ask " + std::to_string(m.id) + " (answered late?)");
      it->second->answer = DeciderAnswer{m.verdict, m.reason, false};
      it->second->wake->cancel();
      return {};
    }
  }
  return {};
}

awaitable<DeciderAnswer> ControlChannel::ask(std::string method, std::string host, std::uint16_t port) {
  if (!decider_) co_return DeciderAnswer{DeciderVerdict::Deny, "", false};
  const std::uint64_t id = next_ask_++;
  auto pending = std::make_shared<Pending>();
  pending->wake = std::make_shared<asio::steady_timer>(io_);
  pending->wake->expires_after(options_.decider_timeout);
  pending_[id] = pending;
  auto decider = decider_;  // the line goes to the decider asked, even if it is replaced meanwhile
  const std::string line = ask_line(id, method, host, port) + "\n";
  boost::system::error_code ec;
  co_await asio::async_write(*decider, asio::buffer(line), asio::redirect_error(asio::use_awaitable, ec));
  if (!ec && !pending->answer)
    co_await pending->wake->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  pending_.erase(id);
  if (pending->answer) co_return *pending->answer;
  const bool timed_out = !ec;  // the timer ran out rather than being cancelled by a departure
  co_return DeciderAnswer{DeciderVerdict::Deny,
                          timed_out ? "the host decider did not answer within " +
                                          std::to_string(options_.decider_timeout.count()) + " ms"
                                    : std::string("the host decider went away"),
                          timed_out};
}

int control_send(const std::string& address, const std::string& line) {
  try {
    asio::io_context io;
    local::socket socket(io);
    socket.connect(endpoint_of(address));
    const std::string out = line + "\n";
    asio::write(socket, asio::buffer(out));
    asio::streambuf in(kMaxControlLine + 1);
    const std::size_t n = asio::read_until(socket, in, '\n');
    std::string reply(asio::buffers_begin(in.data()), asio::buffers_begin(in.data()) + static_cast<std::ptrdiff_t>(n));
    std::cout << reply << std::flush;
    return reply.find("\"ok\":true") != std::string::npos ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "maf-sandbox-egress-proxy: control channel '" << address << "': " << e.what() << "\n";
    return 2;
  }
}

}  // namespace maf::sandbox::egress_proxy
