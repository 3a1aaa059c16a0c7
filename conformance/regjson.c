/*
 * regjson.c -- the registry description, `kvq ops --json` (spec/verify.md
 * [VER-REG-12]): every family, operation, field and rule as data, so that a
 * reader in another language (conformance/python/kvqio.py) needs no list of
 * its own.  Deterministic: no time, no path of the machine.
 */
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "rule.h"

const char *const kvq_level_set_names[KVQ_LEVEL_SETS] = { "smoke", "standard", "large" };
const char *const kvq_flag_names[KVQ_FLAG_BITS] = { "ZERO_SCALE", "CLAMPED", "SATURATED", "SUBNORMAL",
                                                    "AMBIGUOUS" };

static const char *const TYPES[KVQ_FT_COUNT] = {
    "id", "op", "status", "flags", "u32", "enum", "f32", "custom",
    "a_f32", "a_f16", "a_meta", "a_u8", "a_u16", "a_u32", "a_c32", "amb",
};
static const char *const ROLES[] = { "case", "input", "expected", "reference", "output" };
static const char *const CMPS[] = { "judge", "always", "exact" };

const char *kvq_ftype_name(kvq_ftype t)
{
    return (unsigned)t < KVQ_FT_COUNT ? TYPES[t] : "?";
}

const char *kvq_role_name(kvq_role r)
{
    return (unsigned)r < KVQ_NELEMS(ROLES) ? ROLES[r] : "?";
}

/* A JSON string (or null). */
static void jstr(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void jnames(FILE *f, const char *const *names, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", f);
        jstr(f, names[i]);
    }
    fputc(']', f);
}

static void jlevels(FILE *f, uint32_t levels)
{
    int first = 1;
    fputc('[', f);
    for (uint32_t l = 0; l < KVQ_LEVEL_COUNT; l++)
        if (levels & KVQ_LEVEL_BIT(l)) {
            fputs(first ? "" : ", ", f);
            jstr(f, kvq_level_names[l]);
            first = 0;
        }
    fputc(']', f);
}

static void jfield(FILE *f, const kvq_field *fd)
{
    fputs("{\"key\": ", f);
    jstr(f, fd->key);
    fputs(", \"type\": ", f);
    jstr(f, kvq_ftype_name(fd->type));
    fputs(", \"role\": ", f);
    jstr(f, kvq_role_name(fd->role));
    if (fd->type == KVQ_FT_ENUM) {
        fputs(", \"names\": ", f);
        jnames(f, fd->names, fd->nnames);
    }
    if (kvq_ftype_elem_size(fd->type) != 0 || fd->type == KVQ_FT_AMB) {
        fputs(", \"count\": ", f);
        jstr(f, fd->count_rule);
    }
    if (fd->type == KVQ_FT_CUSTOM) {
        fputs(", \"pattern\": ", f);
        jstr(f, fd->custom != NULL ? fd->custom->pattern : NULL);
    }
    if (fd->role == KVQ_ROLE_OUTPUT) {
        fputs(", \"cmp\": ", f);
        jstr(f, CMPS[fd->cmp]);
    }
    if (fd->optional) fputs(", \"optional\": true", f);
    if (fd->finite) fputs(", \"finite\": true", f);
    fputc('}', f);
}

