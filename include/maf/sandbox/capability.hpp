#pragma once
/// @file capability.hpp
/// What a sandbox can do (C-11, C-12) and whose authority a host tool uses (docs/host-tools.md).
///
/// The string values of `egress_methods`, `egress_paths` and `reclaim` are not stated by the
/// sources ([gap]); this port uses those spellings (docs/policy.md).

#include <array>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

enum class Capability {
  Exec,              ///< "exec": Sandbox::exec, argv and shell-string forms
  RunCode,           ///< "run_code": Sandbox::run_code
  HostTools,         ///< "host_tools": detached processes observable by later calls (phase 2)
  FilesIn,           ///< "files_in": Sandbox::write_file
  FilesOut,          ///< "files_out": Sandbox::stat_file, Sandbox::read_file
  FilesList,         ///< "files_list": Sandbox::list_dir
  FilesDelete,       ///< "files_delete": Sandbox::remove
  Snapshot,          ///< "snapshot": the RESET cleanup rung, and snapshot/restore/fork/release (docs/snapshots.md)
  AttachedIdentity,  ///< "attached_identity": platform identity scoped to the sandbox (phase 2)
  EgressMethods,     ///< "egress_methods": method-scoped egress rules (C-9)
  EgressPaths,       ///< "egress_paths": path-scoped egress rules (C-10)
  Reclaim,           ///< "reclaim": the RECLAIM cleanup rung (phase 2)
  ExecStream,        ///< "exec_stream": Sandbox::exec_stream, output handed over as it arrives
  Background,        ///< "background": programs started to run on, found by id by later calls
  ExecEnv,           ///< "exec_env": a command's own environment, off every command line (ENV-1)
  ExecStdin,         ///< "exec_stdin": one-shot stdin bytes for exec and exec_stream (STDIN-1)
  Pause,             ///< "pause": Sandbox::pause / resume, every guest process frozen (docs/snapshots.md SNAP-9)
  ExecStdinStream,   ///< "exec_stdin_stream": a StdinStream written while exec_stream runs (STDIN-6)
};

template <>
struct EnumTraits<Capability> {
  static constexpr std::string_view type_name = "Capability";
  static constexpr std::array<std::pair<Capability, std::string_view>, 18> values{{
      {Capability::Exec, "exec"},
      {Capability::RunCode, "run_code"},
      {Capability::HostTools, "host_tools"},
      {Capability::FilesIn, "files_in"},
      {Capability::FilesOut, "files_out"},
      {Capability::FilesList, "files_list"},
      {Capability::FilesDelete, "files_delete"},
      {Capability::Snapshot, "snapshot"},
      {Capability::AttachedIdentity, "attached_identity"},
      {Capability::EgressMethods, "egress_methods"},
      {Capability::EgressPaths, "egress_paths"},
      {Capability::Reclaim, "reclaim"},
      {Capability::ExecStream, "exec_stream"},
      {Capability::Background, "background"},
      {Capability::ExecEnv, "exec_env"},
      {Capability::ExecStdin, "exec_stdin"},
      {Capability::Pause, "pause"},
      {Capability::ExecStdinStream, "exec_stdin_stream"},
  }};
};

constexpr std::string_view to_string(Capability c) noexcept { return enum_value(c); }
/// Unknown strings, including the removed "network", throw ValueError (C-12).
inline Capability parse_capability(std::string_view text) { return parse_enum<Capability>(text); }

using CapabilitySet = EnumSet<Capability>;

/// What every sandbox owes (C-11), and what a silent backend is read as declaring.
inline constexpr CapabilitySet kDefaultCapabilities{Capability::Exec, Capability::FilesIn};

/// Whose authority a host tool exercises.
enum class Identity { App, User };

template <>
struct EnumTraits<Identity> {
  static constexpr std::string_view type_name = "Identity";
  static constexpr std::array<std::pair<Identity, std::string_view>, 2> values{{
      {Identity::App, "app"},
      {Identity::User, "user"},
  }};
};

constexpr std::string_view to_string(Identity i) noexcept { return enum_value(i); }
using IdentitySet = EnumSet<Identity>;

}  // namespace maf::sandbox
