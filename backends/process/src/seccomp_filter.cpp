#include "seccomp_filter.hpp"

#include <sched.h>
#include <seccomp.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace {

using Context = std::unique_ptr<std::remove_pointer_t<scmp_filter_ctx>, decltype(&seccomp_release)>;

void check(int rc, const std::string& what) {
  if (rc < 0) throw OSError(said("libseccomp refused ") + what + ": " + std::strerror(-rc));
}

/// Adds `rule` unless the call does not exist on this architecture (e.g. vm86 on x86-64).
void deny(scmp_filter_ctx ctx, std::string_view name, unsigned errno_value, std::vector<scmp_arg_cmp> args = {}) {
  const int nr = seccomp_syscall_resolve_name(std::string(name).c_str());
  if (nr == __NR_SCMP_ERROR) return;
  const int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(errno_value), nr, static_cast<unsigned>(args.size()),
                                        args.empty() ? nullptr : args.data());
  // A pseudo-syscall number (negative) is one this architecture does not have: nothing to deny.
  if (rc == -EDOM || (rc < 0 && nr < 0)) return;
  check(rc, "a rule for " + std::string(name));
}

}  // namespace

const std::vector<DeniedSyscall>& denied_syscalls() {
  static const std::vector<DeniedSyscall> table{
      {"keyctl", "the kernel keyring is not namespaced: keys of the host's users and services"},
      {"add_key", "the kernel keyring is not namespaced"},
      {"request_key", "the kernel keyring is not namespaced; can also run a host upcall"},
      {"init_module", "loading kernel code"},
      {"finit_module", "loading kernel code"},
      {"delete_module", "unloading the host's kernel modules"},
      {"create_module", "loading kernel code (obsolete)"},
      {"get_kernel_syms", "kernel symbol addresses (obsolete)"},
      {"query_module", "kernel module information (obsolete)"},
      {"reboot", "restarts the host (or, in a pid namespace, is only noise)"},
      {"kexec_load", "replaces the running kernel"},
      {"kexec_file_load", "replaces the running kernel"},
      {"bpf", "programs run in the host kernel; a long record of verifier escapes"},
      {"userfaultfd", "stalls kernel threads at will: the classic race-widening primitive of kernel exploits"},
      {"perf_event_open", "kernel addresses and side channels; frequent source of kernel bugs"},
      {"mount", "mount points of the guest's namespace are bubblewrap's to set, not the guest's"},
      {"umount", "lifting a read-only or masking mount would uncover what it hides"},
      {"umount2", "lifting a read-only or masking mount would uncover what it hides"},
      {"pivot_root", "re-rooting the namespace"},
      {"fsopen", "the new mount API: mount by another name"},
      {"fsconfig", "the new mount API"},
      {"fsmount", "the new mount API"},
      {"fspick", "the new mount API: reconfigures an existing (e.g. read-only) mount"},
      {"move_mount", "the new mount API"},
      {"open_tree", "the new mount API: clones mounts"},
      {"mount_setattr", "the new mount API: could clear a read-only flag"},
      {"unshare", "new namespaces (a fresh user namespace gives a full capability set in it: the usual first "
                  "step of kernel exploits)"},
      {"setns", "joining another namespace"},
      {"clone", "only with namespace flags (CLONE_NEW*), for the same reason as unshare; plain fork and threads "
                "are allowed"},
      {"clone3", "its flags live in memory a filter cannot read, so it answers ENOSYS and libc falls back to "
                 "clone, which is checked"},
      {"swapon", "host swap configuration"},
      {"swapoff", "host swap configuration"},
      {"acct", "host process accounting"},
      {"settimeofday", "the host clock (time is not namespaced)"},
      {"clock_settime", "the host clock"},
      {"clock_adjtime", "the host clock"},
      {"open_by_handle_at", "opens host files by handle, bypassing the mount namespace (the 'shocker' escape)"},
      {"name_to_handle_at", "the handle half of open_by_handle_at"},
      {"iopl", "raw I/O port access"},
      {"ioperm", "raw I/O port access"},
      {"lookup_dcookie", "kernel profiling internals"},
      {"personality", "only the flags that weaken the address space (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, "
                      "MMAP_PAGE_ZERO): they help exploits; plain queries and PER_LINUX are allowed"},
      {"quotactl", "host filesystem quotas"},
      {"syslog", "the kernel log: host activity and kernel addresses"},
      {"vm86", "virtual 8086 mode (32-bit only)"},
      {"vm86old", "virtual 8086 mode (32-bit only)"},
      {"uselib", "obsolete loader call, historical bugs"},
      {"ustat", "obsolete"},
      {"sysfs", "obsolete"},
      {"_sysctl", "obsolete sysctl interface"},
      {"nfsservctl", "host NFS server (removed from Linux)"},
      {"fanotify_init", "filesystem-wide event monitoring"},
      {"io_uring_setup", "io_uring bypasses syscall filtering and has a long record of kernel bugs"},
      {"io_uring_enter", "io_uring"},
      {"io_uring_register", "io_uring"},
      {"kcmp", "compares kernel objects of other processes (ptrace-class)"},
  };
  return table;
}