static void jop(FILE *f, const kvq_op *op, int last)
{
    fputs("        {\n          \"name\": ", f);
    jstr(f, op->name);
    fputs(",\n          \"summary\": ", f);
    jstr(f, op->summary);
    fputs(",\n          \"levels\": ", f);
    jlevels(f, op->levels);
    fputs(",\n          \"variants\": ", f);
    jnames(f, op->variants, op->nvariants);
    fputs(",\n          \"variants_since\": ", f);
    jstr(f, op->variants_since);
    fprintf(f, ",\n          \"legacy_variant\": %u,\n          \"entries\": [", op->legacy_variant);
    for (uint32_t e = 0; e < op->nentries; e++) {
        const kvq_entry_decl *ed = &op->entries[e];
        fputs(e ? ", {\"name\": " : "{\"name\": ", f);
        jstr(f, ed->name);
        fprintf(f, ", \"sigver\": %u, \"older\": %u, \"older_variants\": %u}", ed->sigver, ed->older,
                ed->older_variants);
    }
    fputs("],\n          \"rules\": {\n            \"valid\": ", f);
    jstr(f, op->valid);
    fputs(",\n            \"meta_half\": ", f);
    jstr(f, op->meta_half);
    fputs(",\n            \"amb_lo\": ", f);
    jstr(f, op->amb_lo);
    fputs(", \"amb_hi\": ", f);
    jstr(f, op->amb_hi);
    fputs("\n          },\n          \"fields\": [\n", f);
    for (size_t i = 0; i < op->nfields; i++) {
        fputs("            ", f);
        jfield(f, &op->fields[i]);
        fputs(i + 1 < op->nfields ? ",\n" : "\n", f);
    }
    fprintf(f, "          ]\n        }%s\n", last ? "" : ",");
}

kvq_status kvq_registry_json(FILE *f)
{
    fprintf(f, "{\n  \"kvq_registry\": %d,\n  \"kvq_version\": ", KVQ_REGISTRY_FORMAT);
    jstr(f, KVQ_VERSION_STRING);
    fputs(",\n  \"levels\": ", f);
    jnames(f, kvq_level_names, KVQ_LEVEL_COUNT);
    fputs(",\n  \"level_sets\": ", f);
    jnames(f, kvq_level_set_names, KVQ_LEVEL_SETS);
    fprintf(f, ",\n  \"limits\": {\"max_file_elems\": %llu, \"id_max\": %d},\n  \"status\": [",
            (unsigned long long)KVQ_MAX_FILE_ELEMS, KVQ_ID_MAX - 1);
    for (int s = 0; s < KVQ_STATUS_COUNT; s++) {
        fprintf(f, "%s{\"value\": %d, \"name\": ", s ? ", " : "", s);
        jstr(f, kvq_status_name(s));
        fputc('}', f);
    }
    fputs("],\n  \"flags\": [", f);
    for (int b = 0; b < KVQ_FLAG_BITS; b++) {
        fprintf(f, "%s{\"bit\": %d, \"name\": ", b ? ", " : "", b);
        jstr(f, kvq_flag_names[b]);
        fputc('}', f);
    }
    fputs("],\n  \"policy\": {\"ties\": ", f);
    jnames(f, kvq_ties_names, 2);
    fputs(", \"overflow\": ", f);
    jnames(f, kvq_overflow_names, 2);
    fputs(", \"subnormal\": ", f);
    jnames(f, kvq_subnormal_names, 2);
    fputs("},\n  \"families\": [\n", f);
    for (size_t i = 0; i < kvq_family_count(); i++) {
        const kvq_family *fam = kvq_family_at(i);
        int first = 1;
        fputs("    {\n      \"name\": ", f);
        jstr(f, fam->name);
        fputs(", \"title\": ", f);
        jstr(f, fam->title);
        fputs(", \"spec\": ", f);
        jstr(f, fam->spec);
        fprintf(f, ", \"gpu\": %s,\n      \"level_sets\": [", fam->gpu ? "true" : "false");
        for (size_t l = 0; l < KVQ_LEVEL_SETS; l++)
            if (fam->gen_count(kvq_level_set_names[l]) > 0) {
                fputs(first ? "" : ", ", f);
                jstr(f, kvq_level_set_names[l]);
                first = 0;
            }
        fputs("],\n      \"ops\": [\n", f);
        for (size_t k = 0; k < fam->nops; k++) jop(f, fam->ops[k], k + 1 == fam->nops);
        fprintf(f, "      ]\n    }%s\n", i + 1 < kvq_family_count() ? "," : "");
    }
    fputs("  ]\n}\n", f);
    return ferror(f) ? KVQ_E_IO : KVQ_OK;
}
