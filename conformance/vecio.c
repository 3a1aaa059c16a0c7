/*
 * vecio.c -- reading and writing vector and results files (spec/vectors.md).
 *
 * The reader is strict: every key exactly once, no unknown keys, every hex
 * field of exactly the length its shape implies.  Each error names the file,
 * the line, and what is wrong [VEC-FMT-01..].
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_bits.h"
#include "lexio.h"
#include "vecio.h"

#define MAX_FILE_ELEMS ((uint64_t)1 << 24) /* values per case accepted from a file */

/* ---- small helpers (the shared ones: lexio.h) --------------------------- */

static int parse_hex32_field(const char *s, uint32_t *out)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || strlen(s) != 10) return 0;
    return hexn(s + 2, 8, out);
}

static int id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= KVQ_ID_MAX) return 0;
    for (; *s; s++) {
        char ch = *s;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.'))
            return 0;
    }
    return 1;
}

const char *kvq_level_name(uint32_t level)
{
    return level == KVQ_LEVEL_EXACT ? "exact" : level == KVQ_LEVEL_BOUNDED ? "bounded" : "?";
}

const char *kvq_grouping_name(uint32_t grouping)
{
    return grouping == KVQ_GROUP_CHANNEL ? "channel" : grouping == KVQ_GROUP_TOKEN ? "token" : "?";
}

const char *kvq_meta_name(uint32_t meta)
{
    return meta == KVQ_META_F32 ? "f32" : meta == KVQ_META_F16 ? "f16" : "?";
}

static const char *const LEVELS[] = { "exact", "bounded" };
static const char *const GROUPINGS[] = { "channel", "token" };
static const char *const METAS[] = { "f32", "f16" };
static const char *const TIES[] = { "even", "away" };
static const char *const OVERFLOWS[] = { "saturate", "nan" };
static const char *const SUBNORMALS[] = { "keep", "daz" };

/* ---- hex arrays ------------------------------------------------------------ */

static kvq_status hex_bytes(uint8_t *out, uint64_t n, const char *s, const char *key,
                            const char *path, long line, char *err, size_t errlen)
{
    if (strlen(s) != 2 * n)
        return fail(err, errlen, KVQ_E_FORMAT, path, line,
                    "%s: %zu hex digits, expected %llu", key, strlen(s),
                    (unsigned long long)(2 * n));
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v;
        if (!hexn(s + 2 * i, 2, &v))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: bad hex digit near byte %llu",
                        key, (unsigned long long)i);
        out[i] = (uint8_t)v;
    }
    return KVQ_OK;
}

/* n floats: 8 hex digits (binary32) each, or 4 (binary16) when half is set. */
static kvq_status hex_floats(float *out, uint64_t n, int half, const char *s, const char *key,
                             const char *path, long line, char *err, size_t errlen)
{
    int w = half ? 4 : 8;
    if (strlen(s) != (size_t)w * n)
        return fail(err, errlen, KVQ_E_FORMAT, path, line,
                    "%s: %zu hex digits, expected %llu (%llu values of %d digits)", key,
                    strlen(s), (unsigned long long)(w * n), (unsigned long long)n, w);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v;
        if (!hexn(s + (size_t)w * i, w, &v))
            return fail(err, errlen, KVQ_E_FORMAT, path, line,
                        "%s: bad hex digit in value %llu", key, (unsigned long long)i);
        out[i] = half ? kvq_f16_from_bits((uint16_t)v) : kvq_f32_from_bits(v);
    }
    return KVQ_OK;
}

static int put_hex_bytes(FILE *f, const uint8_t *b, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (fprintf(f, "%02x", b[i]) < 0) return 0;
    return 1;
}

/* Every value has an encoding in the field's format. */
static int all_encodable(const float *v, uint64_t n, int half)
{
    for (uint64_t i = 0; half && i < n; i++) {
        int ok;
        (void)kvq_f16_bits(v[i], &ok);
        if (!ok) return 0;
    }
    return 1;
}

