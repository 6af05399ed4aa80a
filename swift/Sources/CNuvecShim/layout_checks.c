/* Compile-time checks that the C ABI's struct layouts are the ones the header documents, so
 * the Swift implementation (which imports these structs) and every binding agree. */
#include <stddef.h>
#include "nuvec_shim.h"

_Static_assert(sizeof(void *) == 8, "the shim ABI is defined for 64-bit platforms");

_Static_assert(sizeof(nv_device_limits) == 56, "nv_device_limits is 56 bytes");
_Static_assert(offsetof(nv_device_limits, max_threads_per_threadgroup) == 16, "limits layout");
_Static_assert(offsetof(nv_device_limits, reserved) == 52, "limits layout");
_Static_assert(sizeof(nv_compile_options) == 24, "nv_compile_options is 24 bytes");
_Static_assert(offsetof(nv_compile_options, preprocessor_macros) == 8, "options layout");
_Static_assert(sizeof(nv_kernel_info) == 16, "nv_kernel_info is 16 bytes");
_Static_assert(sizeof(nv_arg) == 40, "nv_arg is 40 bytes");
_Static_assert(offsetof(nv_arg, buffer) == 8, "nv_arg layout");
_Static_assert(offsetof(nv_arg, bytes) == 24, "nv_arg layout");
_Static_assert(sizeof(nv_cache_stats) == 32, "nv_cache_stats is 32 bytes");
