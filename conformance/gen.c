/*
 * gen.c -- conformance vectors of any family (spec/vectors.md, [VEC-GEN-*]).
 *
 * The family says how many cases a level set has and makes case k from
 * (seed, k) alone; this file keeps the cases of one shard and writes the
 * header every generated file carries.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"

kvq_status kvq_gen(kvq_vfile *vf, const kvq_family *fam, const char *levels, uint64_t seed,
                   uint64_t shard_i, uint64_t shard_n, char *err, size_t errlen)
{
    return kvq_gen_progress(vf, fam, levels, seed, shard_i, shard_n, NULL, err, errlen);
}

kvq_status kvq_gen_progress(kvq_vfile *vf, const kvq_family *fam, const char *levels, uint64_t seed,
                            uint64_t shard_i, uint64_t shard_n, kvq_progress *pg, char *err, size_t errlen)
{
    uint64_t total, mine;
    memset(vf, 0, sizeof *vf);
    if (shard_n == 0 || shard_i >= shard_n) {
        snprintf(err, errlen, "bad shard %llu/%llu", (unsigned long long)shard_i, (unsigned long long)shard_n);
        return KVQ_E_PARAM;
    }
    total = fam->gen_count(levels);
    if (total == 0) {
        size_t len = (size_t)snprintf(err, errlen, "unknown level set '%s' of family %s (", levels, fam->name);
        for (size_t l = 0, n = 0; l < KVQ_LEVEL_SETS; l++)
            if (fam->gen_count(kvq_level_set_names[l]) > 0 && len < errlen)
                len += (size_t)snprintf(err + len, errlen - len, "%s%s", n++ ? "|" : "", kvq_level_set_names[l]);
        if (len < errlen) snprintf(err + len, errlen - len, ")");
        return KVQ_E_PARAM;
    }
    vf->version = KVQ_VEC_VERSION;
    vf->family = fam;
    snprintf(vf->levels, sizeof vf->levels, "%s", levels);
    vf->seed = seed;
    snprintf(vf->generator, sizeof vf->generator, "kvq %s shard %llu/%llu", KVQ_VERSION_STRING,
             (unsigned long long)shard_i, (unsigned long long)shard_n);
    /* the ordinals k = shard_i + j shard_n below total: no counter wraps */
    mine = shard_i < total ? (total - shard_i - 1u) / shard_n + 1u : 0u;
    vf->cases = calloc(mine ? mine : 1, sizeof *vf->cases);
    if (vf->cases == NULL) {
        snprintf(err, errlen, "out of memory");
        return KVQ_E_NOMEM;
    }
    for (uint64_t j = 0; j < mine; j++) {
        uint64_t k = shard_i + j * shard_n;
        kvq_status st = fam->gen_case(&vf->cases[vf->ncases], levels, seed, k);
        if (st != KVQ_OK) {
            kvq_vfile_free(vf);
            snprintf(err, errlen, "case %llu: %s", (unsigned long long)k, kvq_status_str(st));
            return st;
        }
        vf->ncases++;
        kvq_progress_tick(pg, vf->ncases, mine);
    }
    kvq_progress_end(pg);
    return KVQ_OK;
}