static int put_hex_floats(FILE *f, const float *v, uint64_t n, int half)
{
    for (uint64_t i = 0; i < n; i++) {
        if (half) {
            int ok;
            uint16_t h = kvq_f16_bits(v[i], &ok);
            if (!ok) return 0;
            if (fprintf(f, "%04x", h) < 0) return 0;
        } else if (fprintf(f, "%08lx", (unsigned long)kvq_f32_bits(v[i])) < 0) {
            return 0;
        }
    }
    return 1;
}

/* ---- cases ------------------------------------------------------------------ */

void kvq_vcase_free(kvq_vcase *c)
{
    free(c->x);
    free(c->codes);
    free(c->scale);
    free(c->zero);
    free(c->deq);
    free(c->real);
    free(c->amb_idx);
    free(c->amb_alt);
    c->x = c->scale = c->zero = c->deq = NULL;
    c->codes = c->real = c->amb_alt = NULL;
    c->amb_idx = NULL;
}

kvq_status kvq_vcase_alloc(kvq_vcase *c)
{
    uint64_t n = kvq_kivi_elems(&c->shape);
    c->x = malloc((n ? n : 1) * sizeof *c->x);
    if (c->x == NULL) return KVQ_E_NOMEM;
    if (c->status == KVQ_OK) {
        uint64_t ng = kvq_kivi_groups(&c->shape), nb = kvq_kivi_code_bytes(&c->shape);
        c->codes = malloc(nb);
        c->real = malloc(nb);
        c->scale = malloc(ng * sizeof *c->scale);
        c->zero = malloc(ng * sizeof *c->zero);
        c->deq = malloc(n * sizeof *c->deq);
        if (!c->codes || !c->real || !c->scale || !c->zero || !c->deq) {
            kvq_vcase_free(c);
            return KVQ_E_NOMEM;
        }
    }
    return KVQ_OK;
}

void kvq_vfile_free(kvq_vfile *vf)
{
    for (size_t i = 0; i < vf->ncases; i++) kvq_vcase_free(&vf->cases[i]);
    free(vf->cases);
    vf->cases = NULL;
    vf->ncases = 0;
}

enum {
    K_ID, K_LEVEL, K_OP, K_BITS, K_GROUP, K_GROUPING, K_META, K_TOKENS, K_CHANNELS, K_TIES,
    K_OVERFLOW, K_SUBNORMAL, K_STATUS, K_FLAGS, K_X, K_CODES, K_SCALE, K_ZERO, K_DEQ, K_REAL,
    K_AMB, K_COUNT
};
static const char *const CASE_KEYS[K_COUNT] = {
    "id", "level", "op", "bits", "group", "grouping", "meta", "tokens", "channels", "ties",
    "overflow", "subnormal", "status", "flags", "x", "codes", "scale", "zero", "deq", "real",
    "amb",
};
#define K_FIRST_OUTPUT K_CODES

