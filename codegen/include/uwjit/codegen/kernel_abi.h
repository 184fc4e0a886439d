/* uwjit kernel ABI: the one struct a compiled kernel receives. Version 4.
 *
 * This file is both a public header (hosts fill the struct) and the first text of every kernel's
 * source, so any change to it changes every cache key. It is plain C, free of #include.
 *
 * A kernel is one entry:  extern "C" int ENTRY(const uwjit_kernel_args* args);
 * returning UWJIT_KERNEL_OK (0) or a non-zero status of the kernel's own (UWJIT_KERNEL_CHECK_FAILED
 * is reserved for checked kernels, below). Kernels hold only
 * constant-initialised, trivially destructible globals: static initialisers of JIT-loaded objects
 * never run, so uwjit refuses objects that need them.
 *
 * | field          | meaning                                                                 |
 * |----------------|-------------------------------------------------------------------------|
 * | abi_version    | UWJIT_KERNEL_ABI_VERSION of the host that filled the struct              |
 * | n_*            | the lengths of the tables below, in the slot order of the KernelSource   |
 * | state_in       | read-only state buffers (halo-padded where the node has halos)           |
 * | state_out      | state buffers the step writes                                            |
 * | statics        | static arrays, bound as external buffers (never compiled in)             |
 * | extents        | the extents not compiled in, in the order of the extents slot table      |
 * | params         | the run-time parameters (doubles), in the order of the params slot table |
 * | dt, step       | the time step and the index of the step being taken                      |
 * | shard_offset   | per axis: global index of this shard's first interior cell (0 serially)  |
 * | shard_extent   | per axis: this shard's interior extent                                   |
 * | global_extent  | per axis: the whole domain's interior extent                             |
 * | update_begin   | per axis: the first local interior index this call updates (see below)   |
 * | update_end     | per axis: one past the last index this call updates                      |
 * | integrals      | per integral slot: this shard's partial sum, written by the kernel       |
 * | check          | checked kernels only: UWJIT_CHECK_RECORD_SIZE entries, the first bad     |
 * |                | access (below); may be null, and unchecked kernels never read it        |
 * | n_members      | batch kernels only: the number of calls in `members`                     |
 * | members        | batch kernels only: one complete struct per call (see below)             |
 * | member_status  | batch kernels only: n_members entries, each call's status                |
 *
 * Per-axis arrays hold the domain axes first; entries past the last domain axis are 0. The
 * update box is the whole local interior, [0, shard_extent), unless the kernel declared that it
 * honours the box (KernelWriter::update_box()): such a kernel updates exactly the cells of the
 * box and sums its integrals over them only, and a runtime may call it several times per step
 * on boxes that tile the interior (the interior while halos are in flight, then the boundary).
 * Version 2 added update_begin and update_end.
 *
 * A checked kernel (KernelWriter::checked(true)) tests every accessor index against the buffer's
 * layout (reads: -halo .. n+halo-1; writes to a state output: the update box on domain axes,
 * 0 .. n-1 on others). An access outside is never made (a read gives 0, a write goes to a dummy);
 * the first one is recorded in `check`, which the kernel zeroes on entry, and the kernel returns
 * UWJIT_KERNEL_CHECK_FAILED. The record, as uw_i64 entries:
 *
 * | entry | meaning                                                                          |
 * |-------|----------------------------------------------------------------------------------|
 * | 0     | UWJIT_CHECK_NONE, UWJIT_CHECK_READ or UWJIT_CHECK_WRITE                          |
 * | 1     | the buffer's role: 0 state_in, 1 state_out, 2 statics                           |
 * | 2     | the buffer's slot in its role's table                                            |
 * | 3     | the first axis whose index is out of range                                       |
 * | 4, 5  | the range allowed on that axis: [low, high)                                      |
 * | 6     | the buffer's rank (index count)                                                  |
 * | 7..   | the indices, at most UWJIT_CHECK_MAX_INDICES of them                              |
 *
 * Version 3 added n_params, params and check.
 *
 * A batch kernel (KernelWriter::batch(true), what an ensemble runs) makes in one call the calls
 * of the same kernel listed in `members`, in order: for each m in [0, n_members) it runs the
 * kernel's update on members[m] (its own buffers, params, box and integrals table, exactly as a
 * plain kernel would on that struct) and stores the status in member_status[m]; a failing call
 * does not stop the others. The entry returns UWJIT_KERNEL_OK, or the first non-zero status.
 * Only the three batch fields of the outer struct are read; plain kernels never read them.
 * Version 4 added n_members, members and member_status.
 */
#ifndef UWJIT_KERNEL_ABI_H
#define UWJIT_KERNEL_ABI_H

#define UWJIT_KERNEL_ABI_VERSION 4
#define UWJIT_MAX_AXES 3
#define UWJIT_KERNEL_OK 0
#define UWJIT_KERNEL_CHECK_FAILED 0x7FFF0C4E
#define UWJIT_CHECK_NONE 0
#define UWJIT_CHECK_READ 1
#define UWJIT_CHECK_WRITE 2
#define UWJIT_CHECK_MAX_INDICES 9
#define UWJIT_CHECK_RECORD_SIZE 16

typedef double uw_f64;
typedef float uw_f32;
typedef long long uw_i64;
typedef int uw_i32;
typedef signed char uw_i8;
typedef unsigned char uw_u8;

typedef struct uwjit_kernel_args {
  int abi_version;
  int n_state_in;
  int n_state_out;
  int n_statics;
  int n_extents;
  int n_integrals;
  int n_params;
  const void* const* state_in;
  void* const* state_out;
  const void* const* statics;
  const uw_i64* extents;
  const double* params;
  double dt;
  uw_i64 step;
  uw_i64 shard_offset[UWJIT_MAX_AXES];
  uw_i64 shard_extent[UWJIT_MAX_AXES];
  uw_i64 global_extent[UWJIT_MAX_AXES];
  uw_i64 update_begin[UWJIT_MAX_AXES];
  uw_i64 update_end[UWJIT_MAX_AXES];
  double* integrals;
  uw_i64* check;
  uw_i64 n_members;
  const struct uwjit_kernel_args* members;
  int* member_status;
} uwjit_kernel_args;

#ifdef __cplusplus
extern "C" {
#endif
typedef int (*uwjit_kernel_fn)(const uwjit_kernel_args* args);
#ifdef __cplusplus
}
#endif

#endif /* UWJIT_KERNEL_ABI_H */
