/*
 * subject_gpu.h -- how a family's entries join the CUDA subject
 * (gpu/subject_gpu.cu, build/gpu/libkvq_subject_gpu.so) [FAM-LAYOUT-01].
 *
 * A family with kernels keeps its subject entries in gpu/<f>/entries.cu: a
 * table of kvq_gpu_entry (the entry's name and signature version of
 * conformance/kvq_subject.h, and the function) registered by
 * KVQ_GPU_ENTRIES(f, TABLE), a constructor that runs when the shared object
 * is loaded.  The Makefile links every gpu/<f>/entries.cu into the subject
 * and the subject looks entries up in every registered table, so adding a
 * family's GPU entries edits no shared file.
 *
 * Entries take host pointers, like the reference: each copies its inputs to
 * the device, runs its launcher and copies the outputs back only on KVQ_OK,
 * so an error leaves the caller's buffers untouched.
 */
#ifndef KVQ_SUBJECT_GPU_H
#define KVQ_SUBJECT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "kvq_cuda.h"
#include "kvq_subject.h"

typedef struct kvq_gpu_entry {
    const char *name;
    uint32_t sigver;
    kvq_entry_fn fn;
} kvq_gpu_entry;

/* Add a family's table (called by KVQ_GPU_ENTRIES, before any lookup). */
void kvq_gpu_register(const char *family, const kvq_gpu_entry *table, size_t n);

#define KVQ_GPU_ENTRIES(family, table)                                                    \
    __attribute__((constructor)) static void kvq_gpu_register_##family(void)             \
    {                                                                                     \
        kvq_gpu_register(#family, table, sizeof table / sizeof table[0]);                 \
    }

#endif /* KVQ_SUBJECT_GPU_H */