static kvq_status parse_amb(kvq_vcase *c, const char *s, const char *path, char *err,
                            size_t errlen)
{
    uint64_t n = kvq_kivi_elems(&c->shape), cnt = 0, prev = 0;
    uint32_t cmax = kvq_code_max(c->shape.bits);
    const char *p;
    if (strcmp(s, "-") == 0) return KVQ_OK;
    for (p = s; *p; p++) if (*p == ',') cnt++;
    cnt++;
    if (cnt > n) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: more entries than elements");
    c->amb_idx = malloc(cnt * sizeof *c->amb_idx);
    c->amb_alt = malloc(cnt);
    if (!c->amb_idx || !c->amb_alt) return fail(err, errlen, KVQ_E_NOMEM, path, c->line, "out of memory");
    p = s;
    for (uint64_t k = 0; k < cnt; k++) {
        char item[64], *colon;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        uint64_t idx;
        uint32_t alt;
        if (len == 0 || len >= sizeof item)
            return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: bad entry %llu", (unsigned long long)k);
        memcpy(item, p, len);
        item[len] = '\0';
        colon = strchr(item, ':');
        if (colon == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: entry '%s' is not index:alt", item);
        *colon = '\0';
        if (!parse_u64(item, &idx) || !parse_u32(colon + 1, &alt))
            return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: entry %llu is not decimal index:alt", (unsigned long long)k);
        if (idx >= n) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: index %llu out of range", (unsigned long long)idx);
        if (k > 0 && idx <= prev) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: indices not strictly increasing at %llu", (unsigned long long)idx);
        if (alt > cmax) return fail(err, errlen, KVQ_E_FORMAT, path, c->line, "amb: alternative code %u exceeds %u", alt, cmax);
        c->amb_idx[k] = idx;
        c->amb_alt[k] = (uint8_t)alt;
        prev = idx;
        p = end ? end + 1 : p + len;
    }
    c->namb = cnt;
    return KVQ_OK;
}

static kvq_status parse_case(kvq_vcase *c, char **tok, int ntok, const char *path, long line,
                             char *err, size_t errlen)
{
    const char *val[K_COUNT] = { 0 };
    int k;
    uint32_t u;
    uint64_t n;
    kvq_status st;
    memset(c, 0, sizeof *c);
    c->line = line;
    for (int i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        if (eq == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "field '%.40s' is not key=value", tok[i]);
        *eq = '\0';
        k = name_index(tok[i], CASE_KEYS, K_COUNT);
        if (k < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "unknown key '%.40s'", tok[i]);
        if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given twice", tok[i]);
        val[k] = eq + 1;
    }
    for (k = 0; k < K_FIRST_OUTPUT; k++)
        if (val[k] == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s'", CASE_KEYS[k]);
    if (!id_ok(val[K_ID])) return fail(err, errlen, KVQ_E_FORMAT, path, line, "bad case id '%.70s'", val[K_ID]);
    strcpy(c->id, val[K_ID]);
#define ENUM_FIELD(K, NAMES, DST)                                                             \
    do {                                                                                      \
        int ix_ = name_index(val[K], NAMES, (int)(sizeof NAMES / sizeof NAMES[0]));           \
        if (ix_ < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "%s: unknown value '%.40s'", CASE_KEYS[K], val[K]); \
        DST = (uint32_t)ix_;                                                                  \
    } while (0)
    ENUM_FIELD(K_LEVEL, LEVELS, c->level);
    if (strcmp(val[K_OP], "kivi-quant") != 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "op: unknown operation '%.40s'", val[K_OP]);
    c->op = KVQ_OP_KIVI_QUANT;
    ENUM_FIELD(K_GROUPING, GROUPINGS, c->shape.grouping);
    ENUM_FIELD(K_META, METAS, c->shape.meta);
    ENUM_FIELD(K_TIES, TIES, c->pol.ties);
    ENUM_FIELD(K_OVERFLOW, OVERFLOWS, c->pol.overflow);
    ENUM_FIELD(K_SUBNORMAL, SUBNORMALS, c->pol.subnormal);
#undef ENUM_FIELD
    if (!parse_u32(val[K_BITS], &c->shape.bits) || !parse_u32(val[K_GROUP], &c->shape.group) ||
        !parse_u32(val[K_TOKENS], &c->shape.tokens) || !parse_u32(val[K_CHANNELS], &c->shape.channels))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "bits, group, tokens and channels must be decimal numbers");
    if (!parse_u32(val[K_STATUS], &u) || u >= KVQ_STATUS_COUNT)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "status: '%.40s' is not a kvq_status", val[K_STATUS]);
    c->status = (int)u;
    if (!parse_hex32_field(val[K_FLAGS], &c->flags) || (c->flags & ~KVQ_FLAG_ALL))
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "flags: '%.40s' is not 0x followed by 8 hex digits of defined flags", val[K_FLAGS]);
    n = kvq_kivi_elems(&c->shape);
    if (n > MAX_FILE_ELEMS) return fail(err, errlen, KVQ_E_FORMAT, path, line, "tokens*channels exceeds %llu", (unsigned long long)MAX_FILE_ELEMS);
    if (c->status == KVQ_OK) {
        if (!kvq_kivi_params_ok(&c->shape) || !kvq_kivi_shape_ok(&c->shape))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "shape is not valid for a status-0 case");
        for (k = K_FIRST_OUTPUT; k < K_COUNT; k++)
            if (val[k] == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s' (status 0)", CASE_KEYS[k]);
    } else {
        for (k = K_FIRST_OUTPUT; k < K_COUNT; k++)
            if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given for a case that expects an error", CASE_KEYS[k]);
    }
    if (kvq_vcase_alloc(c) != KVQ_OK) return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
    st = hex_floats(c->x, n, 0, val[K_X], "x", path, line, err, errlen);
    if (st == KVQ_OK && c->status == KVQ_OK) {
        uint64_t ng = kvq_kivi_groups(&c->shape), nb = kvq_kivi_code_bytes(&c->shape);
        int half = c->shape.meta == KVQ_META_F16;
        st = hex_bytes(c->codes, nb, val[K_CODES], "codes", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_floats(c->scale, ng, half, val[K_SCALE], "scale", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_floats(c->zero, ng, half, val[K_ZERO], "zero", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_floats(c->deq, n, 0, val[K_DEQ], "deq", path, line, err, errlen);
        if (st == KVQ_OK) st = hex_bytes(c->real, nb, val[K_REAL], "real", path, line, err, errlen);
        if (st == KVQ_OK) st = parse_amb(c, val[K_AMB], path, err, errlen);
    }
    if (st != KVQ_OK) kvq_vcase_free(c);
    return st;
}

/* Header line `key value`; value is the rest of the line. */
static kvq_status header_line(lines *L, const char *key, char *out, size_t outlen,
                              const char *path, char *err, size_t errlen)
{
    char *s = lines_next_content(L);
    size_t kl = strlen(key);
    if (s == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "missing header line '%s'", key);
    if (strncmp(s, key, kl) != 0 || s[kl] != ' ' || s[kl + 1] == '\0')
        return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "expected header line '%s <value>'", key);
    if (strlen(s + kl + 1) >= outlen) return fail(err, errlen, KVQ_E_FORMAT, path, L->no, "header '%s' too long", key);
    strcpy(out, s + kl + 1);
    return KVQ_OK;
}

static kvq_status magic_line(lines *L, const char *magic, uint32_t *version, const char *path,
                             char *err, size_t errlen)
{
    char *s = lines_next(L), *tok[3];
    if (s == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, 1, "empty file, expected '%s %u'", magic, KVQ_VEC_VERSION);
    if (tokenize(s, tok, 3) != 2 || strcmp(tok[0], magic) != 0)
        return fail(err, errlen, KVQ_E_FORMAT, path, 1, "not a %s file (first line must be '%s %u')", magic, magic, KVQ_VEC_VERSION);
    if (!parse_u32(tok[1], version) || *version != KVQ_VEC_VERSION)
        return fail(err, errlen, KVQ_E_FORMAT, path, 1, "unsupported version '%.20s' (this kvq reads %u)", tok[1], KVQ_VEC_VERSION);
    return KVQ_OK;
}

kvq_status kvq_vec_parse(kvq_vfile *vf, const char *buf, size_t len, const char *path,
                         char *err, size_t errlen)
{
    lines L;
    char tmp[64], *s;
    size_t cap = 0;
    kvq_status st;
    memset(vf, 0, sizeof *vf);
    st = lines_open(&L, buf, len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = magic_line(&L, KVQ_VEC_MAGIC, &vf->version, path, err, errlen);
    if (st == KVQ_OK) st = header_line(&L, "family", vf->family, sizeof vf->family, path, err, errlen);
    if (st == KVQ_OK && strcmp(vf->family, "kivi") != 0)
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "unknown family '%s'", vf->family);
    if (st == KVQ_OK) st = header_line(&L, "levels", vf->levels, sizeof vf->levels, path, err, errlen);
    if (st == KVQ_OK && strcmp(vf->levels, "smoke") != 0 && strcmp(vf->levels, "standard") != 0)
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "unknown level set '%s'", vf->levels);
    if (st == KVQ_OK) st = header_line(&L, "seed", tmp, sizeof tmp, path, err, errlen);
    if (st == KVQ_OK) {
        uint32_t hi, lo;
        if (strlen(tmp) != 18 || tmp[0] != '0' || tmp[1] != 'x' || !hexn(tmp + 2, 8, &hi) || !hexn(tmp + 10, 8, &lo))
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "seed must be 0x followed by 16 hex digits");
        else
            vf->seed = (uint64_t)hi << 32 | lo;
    }
    if (st == KVQ_OK) st = header_line(&L, "generator", vf->generator, sizeof vf->generator, path, err, errlen);
    while (st == KVQ_OK && (s = lines_next_content(&L)) != NULL) {
        char **tok;
        int ntok;
        size_t maxtok = strlen(s) / 2 + 2;
        tok = malloc(maxtok * sizeof *tok);
        if (tok == NULL) {
            st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
            break;
        }
        ntok = tokenize(s, tok, (int)maxtok);
        if (ntok < 1 || strcmp(tok[0], "case") != 0) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "expected a 'case' line, found '%.20s'", ntok > 0 ? tok[0] : "");
            free(tok);
            break;
        }
        if (vf->ncases == cap) {
            kvq_vcase *nc;
            cap = cap ? cap * 2 : 64;
            nc = realloc(vf->cases, cap * sizeof *nc);
            if (nc == NULL) {
                st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
                free(tok);
                break;
            }
            vf->cases = nc;
        }
        st = parse_case(&vf->cases[vf->ncases], tok, ntok, path, L.no, err, errlen);
        free(tok);
        if (st != KVQ_OK) break;
        for (size_t i = 0; i < vf->ncases; i++)
            if (strcmp(vf->cases[i].id, vf->cases[vf->ncases].id) == 0) {
                st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "case id '%s' repeats line %ld", vf->cases[i].id, vf->cases[i].line);
                kvq_vcase_free(&vf->cases[vf->ncases]);
                break;
            }
        if (st == KVQ_OK) vf->ncases++;
    }
    if (st == KVQ_OK && vf->ncases == 0)
        st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "no cases");
    free(L.buf);
    if (st != KVQ_OK) kvq_vfile_free(vf);
    return st;
}

