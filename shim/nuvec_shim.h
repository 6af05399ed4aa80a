/*
 * nuvec_shim.h - the C ABI of nuvec's Apple-GPU shim (implemented in Swift, see swift/).
 *
 * One header, versioned by NUVEC_SHIM_ABI_VERSION. A caller must check that
 * nv_abi_version() equals the version it was written against before any other call;
 * any change to a signature, struct layout or constant bumps the version.
 *
 * Conventions
 * -----------
 * - Every fallible function returns an nv_status (NV_OK == 0) and takes a last argument
 *   `char **error`. When `error` is not NULL the shim stores NULL there on success and a
 *   heap string describing the failure otherwise; the caller frees it with nv_string_free().
 *   Passing error == NULL is allowed (the message is then dropped).
 * - Objects are named by 64-bit handles (nv_handle), never by pointers. A handle encodes its
 *   kind and a generation, so a stale, foreign or wrong-kind handle gives
 *   NV_ERR_INVALID_HANDLE instead of undefined behaviour. Handle 0 is never valid.
 * - Every handle a function hands out carries one reference; drop it with nv_release().
 *   Objects keep what they depend on alive (a buffer keeps its device, a kernel its library),
 *   so handles may be released in any order.
 * - Strings passed in are NUL-terminated UTF-8. Strings handed out are heap copies that the
 *   caller frees with nv_string_free().
 * - Pointers named `out` must not be NULL (NV_ERR_INVALID_ARGUMENT otherwise).
 *
 * Thread safety (each function repeats its own rule)
 * -------------
 * - "any thread": may be called concurrently from any number of threads.
 * - Streams serialise their own calls internally: concurrent calls on one stream are safe but
 *   their dispatches land in an unspecified order; use one stream per thread for a fixed order.
 * - Buffer memory (nv_buffer_contents) is not synchronised by the shim: the caller must not
 *   touch it while a committed dispatch that uses the buffer has not finished (nv_stream_wait).
 *
 * Devices
 * -------
 * A Metal device (nv_device_open) exists only on Apple platforms with a GPU. The host device
 * (nv_device_open_host) exists everywhere: its buffers are page-aligned CPU memory and it
 * cannot compile or run kernels (NV_ERR_UNSUPPORTED). It lets callers and tests use buffers,
 * streams and validation on machines without Metal.
 */
#ifndef NUVEC_SHIM_H
#define NUVEC_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NUVEC_SHIM_ABI_VERSION 1u

/* ---------------------------------------------------------------- status codes */

typedef int32_t nv_status;

enum {
    NV_OK = 0,
    NV_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, bad size, bad grid, bad option ...        */
    NV_ERR_INVALID_HANDLE = 2,   /* handle 0, released, never issued, or of the wrong kind     */
    NV_ERR_NO_METAL = 3,         /* no Metal device on this host (always the case on Linux)    */
    NV_ERR_OUT_OF_MEMORY = 4,    /* allocation failed or exceeds the device's buffer limit     */
    NV_ERR_COMPILE = 5,          /* the Metal compiler rejected the source; message is its log */
    NV_ERR_NOT_FOUND = 6,        /* no kernel function of that name in the library             */
    NV_ERR_UNSUPPORTED = 7,      /* the device cannot do this (the host device has no GPU)     */
    NV_ERR_GPU = 8,              /* a committed command buffer failed on the GPU               */
    NV_ERR_INTERNAL = 9          /* a bug in the shim                                          */
};

/* ---------------------------------------------------------------- handles */

typedef uint64_t nv_handle;
typedef nv_handle nv_device;
typedef nv_handle nv_buffer;
typedef nv_handle nv_library;
typedef nv_handle nv_kernel;
typedef nv_handle nv_stream;

enum {
    NV_KIND_DEVICE = 1,
    NV_KIND_BUFFER = 2,
    NV_KIND_LIBRARY = 3,
    NV_KIND_KERNEL = 4,
    NV_KIND_STREAM = 5
};

/* ---------------------------------------------------------------- structs */

/* Limits of a device. 56 bytes; layout fixed by NUVEC_SHIM_ABI_VERSION. */
typedef struct nv_device_limits {
    uint64_t max_buffer_length;              /* bytes, largest single buffer                  */
    uint64_t recommended_working_set_size;   /* bytes, 0 when unknown                         */
    uint32_t max_threads_per_threadgroup[3]; /* per dimension                                 */
    uint32_t max_threadgroup_memory_length;  /* bytes                                         */
    uint32_t max_buffer_arguments;           /* argument slots 0 .. n-1 ([[buffer(i)]])       */
    uint32_t max_constant_argument_length;   /* largest NV_ARG_BYTES argument, bytes          */
    uint32_t has_unified_memory;             /* 1 when CPU and GPU share memory               */
    uint32_t supports_nonuniform_threadgroups; /* 1: NV_GRID_THREADS dispatches exact grids   */
    uint32_t is_metal;                       /* 1 for a Metal device, 0 for the host device   */
    uint32_t reserved;                       /* 0                                             */
} nv_device_limits;

