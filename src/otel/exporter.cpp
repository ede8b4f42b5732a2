// OtlpExporter (otel.hpp): a bounded queue filled on the callers' threads, drained by one
// thread of its own that builds spans and POSTs them over libcurl. The caller's side takes
// one mutex and copy-assigns the event into a slot; nothing it does waits on the network.
//
// Why two slot buffers rather than a deque (bench/RESULTS.md "observer"): a deque entry was
// a fresh deep copy per event — an allocation per long string plus a node — that the
// exporter's thread then freed on the other core. Here the callers fill `filling` and the
// worker swaps it for `draining` whole, builds its spans without the lock and leaves the
// slots as they are, so the next copy into a slot reuses the strings' buffers: in the steady
// state the calling thread allocates nothing.
#include <curl/curl.h>

#include <atomic>
#include <condition_variable>
#include <algorithm>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/otel.hpp"
#include "span_builder.hpp"

namespace maf::sandbox::otel {
namespace {

void global_curl_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t discard_body(char*, std::size_t size, std::size_t count, void*) { return size * count; }

}  // namespace

struct OtlpExporter::Impl {
  explicit Impl(OtlpOptions o) : options(std::move(o)), builder(options.parent, options.export_payloads) {}

  OtlpOptions options;
  detail::SpanBuilder builder;  // the worker's alone

  mutable std::mutex mutex;
  std::condition_variable wake;      // the worker: events, or stop
  std::condition_variable drained;   // flush(): the worker finished what was accepted
  // The callers' side (guarded by mutex): slots [0, filled) hold events; the slots past it
  // keep their old contents for their buffers' sake.
  std::vector<SandboxEvent> filling;
  std::size_t filled = 0;
  // The worker's alone between swaps.
  std::vector<SandboxEvent> draining;
  bool stopping = false;
  std::uint64_t accepted = 0;   // events taken into a slot
  std::uint64_t finished = 0;   // of those, posted or lost
  std::uint64_t flush_target = 0;  // flush(): wake until `finished` reaches it
  OtlpStats stats;
  std::thread worker;

  void run();
  /// One POST; true on 2xx. The worker's thread only.
  bool post(const std::string& body);
};

bool OtlpExporter::Impl::post(const std::string& body) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return false;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  for (const auto& [k, v] : options.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, options.endpoint.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // a thread of our own: no SIGALRM games
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_body);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    logger()->debug("OTLP export to {} failed: {}", options.endpoint, curl_easy_strerror(rc));
    return false;
  }
  if (status < 200 || status > 299) {
    logger()->debug("OTLP export to {} answered HTTP {}", options.endpoint, status);
    return false;
  }
  return true;
}

void OtlpExporter::Impl::run() {
  std::vector<nlohmann::json> spans;
  // Posts what `spans` holds and counts it, exported or lost.
  auto post_spans = [&] {
    const std::size_t n = spans.size();
    if (n == 0) return;
    const bool ok = post(detail::SpanBuilder::document(options.service_name, std::move(spans))
                             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    spans.clear();
    std::lock_guard lock(mutex);
    if (ok) {
      stats.spans_exported += n;
    } else {
      stats.spans_lost += n;
      ++stats.posts_failed;
    }
  };
  while (true) {
    std::size_t taken = 0;
    bool stop = false;
    {
      std::unique_lock lock(mutex);
      // Callers do not wake us per event (a futex wake per event would be most of its
      // cost): a full batch, a flush, the destructor or the interval does.
      wake.wait_for(lock, options.flush_interval,
                    [&] { return stopping || filled >= options.max_batch || finished < flush_target; });
      // Everything filled so far, in one swap: memory stays bounded by the two buffers
      // (max_queue each) and one batch of spans.
      std::swap(filling, draining);
      taken = filled;
      filled = 0;
      stop = stopping;
    }
    for (std::size_t i = 0; i < taken; ++i) {
      builder.add(draining[i], spans);
      if (spans.size() >= options.max_batch) post_spans();
    }
    post_spans();
    {
      std::lock_guard lock(mutex);
      finished += taken;
    }
    drained.notify_all();
    // on_event refuses once stopping is set, and stopping was read with the swap: nothing
    // can have been filled since.
    if (stop) return;
  }
}

OtlpExporter::OtlpExporter(OtlpOptions options) {
  if (options.endpoint.empty()) throw ValueError("OtlpExporter: the endpoint is empty");
  if (options.max_queue == 0) throw ValueError("OtlpExporter: max_queue must be positive, got 0");
  if (options.max_batch == 0) throw ValueError("OtlpExporter: max_batch must be positive, got 0");
  if (options.timeout.count() <= 0)
    throw ValueError("OtlpExporter: timeout must be positive, got " + std::to_string(options.timeout.count()) + " ms");
  global_curl_init();
  impl_ = std::make_unique<Impl>(std::move(options));
  // Slots reserved up front (bounded, for a huge max_queue), so the callers' first fills
  // do not also pay the vector's regrowth.
  const std::size_t reserve = std::min<std::size_t>(impl_->options.max_queue, 4096);
  impl_->filling.reserve(reserve);
  impl_->draining.reserve(reserve);
  impl_->worker = std::thread([impl = impl_.get()] { impl->run(); });
}

OtlpExporter::~OtlpExporter() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->worker.join();
}

void OtlpExporter::on_event(const SandboxEvent& event) {
  {
    std::lock_guard lock(impl_->mutex);
    Impl& q = *impl_;
    if (q.filled >= q.options.max_queue || q.stopping) {
      ++q.stats.events_dropped;
      return;
    }
    // Copy-assigning into a slot that held an event of the same type reuses its strings'
    // buffers: no allocation once the slots are warm.
    if (q.filled < q.filling.size())
      q.filling[q.filled] = event;
    else
      q.filling.push_back(event);
    ++q.filled;
    ++q.accepted;
    ++q.stats.events_accepted;
    if (q.filled != q.options.max_batch) return;
  }
  impl_->wake.notify_one();  // a full batch is waiting
}

bool OtlpExporter::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(impl_->mutex);
  const std::uint64_t target = impl_->accepted;
  impl_->flush_target = std::max(impl_->flush_target, target);
  impl_->wake.notify_one();
  return impl_->drained.wait_for(lock, timeout, [&] { return impl_->finished >= target; });
}

OtlpStats OtlpExporter::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

const OtlpOptions& OtlpExporter::options() const noexcept { return impl_->options; }

}  // namespace maf::sandbox::otel
