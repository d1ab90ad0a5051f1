#pragma once

/// @file
/// `SPRINTRT_AVX2_CLONES` before a function definition compiles the function
/// twice, for the x86-64 baseline (two double lanes) and for AVX2 (four),
/// and lets the loader pick the one the CPU runs. AVX2 without FMA rounds
/// every operation as the baseline does, so both give the same bits: the
/// choice changes the speed, never a result. Elsewhere (other CPUs, other
/// compilers) the macro is empty.

#if defined(__GNUC__) && defined(__x86_64__) && defined(__ELF__)
#define SPRINTRT_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SPRINTRT_AVX2_CLONES
#endif
