/*
 * subject_gpu.cu -- the bundled CUDA kernels as a conformance subject
 * (conformance/kvq_subject.h, version 3): build/gpu/libkvq_subject_gpu.so.
 *
 * The entries are the families': gpu/<f>/entries.cu registers a table of them
 * (gpu/subject_gpu.h), and this file holds the subject around them -- the
 * device check and the lookup over every registered table.  It names no
 * family.  Without a usable device, init answers KVQ_E_NODEVICE with the
 * reason, and the kit counts every case SKIPPED, never passed.
 */
#include <stdio.h>
#include <string.h>

#include "subject_gpu.h"

#define MAX_TABLES 32

static struct {
    const char *family;
    const kvq_gpu_entry *table;
    size_t n;
} tables[MAX_TABLES];
static size_t ntables;
static int dropped;

void kvq_gpu_register(const char *family, const kvq_gpu_entry *table, size_t n)
{
    if (ntables == MAX_TABLES) {
        dropped = 1;
        return;
    }
    tables[ntables].family = family, tables[ntables].table = table, tables[ntables].n = n;
    ntables++;
}

static int gpu_init(char *why, size_t whylen)
{
    if (dropped) { /* a table was dropped: say so rather than skip its entries */
        snprintf(why, whylen, "more than %d families register GPU entries", MAX_TABLES);
        return KVQ_E_SUBJECT;
    }
    return kvq_cuda_device_check(why, whylen);
}

/* "subject_device" (kvq_subject.h, spec/verify.md [VER-REP-05]): the device
 * the reports name -- its name, compute capability, the NVIDIA driver
 * (/proc/driver/nvidia/version: the first token of digits and dots) and the
 * CUDA driver API version. */
static int gpu_device(char *buf, size_t len)
{
    cudaDeviceProp p;
    int dev = 0, api = 0;
    char drv[64] = "unknown", line[256];
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        if (f != NULL) fclose(f);
        return KVQ_E_NODEVICE;
    }
    if (f != NULL && fgets(line, sizeof line, f) != NULL)
        for (char *t = strtok(line, " \t\n"); t != NULL; t = strtok(NULL, " \t\n"))
            if (t[0] >= '0' && t[0] <= '9' && strchr(t, '.') != NULL && strspn(t, "0123456789.") == strlen(t)) {
                snprintf(drv, sizeof drv, "%s", t);
                break;
            }
    if (f != NULL) fclose(f);
    if (cudaDriverGetVersion(&api) != cudaSuccess) api = 0;
    snprintf(buf, len, "%s (sm_%d%d, driver %s, CUDA %d.%d)", p.name, p.major, p.minor, drv, api / 1000,
             api % 1000 / 10);
    return KVQ_OK;
}

/* An entry by name and signature version (kvq_subject.h [API-SUBJ-05]). */
static kvq_entry_fn gpu_lookup(const char *entry, uint32_t sigver)
{
    if (sigver == 1u && strcmp(entry, KVQ_SUBJECT_DEVICE_ENTRY) == 0) return (kvq_entry_fn)gpu_device;
    for (size_t t = 0; t < ntables; t++)
        for (size_t i = 0; i < tables[t].n; i++)
            if (tables[t].table[i].sigver == sigver && strcmp(tables[t].table[i].name, entry) == 0)
                return tables[t].table[i].fn;
    return NULL;
}

static const kvq_subject_v3 gpu_subject = {
    KVQ_SUBJECT_ABI_V3, "kvq-cuda", gpu_init, NULL, gpu_lookup,
};

extern "C" __attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &gpu_subject;
}