kvq_status kvq_vec_read(kvq_vfile *vf, const char *path, char *err, size_t errlen)
{
    char *data;
    size_t len;
    kvq_status st;
    memset(vf, 0, sizeof *vf);
    st = read_file(&data, &len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = kvq_vec_parse(vf, data, len, path, err, errlen);
    free(data);
    return st;
}

kvq_status kvq_vec_write_header(FILE *f, const kvq_vfile *vf)
{
    if (fprintf(f, "%s %u\nfamily %s\nlevels %s\nseed 0x%016llx\ngenerator %s\n", KVQ_VEC_MAGIC,
                KVQ_VEC_VERSION, vf->family, vf->levels, (unsigned long long)vf->seed,
                vf->generator) < 0)
        return KVQ_E_IO;
    return KVQ_OK;
}

kvq_status kvq_vec_write_case(FILE *f, const kvq_vcase *c)
{
    const kvq_kivi_shape *s = &c->shape;
    uint64_t n = kvq_kivi_elems(s);
    int half = s->meta == KVQ_META_F16;
    int ok = fprintf(f,
                     "case id=%s level=%s op=kivi-quant bits=%u group=%u grouping=%s meta=%s "
                     "tokens=%u channels=%u ties=%s overflow=%s subnormal=%s status=%d "
                     "flags=0x%08lx x=",
                     c->id, kvq_level_name(c->level), s->bits, s->group,
                     kvq_grouping_name(s->grouping), kvq_meta_name(s->meta), s->tokens,
                     s->channels, TIES[c->pol.ties & 1u], OVERFLOWS[c->pol.overflow & 1u],
                     SUBNORMALS[c->pol.subnormal & 1u], c->status, (unsigned long)c->flags) >= 0;
    ok = ok && put_hex_floats(f, c->x, n, 0);
    if (ok && c->status == KVQ_OK) {
        uint64_t ng = kvq_kivi_groups(s), nb = kvq_kivi_code_bytes(s);
        ok = fputs(" codes=", f) >= 0 && put_hex_bytes(f, c->codes, nb) &&
             fputs(" scale=", f) >= 0 && put_hex_floats(f, c->scale, ng, half) &&
             fputs(" zero=", f) >= 0 && put_hex_floats(f, c->zero, ng, half) &&
             fputs(" deq=", f) >= 0 && put_hex_floats(f, c->deq, n, 0) &&
             fputs(" real=", f) >= 0 && put_hex_bytes(f, c->real, nb) &&
             fputs(" amb=", f) >= 0;
        if (ok && c->namb == 0) ok = fputs("-", f) >= 0;
        for (uint64_t k = 0; ok && k < c->namb; k++)
            ok = fprintf(f, "%s%llu:%u", k ? "," : "", (unsigned long long)c->amb_idx[k],
                         (unsigned)c->amb_alt[k]) >= 0;
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}

/* ---- results ------------------------------------------------------------------ */

void kvq_rcase_free(kvq_rcase *r)
{
    free(r->codes);
    free(r->scale);
    free(r->zero);
    free(r->deq);
    r->codes = r->scale = r->zero = r->deq = NULL;
}

void kvq_rfile_free(kvq_rfile *rf)
{
    for (size_t i = 0; i < rf->ncases; i++) kvq_rcase_free(&rf->cases[i]);
    free(rf->cases);
    rf->cases = NULL;
    rf->ncases = 0;
}

void kvq_rout_free(kvq_rout *o)
{
    free(o->codes);
    free(o->scale);
    free(o->zero);
    free(o->deq);
    o->codes = NULL;
    o->scale = o->zero = o->deq = NULL;
}

enum { R_ID, R_STATUS, R_FLAGS, R_CODES, R_SCALE, R_ZERO, R_DEQ, R_COUNT };
static const char *const RES_KEYS[R_COUNT] = { "id", "status", "flags", "codes", "scale", "zero", "deq" };

static kvq_status parse_result(kvq_rcase *r, char **tok, int ntok, const char *path, long line,
                               char *err, size_t errlen)
{
    const char *val[R_COUNT] = { 0 };
    uint32_t u;
    memset(r, 0, sizeof *r);
    r->line = line;
    for (int i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        int k;
        if (eq == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "field '%.40s' is not key=value", tok[i]);
        *eq = '\0';
        k = name_index(tok[i], RES_KEYS, R_COUNT);
        if (k < 0) return fail(err, errlen, KVQ_E_FORMAT, path, line, "unknown key '%.40s'", tok[i]);
        if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given twice", tok[i]);
        val[k] = eq + 1;
    }
    if (val[R_ID] == NULL || val[R_STATUS] == NULL)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "a result needs id= and status=");
    if (!id_ok(val[R_ID])) return fail(err, errlen, KVQ_E_FORMAT, path, line, "bad case id '%.70s'", val[R_ID]);
    strcpy(r->id, val[R_ID]);
    if (!parse_u32(val[R_STATUS], &u) || u > 255u)
        return fail(err, errlen, KVQ_E_FORMAT, path, line, "status: '%.40s' is not a decimal status", val[R_STATUS]);
    r->status = (int)u;
    if (r->status == KVQ_OK) {
        for (int k = R_FLAGS; k < R_COUNT; k++)
            if (val[k] == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "missing key '%s' (status 0)", RES_KEYS[k]);
        if (!parse_hex32_field(val[R_FLAGS], &r->flags))
            return fail(err, errlen, KVQ_E_FORMAT, path, line, "flags: '%.40s' is not 0x followed by 8 hex digits", val[R_FLAGS]);
        r->codes = strdup(val[R_CODES]);
        r->scale = strdup(val[R_SCALE]);
        r->zero = strdup(val[R_ZERO]);
        r->deq = strdup(val[R_DEQ]);
        if (!r->codes || !r->scale || !r->zero || !r->deq) {
            kvq_rcase_free(r);
            return fail(err, errlen, KVQ_E_NOMEM, path, line, "out of memory");
        }
    } else {
        for (int k = R_FLAGS; k < R_COUNT; k++)
            if (val[k] != NULL) return fail(err, errlen, KVQ_E_FORMAT, path, line, "key '%s' given with a nonzero status", RES_KEYS[k]);
    }
    return KVQ_OK;
}

kvq_status kvq_res_parse(kvq_rfile *rf, const char *buf, size_t len, const char *path,
                         char *err, size_t errlen)
{
    lines L;
    char *s;
    size_t cap = 0;
    kvq_status st;
    memset(rf, 0, sizeof *rf);
    st = lines_open(&L, buf, len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = magic_line(&L, KVQ_RES_MAGIC, &rf->version, path, err, errlen);
    if (st == KVQ_OK) st = header_line(&L, "subject", rf->subject, sizeof rf->subject, path, err, errlen);
    while (st == KVQ_OK && (s = lines_next_content(&L)) != NULL) {
        char *tok[16];
        int ntok;
        if (strncmp(s, "unavailable ", 12) == 0) {
            if (rf->ncases > 0 || rf->unavailable[0]) {
                st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "'unavailable' must come alone, before any result");
                break;
            }
            snprintf(rf->unavailable, sizeof rf->unavailable, "%s", s + 12);
            continue;
        }
        ntok = tokenize(s, tok, 16);
        if (ntok < 1 || strcmp(tok[0], "result") != 0) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "expected a 'result' line");
            break;
        }
        if (rf->unavailable[0]) {
            st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "a result after 'unavailable'");
            break;
        }
        if (rf->ncases == cap) {
            kvq_rcase *nc;
            cap = cap ? cap * 2 : 64;
            nc = realloc(rf->cases, cap * sizeof *nc);
            if (nc == NULL) {
                st = fail(err, errlen, KVQ_E_NOMEM, path, L.no, "out of memory");
                break;
            }
            rf->cases = nc;
        }
        st = parse_result(&rf->cases[rf->ncases], tok, ntok, path, L.no, err, errlen);
        if (st != KVQ_OK) break;
        for (size_t i = 0; i < rf->ncases; i++)
            if (strcmp(rf->cases[i].id, rf->cases[rf->ncases].id) == 0) {
                st = fail(err, errlen, KVQ_E_FORMAT, path, L.no, "result for '%s' repeats line %ld", rf->cases[i].id, rf->cases[i].line);
                kvq_rcase_free(&rf->cases[rf->ncases]);
                break;
            }
        if (st == KVQ_OK) rf->ncases++;
    }
    free(L.buf);
    if (st != KVQ_OK) kvq_rfile_free(rf);
    return st;
}

