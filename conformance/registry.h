/*
 * registry.h -- the conformance core: families, operations and their field
 * schemas (spec/verify.md [VER-REG-01..05], spec/adding-a-family.md).
 *
 * An operation is data.  Its descriptor names it on the wire (frozen), lists
 * the fields of its vector and results lines with their types, roles and
 * counts, the levels it allows, the subject entry points it calls, its exact
 * solver and its judges.  Vector and results I/O, generation's shard loop, the
 * subject runner, verdicts and reports walk these descriptors and never ask
 * which family or operation they hold.  A family is one module under
 * conformance/families/ and one line of the registry (registry.c).
 */
#ifndef KVQ_REGISTRY_H
#define KVQ_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvq.h"
#include "kvq_subject.h"

#define KVQ_ID_MAX 64

/* Values of one array a vector or results file may carry [VER-REG-08]. */
#define KVQ_MAX_FILE_ELEMS_TEXT "16777216"
#define KVQ_MAX_FILE_ELEMS ((uint64_t)1 << 24)

/* Conformance level of a case [VEC-LVL-01]. */
#define KVQ_LEVEL_EXACT   0u
#define KVQ_LEVEL_BOUNDED 1u
#define KVQ_LEVEL_COUNT   2u
#define KVQ_LEVEL_BIT(l)  (1u << (l))

/* Verdict outcomes. */
enum { KVQ_PASS = 0, KVQ_FAIL = 1, KVQ_SKIP = 2 };

typedef struct kvq_op kvq_op;
typedef struct kvq_family kvq_family;
typedef struct kvq_case kvq_case;

/* ---- field schema -------------------------------------------------------- */

/* What a field's value is on the wire and in memory. */
typedef enum kvq_ftype {
    /* the core's own fields, held in kvq_case */
    KVQ_FT_ID,      /* case id: 1..63 of [A-Za-z0-9._-] */
    KVQ_FT_OP,      /* the operation's wire name */
    KVQ_FT_STATUS,  /* decimal kvq_status */
    KVQ_FT_FLAGS,   /* 0x + 8 hex digits: a flags word (the expected one in a vector, the
                       subject's in a result) */
    /* scalars */
    KVQ_FT_U32,     /* decimal, below 2^32 */
    KVQ_FT_ENUM,    /* one of names[]; held as uint32_t */
    KVQ_FT_F32,     /* one binary32 as 8 hex digits */
    KVQ_FT_CUSTOM,  /* the field's own parse/print (kvq_custom) */
    /* arrays: count_rule elements, held as a pointer */
    KVQ_FT_A_F32,   /* binary32, 8 hex digits each; float[] */
    KVQ_FT_A_F16,   /* binary16, 4 hex digits each; float[] holding binary16 values */
    KVQ_FT_A_META,  /* binary32 or binary16 as the op's rule meta_half says; float[] */
    KVQ_FT_A_U8,    /* bytes, 2 hex digits each: packed codes, FP8 codes (E4M3/E5M2 bit
                       patterns), packed trits (5 a byte); uint8_t[] */
    KVQ_FT_A_U16,   /* 4 hex digits each: pattern indices, binary16 bit patterns;
                       uint16_t[] */
    KVQ_FT_A_U32,   /* 8 hex digits each: words; uint32_t[] */
    KVQ_FT_A_C32,   /* complex binary32, re then im, 16 hex digits each; float[2 n] */
    KVQ_FT_AMB,     /* ambiguity list `-` or index:alt,... (kvq_amb) */
    KVQ_FT_COUNT
} kvq_ftype;

/* Whose struct a field lives in, and when it is on a line. */
typedef enum kvq_role {
    KVQ_ROLE_CASE,      /* kvq_case itself (id, level, op, policy, status, flags) */
    KVQ_ROLE_INPUT,     /* c->in: shape, parameters and input arrays; always present */
    KVQ_ROLE_EXPECTED,  /* c->exp: the exact path's outputs; present iff status is 0 */
    KVQ_ROLE_REFERENCE, /* c->ref: what bounded judges use (real codes, near-ties);
                           present iff status is 0 */
    KVQ_ROLE_OUTPUT     /* a result's outputs; present iff its status is 0 */
} kvq_role;

