(* proofs/coq/F16.v -- the content of the binary16 predicate's accepted WP goal
   ([TR-GOAL-F16DEF] of proofs/TRUSTED.md), over R with Flocq.

   kvq_cert_is_f16 (ref/fast/cert.c:36-43) returns, for a finite v,
   `kvq_round_f16(v, &ov) == v && !ov`.  Its goal `def` says that this is 1
   exactly when v is a binary16 number (kvq_is_f16_l).  The theorem below
   proves that equivalence for every real v, with kvq_round_f16's result as
   its contract states it: the overflow flag exactly when |v| >= 65520
   (`overflow_def`, 0x1.ffep+15), then the saturated +-65504 (`saturated`),
   else RN16(v) (`value`) [POL-F16-01..02].  RN16 is Flocq's rounding to
   nearest, ties to even, onto FLT_exp (-24) 11 (11 significant bits, the
   quantum 2^-24 below 2^-14, no upper exponent bound), which is
   spec/policy.md's RN16 for the values that do not overflow. *)

From Coq Require Import ZArith Reals Lra Lia.
From Flocq Require Import Core.
Open Scope R_scope.

(* ---- binary16 rounding [POL-F16-01] *)
Notation fexp16 := (FLT_exp (-24) 11).
Local Instance prec16_gt_0 : Prec_gt_0 11 := eq_refl.
Definition RN16 (x : R) : R := round radix2 fexp16 ZnearestE x.

(* ---- ref/fast/kivi.c:244-247, the contract of kvq_round_f16 the KIVI runs
   read: overflow_def, the flag set exactly when \abs(v) >= 0x1.ffep+15;
   saturated, \result == (v > 0 ? 0x1.ffcp+15 : -0x1.ffcp+15) then;
   value, \result == kvq_rn16_l(v) otherwise (kvq_rn16_l, ref/fast/kivi.c:149,
   spells RN16 with the binade's quantum kvq_f16_quantum_l) *)
Definition kvq_f16_overflow (v : R) : Prop := 65520 <= Rabs v.
Definition kvq_round_f16_result (v : R) : R :=
  if Rle_dec 65520 (Rabs v) then (if Rlt_dec 0 v then 65504 else -65504) else RN16 v.

(* ---- include/kvq.h:325-327 (\pow(2, e) of an integer e is bpow radix2 e) *)
Definition kvq_is_f16_l (v : R) : Prop :=
  -65504 <= v <= 65504 /\
  exists m e : Z, (-24 <= e <= 5)%Z /\ (-2048 < m < 2048)%Z /\ v = IZR m * bpow radix2 e.

(* A number of the binary16 grid below the overflow threshold is a binary16
   number: its Flocq float has |m| < 2^11 and e >= -24; an exponent above 5
   is moved into the mantissa (m 2^(e-5) 2^5), and |v| < 65520 = 2047.5 2^5
   bounds that mantissa by 2047, so |v| <= 2047 2^5 = 65504. *)
Lemma f16_format_repr : forall v, generic_format radix2 fexp16 v -> Rabs v < 65520 ->
  kvq_is_f16_l v.
Proof.
  intros v Hf Hv.
  destruct (FLT_format_generic radix2 (-24) 11 v Hf) as [[m e] Hve Hm He].
  simpl in Hm, He. unfold F2R in Hve; simpl in Hve.
  change (Zpower radix2 11) with 2048%Z in Hm.
  destruct (Z_le_gt_dec e 5) as [He5|He5].
  - assert (Hm' : (Z.abs m <= 2047)%Z) by lia.
    assert (Hb : bpow radix2 e <= 32).
    { replace 32 with (bpow radix2 5) by (simpl; lra). apply bpow_le. exact He5. }
    assert (Hb0 : 0 < bpow radix2 e) by apply bpow_gt_0.
    assert (Habs : Rabs v <= 65504).
    { rewrite Hve, Rabs_mult, (Rabs_pos_eq (bpow radix2 e)) by lra.
      rewrite <- abs_IZR. apply IZR_le in Hm'.
      apply Rle_trans with (2047 * 32); [|lra].
      apply Rmult_le_compat; try lra. apply IZR_le; lia. }
    split; [apply Rabs_le_inv; exact Habs|].
    exists m, e. split; [lia|]. split; [lia|]. exact Hve.
  - set (m' := (m * Zpower radix2 (e - 5))%Z).
    assert (Hv' : v = IZR m' * bpow radix2 5).
    { unfold m'. rewrite mult_IZR, IZR_Zpower by lia. rewrite Hve, Rmult_assoc, <- bpow_plus.
      f_equal. f_equal. ring. }
    assert (Hm'r : Rabs (IZR m') * 32 < 65520).
    { replace 32 with (bpow radix2 5) by (simpl; lra).
      rewrite <- (Rabs_pos_eq (bpow radix2 5)) by (simpl; lra). rewrite <- Rabs_mult, <- Hv'. exact Hv. }
    rewrite <- abs_IZR in Hm'r.
    assert (Hm2 : (Z.abs m' <= 2047)%Z).
    { apply Z.lt_succ_r. apply lt_IZR. rewrite succ_IZR. simpl. lra. }
    assert (Habs : Rabs v <= 65504).
    { rewrite Hv', Rabs_mult, <- abs_IZR. apply IZR_le in Hm2. simpl bpow.
      rewrite Rabs_pos_eq by lra. simpl. lra. }
    split; [apply Rabs_le_inv; exact Habs|].
    exists m', 5%Z. split; [lia|]. split; [lia|]. exact Hv'.
Qed.

(* Goals: typed_kvq_cert_is_f16_ensures_def
   `\result == 1 <==> \is_finite(v) && kvq_is_f16_l(v)` (include/kvq.h:335).
   Proved here: for every real v, kvq_round_f16's result equals v without
   overflow exactly when kvq_is_f16_l(v) -- one way because RN16(v) is on the
   grid (generic_format_round) and 65520 bounds it, the other because a
   binary16 number is on the grid (round_generic) and |v| <= 65504 < 65520.
   What stays with WP's context: the early `return 0` of a non-finite v (the
   goal's \is_finite), the call to kvq_round_f16 and its contract
   (overflow_def and saturated proved; value accepted, [TR-GOAL-F16-RN]), that
   the contract's kvq_rn16_l(v) is RN16(v) as Flocq defines it (the quantum
   function's 30 binades; backed by check_kivi's f16_round_vs_exact against
   MPFR), the comparison of binary32 values `==` (real equality of finite
   values) and `&& !ov`. *)
Theorem TR_GOAL_F16DEF_def : forall v : R,
  (kvq_round_f16_result v = v /\ ~ kvq_f16_overflow v) <-> kvq_is_f16_l v.
Proof.
  intros v. unfold kvq_round_f16_result, kvq_f16_overflow. split.
  - intros [Hr Hov]. destruct (Rle_dec 65520 (Rabs v)) as [H|H]; [contradiction|].
    apply f16_format_repr; [|lra].
    rewrite <- Hr. unfold RN16. apply generic_format_round; auto with typeclass_instances.
  - intros [Hrange [m [e [He [Hm Hv]]]]].
    assert (Ha : Rabs v <= 65504) by (apply Rabs_le; exact Hrange).
    destruct (Rle_dec 65520 (Rabs v)) as [H|H]; [lra|].
    split; [|lra].
    unfold RN16. apply round_generic; auto with typeclass_instances.
    apply generic_format_FLT. apply (FLT_spec _ _ _ _ (Float radix2 m e)).
    + unfold F2R. simpl. exact Hv.
    + simpl. change (Zpower radix2 11) with 2048%Z. lia.
    + simpl. lia.
Qed.