std::string compile_seccomp_program() {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW), &seccomp_release);
  if (!ctx) throw OSError(said("libseccomp could not create a filter (seccomp_init)"));
  // Another architecture's calls (i386 `int 0x80`) would be judged by other numbers: kill.
  check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS), "the bad-architecture action");
  for (const auto& d : denied_syscalls()) {
    if (d.name == "clone" || d.name == "clone3" || d.name == "personality") continue;
    deny(ctx.get(), d.name, EPERM);
  }
  // clone with any namespace flag; each rule is an OR'ed alternative.
  constexpr scmp_datum_t kCloneNewTime = 0x00000080;  // not in every libc's sched.h
  for (const scmp_datum_t flag : std::initializer_list<scmp_datum_t>{
           CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
           kCloneNewTime})
    deny(ctx.get(), "clone", EPERM, {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)});
  deny(ctx.get(), "clone3", ENOSYS);
  for (const scmp_datum_t flag : std::initializer_list<scmp_datum_t>{READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE,
                                                                     MMAP_PAGE_ZERO})
    deny(ctx.get(), "personality", EPERM, {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)});

  // seccomp_export_bpf writes to an fd: a memfd collects it.
  const int fd = ::memfd_create("maf-seccomp-export", MFD_CLOEXEC);
  if (fd < 0) throw OSError(std::string(said("memfd_create: ")) + std::strerror(errno));
  std::string program;
  try {
    check(seccomp_export_bpf(ctx.get(), fd), "exporting the program");
    const off_t size = ::lseek(fd, 0, SEEK_END);
    if (size <= 0) throw OSError(said("libseccomp exported an empty program"));
    program.resize(static_cast<std::size_t>(size));
    if (::pread(fd, program.data(), program.size(), 0) != size)
      throw OSError(std::string(said("reading the exported program: ")) + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return program;
}

namespace {

/// A memfd holding `program`, positioned at 0 (pwrite does not move the offset).
int program_memfd(const std::string& program, unsigned flags) {
  const int fd = ::memfd_create("maf-seccomp", flags);
  if (fd < 0) throw OSError(std::string(said("memfd_create: ")) + std::strerror(errno));
  std::size_t done = 0;
  while (done < program.size()) {
    const ssize_t n = ::pwrite(fd, program.data() + done, program.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      throw OSError(std::string(said("writing the seccomp program: ")) + std::strerror(e));
    }
    done += static_cast<std::size_t>(n);
  }
  return fd;
}

}  // namespace

int seccomp_program_fd(const std::string& program) { return program_memfd(program, MFD_CLOEXEC); }

int sealed_program_fd(const std::string& program) {
  const int fd = program_memfd(program, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    const int e = errno;
    ::close(fd);
    throw OSError(std::string(said("sealing the seccomp program: ")) + std::strerror(e));
  }
  return fd;
}

int reopen_program_fd(int sealed) noexcept {
  const std::string path = "/proc/self/fd/" + std::to_string(sealed);
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

}  // namespace maf::sandbox::process
