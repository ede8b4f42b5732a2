#include "handles.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>

#include "maf/sandbox/errors.hpp"
#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/router.hpp"

namespace maf::sandbox::mcp {

namespace {

constexpr std::string_view kPrefix = "sbx-";
constexpr std::size_t kRandomBytes = 16;
constexpr std::size_t kRemembered = 4096;

std::string mint() {
  unsigned char bytes[kRandomBytes];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw RuntimeError("mcp: OpenSSL RAND_bytes failed; no handle minted");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string h(kPrefix);
  for (unsigned char b : bytes) {
    h += kHex[b >> 4];
    h += kHex[b & 15];
  }
  return h;
}

bool well_formed(const std::string& h) {
  return h.size() == kPrefix.size() + 2 * kRandomBytes && h.compare(0, kPrefix.size(), kPrefix) == 0 &&
         std::all_of(h.begin() + kPrefix.size(), h.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// What the tables are keyed by: the handle's SHA-256, so a lookup's comparisons (std::map,
/// early exit) time the digest's bytes, never the handle's — no prefix of a live handle can be
/// learnt by timing forged ones.
std::string digest(const std::string& handle) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(handle.data(), handle.size(), md, &n, EVP_sha256(), nullptr) != 1)
    throw RuntimeError("mcp: OpenSSL SHA-256 failed");
  return std::string(reinterpret_cast<const char*>(md), n);
}

ToolResult refusal(std::string sentence) { return ToolResult::error("Error: " + std::move(sentence)); }

}  // namespace

SandboxHandles::SandboxHandles(boost::asio::any_io_executor executor, std::shared_ptr<SandboxRouter> router,
                               std::vector<SandboxSpec> specs, ToolsetOptions base, HandleLimits limits)
    : executor_(std::move(executor)),
      router_(std::move(router)),
      specs_(std::move(specs)),
      base_(std::move(base)),
      limits_(limits),
      reaper_timer_(std::make_shared<boost::asio::steady_timer>(executor_)) {
  if (specs_.empty()) throw ValueError("mcp: the handle table needs at least one spec");
  if (limits_.idle_timeout <= std::chrono::milliseconds::zero()) throw ValueError("mcp: the handle idle timeout must be positive");
  if (limits_.cap == 0) throw ValueError("mcp: the handle cap must be at least 1");
}

std::variant<std::string, ToolResult> SandboxHandles::open(const std::string& kind) {
  const SandboxSpec* spec = nullptr;
  for (const auto& s : specs_)
    if (kind.empty() || s.kind() == kind) {
      spec = &s;
      break;
    }
  if (!spec) {
    std::string names;
    for (const auto& s : specs_) names += (names.empty() ? "'" : ", '") + s.kind() + "'";
    return refusal("no spec named '" + kind.substr(0, 80) + "' is configured on this server (it serves " + names + ")");
  }
  if (open_.size() >= limits_.cap)
    return refusal("this server's cap of " + std::to_string(limits_.cap) +
                   " open sandboxes is reached; close one with close_sandbox first");
  ToolsetOptions options = base_;
  options.agent = "h" + std::to_string(++serial_);
  options.cleanup = Cleanup::Reclaim;  // the point of a handle: the sandbox stays between calls
  std::vector<SandboxedTool> tools;
  try {
    tools = make_toolset(router_, *spec, options);  // checked at start-up; a refusal now is a fault
  } catch (const std::exception& e) {
    logger()->error("mcp: open_sandbox: spec '{}' refused: {}", spec->kind(), e.what());
    return ToolResult::error(kRefusalSandboxUnavailable);
  }
  Entry entry{options.agent, spec->kind(), std::move(tools), std::chrono::steady_clock::now(), 0};
  std::string handle = mint();
  logger()->info("mcp: sandbox handle {} opened (spec '{}')", entry.agent, entry.kind);
  open_.emplace(digest(handle), std::move(entry));
  return handle;
}

std::variant<const std::vector<SandboxedTool>*, ToolResult> SandboxHandles::use(const std::string& handle) {
  const std::string key = digest(handle);
  const auto it = open_.find(key);
  if (it == open_.end()) {
    if (const auto g = gone_.find(key); g != gone_.end())
      return refusal(std::string("sandbox handle is ") + g->second + "; open a new one with open_sandbox");
    if (!well_formed(handle))
      return refusal("the sandbox argument is not a sandbox handle (open_sandbox returns one: sbx- and 32 hex digits)");
    return refusal("unknown sandbox handle: this server instance never issued it (forged, or from another server)");
  }
  Entry& e = it->second;
  if (e.busy == 0 && std::chrono::steady_clock::now() - e.last_used > limits_.idle_timeout) {
    // Expired while the reaper had not come round yet: the same verdict the reaper gives.
    Entry gone = std::move(e);
    open_.erase(it);
    remember(key, "expired (idle past its timeout)");
    boost::asio::co_spawn(executor_, dispose(std::move(gone), "expired"), boost::asio::detached);
    return refusal("sandbox handle is expired (idle past its timeout); open a new one with open_sandbox");
  }
  ++e.busy;
  e.last_used = std::chrono::steady_clock::now();
  return &e.tools;
}

void SandboxHandles::release(const std::string& handle) {
  const auto it = open_.find(digest(handle));
  if (it == open_.end()) return;
  if (it->second.busy > 0) --it->second.busy;
  it->second.last_used = std::chrono::steady_clock::now();
}

boost::asio::awaitable<ToolResult> SandboxHandles::close(std::string handle) {
  const std::string key = digest(handle);
  const auto it = open_.find(key);
  if (it == open_.end()) {
    auto verdict = use(handle);  // the same sentence a call with it would get
    co_return std::get<ToolResult>(std::move(verdict));
  }
  Entry gone = std::move(it->second);
  open_.erase(it);
  remember(key, "closed");
  co_await dispose(std::move(gone), "closed");
  ToolResult r = ToolResult::text("sandbox closed", kLibraryAuthoredLabels);
  r.structured = nlohmann::json{{"closed", true}};
  co_return r;
}

boost::asio::awaitable<void> SandboxHandles::reap_idle() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, Entry>> expired;
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.busy == 0 && now - it->second.last_used > limits_.idle_timeout) {
      expired.emplace_back(it->first, std::move(it->second));
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [key, entry] : expired) {
    remember(key, "expired (idle past its timeout)");
    co_await dispose(std::move(entry), "expired");
  }
}

