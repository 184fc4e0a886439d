// The table of the environment variables uwjit reads: name, kind, accepted values, default,
// whether it changes the key's salt, and what it changes. Every folder reads its variables
// through these rows (env::get_bool(vars::perf), ...); `uwjit env` checks every row as the library
// reads it; the manual's table of variables (docs/reference/environment.md) is this table (the
// test cli_env compares them).
#pragma once

#include <uwjit/common/env.hpp>

#include <array>

namespace uwjit::env::vars {

inline constexpr Variable cache{
    "UWJIT_CACHE",
    Kind::boolean,
    k_boolean_accepted,
    "1",
    Salt::no,
    "`0`/`false`/`no`/`off` (any case) disables the disk cache; the in-memory tier still works"};

inline constexpr Variable cache_dir{
    "UWJIT_CACHE_DIR",
    Kind::path,
    "a directory",
    "`$XDG_CACHE_HOME/uwjit`, else `~/.cache/uwjit`",
    Salt::no,
    "the cache directory (made absolute); with none of the three (no `HOME`), memory only with "
    "one warning. Created with mode 0700 and marked with uwjit's `CACHEDIR.TAG`. A directory "
    "that already holds other files (`UWJIT_CACHE_DIR=.` or `$HOME`) is left as it is: the "
    "cache goes into its `uwjit/` subdirectory"};

inline constexpr Variable cache_site_dir{
    "UWJIT_CACHE_SITE_DIR",
    Kind::path,
    "directories separated by `:`",
    "unset",
    Salt::no,
    "read-only site caches, consulted in this order when the cache directory misses, before "
    "compiling (e.g. a cache that `uwjit warm` filled and an administrator made read-only): their "
    "entries are verified as any and never written, locked, touched or removed. One owned by "
    "another user (root, a project account) is accepted; one that its group or others can write "
    "is refused with one warning unless `UWJIT_CACHE_TRUST_SHARED` is on. Ignored with "
    "`UWJIT_CACHE=0`"};

inline constexpr Variable xdg_cache_home{
    "XDG_CACHE_HOME",
    Kind::path,
    "an absolute directory",
    "unset",
    Salt::no,
    "the cache directory is `$XDG_CACHE_HOME/uwjit` when `UWJIT_CACHE_DIR` is unset; a relative "
    "value is ignored, as the XDG specification says"};

inline constexpr Variable cache_max_size{
    "UWJIT_CACHE_MAX_SIZE",
    Kind::size,
    k_size_accepted,
    "2G",
    Salt::no,
    "the cache's size limit; beyond it, the least recently used entries are evicted down to "
    "90 %, by one process at a time; a limit smaller than one entry keeps nothing and says so "
    "once per process"};

inline constexpr Variable lock_timeout{
    "UWJIT_LOCK_TIMEOUT",
    Kind::duration,
    k_duration_accepted,
    "60",
    Salt::no,
    "how long to wait for another process compiling the same key; then this process compiles "
    "privately, without publishing, and warns"};

inline constexpr Variable dump_dir{
    "UWJIT_DUMP_DIR",
    Kind::path,
    "a directory",
    "unset",
    Salt::no,
    "writes each kernel's canonical source (`.cpp`), optimised IR (`.ll`, when compiled) and "
    "assembly (`.s`) there, named `ORIGIN-KEY`; neither the key nor the cached object changes. "
    "A kernel that does not compile leaves its source there too, and the error names the file. "
    "With `UWJIT_DEBUG`, the debug sources go there too; a directory that cannot be made costs "
    "the dumps only"};

inline constexpr Variable debug{
    "UWJIT_DEBUG",
    Kind::boolean,
    k_boolean_accepted,
    "0",
    Salt::yes,
    "on: compile with `-g` (in the salt's flags, so debug objects are cached apart), register "
    "JIT'd code with gdb, and write the sources gdb shows (`uwjit_KEY.cpp` and two uwjit headers) "
    "to `UWJIT_DUMP_DIR`, else the working directory"};

inline constexpr Variable perf{
    "UWJIT_PERF",
    Kind::boolean,
    k_boolean_accepted,
    "0",
    Salt::no,
    "on: describe JIT'd code to perf in a jitdump, "
    "`$JITDUMPDIR/.debug/jit/llvm-IR-jit-DATE-XXXXXX/jit-PID.dump`, for `perf inject --jit`; "
    "where it cannot be written, one warning and the run goes on"};

inline constexpr Variable cache_trust_shared{
    "UWJIT_CACHE_TRUST_SHARED",
    Kind::boolean,
    k_boolean_accepted,
    "0",
    Salt::no,
    "on: accept a cache directory that other users can write or that another user owns (e.g. a "
    "read-only site cache); otherwise such a directory is refused with one warning and the "
    "process runs memory-only. See [the trust model](../explanation/reliability.md#trust-model)"};

inline constexpr Variable jitdump_dir{
    "JITDUMPDIR", Kind::path, "a directory",
    "`$HOME`",    Salt::no,   "where the jitdump of `UWJIT_PERF` goes (LLVM's variable)"};

inline constexpr Variable cuda_path{
    "UWJIT_CUDA_PATH",
    Kind::path,
    "a CUDA installation's directory",
    "unset",
    Salt::no,
    "the CUDA installation where a `cuda:sm_XX` compile finds libdevice "
    "(`nvvm/libdevice/libdevice.10.bc`); unset: `CUDA_HOME`, else `/usr/local/cuda`. Only the "
    "first of the three that is set is looked at. Needed only by GPU kernels that call `exp`, "
    "`log`, `pow`, `tanh` and the like; the digest of the libdevice found (not its path) is "
    "part of cuda keys' salt"};

inline constexpr Variable cuda_home{
    "CUDA_HOME",
    Kind::path,
    "a CUDA installation's directory",
    "unset",
    Salt::no,
    "the CUDA installation where libdevice is looked for when `UWJIT_CUDA_PATH` is unset"};

inline constexpr Variable log_level{
    "UWJIT_LOG_LEVEL",
    Kind::choice,
    "trace, debug, info, warn, error, off",
    "warn",
    Salt::no,
    "the level of uwjit's own loggers (`uwjit.engine`, `uwjit.cache`), which write to stderr and "
    "never touch the host's default spdlog logger; at `info` each compile and disk hit logs its "
    "key, origin and the digests of source and salt, at `debug` each request also logs the "
    "salt's text"};

inline constexpr Variable checked{
    "UWJIT_CHECK",
    Kind::boolean,
    k_boolean_accepted,
    "0",
    Salt::no,
    "on: every `Simulation` runs in checked mode, as with `SimulationOptions::checked` (see "
    "[Checked mode](../how-to/checked-mode.md)): accessors bounds-checked, halos poisoned; checked "
    "kernels "
    "are other text, so other keys"};

/// Every row, in the manual's order.
inline constexpr std::array<const Variable*, 15> k_all{
    &cache,        &cache_dir, &cache_site_dir, &xdg_cache_home, &cache_max_size,
    &lock_timeout, &dump_dir,  &debug,          &perf,           &cache_trust_shared,
    &jitdump_dir,  &cuda_path, &cuda_home,      &log_level,      &checked};

/// Checks every row as the library reads it (env::check), in the table's order: throws the
/// Error(usage) of the first bad one. Thread-safe as env::get() is.
inline void check_all() {
  for (const Variable* variable : k_all) {
    check(*variable);
  }
}

} // namespace uwjit::env::vars
