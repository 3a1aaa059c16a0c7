/*
 * families/kivi_bench.c -- `kvq bench`: throughput of the exact path's vector generation
 * (cases/s and values/s on one core) and of the fast path (values/s), measured
 * in one run.  Numbers, not pass/fail: no timing is a test.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf.h"
#include "kivi.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct fast_row {
    const char *what;
    uint32_t bits, grouping, meta;
    double q_vps, d_vps;
} fast_row;

static int bench_fast(fast_row *row, uint32_t tokens, uint32_t channels, int reps)
{
    kvq_kivi_shape s = { row->bits, 32, row->grouping, row->meta, tokens, channels };
    uint64_t n = kvq_kivi_elems(&s), ng = kvq_kivi_groups(&s);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    float *sc = malloc(ng * sizeof *sc), *z = malloc(ng * sizeof *z);
    uint8_t *codes = malloc(kvq_kivi_code_bytes(&s));
    uint64_t st = 0x243F6A8885A308D3ull;
    double t0, tq = 1e300, td = 1e300;
    if (!x || !y || !sc || !z || !codes) return 0;
    for (uint64_t e = 0; e < n; e++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        x[e] = (float)(int32_t)(st >> 40) * 0x1p-20f;
    }
    for (int r = 0; r < reps; r++) { /* best of reps */
        t0 = now_s();
        if (kvq_kivi_quantize(codes, sc, z, NULL, x, &s, &kvq_policy_default) != KVQ_OK) return 0;
        if (now_s() - t0 < tq) tq = now_s() - t0;
        t0 = now_s();
        if (kvq_kivi_dequantize(y, NULL, codes, sc, z, &s, &kvq_policy_default) != KVQ_OK) return 0;
        if (now_s() - t0 < td) td = now_s() - t0;
    }
    row->q_vps = (double)n / tq;
    row->d_vps = (double)n / td;
    free(x); free(y); free(sc); free(z); free(codes);
    return 1;
}

int kvq_bench_main(int argc, char **argv)
{
    const char *json = NULL;
    char err[512];
    kvq_vfile vf;
    double t0, tgen;
    uint64_t elems = 0;
    fast_row rows[] = {
        { "keys per-channel 2-bit f32", 2, KVQ_GROUP_CHANNEL, KVQ_META_F32, 0, 0 },
        { "keys per-channel 4-bit f32", 4, KVQ_GROUP_CHANNEL, KVQ_META_F32, 0, 0 },
        { "values per-token 4-bit f32", 4, KVQ_GROUP_TOKEN, KVQ_META_F32, 0, 0 },
        { "values per-token 8-bit f16", 8, KVQ_GROUP_TOKEN, KVQ_META_F16, 0, 0 },
    };
    size_t nrows = sizeof rows / sizeof rows[0];
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) { /* [VER-CLI-01] */
            printf("usage:\n%s", kvq_family_kivi.commands[0].usage);
            return 0;
        }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) json = argv[++i];
        else { fprintf(stderr, "kvq bench: unknown argument '%s'\nusage: kvq bench [--json FILE]\n", argv[i]); return 2; }
    }
    t0 = now_s();
    if (kvq_gen(&vf, kvq_family_find("kivi"), "standard", 1, 0, 1, err, sizeof err) != KVQ_OK) {
        fprintf(stderr, "kvq bench: %s\n", err);
        return 2;
    }
    tgen = now_s() - t0;
    for (size_t k = 0; k < vf.ncases; k++) elems += kvq_kivi_elems(&((const kvq_kivi_in *)vf.cases[k].in)->shape);
    printf("exact path (MPFR), standard vectors on one core: %zu cases, %llu values in %.2f s\n"
           "  %.1f cases/s, %.3g values/s\n", vf.ncases, (unsigned long long)elems, tgen,
           (double)vf.ncases / tgen, (double)elems / tgen);
    printf("fast path (binary32), 4096 x 1024 tensor, G=32, best of 5:\n");
    for (size_t r = 0; r < nrows; r++) {
        if (!bench_fast(&rows[r], 4096, 1024, 5)) {
            fprintf(stderr, "kvq bench: fast path failed\n");
            kvq_vfile_free(&vf);
            return 2;
        }
        printf("  %-28s quantize %.3g values/s, dequantize %.3g values/s\n", rows[r].what,
               rows[r].q_vps, rows[r].d_vps);
    }
    printf("  fast/exact quantize ratio (first row): %.0fx\n", rows[0].q_vps / ((double)elems / tgen));
    if (json != NULL) { /* [VER-RUN-04]: whole or not at all */
        kvq_outfile o;
        char oerr[1024];
        if (kvq_outfile_open(&o, json, oerr, sizeof oerr) != KVQ_OK) {
            fprintf(stderr, "kvq bench: %s\n", oerr);
            kvq_vfile_free(&vf);
            return 2;
        }
        fprintf(o.f, "{\n  \"exact\": {\"cases\": %zu, \"values\": %llu, \"seconds\": %.6f, "
                "\"cases_per_s\": %.3f, \"values_per_s\": %.3f},\n  \"fast\": [",
                vf.ncases, (unsigned long long)elems, tgen, (double)vf.ncases / tgen,
                (double)elems / tgen);
        for (size_t r = 0; r < nrows; r++)
            fprintf(o.f, "%s\n    {\"config\": \"%s\", \"quantize_values_per_s\": %.3f, "
                    "\"dequantize_values_per_s\": %.3f}", r ? "," : "", rows[r].what,
                    rows[r].q_vps, rows[r].d_vps);
        fputs("\n  ]\n}\n", o.f);
        if (kvq_outfile_commit(&o, oerr, sizeof oerr) != KVQ_OK) {
            fprintf(stderr, "kvq bench: %s\n", oerr);
            kvq_vfile_free(&vf);
            return 2;
        }
    }
    kvq_vfile_free(&vf);
    return 0;
}