void SandboxHandles::start_reaper() {
  if (*reaping_) return;
  *reaping_ = true;
  const auto period = std::clamp(limits_.idle_timeout / 4, std::chrono::milliseconds(50),
                                 std::chrono::milliseconds(5000));
  boost::asio::co_spawn(
      executor_,
      [this, period, reaping = reaping_, timer = reaper_timer_]() -> boost::asio::awaitable<void> {
        while (*reaping) {
          timer->expires_after(period);
          boost::system::error_code ec;
          co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
          if (!*reaping) co_return;
          co_await reap_idle();
        }
      },
      boost::asio::detached);
}

boost::asio::awaitable<void> SandboxHandles::close_all() {
  *reaping_ = false;
  reaper_timer_->cancel();  // the io_context then holds no work of ours
  while (!open_.empty()) {
    auto it = open_.begin();
    const std::string key = it->first;
    Entry gone = std::move(it->second);
    open_.erase(it);
    remember(key, "closed (the server is exiting)");
    co_await dispose(std::move(gone), "server exit");
  }
}

boost::asio::awaitable<void> SandboxHandles::dispose(Entry entry, const char* why) {
  SandboxKey key{base_.scope, base_.thread, entry.agent, ""};
  co_await router_->dispose(key);  // never throws (C-71); failures are logged
  logger()->info("mcp: sandbox handle {} {}; its sandbox disposed", entry.agent, why);
}

void SandboxHandles::remember(const std::string& key, const char* why) {
  if (gone_.emplace(key, why).second) gone_order_.push_back(key);
  while (gone_order_.size() > kRemembered) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
}

}  // namespace maf::sandbox::mcp
