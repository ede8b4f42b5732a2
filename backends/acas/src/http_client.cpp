// HTTP for the ACAS backend; see http_client.hpp for why a worker pool.
#include "http_client.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <curl/curl.h>

#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::acas::detail {
namespace {

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

struct Transfer {
  HttpResponse* response;
  std::size_t max_body;
  const std::atomic<bool>* stopping;
  CURL* curl;
  bool sized = false;  ///< the body's room was reserved from Content-Length
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t bytes = size * n;
  if (!t->sized) {
    // A large download (read_file of 32 MiB) grown by appends reallocates by doubling and at
    // the last step holds the body about twice; its announced length is reserved once
    // instead — only within the budget, as a longer body is abandoned anyway.
    t->sized = true;
    curl_off_t length = -1;
    if (curl_easy_getinfo(t->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK && length > 0 &&
        static_cast<std::uint64_t>(length) <= t->max_body)
      t->response->body.reserve(static_cast<std::size_t>(length));
  }
  if (t->response->body.size() + bytes > t->max_body) {
    t->response->overflowed = true;
    return 0;  // abort: the budget is spent
  }
  t->response->body.append(data, bytes);
  return bytes;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  auto colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
  if (name == "retry-after") t->response->retry_after = value;
  else if (name == "x-ms-retry-after-ms") t->response->retry_after_ms = value;
  else if (name == "content-encoding") t->response->content_encoding = value;
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Transfer*>(user)->stopping->load() ? 1 : 0;
}

HttpOutcome run_curl(const HttpRequest& request, const std::atomic<bool>& stopping) {
  static CurlGlobal global;
  HttpOutcome out;
  CURL* curl = curl_easy_init();
  if (!curl) {
    out.failure = HttpFailure::ConnectFailed;
    out.error = "curl_easy_init failed";
    return out;
  }
  Transfer t{&out.response, request.max_body, &stopping, curl};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // a redirect would carry the bearer elsewhere.
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "GET") curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  if (request.body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body->size()));
  }
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(1, request.timeout.count())));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  out.response.status = static_cast<int>(status);
  if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && out.response.overflowed)) {
    out.error = curl_easy_strerror(rc);
    out.maybe_sent = rc != CURLE_COULDNT_CONNECT && rc != CURLE_COULDNT_RESOLVE_HOST;
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) out.failure = HttpFailure::ConnectFailed;
    else if (rc == CURLE_OPERATION_TIMEDOUT) out.failure = HttpFailure::TimedOut;
    else if (rc == CURLE_ABORTED_BY_CALLBACK) out.failure = HttpFailure::Aborted;
    else out.failure = HttpFailure::Dropped;
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return out;
}

}  // namespace

struct HttpClient::Impl {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};
  bool closed = false;
  std::size_t max_workers = 1;
  std::size_t idle = 0;  ///< workers waiting for a job

  void worker() {
    std::unique_lock lock(m);
    for (;;) {
      ++idle;
      cv.wait(lock, [&] { return closed || !queue.empty(); });
      --idle;
      if (queue.empty()) return;
      std::function<void()> job = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  // Under `m`: workers start on demand, up to max_workers (A-61 keeps one pool per client,
  // and most clients never run more than a request or two at once).
  void enqueue(std::function<void()> job) {
    queue.push_back(std::move(job));
    if (queue.size() > idle && threads.size() < max_workers) threads.emplace_back([this] { worker(); });
    cv.notify_one();
  }
};

HttpClient::HttpClient(std::size_t workers) : impl_(std::make_shared<Impl>()) {
  impl_->max_workers = std::max<std::size_t>(1, workers);
}

HttpClient::~HttpClient() { shutdown(); }

void HttpClient::shutdown() {
  {
    std::lock_guard lock(impl_->m);
    if (impl_->closed && impl_->threads.empty()) return;
    impl_->closed = true;
  }
  impl_->stopping = true;
  impl_->cv.notify_all();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
  impl_->threads.clear();
}

boost::asio::awaitable<HttpOutcome> HttpClient::perform(HttpRequest request) {
  auto impl = impl_;
  auto initiation = [impl, request = std::move(request)](auto handler) mutable {
    auto executor = boost::asio::get_associated_executor(handler);
    auto work = boost::asio::make_work_guard(executor);
    auto shared = std::make_shared<decltype(handler)>(std::move(handler));
    std::lock_guard lock(impl->m);
    if (impl->closed) {
      boost::asio::post(executor, [shared, work]() mutable {
        (*shared)(std::make_exception_ptr(RuntimeError(said("the HTTP client is closed"))), HttpOutcome{});
      });
      return;
    }
    impl->enqueue([impl, request = std::move(request), shared, work, executor]() mutable {
      HttpOutcome outcome = run_curl(request, impl->stopping);
      boost::asio::post(executor, [shared, work, outcome = std::move(outcome)]() mutable {
        (*shared)(std::exception_ptr{}, std::move(outcome));
      });
    });
  };
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable),
                                                 void(std::exception_ptr, HttpOutcome)>(std::move(initiation),
                                                                                         boost::asio::use_awaitable);
}

}  // namespace maf::sandbox::acas::detail