/* How the core's exact comparison treats an output field. */
typedef enum kvq_cmp {
    KVQ_CMP_JUDGE = 0, /* only the op's judge looks at it */
    KVQ_CMP_ALWAYS,    /* bitwise against the expected field of the same offset at every level */
    KVQ_CMP_EXACT      /* bitwise at the exact level; the op's bounded judge otherwise */
} kvq_cmp;

/* A near-tie list [VEC-FMT-04]: element idx[k] may take the code alt[k]. */
typedef struct kvq_amb {
    uint64_t n;
    uint64_t *idx;
    uint8_t *alt;  /* the code's bit pattern (int8 for signed codes) */
} kvq_amb;

/* A field with its own text form.  parse fills dst (msg: what is wrong, without
 * file and line); print writes the value; release frees what parse allocated
 * (NULL when nothing). */
typedef struct kvq_custom {
    int (*parse)(void *dst, const char *text, const kvq_case *c, char *msg, size_t msglen);
    int (*print)(FILE *f, const void *src, const kvq_case *c);
    void (*release)(void *dst);
    const char *pattern;  /* a POSIX ERE the whole text matches (anchored ^...$): the form
                             `kvq ops --json` tells other readers [VER-REG-12] */
} kvq_custom;

typedef struct kvq_field {
    const char *key;        /* wire key */
    kvq_ftype type;
    kvq_role role;
    size_t offset;          /* in the role's struct */
    /* arrays: the element count, a rule (rule.h, spec/verify.md [VER-REG-08])
     * over the case's scalars and the scalars before this field in its own
     * record (lengths carried by an earlier field of the same line) */
    const char *count_rule;
    const char *const *names; /* KVQ_FT_ENUM: value names, index = value */
    uint32_t nnames;
    const kvq_custom *custom; /* KVQ_FT_CUSTOM */
    kvq_cmp cmp;            /* KVQ_ROLE_OUTPUT */
    /* verdict messages of the core's comparison: unit names the index of an
     * indexed report ("group", "block"), NULL for a counted one; where()
     * adds where an element sits (" (group 3)"); cite follows a mismatch */
    const char *unit;
    void (*where)(const kvq_case *c, uint64_t i, char *buf, size_t len);
    const char *cite;
    int optional;           /* KVQ_ROLE_INPUT: may be absent (value 0), written only when
                               nonzero: how later fields join a frozen format */
    int finite;             /* a float input array whose values are finite in a status-0
                               case (the operation's spec makes a NaN or an infinity an
                               error status): the reader rejects the file otherwise */
} kvq_field;

/* ---- subjects' entry points ------------------------------------------------ */

/* An entry point an operation calls: the name a subject is asked for, the
 * signature version (kvq_subject.h), and which of the op's slots it fills. */
typedef struct kvq_entry_decl {
    const char *name;
    uint32_t sigver;
    /* An older signature version (0: none) that serves the cases of the
     * variants in older_variants (bit i: variant i) when the subject lacks
     * sigver: an entry that predates the variants implements those only. */
    uint32_t older, older_variants;
} kvq_entry_decl;

#define KVQ_OP_MAX_ENTRIES 4

/* A subject as the runner sees it, whatever ABI it was built for. */
typedef struct kvq_subject {
    const char *name;
    uint32_t abi;
    int (*init)(char *why, size_t whylen);
    void (*fini)(void);
    kvq_entry_fn (*lookup)(const struct kvq_subject *s, const char *entry, uint32_t sigver);
    /* why a missing entry is missing (the skip reason, one token); NULL: the
     * runner says "subject-has-no-<entry>" */
    const char *(*missing)(const struct kvq_subject *s, const kvq_op *op, const char *entry);
    const void *record;     /* the ABI's own record */
} kvq_subject;

/* ---- verdicts ------------------------------------------------------------------ */

/* A bounded quantity of a judged case: the largest observed error against
 * the proven bound it must stay within (the exact path's outward-rounded
 * value), for reports that show the margin [VER-REP-04]. */
typedef struct kvq_margin {
    const char *quantity;  /* "deq error [KIVI-B-03]" */
    double error, bound;   /* at the element where error/bound is largest */
} kvq_margin;

