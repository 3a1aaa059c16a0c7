/*
 * vidkv_gamma_half.c -- a WRONG subject: the ternary threshold uses the public
 * code's gamma 0.5 whatever the parameters say (the paper's default is 0.7)
 * [VIDKV-V-02].  kvq verify must FAIL the value cases whose gamma is not 0.5,
 * naming [VIDKV-V-02].
 */
#define SUBJECT_NAME "vidkv-gamma-half"
#define VIDKV_VALUES_PRM(p) ((p).gamma = kvq_vidkv_params_ok(&(p)) ? 0.5f : (p).gamma)
#include "subject_vidkv.h"
