// USRECON_ISA_BEGIN("avx2,fma") ... USRECON_ISA_END: the code between is compiled for that
// instruction set whatever the build's -march, so one binary carries every kernel and picks one at
// run time (cpu_has_avx512, cpu_has_avx2). GCC takes `#pragma GCC target`; clang ignores that
// pragma (every intrinsic then failed to compile) and takes the same target as an attribute on
// each function of the region.
#pragma once

#define USRECON_ISA_PRAGMA(text) _Pragma(#text)
#if defined(__clang__)
#define USRECON_ISA_BEGIN(isa) \
  USRECON_ISA_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define USRECON_ISA_END _Pragma("clang attribute pop")
#else
#define USRECON_ISA_BEGIN(isa) _Pragma("GCC push_options") USRECON_ISA_PRAGMA(GCC target(isa))
#define USRECON_ISA_END _Pragma("GCC pop_options")
#endif
