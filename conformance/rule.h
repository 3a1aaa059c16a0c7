/*
 * rule.h -- the registry's rule language (spec/verify.md [VER-REG-07..09]):
 * array counts and an operation's validity, metadata format and near-tie code
 * range as C-like integer expressions over a case's scalar fields, kept as
 * text in the descriptors (kvq_field.count_rule, kvq_op.valid, ...) so that
 * `kvq ops --json` exports them and every reader evaluates the same thing.
 *
 * A rule is parsed once (the first time its operation is used, or by
 * kvq_rules_check) into a tree whose identifiers are bound to the fields of
 * the operation; a syntax error names the rule's text and the column.
 */
#ifndef KVQ_RULE_H
#define KVQ_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

typedef struct kvq_rule kvq_rule;

/* An operation's own rules (kvq_op.valid, .meta_half, .amb_lo, .amb_hi). */
typedef enum kvq_op_rule_id {
    KVQ_RULE_VALID = 0,
    KVQ_RULE_META_HALF,
    KVQ_RULE_AMB_LO,
    KVQ_RULE_AMB_HI,
    KVQ_RULE_NOPRULES
} kvq_op_rule_id;

extern const char *const kvq_op_rule_names[KVQ_RULE_NOPRULES];

/* Parse text in the scope of op: its scalar fields of roles case and input;
 * for a count rule (self, the array field it sizes, not NULL) also the
 * scalar fields of self's role that come before self, and the op rules
 * `valid` and `meta_half` by name.  NULL with err ("rule 'a +' column 4:
 * expected a number, a name or '('") on a syntax or type error. */
kvq_rule *kvq_rule_parse(const char *text, const kvq_op *op, const kvq_field *self, char *err,
                         size_t errlen);
/* Evaluate on case c (rec: the record self lives in, for a count rule).
 * 1 and *v, or 0 with err (overflow, a zero divisor). */
int kvq_rule_eval(const kvq_rule *r, const kvq_case *c, const void *rec, int64_t *v, char *err,
                  size_t errlen);
void kvq_rule_free(kvq_rule *r);

/* ---- the registry's rules, parsed once an operation ------------------------------ */

/* Every rule of op parses, it has valid and solve, an array field has a count rule, an op with a
 * KVQ_FT_A_META field has meta_half and one with a KVQ_FT_AMB field amb_lo
 * and amb_hi: 1, or 0 with err naming the op, the rule's place and the
 * error. */
int kvq_rules_check(const kvq_op *op, char *err, size_t errlen);
/* The text of one of op's rules (NULL when it has none). */
const char *kvq_op_rule_text(const kvq_op *op, kvq_op_rule_id which);
/* One of c's op rules: 1 and *v (dflt when the op has no such rule), or 0
 * with err. */
int kvq_op_rule_eval(const kvq_case *c, kvq_op_rule_id which, int64_t dflt, int64_t *v, char *err,
                     size_t errlen);
/* Array field f's element count in c (rec: the record f lives in): 1 and *n,
 * or 0 with err ("x: count 'tokens * channels': ...") when it does not
 * evaluate or is negative. */
int kvq_field_count(const kvq_case *c, const kvq_field *f, const void *rec, uint64_t *n, char *err,
                    size_t errlen);
/* Whether f's count rule reads a scalar of f's own record (known only once
 * that record is read), not only the case's. */
int kvq_count_reads_record(const kvq_op *op, const kvq_field *f);
/* The same for a case already read or made (its counts evaluate): 0 when
 * they do not. */
uint64_t kvq_count(const kvq_case *c, const kvq_field *f, const void *rec);
/* The first conjunct of op rule which (a chain of &&) that is false in c,
 * for messages: 1 and its text in buf ("r >= 1"), or 0. */
int kvq_rule_why_false(const kvq_case *c, kvq_op_rule_id which, char *buf, size_t len);
/* A case's rule valid (0 when it does not evaluate) and meta_half (binary16
 * metadata). */
int kvq_case_valid(const kvq_case *c);
int kvq_meta_half(const kvq_case *c);

#endif /* KVQ_RULE_H */