#define KVQ_VERDICT_MARGINS 2

typedef struct kvq_verdict {
    const kvq_case *vc;
    long result_line;  /* the line of the case's result in its results file (0: none) */
    int outcome;
    char detail[640]; /* the first discrepancy, in hex */
    kvq_margin margin[KVQ_VERDICT_MARGINS];
    int nmargin;
} kvq_verdict;

/* Record (or raise) a case's margin of a quantity: keeps the largest
 * error/bound seen for it (a zero bound counts as infinite ratio when the
 * error is not zero). */
void kvq_verdict_margin(kvq_verdict *v, const char *quantity, double error, double bound);

/* ---- operations and families --------------------------------------------------- */

struct kvq_op {
    const char *name;                  /* frozen wire name */
    const kvq_family *family;
    const char *summary;               /* one line for `kvq ops` */
    const kvq_field *fields;           /* in wire order: the writer's order */
    size_t nfields;
    size_t in_size, out_size, ref_size; /* the family's structs */
    uint32_t levels;                   /* KVQ_LEVEL_BIT set the op allows */
    const char *const *variants;       /* named variants, [0] the default; NULL: none */
    uint32_t nvariants;
    /* An operation that gained its variants in kvq version variants_since
     * ("0.4.0"; NULL: always had them): a case of a file written by an older
     * kvq is of variant legacy_variant, the one the operation was then. */
    const char *variants_since;
    uint32_t legacy_variant;
    kvq_entry_decl entries[KVQ_OP_MAX_ENTRIES]; /* looked up in this order */
    uint32_t nentries;

    /* Rules over the case's scalars (rule.h, spec/verify.md [VER-REG-07..09]):
     * valid: the parameters and shape are valid -- a status-0 case needs it,
     * and outputs exist only then (count rules use it by name); meta_half:
     * KVQ_FT_A_META arrays are binary16 when nonzero (NULL: binary32);
     * amb_lo, amb_hi: the code range of KVQ_FT_AMB alternatives. */
    const char *valid, *meta_half, *amb_lo, *amb_hi;
    /* What a rule cannot state about the scalars of a case read from a file
     * (NULL when nothing): 1, or 0 with msg.  Runs after the core's own
     * checks (every array within the file limit, status 0 only when valid),
     * before the arrays are read. */
    int (*check)(const kvq_case *c, char *msg, size_t msglen);
    /* "bits=4 G=16 channel f32": the case in a report line */
    void (*describe)(const kvq_case *c, char *buf, size_t len);
    /* Where the flags of diff (expected XOR got) arise: "; first group with a
     * zero scale: 3" (buf empty when it cannot tell).  May be NULL. */
    void (*flags_where)(const kvq_case *c, const void *out, uint32_t diff, char *buf, size_t len);

    /* The exact path [VER-REG-11]: from c->in (set; when valid, the outputs
     * allocated by kvq_case_alloc with status 0) it sets c->status and
     * c->flags, and for status 0 fills c->exp and c->ref (an error status
     * drops them).  Returns KVQ_OK, or an error of its own (KVQ_E_NOMEM).
     * Every generator makes its expected values through it. */
    kvq_status (*solve)(kvq_case *c);
    /* Call the subject's entries (fns[i] for entries[i], none NULL) on the
     * case's inputs, writing into out (the output struct, arrays allocated
     * and sentinel-filled) and *flags.  Returns the subject's status. */
    int (*call)(const kvq_case *c, const kvq_entry_fn *fns, void *out, uint32_t *flags);
    /* Judge a status-0 result whose fields decoded: v->outcome and
     * v->detail.  kvq_judge_common() does the core's bitwise part. */
    void (*judge)(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags);
};

/* A subcommand a family adds to `kvq` (`kvq cert`, `kvq bench`). */
typedef struct kvq_command {
    const char *name;
    int (*main)(int argc, char **argv); /* argv[0] is the command's name; returns the exit status */
    const char *usage;                  /* lines of `kvq --help`, each ending in a newline */
} kvq_command;

#define KVQ_FAMILY_MAX_COMMANDS 4