kvq_status kvq_res_read(kvq_rfile *rf, const char *path, char *err, size_t errlen)
{
    char *data;
    size_t len;
    kvq_status st;
    memset(rf, 0, sizeof *rf);
    st = read_file(&data, &len, path, err, errlen);
    if (st != KVQ_OK) return st;
    st = kvq_res_parse(rf, data, len, path, err, errlen);
    free(data);
    return st;
}

kvq_status kvq_res_decode(kvq_rout *o, const kvq_rcase *r, const kvq_vcase *c,
                          const char *path, char *err, size_t errlen)
{
    uint64_t n = kvq_kivi_elems(&c->shape), ng = kvq_kivi_groups(&c->shape);
    uint64_t nb = kvq_kivi_code_bytes(&c->shape);
    int half = c->shape.meta == KVQ_META_F16;
    kvq_status st;
    memset(o, 0, sizeof *o);
    if (r->codes == NULL) return fail(err, errlen, KVQ_E_FORMAT, path, r->line, "result has no outputs");
    o->codes = malloc(nb ? nb : 1);
    o->scale = malloc(ng * sizeof *o->scale);
    o->zero = malloc(ng * sizeof *o->zero);
    o->deq = malloc(n * sizeof *o->deq);
    if (!o->codes || !o->scale || !o->zero || !o->deq) {
        kvq_rout_free(o);
        return fail(err, errlen, KVQ_E_NOMEM, path, r->line, "out of memory");
    }
    st = hex_bytes(o->codes, nb, r->codes, "codes", path, r->line, err, errlen);
    if (st == KVQ_OK) st = hex_floats(o->scale, ng, half, r->scale, "scale", path, r->line, err, errlen);
    if (st == KVQ_OK) st = hex_floats(o->zero, ng, half, r->zero, "zero", path, r->line, err, errlen);
    if (st == KVQ_OK) st = hex_floats(o->deq, n, 0, r->deq, "deq", path, r->line, err, errlen);
    if (st != KVQ_OK) kvq_rout_free(o);
    return st;
}