/* Math modes for nv_compile_options.math_mode. SAFE (the default) keeps IEEE-754 results and
 * precise math functions, as MLX does; RELAXED and FAST allow lossy rewrites. */
enum {
    NV_MATH_SAFE = 0,
    NV_MATH_RELAXED = 1,
    NV_MATH_FAST = 2
};

/* Options for nv_library_compile. 24 bytes. A NULL options pointer means all defaults. */
typedef struct nv_compile_options {
    int32_t math_mode;           /* NV_MATH_*                                                 */
    uint32_t language_version;   /* 0: the compiler's default; else major*100+minor, one of
                                    200 210 220 230 240 300 310 320                            */
    const char *preprocessor_macros; /* NULL or "NAME=VALUE" / "NAME" entries, one per line;
                                        NAME is a C identifier, VALUE has no newline          */
    uint64_t reserved;           /* 0                                                         */
} nv_compile_options;

/* Per-pipeline thread limits. 16 bytes. */
typedef struct nv_kernel_info {
    uint32_t max_total_threads_per_threadgroup;
    uint32_t thread_execution_width;        /* SIMD width                                  */
    uint32_t static_threadgroup_memory_length; /* bytes                                    */
    uint32_t reserved;
} nv_kernel_info;

/* One kernel argument for nv_stream_dispatch. 40 bytes. */
enum {
    NV_ARG_BUFFER = 1, /* bind `buffer` at byte `offset` to [[buffer(index)]]               */
    NV_ARG_BYTES = 2   /* copy `length` bytes at `bytes` into [[buffer(index)]] (setBytes) */
};
typedef struct nv_arg {
    uint32_t kind;      /* NV_ARG_*                                                      */
    uint32_t index;     /* argument slot, < nv_device_limits.max_buffer_arguments, unique */
    nv_buffer buffer;   /* NV_ARG_BUFFER: a buffer of the stream's device                 */
    uint64_t offset;    /* NV_ARG_BUFFER: byte offset < buffer length, aligned to the
                           element type the kernel reads (Metal rule, not checked)      */
    const void *bytes;  /* NV_ARG_BYTES: copied during the call                           */
    uint64_t length;    /* NV_ARG_BYTES: 1 .. max_constant_argument_length                */
} nv_arg;

/* Grid modes for nv_stream_dispatch. */
enum {
    NV_GRID_THREADS = 0,      /* grid counts threads. On devices without non-uniform
                                 threadgroups it is rounded up to whole threadgroups, so the
                                 kernel must bounds-check its thread position.              */
    NV_GRID_THREADGROUPS = 1  /* grid counts threadgroups                                   */
};

/* Cache counters of a device (libraries by source hash, kernels by library and name). 32 bytes. */
typedef struct nv_cache_stats {
    uint64_t library_hits;
    uint64_t library_misses;
    uint64_t kernel_hits;
    uint64_t kernel_misses;
} nv_cache_stats;

/* Struct ids for nv_abi_struct_size. */
enum {
    NV_STRUCT_DEVICE_LIMITS = 1,
    NV_STRUCT_COMPILE_OPTIONS = 2,
    NV_STRUCT_KERNEL_INFO = 3,
    NV_STRUCT_ARG = 4,
    NV_STRUCT_CACHE_STATS = 5
};

/* Build flags for nv_build_flags. */
enum {
    NV_BUILD_METAL = 1 /* the shim was compiled with Metal support (an Apple platform) */
};

/* ---------------------------------------------------------------- version, errors, handles */

/* NUVEC_SHIM_ABI_VERSION of the built library. Any thread. */
uint32_t nv_abi_version(void);

/* sizeof() of a struct as the library sees it (0 for an unknown id): lets bindings check
 * their layouts. Any thread. */
uint32_t nv_abi_struct_size(uint32_t struct_id);

/* NV_BUILD_* bits. Any thread. */
uint32_t nv_build_flags(void);

/* Static name of a status ("NV_OK", "NV_ERR_NO_METAL", ...; "NV_ERR_UNKNOWN" otherwise).
 * Never NULL, never freed. Any thread. */
const char *nv_status_name(nv_status status);

/* Frees a string the shim handed out. NULL is a no-op. Any thread. */
void nv_string_free(char *s);

/* Adds a reference to a handle. Any thread. */
nv_status nv_retain(nv_handle handle, char **error);

/* Drops a reference; the handle dies with its last reference. Any thread. */
nv_status nv_release(nv_handle handle, char **error);

/* Kind (NV_KIND_*) of a live handle. Any thread. */
nv_status nv_handle_kind(nv_handle handle, int32_t *out, char **error);

/* Number of live handles of all kinds (for leak checks). Any thread. */
uint64_t nv_live_handle_count(void);

/* ---------------------------------------------------------------- devices */

/* NV_OK when a Metal device can be opened; else NV_ERR_NO_METAL with the reason in *error
 * (on Linux: "no Metal device: this host has no Metal (Linux)"). Any thread. */