struct kvq_family {
    const char *name;                  /* vector header `family <name>`, JUnit class prefix */
    const char *title;                 /* "KIVI" for the demo's headings */
    const char *spec;                  /* the spec file */
    int gpu;                           /* it has CUDA kernels: gpu/<name>/ holds them and its
                                          GPU subject entries [FAM-LAYOUT-01] */
    const kvq_op *const *ops;
    size_t nops;
    /* Generation [VEC-GEN-01]: the number of cases of a level set (0: the
     * family has no such set), and case k of it, drawn from (seed, k) alone
     * so that shards hold exactly the full run's cases. */
    uint64_t (*gen_count)(const char *levels);
    kvq_status (*gen_case)(kvq_case *c, const char *levels, uint64_t seed, uint64_t k);
    /* The fast reference path's entry of a name and signature version, or
     * NULL: the family's part of the built-in subject ref-fast. */
    kvq_entry_fn (*ref_entry)(const char *entry, uint32_t sigver);
    kvq_command commands[KVQ_FAMILY_MAX_COMMANDS];
};

/* One case: the operation and its family-owned structs. */
struct kvq_case {
    char id[KVQ_ID_MAX];
    long line;            /* line number in its file (0: generated) */
    const kvq_op *op;
    uint32_t level;       /* KVQ_LEVEL_* */
    uint32_t variant;     /* index into op->variants */
    kvq_policy pol;
    int status;           /* expected status */
    uint32_t flags;       /* expected flags (the exact path's, AMBIGUOUS included) */
    void *in;             /* op->in_size bytes */
    void *exp;            /* op->out_size bytes, status 0 only */
    void *ref;            /* op->ref_size bytes, status 0 only */
};

/* ---- the registry ---------------------------------------------------------- */

size_t kvq_family_count(void);
const kvq_family *kvq_family_at(size_t i);
const kvq_family *kvq_family_find(const char *name);
const kvq_op *kvq_op_find(const char *name);
/* "kivi, cert": the family names, for messages */
const char *kvq_family_names(void);
/* The built-in table, and a replacement for this process (NULL restores the
 * built-in one): how a test, or a program embedding the core with families
 * of its own, registers them.  Not thread-safe; call before any other use. */
const kvq_family *const *kvq_registry_builtin(size_t *n);
void kvq_registry_use(const kvq_family *const *families, size_t n);

/* ---- schema helpers for families and the core ---------------------------------- */

const char *kvq_level_name(uint32_t level);
/* The level sets `kvq gen` knows, the flags word's bit names, the wire names
 * of field types and roles (regjson.c).  The first KVQ_LEVEL_SETS_ROUTINE
 * sets are routine: `kvq ops --families` lists them and the test scripts
 * generate them; the others (`large`) are generated on demand
 * [VEC-GEN-02] [VEC-GEN-04]. */
#define KVQ_LEVEL_SETS 3
#define KVQ_LEVEL_SETS_ROUTINE 2
extern const char *const kvq_level_set_names[KVQ_LEVEL_SETS];
#define KVQ_FLAG_BITS 5
extern const char *const kvq_flag_names[KVQ_FLAG_BITS];
const char *kvq_ftype_name(kvq_ftype t);
const char *kvq_role_name(kvq_role r);
/* The registry description [VER-REG-12]: format version 1 of `kvq ops --json`. */
#define KVQ_REGISTRY_FORMAT 1
kvq_status kvq_registry_json(FILE *f);
/* The struct a role's fields live in (NULL when absent). */
void *kvq_case_role(kvq_case *c, kvq_role role);
/* A new case of op: zeroed, its input struct allocated (no arrays yet). */
kvq_status kvq_case_begin(kvq_case *c, const kvq_op *op);
/* Allocate what c lacks of the op's structs for c->status (in always; exp
 * and ref when 0) with the arrays of their fields, sized by their counts (at
 * least one element).  c->op and the scalars the counts read are set; a
 * case made for an error status gains its outputs by a second call once its
 * status is 0.  On failure c is freed. */
kvq_status kvq_case_alloc(kvq_case *c);
/* Drop exp and ref (an expected error: the inputs stay). */
void kvq_case_drop_outputs(kvq_case *c);
void kvq_case_free(kvq_case *c);
/* Free the arrays of a role's struct (fields of role role of op). */
void kvq_fields_release(const kvq_op *op, kvq_role role, void *rec);
/* The element size of an array type (0 for scalars). */
size_t kvq_ftype_elem_size(kvq_ftype t);

