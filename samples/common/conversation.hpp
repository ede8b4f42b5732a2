#pragma once
// What the engine samples (02_docker_script, 06_acas, 07_wslc) share: a conversation of their
// own, whose sandboxes are disposed however its steps end, and a check afterwards, from the
// provider, that nothing of it is left. (samples/CMakeLists.txt adds only directories with a
// CMakeLists.txt, so this folder is not a sample.)
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/sync.hpp>

#include <unistd.h>

#include <iostream>
#include <string>

namespace sample {

/// A key in a scope no concurrent run of the sample shares (the process id is in it).
inline maf::sandbox::SandboxKey own_key(const std::string& sample, const std::string& agent) {
  return {sample + "-" + std::to_string(::getpid()), "conversation-1", agent, ""};
}

/// Runs `steps`. If they throw, the conversation is purged (dispose_scope never throws) and
/// the exception goes on unchanged. Otherwise the key's sandbox is disposed and a purge of the
/// conversation — which asks the provider by label, not this process's memory — must find
/// nothing. Returns whether nothing was left.
template <class Steps>
bool run_then_dispose(maf::sandbox::BlockingRunner& run, maf::sandbox::SandboxRouter& router,
                      const maf::sandbox::SandboxKey& key, Steps steps) {
  try {
    steps();
  } catch (...) {
    run([&] { return router.dispose_scope(key.scope, key.thread_id); });
    throw;
  }
  run([&] { return router.dispose(key); });
  const maf::sandbox::ScopePurge left = run([&] { return router.dispose_scope(key.scope, key.thread_id); });
  std::cout << "disposed; a purge of the conversation afterwards found " << left.disposed << " sandbox(es)\n";
  return left.disposed == 0 && !left.undisposed;
}

}  // namespace sample