nv_status nv_metal_probe(char **error);

/* Number of Metal devices (0 without Metal). Any thread. */
uint32_t nv_device_count(void);

/* Opens Metal device `index` (0: the system default). Each open returns a new handle to the
 * same underlying device object. NV_ERR_NO_METAL without Metal. Any thread. */
nv_status nv_device_open(uint32_t index, nv_device *out, char **error);

/* Opens the host (CPU memory) device. Any thread. */
nv_status nv_device_open_host(nv_device *out, char **error);

/* Device name, a heap string in *out. Any thread. */
nv_status nv_device_name(nv_device device, char **out, char **error);

/* Device limits into *out. Any thread. */
nv_status nv_device_limits_get(nv_device device, nv_device_limits *out, char **error);

/* Cache counters into *out. Any thread. */
nv_status nv_device_cache_stats(nv_device device, nv_cache_stats *out, char **error);

/* Empties the device's library and kernel caches (live handles stay valid). Any thread. */
nv_status nv_device_clear_cache(nv_device device, char **error);

/* ---------------------------------------------------------------- buffers */

/* New zero-filled buffer of `length` (> 0) bytes in shared storage: the CPU sees the same
 * memory as the GPU. Any thread. */
nv_status nv_buffer_new(nv_device device, uint64_t length, nv_buffer *out, char **error);

/* New buffer holding a copy of `length` (> 0) bytes at `bytes`. Any thread. */
nv_status nv_buffer_new_with_bytes(nv_device device, const void *bytes, uint64_t length,
                                   nv_buffer *out, char **error);

/* Length in bytes. Any thread. */
nv_status nv_buffer_length(nv_buffer buffer, uint64_t *out, char **error);

/* CPU address of the buffer's memory (at least 16-byte aligned), valid while the buffer
 * lives. Any thread; see "Buffer memory" above for the data itself. */
nv_status nv_buffer_contents(nv_buffer buffer, void **out, char **error);

/* ---------------------------------------------------------------- libraries and kernels */

/* SHA-256 of the canonical (source, options) pair into out[32]; the cache key used by
 * nv_library_compile. Invalid options give NV_ERR_INVALID_ARGUMENT. Any thread. */
nv_status nv_source_hash(const char *source, const nv_compile_options *options,
                         uint8_t *out, char **error);

/* Compiles Metal Shading Language source. Cached per device by nv_source_hash: compiling
 * the same source and options again returns a new handle to the cached library. On failure
 * NV_ERR_COMPILE and the compiler log in *error. The host device gives NV_ERR_UNSUPPORTED
 * (after validating the options). Any thread; concurrent compiles of one source may both
 * run but yield one cached library. */
nv_status nv_library_compile(nv_device device, const char *source,
                             const nv_compile_options *options, nv_library *out,
                             char **error);

/* Kernel function names of the library, one per line, a heap string in *out. Any thread. */
nv_status nv_library_function_names(nv_library library, char **out, char **error);

/* Looks up kernel `name` and builds its compute pipeline (cached per library and name).
 * NV_ERR_NOT_FOUND when the library has no such function. Any thread. */
nv_status nv_kernel_new(nv_library library, const char *name, nv_kernel *out, char **error);

/* Thread limits of the pipeline into *out. Any thread. */
nv_status nv_kernel_info_get(nv_kernel kernel, nv_kernel_info *out, char **error);

/* ---------------------------------------------------------------- command streams */

/* New command stream (a Metal command queue) on the device. Any thread. */
nv_status nv_stream_new(nv_device device, nv_stream *out, char **error);

/* Encodes one dispatch of `kernel` into the stream's open command buffer. Dispatches of one
 * stream run in order. `args` (nargs entries, NULL when nargs == 0) are checked before
 * anything is encoded; bytes arguments are copied during the call. threadgroup {0,0,0}
 * picks a 1-D size from the kernel's limits. A failed check encodes nothing.
 * Any thread (serialised per stream). */
nv_status nv_stream_dispatch(nv_stream stream, nv_kernel kernel, const nv_arg *args,
                             uint32_t nargs, const uint64_t grid[3],
                             const uint32_t threadgroup[3], uint32_t grid_mode, char **error);

/* Number of dispatches encoded since the last commit. Any thread. */
nv_status nv_stream_pending(nv_stream stream, uint64_t *out, char **error);

/* Commits the open command buffer (no-op when nothing is pending). Any thread. */
nv_status nv_stream_commit(nv_stream stream, char **error);

/* Waits until every committed command buffer has finished; NV_ERR_GPU with the GPU's message
 * if one failed (reported once). Does not commit. Any thread (blocks). */
nv_status nv_stream_wait(nv_stream stream, char **error);

/* nv_stream_commit then nv_stream_wait. Any thread (blocks). */
nv_status nv_stream_synchronize(nv_stream stream, char **error);

#ifdef __cplusplus
}
#endif

#endif /* NUVEC_SHIM_H */