/* The core's bitwise judgement [VER-EX-01..03]: KVQ_CMP_ALWAYS fields, then
 * at the exact level the flags (less AMBIGUOUS) and KVQ_CMP_EXACT fields.
 * Returns 1 when all agree, 0 with v->detail set. */
int kvq_judge_common(kvq_verdict *v, const kvq_case *c, const void *out, uint32_t flags);
/* One output field against the expected field at the same offset, bit for
 * bit: a scalar (decimal, name, binary32), or an array with an indexed or a
 * counted mismatch message; 1 when equal.  (Also for judges that compare
 * some fields themselves.) */
int kvq_judge_field(kvq_verdict *v, const kvq_case *c, const kvq_field *f, const void *exp,
                    const void *out);
/* A flags mismatch by name [VER-EX-02]: "what: expected 0x.. (ZERO_SCALE), got
 * 0x.. (ZERO_SCALE|CLAMPED): extra CLAMPED". */
void kvq_judge_flags(kvq_verdict *v, const char *what, uint32_t want, uint32_t got);
/* The same, followed by where the differing flags arise (op->flags_where). */
void kvq_judge_flags_at(kvq_verdict *v, const kvq_case *c, const void *out, const char *what,
                        uint32_t want, uint32_t got);
/* The OUTPUT field of op with key (NULL if none). */
const kvq_field *kvq_op_output(const kvq_op *op, const char *key);
/* An element of an ambiguity list: 1 and *alt when e is listed. */
int kvq_amb_find(const kvq_amb *a, uint64_t e, uint32_t *alt);

/* Field constructors (designated initialisers, so families read as tables). */
#define KVQ_F_ID        { .key = "id", .type = KVQ_FT_ID, .role = KVQ_ROLE_CASE }
#define KVQ_F_OP        { .key = "op", .type = KVQ_FT_OP, .role = KVQ_ROLE_CASE }
#define KVQ_F_STATUS    { .key = "status", .type = KVQ_FT_STATUS, .role = KVQ_ROLE_CASE }
#define KVQ_F_FLAGS     { .key = "flags", .type = KVQ_FT_FLAGS, .role = KVQ_ROLE_CASE }
#define KVQ_F_OUT_FLAGS { .key = "flags", .type = KVQ_FT_FLAGS, .role = KVQ_ROLE_OUTPUT }
extern const char *const kvq_level_names[KVQ_LEVEL_COUNT];
extern const char *const kvq_ties_names[2];
extern const char *const kvq_overflow_names[2];
extern const char *const kvq_subnormal_names[2];
/* the named variant a case is judged under [VER-REG-05]: absent for the default */
#define KVQ_F_VARIANT   { .key = "variant", .type = KVQ_FT_U32, .role = KVQ_ROLE_CASE, \
                          .offset = offsetof(kvq_case, variant), .optional = 1 }
#define KVQ_F_LEVEL     { .key = "level", .type = KVQ_FT_ENUM, .role = KVQ_ROLE_CASE, \
                          .offset = offsetof(kvq_case, level), .names = kvq_level_names, .nnames = 2 }
/* the policy switches every quantizer case carries [POL-*] */
#define KVQ_F_POLICY                                                                          \
    { .key = "ties", .type = KVQ_FT_ENUM, .role = KVQ_ROLE_CASE,                              \
      .offset = offsetof(kvq_case, pol.ties), .names = kvq_ties_names, .nnames = 2 },         \
    { .key = "overflow", .type = KVQ_FT_ENUM, .role = KVQ_ROLE_CASE,                          \
      .offset = offsetof(kvq_case, pol.overflow), .names = kvq_overflow_names, .nnames = 2 }, \
    { .key = "subnormal", .type = KVQ_FT_ENUM, .role = KVQ_ROLE_CASE,                         \
      .offset = offsetof(kvq_case, pol.subnormal), .names = kvq_subnormal_names, .nnames = 2 }

#define KVQ_NELEMS(a) (sizeof(a) / sizeof((a)[0]))

#endif /* KVQ_REGISTRY_H */
