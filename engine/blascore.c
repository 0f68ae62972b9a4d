// blascore.c — which OpenBLAS kernel family runs, and which one to ask for instead.
//
// Debian's OpenBLAS is built with DYNAMIC_ARCH: when the library loads it reads cpuid, picks a
// family of kernels, and honours OPENBLAS_CORETYPE if set. 0.3.21 does not know CPUs newer than it
// (a 2024 Xeon, family 6 model 207, say) and falls back to "Prescott", SSE3 kernels at a third of
// the speed. Nothing can change the family once the library is loaded, so the choice made here is
// carried out by the program: the CLI re-executes itself once with OPENBLAS_CORETYPE set.
#include <cblas.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "linear.h"
#include "normlab.h"
#include "normlab_internal.h"

// The families of OpenBLAS 0.3.21's x86-64 DYNAMIC_ARCH build (its corename table), by the widest
// vectors their single-precision kernels use.
typedef struct {
    const char *name;
    int tier;  // 0 SSE, 1 AVX, 2 AVX2 + FMA, 3 AVX-512
} Family;

static const Family FAMILIES[] = {
    {"Unknown", 0},     {"Katmai", 0},         {"Coppermine", 0},  {"Northwood", 0},    {"Prescott", 0},
    {"Banias", 0},      {"Atom", 0},           {"Core2", 0},       {"Penryn", 0},       {"Dunnington", 0},
    {"Nehalem", 0},     {"Athlon", 0},         {"Opteron", 0},     {"Opteron_SSE3", 0}, {"Barcelona", 0},
    {"Nano", 0},        {"Bobcat", 0},         {"Sandybridge", 1}, {"Bulldozer", 1},    {"Piledriver", 1},
    {"Steamroller", 1}, {"Haswell", 2},        {"Excavator", 2},   {"Zen", 2},          {"SkylakeX", 3},
    {"Cooperlake", 3},  {"SapphireRapids", 3},
};

// What each tier asks of the CPU, and the family normlab picks for it (make parity passes under
// both; on an AVX-512 CPU SkylakeX measured within 2% of Haswell and Cooperlake, docs/performance.md).
static const char *const BEST[4] = {NULL, NULL, "Haswell", "SkylakeX"};

int nl_blas_tier(const char *name) {
    for (size_t i = 0; name && i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
        if (strcasecmp(name, FAMILIES[i].name) == 0) return FAMILIES[i].tier;
    return -1;  // a name this table does not know: a newer OpenBLAS, left alone
}

static int cpu_tier(NlCpuFeatures f) {
    if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx2 && f.fma) return 3;
    if (f.avx2 && f.fma) return 2;
    return f.avx ? 1 : 0;
}

const char *nl_blas_choose_core_for(const char *reported, NlCpuFeatures cpu, const char *env_coretype, int opt_out) {
    if (opt_out || (env_coretype && *env_coretype)) return NULL;  // never override the user or the environment
    int have = nl_blas_tier(reported), best = cpu_tier(cpu);
    if (have < 0 || have >= best || !BEST[best]) return NULL;
    return BEST[best];
}

const char *nl_blas_choose_core(const char *reported, const char *env_coretype, int opt_out) {
    return nl_blas_choose_core_for(reported, nl_cpu_features(), env_coretype, opt_out);
}

int nl_blas_is_generic(const char *name) { return nl_blas_tier(name) == 0; }

const char *nl_blas_core(void) { return openblas_get_corename(); }

NlCpuFeatures nl_cpu_features(void) {
    NlCpuFeatures f = {0};
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    f.avx = __builtin_cpu_supports("avx");
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
#endif
    return f;
}