kvq_status kvq_res_write_header(FILE *f, const char *subject, const char *unavailable)
{
    if (fprintf(f, "%s %u\nsubject %s\n", KVQ_RES_MAGIC, KVQ_VEC_VERSION, subject) < 0)
        return KVQ_E_IO;
    if (unavailable != NULL && fprintf(f, "unavailable %s\n", unavailable) < 0) return KVQ_E_IO;
    return KVQ_OK;
}

kvq_status kvq_res_write_case(FILE *f, const char *id, int status, uint32_t flags,
                              const kvq_rout *o, const kvq_kivi_shape *shape)
{
    int ok = fprintf(f, "result id=%s status=%d", id, status) >= 0;
    if (ok && status == KVQ_OK) {
        uint64_t n = kvq_kivi_elems(shape), ng = kvq_kivi_groups(shape);
        int half = shape->meta == KVQ_META_F16;
        /* Binary16 metadata that is not a binary16 value has no encoding: the
         * field is written as `invalid`, which verify reports as that case's
         * failure. */
        ok = fprintf(f, " flags=0x%08lx codes=", (unsigned long)flags) >= 0 &&
             put_hex_bytes(f, o->codes, kvq_kivi_code_bytes(shape)) &&
             fputs(" scale=", f) >= 0;
        if (ok) ok = all_encodable(o->scale, ng, half) ? put_hex_floats(f, o->scale, ng, half)
                                                       : fputs("invalid", f) >= 0;
        ok = ok && fputs(" zero=", f) >= 0;
        if (ok) ok = all_encodable(o->zero, ng, half) ? put_hex_floats(f, o->zero, ng, half)
                                                      : fputs("invalid", f) >= 0;
        ok = ok && fputs(" deq=", f) >= 0 && put_hex_floats(f, o->deq, n, 0);
    }
    ok = ok && fputc('\n', f) != EOF;
    return ok ? KVQ_OK : KVQ_E_IO;
}
