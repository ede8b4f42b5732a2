#pragma once
// A scripted WslcRunner for the unit tests (no engine): answers each call by the latest rule
// whose prefix its joined argv starts with, and records every argv (T-9's golden argv of
// what acquire and disposal send).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <string>
#include <vector>

#include "maf/sandbox/wslc/runner.hpp"

namespace wslc_test {

using V = std::vector<std::string>;
using maf::sandbox::wslc::WslcCall;
using maf::sandbox::wslc::WslcOutcome;

inline std::string joined(const V& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

inline bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

/// Answers each call by the latest rule whose prefix its joined argv starts with (so a test
/// overrides a shared script by adding a rule); records every argv. Unmatched calls succeed
/// with no output.
class ScriptedRunner final : public maf::sandbox::wslc::WslcRunner {
public:
  using Answer = std::function<WslcOutcome(const V&)>;
  void on(std::string prefix, WslcOutcome outcome) {
    rules_.emplace_back(std::move(prefix), [outcome](const V&) { return outcome; });
  }
  void on(std::string prefix, Answer answer) { rules_.emplace_back(std::move(prefix), std::move(answer)); }
  boost::asio::awaitable<WslcOutcome> run(WslcCall call) override {
    calls.push_back(call.args);
    stdins.push_back(call.stdin_bytes.value_or(""));
    const std::string line = joined(call.args);
    for (auto rule = rules_.rbegin(); rule != rules_.rend(); ++rule)
      if (starts_with(line, rule->first)) co_return rule->second(call.args);
    co_return WslcOutcome{};
  }
  /// The joined argv of every call, in order.
  V verbs() const {
    V out;
    for (const auto& c : calls) out.push_back(joined(c));
    return out;
  }
  std::size_t count(const std::string& prefix) const {
    std::size_t n = 0;
    for (const auto& c : calls) n += starts_with(joined(c), prefix) ? 1 : 0;
    return n;
  }
  std::vector<V> calls;
  /// Each call's stdin bytes (the head only, for a streamed upload), in call order.
  std::vector<std::string> stdins;

private:
  std::vector<std::pair<std::string, Answer>> rules_;
};

}  // namespace wslc_test
