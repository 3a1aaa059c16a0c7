(* proofs/coq/F16.v -- the content of the binary16 predicate's accepted WP goal
   ([TR-GOAL-F16DEF] of proofs/TRUSTED.md), over R with Flocq.

   kvq_cert_is_f16 (ref/fast/cert.c:36-43) returns, for a finite v,
   `kvq_round_f16(v, &ov) == v && !ov`.  Its goal `def` says that this is 1
   exactly when v is a binary16 number (kvq_is_f16_l).  The theorem below
   proves that equivalence for every real v, with kvq_round_f16's result as
   its contract states it: the overflow flag exactly when |v| >= 65520
   (`overflow_def`, 0x1.ffep+15), then the saturated +-65504 (`saturated`),
   else kvq_rn16_l(v) (`value`) [POL-F16-01..02].  The ACSL definitions are
   copied below under their own names, each with the file:line of its ACSL
   text (a literal 0x1pK is bpow radix2 K, ACSL's % on integers is Z.rem).
   POL_F16_01_rn16 proves that kvq_rn16_l is RN16 below 2^16: Flocq's
   rounding to nearest, ties to even, onto FLT_exp (-24) 11 (11 significant
   bits, the quantum 2^-24 below 2^-14, no upper exponent bound), which is
   spec/policy.md's RN16 for the values that do not overflow. *)

From Coq Require Import ZArith Reals Lra Lia.
From Flocq Require Import Core.
Open Scope R_scope.

(* ---- binary16 rounding [POL-F16-01] *)
Notation fexp16 := (FLT_exp (-24) 11).
Local Instance prec16_gt_0 : Prec_gt_0 11 := eq_refl.
Definition RN16 (x : R) : R := round radix2 fexp16 ZnearestE x.

(* ---- include/kvq.h:176-183, the rounding to an integer, ties to even *)
Definition kvq_round_up_l (d : R) (i ties : Z) : Z :=
  if Rlt_dec (/ 2) d then 1%Z else if Rlt_dec d (/ 2) then 0%Z else
  if Z.eqb ties 1 then 1%Z else if Z.eqb (Z.rem i 2) 0 then 0%Z else 1%Z.
Definition kvq_round_nonneg_l (q : R) (ties : Z) : Z :=
  (Zfloor q + kvq_round_up_l (q - IZR (Zfloor q)) (Zfloor q) ties)%Z.
Definition kvq_round_ties_l (q : R) (ties : Z) : Z :=
  if Rle_dec 0 q then kvq_round_nonneg_l q ties else (- kvq_round_nonneg_l (- q) ties)%Z.
Definition kvq_rne_l (q : R) : Z := kvq_round_ties_l q 0.
(* ---- ref/fast/kivi.c:113-144, the spacing of the binary16 grid at a *)
Definition kvq_f16_quantum_l (a : R) : R :=
  if Rlt_dec a (bpow radix2 (-13)) then bpow radix2 (-24) else
  if Rlt_dec a (bpow radix2 (-12)) then bpow radix2 (-23) else
  if Rlt_dec a (bpow radix2 (-11)) then bpow radix2 (-22) else
  if Rlt_dec a (bpow radix2 (-10)) then bpow radix2 (-21) else
  if Rlt_dec a (bpow radix2 (-9)) then bpow radix2 (-20) else
  if Rlt_dec a (bpow radix2 (-8)) then bpow radix2 (-19) else
  if Rlt_dec a (bpow radix2 (-7)) then bpow radix2 (-18) else
  if Rlt_dec a (bpow radix2 (-6)) then bpow radix2 (-17) else
  if Rlt_dec a (bpow radix2 (-5)) then bpow radix2 (-16) else
  if Rlt_dec a (bpow radix2 (-4)) then bpow radix2 (-15) else
  if Rlt_dec a (bpow radix2 (-3)) then bpow radix2 (-14) else
  if Rlt_dec a (bpow radix2 (-2)) then bpow radix2 (-13) else
  if Rlt_dec a (bpow radix2 (-1)) then bpow radix2 (-12) else
  if Rlt_dec a (bpow radix2 (0)) then bpow radix2 (-11) else
  if Rlt_dec a (bpow radix2 (1)) then bpow radix2 (-10) else
  if Rlt_dec a (bpow radix2 (2)) then bpow radix2 (-9) else
  if Rlt_dec a (bpow radix2 (3)) then bpow radix2 (-8) else
  if Rlt_dec a (bpow radix2 (4)) then bpow radix2 (-7) else
  if Rlt_dec a (bpow radix2 (5)) then bpow radix2 (-6) else
  if Rlt_dec a (bpow radix2 (6)) then bpow radix2 (-5) else
  if Rlt_dec a (bpow radix2 (7)) then bpow radix2 (-4) else
  if Rlt_dec a (bpow radix2 (8)) then bpow radix2 (-3) else
  if Rlt_dec a (bpow radix2 (9)) then bpow radix2 (-2) else
  if Rlt_dec a (bpow radix2 (10)) then bpow radix2 (-1) else
  if Rlt_dec a (bpow radix2 (11)) then bpow radix2 (0) else
  if Rlt_dec a (bpow radix2 (12)) then bpow radix2 (1) else
  if Rlt_dec a (bpow radix2 (13)) then bpow radix2 (2) else
  if Rlt_dec a (bpow radix2 (14)) then bpow radix2 (3) else
  if Rlt_dec a (bpow radix2 (15)) then bpow radix2 (4) else
  if Rlt_dec a (bpow radix2 (16)) then bpow radix2 (5) else
  bpow radix2 6.
(* ---- ref/fast/kivi.c:149-150 *)
Definition kvq_rn16_l (v : R) : R :=
  IZR (kvq_rne_l (v / kvq_f16_quantum_l (Rabs v))) * kvq_f16_quantum_l (Rabs v).


(* ---- kvq_rn16_l is RN16 *)
(* kvq_rne_l is Flocq's ZnearestE: the same step above the floor, and both odd *)
Lemma rne_nonneg : forall q, kvq_round_nonneg_l q 0 = ZnearestE q.
Proof.
  intros q. unfold kvq_round_nonneg_l, kvq_round_up_l, Znearest.
  set (f := Zfloor q).
  assert (Hf : IZR f <= q < IZR f + 1) by (split; [apply Zfloor_lb | unfold f; generalize (Zfloor_ub q); lra]).
  destruct (Rcompare_spec (q - IZR f) (/ 2)) as [H|H|H].
  - destruct (Rlt_dec (/ 2) (q - IZR f)); [lra|]. destruct (Rlt_dec (q - IZR f) (/ 2)); [lia|lra].
  - assert (Hc : Zceil q = (f + 1)%Z) by (apply Zceil_floor_neq; change (IZR f <> q); intro; lra).
    destruct (Rlt_dec (/ 2) (q - IZR f)); [lra|]. destruct (Rlt_dec (q - IZR f) (/ 2)); [lra|].
    simpl. rewrite Hc. clearbody f.
    destruct (Z.even f) eqn:E.
    + apply Z.even_spec in E as [k Hk]. subst f.
      rewrite (Z.mul_comm 2 k), Z.rem_mul by lia. simpl. lia.
    + assert (E' : Z.odd f = true) by (rewrite <- Z.negb_even, E; reflexivity).
      apply Z.odd_spec in E' as [k Hk]. subst f.
      destruct (Z.eqb_spec (Z.rem (2 * k + 1) 2) 0) as [R|R].
      * apply Z.rem_divide in R; [destruct R as [m Hm]; lia | lia].
      * simpl. lia.
  - assert (Hc : Zceil q = (f + 1)%Z) by (apply Zceil_floor_neq; change (IZR f <> q); intro; lra).
    destruct (Rlt_dec (/ 2) (q - IZR f)); [lia|lra].
Qed.

Lemma rne_ZnearestE : forall q, kvq_rne_l q = ZnearestE q.
Proof.
  intros q. unfold kvq_rne_l, kvq_round_ties_l.
  destruct (Rle_dec 0 q) as [H|H]; [apply rne_nonneg|].
  rewrite rne_nonneg, Znearest_opp, Z.opp_involutive.
  unfold Znearest. destruct (Rcompare _ _); try reflexivity.
  rewrite Z.even_opp, Z.even_add. simpl. destruct (Z.even (Zfloor q)); reflexivity.
Qed.

(* the quantum's chain of 30 tests, as a recursion on the threshold's exponent *)
Fixpoint qchain (n : nat) (j : Z) (a : R) : R :=
  match n with
  | O => bpow radix2 6
  | S n => if Rlt_dec a (bpow radix2 j) then bpow radix2 (j - 11) else qchain n (j + 1) a
  end.

Lemma quantum_chain : forall a, kvq_f16_quantum_l a = qchain 30 (-13) a.
Proof. intros a. reflexivity. Qed.

Lemma qchain_mag : forall n j a, 0 < a -> (mag radix2 a <= j + Z.of_nat n)%Z ->
  qchain (S n) j a = bpow radix2 (Z.max j (mag radix2 a) - 11).
Proof.
  induction n as [|n IH]; intros j a Ha Hm.
  - simpl qchain. destruct (Rlt_dec a (bpow radix2 j)) as [H|H].
    + f_equal. lia.
    + exfalso. assert (j + 1 <= mag radix2 a)%Z; [|simpl in Hm; lia].
      apply mag_ge_bpow. rewrite Rabs_pos_eq by lra. replace (j + 1 - 1)%Z with j by ring. lra.
  - change (qchain (S (S n)) j a) with
      (if Rlt_dec a (bpow radix2 j) then bpow radix2 (j - 11) else qchain (S n) (j + 1) a).
    destruct (Rlt_dec a (bpow radix2 j)) as [H|H].
    + f_equal. assert (mag radix2 a <= j)%Z; [|lia].
      apply mag_le_bpow; [lra|]. rewrite Rabs_pos_eq by lra. exact H.
    + assert (Hj : (j + 1 <= mag radix2 a)%Z).
      { apply mag_ge_bpow. rewrite Rabs_pos_eq by lra. replace (j + 1 - 1)%Z with j by ring. lra. }
      rewrite IH; [f_equal; lia | exact Ha | rewrite Nat2Z.inj_succ in Hm; lia].
Qed.

(* [POL-F16-01]: the contract's spelling of RN16, through the quantum of
   each binade, is Flocq's RN16 on the binary16 grid, for |v| < 2^16 (every
   v that does not overflow): the quantum of |v| is 2^cexp(v) =
   2^max(mag v - 11, -24), and the integer it rounds v / 2^cexp(v) to is
   Flocq's. *)
Theorem POL_F16_01_rn16 : forall v, Rabs v < 65536 -> kvq_rn16_l v = RN16 v.
Proof.
  intros v Hv. unfold kvq_rn16_l, RN16.
  destruct (Req_dec v 0) as [H0|H0].
  - subst v. rewrite round_0 by auto with typeclass_instances.
    unfold Rdiv. rewrite Rmult_0_l, rne_ZnearestE, (Zrnd_IZR ZnearestE 0). simpl. ring.
  - assert (Hq : kvq_f16_quantum_l (Rabs v) = bpow radix2 (cexp radix2 fexp16 v)).
    { rewrite quantum_chain. change 30%nat with (S 29).
      rewrite qchain_mag.
      - unfold cexp, FLT_exp. rewrite mag_abs. f_equal. lia.
      - apply Rabs_pos_lt. exact H0.
      - rewrite mag_abs. assert (mag radix2 v <= 16)%Z; [|simpl; lia].
        apply mag_le_bpow; [exact H0|]. simpl. lra. }
    rewrite Hq, rne_ZnearestE. unfold round, F2R, scaled_mantissa. simpl.
    unfold Rdiv. rewrite <- bpow_opp. reflexivity.
Qed.

(* ---- ref/fast/kivi.c:244-247, the contract of kvq_round_f16 the KIVI runs
   read: overflow_def, the flag set exactly when \abs(v) >= 0x1.ffep+15;
   saturated, \result == (v > 0 ? 0x1.ffcp+15 : -0x1.ffcp+15) then;
   value, \result == kvq_rn16_l(v) otherwise *)
Definition kvq_f16_overflow (v : R) : Prop := 65520 <= Rabs v.
Definition kvq_round_f16_result (v : R) : R :=
  if Rle_dec 65520 (Rabs v) then (if Rlt_dec 0 v then 65504 else -65504) else kvq_rn16_l v.

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
   Proved here: for every real v, kvq_round_f16's result as its contract
   states it equals v without overflow exactly when kvq_is_f16_l(v) -- below
   65520 the result kvq_rn16_l(v) is RN16(v) (POL_F16_01_rn16); one way
   because RN16(v) is on the grid (generic_format_round) and 65520 bounds it,
   the other because a binary16 number is on the grid (round_generic) and
   |v| <= 65504 < 65520.
   What stays with WP's context: the early `return 0` of a non-finite v (the
   goal's \is_finite), the call to kvq_round_f16 and its contract
   (overflow_def and saturated proved; value accepted, [TR-GOAL-F16-RN]: that
   the C code computes kvq_rn16_l(v)), the comparison of binary32 values `==`
   (real equality of finite values) and `&& !ov`. *)
Theorem TR_GOAL_F16DEF_def : forall v : R,
  (kvq_round_f16_result v = v /\ ~ kvq_f16_overflow v) <-> kvq_is_f16_l v.
Proof.
  intros v. unfold kvq_round_f16_result, kvq_f16_overflow. split.
  - intros [Hr Hov]. destruct (Rle_dec 65520 (Rabs v)) as [H|H]; [contradiction|].
    apply f16_format_repr; [|lra].
    rewrite <- Hr, POL_F16_01_rn16 by lra. unfold RN16.
    apply generic_format_round; auto with typeclass_instances.
  - intros [Hrange [m [e [He [Hm Hv]]]]].
    assert (Ha : Rabs v <= 65504) by (apply Rabs_le; exact Hrange).
    destruct (Rle_dec 65520 (Rabs v)) as [H|H]; [lra|].
    split; [|lra].
    rewrite POL_F16_01_rn16 by lra. unfold RN16. apply round_generic; auto with typeclass_instances.
    apply generic_format_FLT. apply (FLT_spec _ _ _ _ (Float radix2 m e)).
    + unfold F2R. simpl. exact Hv.
    + simpl. change (Zpower radix2 11) with 2048%Z. lia.
    + simpl. lia.
Qed.
