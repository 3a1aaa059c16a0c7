(* SageA.v -- spec/sage.md [SAGE-ACC-06]: the wgmma FP8 model of [SAGE-ACC-02] is in the
   accumulator class K(13, 14), and so it satisfies the per-instruction hypothesis of
   SAGE_ATT_07_d ([SAGE-ATT-07] (d)).

   The model, over reals (Flocq): one step of n products a_k b_k and C.  The alignment
   exponent E_op is C's, max(floor(log2 |C|), -126) (-126 for a zero), and every nonzero
   product's e(a_k) + e(b_k), e(x) = max(floor(log2 |x|), emin) with the operand format's
   emin (-6 E4M3, -14 E5M2); a zero product takes no part (kvq's `skip`).  Every term, C
   included, is cut toward zero to a multiple of 2^(E_op - 13) (Flocq's `round` of
   FIX_exp (E_op - 13) with Ztrunc); the exact sum of the cut terms is cut toward zero to
   14 significant bits on binary32's grid (FLT_exp (-149) 14 with Ztrunc). *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core Relative.
From KvqCoq Require Import Sums.
Open Scope R_scope.

Section Wgmma.
Variable emin : Z.

(* e(x) = max(floor(log2 |x|), emin); Flocq's mag x is floor(log2 |x|) + 1 for x <> 0 *)
Definition eop (x : R) : Z := Z.max (mag radix2 x - 1) emin.

(* C's alignment exponent: max(floor(log2 |C|), -126), -126 for a zero *)
Definition calign (C : R) : Z :=
  if Req_EM_T C 0 then (-126)%Z else Z.max (mag radix2 C - 1) (-126).

(* E_op over C and the products 0 .. n-1 (zero products skipped) *)
Fixpoint Ealign (a b : nat -> R) (C : R) (n : nat) : Z :=
  match n with
  | O => calign C
  | S m => if Req_EM_T (a m * b m) 0 then Ealign a b C m
           else Z.max (Ealign a b C m) (eop (a m) + eop (b m))
  end.

(* a term cut toward zero to a multiple of 2^q *)
Definition cut (q : Z) (x : R) : R := round radix2 (FIX_exp q) Ztrunc x.

(* the step's result: the sum of the cut terms cut to 14 significant bits *)
Definition wgmma (n : nat) (a b : nat -> R) (C : R) : R :=
  let q := (Ealign a b C n - 13)%Z in
  round radix2 (FLT_exp (-149) 14) Ztrunc (cut q C + sum n (fun k => cut q (a k * b k))).

End Wgmma.

Local Instance prec14 : Prec_gt_0 14 := eq_refl.

Definition mult (q : Z) (x : R) : Prop := exists m : Z, x = IZR m * bpow radix2 q.

Lemma cut_err : forall q x, Rabs (cut q x - x) <= bpow radix2 q.
Proof.
  intros q x. destruct (Req_dec x 0) as [->|Hx].
  - unfold cut. rewrite round_0 by auto with typeclass_instances.
    rewrite Rminus_0_r, Rabs_R0. apply bpow_ge_0.
  - left. rewrite <- (ulp_FIX radix2 q x). unfold cut.
    apply error_lt_ulp; auto with typeclass_instances.
Qed.

Lemma cut_mult : forall q x, mult q (cut q x).
Proof.
  intros q x. unfold cut, round, F2R, cexp, FIX_exp. simpl. eexists. reflexivity.
Qed.

Lemma mult_plus : forall q x y, mult q x -> mult q y -> mult q (x + y).
Proof.
  intros q x y [m Hm] [k Hk]. exists (m + k)%Z. rewrite Hm, Hk, plus_IZR. ring.
Qed.

Lemma mult_sum : forall q n f, (forall k, (k < n)%nat -> mult q (f k)) -> mult q (sum n f).
Proof.
  intros q n f H. induction n as [|n IH]; simpl.
  - exists 0%Z. simpl. ring.
  - apply mult_plus; [apply IH; intros; apply H; lia | apply H; lia].
Qed.

Lemma mult_down : forall q q' x, (q' <= q)%Z -> mult q x -> mult q' x.
Proof.
  intros q q' x Hq [m Hm]. exists (m * Zpower radix2 (q - q'))%Z.
  rewrite Hm. change (IZR m * bpow radix2 q) with (F2R (Float radix2 m q)).
  rewrite (F2R_change_exp radix2 q' m q Hq). reflexivity.
Qed.

Lemma sum_const_INR : forall n c, sum n (fun _ => c) = INR n * c.
Proof. intros n c. induction n as [|n IH]; [simpl; ring|]. rewrite S_INR. simpl sum. rewrite IH. ring. Qed.

Lemma calign_ge : forall C, (-126 <= calign C)%Z.
Proof. intros C. unfold calign. destruct (Req_EM_T C 0); lia. Qed.

Lemma Ealign_ge : forall emin a b C n, (calign C <= Ealign emin a b C n)%Z.
Proof.
  intros emin a b C n. induction n as [|n IH]; simpl; [lia|].
  destruct (Req_EM_T (a n * b n) 0); lia.
Qed.

(* E_op is attained: it is C's exponent or a nonzero product's *)
Lemma Ealign_attained : forall emin a b C n,
  Ealign emin a b C n = calign C \/
  exists k, (k < n)%nat /\ a k * b k <> 0 /\ Ealign emin a b C n = (eop emin (a k) + eop emin (b k))%Z.
Proof.
  intros emin a b C n. induction n as [|n IH]; simpl; [left; reflexivity|].
  destruct (Req_EM_T (a n * b n) 0) as [Z|NZ].
  - destruct IH as [IH|[k [Hk IH]]]; [left; exact IH | right; exists k; split; [lia | exact IH]].
  - destruct (Z.max_spec (Ealign emin a b C n) (eop emin (a n) + eop emin (b n))) as [[_ M]|[_ M]];
      rewrite M.
    + right. exists n. split; [lia | split; [exact NZ | reflexivity]].
    + destruct IH as [IH|[k [Hk IH]]]; [left; exact IH | right; exists k; split; [lia | exact IH]].
Qed.

(* the final cut of a multiple of 2^-149: a relative error below 2^-13 *)
Lemma final_cut : forall s, mult (-149) s ->
  Rabs (round radix2 (FLT_exp (-149) 14) Ztrunc s - s) <= bpow radix2 (-13) * Rabs s.
Proof.
  intros s [m Hm]. destruct (Req_dec s 0) as [->|Hs].
  - rewrite round_0 by auto with typeclass_instances. rewrite Rminus_0_r, Rabs_R0. lra.
  - left. change (bpow radix2 (-13)) with (bpow radix2 (- 14 + 1)).
    assert (E : s = F2R (Float radix2 m (-149))) by (rewrite Hm; reflexivity).
    rewrite E in Hs |- *. exact (relative_error_FLT_F2R_emin radix2 (-149) 14 eq_refl Ztrunc m Hs).
Qed.

(* a product of reals is below 2^(e(a) + e(b) + 2): the significand of an unnormalised
   product lies in [0, 4) *)
Lemma prod_lt : forall emin a b, Rabs (a * b) <= 2 * bpow radix2 (eop emin a + eop emin b + 1).
Proof.
  intros emin a b.
  assert (Ha : Rabs a <= bpow radix2 (eop emin a + 1)).
  { destruct (Req_dec a 0) as [->|Ha]; [rewrite Rabs_R0; apply bpow_ge_0|].
    left. eapply Rlt_le_trans; [apply bpow_mag_gt|]. apply bpow_le. unfold eop. lia. }
  assert (Hb : Rabs b <= bpow radix2 (eop emin b + 1)).
  { destruct (Req_dec b 0) as [->|Hb]; [rewrite Rabs_R0; apply bpow_ge_0|].
    left. eapply Rlt_le_trans; [apply bpow_mag_gt|]. apply bpow_le. unfold eop. lia. }
  rewrite Rabs_mult.
  replace (2 * bpow radix2 (eop emin a + eop emin b + 1))
    with (bpow radix2 (eop emin a + 1) * bpow radix2 (eop emin b + 1))
    by (rewrite <- bpow_plus; replace (eop emin a + 1 + (eop emin b + 1))%Z
          with ((eop emin a + eop emin b + 1) + 1)%Z by lia; rewrite bpow_plus; simpl; unfold Z.pow_pos; simpl; ring).
  apply Rmult_le_compat; auto using Rabs_pos.
Qed.

(* [SAGE-ACC-06]: the wgmma FP8 model is in K(13, 14).  For any H = 2^E at least 2^E of the
   class (E >= floor(log2 |C|) for C <> 0, E >= e(a_k) + e(b_k) + 1 for every nonzero
   product) and at least 2^-126 (the class's E is, when |C| >= 2^-126 or some product is
   nonzero and 2 emin + 1 >= -126):
     |d' - (C + sum a_k b_k)| <= (n + 1) 2^-13 H + 2^-13 (|C| + sum |a_k b_k| + (n + 1) 2^-13 H). *)
Theorem SAGE_ACC_06 : forall emin n (a b : nat -> R) C H,
  (C <> 0 -> bpow radix2 (mag radix2 C - 1) <= H) ->
  (forall k, (k < n)%nat -> a k * b k <> 0 -> bpow radix2 (eop emin (a k) + eop emin (b k) + 1) <= H) ->
  bpow radix2 (-126) <= H ->
  Rabs (wgmma emin n a b C - (C + sum n (fun k => a k * b k)))
  <= INR (n + 1) * bpow radix2 (-13) * H
     + bpow radix2 (-13) * (Rabs C + sum n (fun k => Rabs (a k * b k)) + INR (n + 1) * bpow radix2 (-13) * H).
Proof.
  intros emin n a b C H HC Hk H126.
  set (Eo := Ealign emin a b C n). set (q := (Eo - 13)%Z).
  (* 2^E_op <= H / 2 is not needed: 2^E_op <= H *)
  assert (HEo : bpow radix2 Eo <= H).
  { destruct (Ealign_attained emin a b C n) as [A|[k [Hkn [Hnz A]]]]; fold Eo in A; rewrite A.
    - unfold calign. destruct (Req_EM_T C 0) as [_|Hc]; [exact H126|].
      destruct (Z.max_spec (mag radix2 C - 1) (-126)) as [[_ M]|[_ M]]; rewrite M; [exact H126 | exact (HC Hc)].
    - eapply Rle_trans; [|exact (Hk k Hkn Hnz)]. apply bpow_le. lia. }
  assert (Hq : bpow radix2 q = bpow radix2 (-13) * bpow radix2 Eo)
    by (unfold q; rewrite <- bpow_plus; f_equal; lia).
  assert (Hb13 : 0 < bpow radix2 (-13)) by apply bpow_gt_0.
  set (s := cut q C + sum n (fun k => cut q (a k * b k))).
  set (x := C + sum n (fun k => a k * b k)).
  (* the cuts: each term loses at most 2^q *)
  assert (Hcut : Rabs (s - x) <= INR (n + 1) * bpow radix2 q).
  { unfold s, x.
    replace (cut q C + sum n (fun k => cut q (a k * b k)) - (C + sum n (fun k => a k * b k)))
      with ((cut q C - C) + sum n (fun k => cut q (a k * b k) - a k * b k)) by (rewrite sum_minus; ring).
    eapply Rle_trans; [apply Rabs_triang|].
    replace (INR (n + 1) * bpow radix2 q) with (bpow radix2 q + INR n * bpow radix2 q) by (rewrite plus_INR; simpl; ring).
    apply Rplus_le_compat; [apply cut_err|].
    eapply Rle_trans; [apply sum_abs|].
    replace (INR n * bpow radix2 q) with (sum n (fun _ => bpow radix2 q))
      by (apply sum_const_INR).
    apply sum_le. intros k _. apply cut_err. }
  (* the sum is a multiple of 2^q, q >= -139 >= -149 *)
  assert (Hm : mult (-149) s).
  { apply (mult_down q); [unfold q, Eo; pose proof (Ealign_ge emin a b C n); pose proof (calign_ge C); lia|].
    apply mult_plus; [apply cut_mult|]. apply mult_sum. intros; apply cut_mult. }
  pose proof (final_cut s Hm) as Hf.
  assert (Hsx : Rabs s <= Rabs C + sum n (fun k => Rabs (a k * b k)) + INR (n + 1) * bpow radix2 q).
  { replace s with (x + (s - x)) by ring. eapply Rle_trans; [apply Rabs_triang|].
    apply Rplus_le_compat; [|exact Hcut]. unfold x. eapply Rle_trans; [apply Rabs_triang|].
    apply Rplus_le_compat_l. apply sum_abs. }
  assert (HqH : INR (n + 1) * bpow radix2 q <= INR (n + 1) * bpow radix2 (-13) * H).
  { rewrite Hq, Rmult_assoc. apply Rmult_le_compat_l; [apply pos_INR|]. apply Rmult_le_compat_l; lra. }
  unfold wgmma. fold Eo q s. fold x.
  replace (round radix2 (FLT_exp (-149) 14) Ztrunc s - x)
    with ((round radix2 (FLT_exp (-149) 14) Ztrunc s - s) + (s - x)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (bpow radix2 (-13) * Rabs s <= bpow radix2 (-13) *
          (Rabs C + sum n (fun k => Rabs (a k * b k)) + INR (n + 1) * bpow radix2 (-13) * H))
    by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

Lemma some_product : forall (a b : nat -> R) n,
  (exists k, (k < n)%nat /\ a k * b k <> 0) \/ (forall k, (k < n)%nat -> a k * b k = 0).
Proof.
  intros a b n. induction n as [|n IH]; [right; intros; lia|].
  destruct (Req_EM_T (a n * b n) 0) as [Z|NZ]; [|left; exists n; split; [lia | exact NZ]].
  destruct IH as [[k [Hk NZ]]|A]; [left; exists k; split; [lia | exact NZ]|].
  right. intros k Hk. destruct (Nat.eq_dec k n) as [->|Hne]; [exact Z | apply A; lia].
Qed.

Lemma sum_zero : forall n f, (forall k, (k < n)%nat -> f k = 0) -> sum n f = 0.
Proof.
  intros n f H. induction n as [|n IH]; simpl; [reflexivity|].
  rewrite IH; [rewrite H; [ring | lia] | intros; apply H; lia].
Qed.

(* a multiple of 2^-139 below 2^-126 has at most 13 significant bits: the final cut keeps it *)
Lemma small_exact : forall C m, Rabs C < bpow radix2 (-126) -> C = IZR m * bpow radix2 (-139) ->
  round radix2 (FLT_exp (-149) 14) Ztrunc C = C.
Proof.
  intros C m Hs Hm.
  apply round_generic; [auto with typeclass_instances|].
  apply generic_format_FLT. apply (FLT_spec radix2 (-149) 14 C (Float radix2 m (-139))); [exact Hm| |simpl; lia].
  simpl Fnum. apply lt_IZR. rewrite abs_IZR. change (IZR (Zpower radix2 14)) with (bpow radix2 14).
  assert (P : bpow radix2 (-139) * bpow radix2 139 = 1) by (rewrite <- bpow_plus; reflexivity).
  assert (Q : bpow radix2 (-126) * bpow radix2 139 = bpow radix2 13) by (rewrite <- bpow_plus; reflexivity).
  assert (Rabs (IZR m) = Rabs C * bpow radix2 139).
  { rewrite Hm, Rabs_mult, (Rabs_pos_eq (bpow radix2 (-139))) by apply bpow_ge_0.
    rewrite Rmult_assoc, P. ring. }
  rewrite H. pose proof (bpow_gt_0 radix2 139).
  apply Rlt_le_trans with (bpow radix2 13); [rewrite <- Q; apply Rmult_lt_compat_r; lra|].
  apply bpow_le. lia.
Qed.

(* every step result is a multiple of 2^-139 (so the next step's C is one) *)
Lemma wgmma_grid : forall emin n (a b : nat -> R) C, mult (-139) (wgmma emin n a b C).
Proof.
  intros emin n a b C. unfold wgmma.
  set (q := (Ealign emin a b C n - 13)%Z).
  assert (Hq : (-139 <= q)%Z) by (unfold q; pose proof (Ealign_ge emin a b C n); pose proof (calign_ge C); lia).
  set (s := cut q C + sum n (fun k => cut q (a k * b k))).
  assert (Hm : mult q s) by (apply mult_plus; [apply cut_mult | apply mult_sum; intros; apply cut_mult]).
  destruct (Rlt_le_dec (Rabs s) (bpow radix2 (-126))) as [Hs|Hs].
  - destruct (mult_down q (-139) s Hq Hm) as [m Hm'].
    rewrite (small_exact s m Hs Hm'). exists m. exact Hm'.
  - unfold round. apply mult_down with (cexp radix2 (FLT_exp (-149) 14) s).
    + unfold cexp, FLT_exp. destruct (Req_dec s 0) as [Z|NZ].
      * exfalso. rewrite Z, Rabs_R0 in Hs. pose proof (bpow_gt_0 radix2 (-126)). lra.
      * pose proof (mag_ge_bpow radix2 s (-125) ltac:(replace (-125 - 1)%Z with (-126)%Z by lia; exact Hs)). lia.
    + unfold F2R. simpl. eexists. reflexivity.
Qed.

(* a step with no nonzero product from C, a multiple of 2^-139 below 2^-126 (the result of
   an earlier step, [SAGE-ACC-01] "Results below 2^-126"), returns C exactly *)
Lemma wgmma_tiny_exact : forall emin n (a b : nat -> R) C m,
  (forall k, (k < n)%nat -> a k * b k = 0) ->
  Rabs C < bpow radix2 (-126) -> C = IZR m * bpow radix2 (-139) ->
  wgmma emin n a b C = C.
Proof.
  intros emin n a b C m Hz Hs Hm.
  assert (HE : Ealign emin a b C n = (-126)%Z).
  { assert (Ealign emin a b C n = calign C).
    { clear Hs Hm. induction n as [|n IH]; simpl; [reflexivity|].
      destruct (Req_EM_T (a n * b n) 0) as [_|NZ]; [apply IH; intros; apply Hz; lia|].
      exfalso. apply NZ, Hz. lia. }
    rewrite H. unfold calign. destruct (Req_EM_T C 0) as [_|Hc]; [reflexivity|].
    pose proof (mag_le_bpow radix2 C (-126) Hc Hs). lia. }
  unfold wgmma. rewrite HE. simpl (-126 - 13)%Z.
  assert (Hc : cut (-139) C = C).
  { unfold cut. apply round_generic; [auto with typeclass_instances|].
    apply generic_format_FIX. apply (FIX_spec radix2 (-139) C (Float radix2 m (-139))); [exact Hm | reflexivity]. }
  rewrite Hc, (sum_zero n (fun k => cut (-139) (a k * b k))), Rplus_0_r.
  2: { intros k Hk. rewrite Hz by exact Hk. unfold cut. apply round_0. auto with typeclass_instances. }
  apply small_exact with m; [exact Hs | exact Hm].
Qed.

(* [SAGE-ACC-06] in the form SAGE_ATT_07_d takes for one instruction (32 products and C):
   with X at least every nonzero product's 2 * 2^e(a_k) 2^e(b_k) (the X_g of
   [SAGE-ATT-07] (d)), an operand format with emin >= -63, and C at least 2^-126 in
   magnitude or a multiple of 2^-139 (every step result is: `wgmma_grid`), some H in
   [0, max(|C|, X)] bounds the step's error as the class K(13, 14) does. *)
Theorem SAGE_ACC_06_d : forall emin (a b : nat -> R) C X,
  (-63 <= emin)%Z ->
  (forall k, (k < 32)%nat -> a k * b k <> 0 ->
     2 * bpow radix2 (eop emin (a k)) * bpow radix2 (eop emin (b k)) <= X) ->
  (bpow radix2 (-126) <= Rabs C \/ exists m, C = IZR m * bpow radix2 (-139)) ->
  exists H, 0 <= H <= Rmax (Rabs C) X /\
    Rabs (wgmma emin 32 a b C - (C + sum 32 (fun k => a k * b k)))
    <= 33 * bpow radix2 (-13) * H
       + bpow radix2 (-13) * (Rabs C + sum 32 (fun k => Rabs (a k * b k)) + 33 * bpow radix2 (-13) * H).
Proof.
  intros emin a b C X Hemin HX HC.
  assert (I33 : INR (32 + 1) = 33) by (simpl; ring).
  assert (Hb : forall k, bpow radix2 (eop emin (a k) + eop emin (b k) + 1)
                 = 2 * bpow radix2 (eop emin (a k)) * bpow radix2 (eop emin (b k))).
  { intros k. rewrite !bpow_plus. simpl (bpow radix2 1). unfold Z.pow_pos. simpl. ring. }
  assert (Main : (bpow radix2 (-126) <= Rmax (Rabs C) X) ->
    exists H, 0 <= H <= Rmax (Rabs C) X /\
    Rabs (wgmma emin 32 a b C - (C + sum 32 (fun k => a k * b k)))
    <= 33 * bpow radix2 (-13) * H
       + bpow radix2 (-13) * (Rabs C + sum 32 (fun k => Rabs (a k * b k)) + 33 * bpow radix2 (-13) * H)).
  { intros H126. exists (Rmax (Rabs C) X). split; [split; [eapply Rle_trans; [apply Rabs_pos | apply Rmax_l] | lra]|].
    rewrite <- I33. apply SAGE_ACC_06.
    - intros Hc. eapply Rle_trans; [apply bpow_mag_le; exact Hc | apply Rmax_l].
    - intros k Hk Hnz. rewrite Hb. eapply Rle_trans; [apply HX; assumption | apply Rmax_r].
    - exact H126. }
  destruct (some_product a b 32) as [[k [Hk Hnz]]|Hz].
  - apply Main. eapply Rle_trans; [|apply Rmax_r]. eapply Rle_trans; [|apply (HX k Hk Hnz)].
    rewrite <- Hb. apply bpow_le. unfold eop. lia.
  - destruct (Rle_lt_dec (bpow radix2 (-126)) (Rabs C)) as [Hc|Hc].
    + apply Main. eapply Rle_trans; [exact Hc | apply Rmax_l].
    + destruct HC as [HC|[m Hm]]; [lra|].
      exists 0. split; [split; [lra | eapply Rle_trans; [apply Rabs_pos | apply Rmax_l]]|].
      rewrite (wgmma_tiny_exact emin 32 a b C m Hz Hc Hm), (sum_zero 32 (fun k => a k * b k) Hz).
      rewrite Rplus_0_r, Rminus_diag_eq, Rabs_R0 by reflexivity.
      assert (0 <= sum 32 (fun k => Rabs (a k * b k))) by (apply sum_nonneg; intros; apply Rabs_pos).
      pose proof (bpow_gt_0 radix2 (-13)). pose proof (Rabs_pos C).
      assert (0 <= bpow radix2 (-13) * (Rabs C + sum 32 (fun k => Rabs (a k * b k)) + 33 * bpow radix2 (-13) * 0))
        by (apply Rmult_le_pos; lra). lra.
Qed.

(* Outside the class: a binary32 C below 2^-126 off the 2^-139 grid, in an instruction with
   no nonzero product.  C = 2^-140 is cut to +0 (E_op = -126, terms cut at 2^-139), an error
   of 2^-140, while K(13, 14) at C's own exponent E = -140 allows
   33 2^-153 + 2^-13 (2^-140 + 33 2^-153) < 2^-140. *)
Theorem SAGE_ACC_06_outside : forall emin,
  let C := bpow radix2 (-140) in
  let E := (-140)%Z in
  wgmma emin 32 (fun _ => 0) (fun _ => 0) C = 0 /\
  33 * bpow radix2 (E - 13) + bpow radix2 (-13) * (Rabs C + sum 32 (fun k => Rabs (0 * 0)) + 33 * bpow radix2 (E - 13))
  < Rabs (wgmma emin 32 (fun _ => 0) (fun _ => 0) C - (C + sum 32 (fun k => 0 * 0))).
Proof.
  intros emin C E.
  assert (HC : 0 < C) by apply bpow_gt_0.
  assert (HE : Ealign emin (fun _ => 0) (fun _ => 0) C 32 = (-126)%Z).
  { assert (Ealign emin (fun _ => 0) (fun _ => 0) C 32 = calign C).
    { generalize 32%nat. intros n. induction n as [|n IH]; simpl; [reflexivity|].
      destruct (Req_EM_T (0 * 0) 0) as [_|NZ]; [exact IH | exfalso; apply NZ; ring]. }
    rewrite H. unfold calign. destruct (Req_EM_T C 0) as [Z|_]; [lra|].
    unfold C. rewrite mag_bpow. reflexivity. }
  assert (Hcut : cut (-139) C = 0).
  { unfold cut, round, scaled_mantissa, cexp, FIX_exp. cbn [Fnum Fexp].
    assert (Hm : C * bpow radix2 (- -139) = / 2).
    { unfold C. rewrite <- bpow_plus. simpl. unfold Z.pow_pos. simpl. lra. }
    rewrite Hm, Ztrunc_floor by lra. rewrite (Zfloor_imp 0) by (simpl; lra). apply F2R_0. }
  assert (Hw : wgmma emin 32 (fun _ => 0) (fun _ => 0) C = 0).
  { unfold wgmma. rewrite HE. simpl (-126 - 13)%Z. rewrite Hcut.
    rewrite (sum_zero 32 (fun k => cut (-139) (0 * 0))).
    - rewrite Rplus_0_r. apply round_0. auto with typeclass_instances.
    - intros k _. rewrite Rmult_0_r. unfold cut. apply round_0. auto with typeclass_instances. }
  split; [exact Hw|]. rewrite Hw.
  rewrite (sum_zero 32 (fun k => 0 * 0)) by (intros; ring).
  rewrite (sum_zero 32 (fun k => Rabs (0 * 0))) by (intros; rewrite Rmult_0_r; apply Rabs_R0).
  rewrite Rplus_0_r, Rminus_0_l, Rabs_Ropp, Rabs_pos_eq by lra.
  set (b := bpow radix2 (-153)).
  assert (Hb : 0 < b) by apply bpow_gt_0.
  assert (E1 : bpow radix2 (E - 13) = b) by reflexivity.
  assert (E2 : C = 8192 * b).
  { unfold C, b. replace (-140)%Z with (13 + -153)%Z by lia. rewrite bpow_plus. simpl (bpow radix2 13).
    unfold Z.pow_pos. simpl. ring. }
  assert (E3 : bpow radix2 (-13) * C = b) by (unfold C, b; rewrite <- bpow_plus; reflexivity).
  assert (E4 : bpow radix2 (-13) <= 1) by (simpl; unfold Z.pow_pos; simpl; lra).
  pose proof (bpow_gt_0 radix2 (-13)).
  rewrite E1. rewrite Rplus_0_r.
  assert (bpow radix2 (-13) * (C + 33 * b) = b + bpow radix2 (-13) * 33 * b) by (rewrite <- E3; ring).
  assert (bpow radix2 (-13) * 33 * b <= 33 * b) by (apply Rmult_le_compat_r; lra).
  rewrite (Rabs_pos_eq C) by lra. lra.
Qed.
