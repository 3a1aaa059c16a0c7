(* Sage.v -- spec/sage.md [SAGE-ATT-07], the bound of SageAttention's output:
   (a) the interval of the quantized attention's weights and output, with B1;
   (f) the division of the kernel's numerator by its denominator, |O' - Oq| <= T;
   and the composition B = B1 + T + ((1 + u)^3 - 1)(|Oq| + T) + 2^-148 with the
   output's roundings.  Per row and channel; powers of two are 2^x = e^{x ln 2}. *)
From Coq Require Import Reals Lra Lia Psatz Arith.
From KvqCoq Require Import Sums Softmax.
Open Scope R_scope.

Definition pow2 (x : R) : R := exp (x * ln 2).

Lemma pow2_pos : forall x, 0 < pow2 x.
Proof. intros. apply exp_pos. Qed.

Lemma pow2_le : forall x y, x <= y -> pow2 x <= pow2 y.
Proof.
  intros x y H. unfold pow2. apply exp_le. apply Rmult_le_compat_r; [|exact H].
  left. rewrite <- ln_1. apply ln_increasing; lra.
Qed.

(* the sum without index j *)
Definition sum_but (n j : nat) (f : nat -> R) : R := sum n (fun k => if Nat.eqb k j then 0 else f k).

Lemma sum_split_one : forall n j f, (j < n)%nat -> sum n f = f j + sum_but n j f.
Proof.
  intros n j f Hj. unfold sum_but.
  assert (E : sum n (fun k => if Nat.eqb k j then f k else 0) = f j).
  { clear -Hj. induction n as [|n IH]; [lia|]. simpl.
    destruct (Nat.eq_dec j n) as [->|Hne].
    - rewrite Nat.eqb_refl. rewrite (sum_ext n _ (fun _ => 0)); [rewrite sum_const0; ring|].
      intros k Hk. destruct (Nat.eqb_spec k n); [lia | reflexivity].
    - rewrite IH by lia. destruct (Nat.eqb_spec n j); [lia | ring]. }
  rewrite <- E. rewrite <- sum_plus. apply sum_ext. intros k _.
  destruct (Nat.eqb k j); ring.
Qed.

(* ---- (a) the quantized attention ------------------------------------------- *)

Definition softmax2 (n : nat) (s : nat -> R) (j : nat) : R := pow2 (s j) / sum n (fun k => pow2 (s k)).

Theorem SAGE_ATT_07_a_weight : forall n s slo shi j,
  (j < n)%nat -> (forall k, (k < n)%nat -> slo k <= s k <= shi k) ->
  pow2 (slo j) / (pow2 (slo j) + sum_but n j (fun k => pow2 (shi k)))
  <= softmax2 n s j <=
  pow2 (shi j) / (pow2 (shi j) + sum_but n j (fun k => pow2 (slo k))).
Proof.
  intros n s slo shi j Hj Hs. unfold softmax2. rewrite (sum_split_one n j) by exact Hj.
  set (a := pow2 (s j)). set (alo := pow2 (slo j)). set (ahi := pow2 (shi j)).
  set (r := sum_but n j (fun k => pow2 (s k))).
  set (rlo := sum_but n j (fun k => pow2 (slo k))). set (rhi := sum_but n j (fun k => pow2 (shi k))).
  assert (Ha : alo <= a <= ahi) by (destruct (Hs j Hj); split; apply pow2_le; assumption).
  assert (Halo : 0 < alo) by apply pow2_pos.
  assert (Hr : rlo <= r <= rhi).
  { unfold rlo, r, rhi, sum_but. split; apply sum_le; intros k Hk; destruct (Nat.eqb k j);
      try lra; apply pow2_le; apply Hs; exact Hk. }
  assert (Hrlo : 0 <= rlo).
  { apply sum_nonneg. intros k _. destruct (Nat.eqb k j); [lra | left; apply pow2_pos]. }
  split; apply div_le_div; try lra; nra.
Qed.

(* Oq = sum_j omega_j V_j lies between the sums of the weight interval's ends that
   the sign of each V_j picks. *)
Definition pick_lo (wlo whi v : R) : R := if Rle_dec 0 v then wlo * v else whi * v.
Definition pick_hi (wlo whi v : R) : R := if Rle_dec 0 v then whi * v else wlo * v.

Theorem SAGE_ATT_07_a_output : forall n (w wlo whi V : nat -> R),
  (forall j, (j < n)%nat -> wlo j <= w j <= whi j) ->
  sum n (fun j => pick_lo (wlo j) (whi j) (V j)) <= sum n (fun j => w j * V j)
  <= sum n (fun j => pick_hi (wlo j) (whi j) (V j)).
Proof.
  intros n w wlo whi V H. split; apply sum_le; intros j Hj; specialize (H j Hj);
    unfold pick_lo, pick_hi; destruct (Rle_dec 0 (V j)); nra.
Qed.

(* B1: Oq and the exact O* in their intervals *)
Lemma SAGE_ATT_07_a_B1 : forall Oq Oqlo Oqhi Os Oslo Oshi,
  Oqlo <= Oq <= Oqhi -> Oslo <= Os <= Oshi ->
  Rabs (Oq - Os) <= Rmax (Oqhi - Oslo) (Oshi - Oqlo).
Proof.
  intros. unfold Rabs, Rmax. destruct (Rcase_abs (Oq - Os)), (Rle_dec (Oqhi - Oslo) (Oshi - Oqlo)); lra.
Qed.

(* ---- (f) the kernel's numerator over its denominator -------------------------

   Kernel-frame weights y_j >= 0 with Y = sum y_j >= Y_min > 0, Oq = sum y_j V_j / Y;
   numerator N = sum y_j (1 + a_j) V_j + Zt, denominator l = sum y_j (1 + b_j) + Labs,
   |a_j| <= A_j, |b_j| <= B_j, y_j / Y <= omega_hi_j, |Zt| <= Zb, |Labs| <= Lb,
   SB = sum omega_hi_j B_j. *)
Theorem SAGE_ATT_07_f : forall n (y V a b A B whi : nat -> R) Zt Labs Ymin Zb Lb Oqb,
  (forall j, (j < n)%nat -> 0 <= y j) ->
  0 < Ymin -> Ymin <= sum n y ->
  (forall j, (j < n)%nat -> Rabs (a j) <= A j) ->
  (forall j, (j < n)%nat -> Rabs (b j) <= B j) ->
  (forall j, (j < n)%nat -> y j / sum n y <= whi j) ->
  Rabs Zt <= Zb -> Rabs Labs <= Lb ->
  Rabs (sum n (fun j => y j * V j) / sum n y) <= Oqb ->
  0 < 1 - sum n (fun j => whi j * B j) - Lb / Ymin ->
  Rabs ((sum n (fun j => y j * (1 + a j) * V j) + Zt) / (sum n (fun j => y j * (1 + b j)) + Labs)
        - sum n (fun j => y j * V j) / sum n y)
  <= (sum n (fun j => whi j * A j * Rabs (V j)) + Zb / Ymin
      + Oqb * (sum n (fun j => whi j * B j) + Lb / Ymin))
     / (1 - sum n (fun j => whi j * B j) - Lb / Ymin).
Proof.
  intros n y V a b A B whi Zt Labs Ymin Zb Lb Oqb Hy HYm HY Ha Hb Hw HZ HL HO Hden.
  set (Y := sum n y) in *. set (Oq := sum n (fun j => y j * V j) / Y) in *.
  set (SB := sum n (fun j => whi j * B j)) in *.
  assert (HY0 : 0 < Y) by lra.
  set (Sa := sum n (fun j => y j / Y * a j * V j)).
  set (Sb := sum n (fun j => y j / Y * b j)).
  (* N / Y = Oq + Sa + Zt / Y and l / Y = 1 + Sb + Labs / Y *)
  assert (EN : (sum n (fun j => y j * (1 + a j) * V j) + Zt) / Y = Oq + Sa + Zt / Y).
  { assert (E1 : sum n (fun j => y j * (1 + a j) * V j)
                 = sum n (fun j => y j * V j) + sum n (fun j => y j * a j * V j))
      by (rewrite <- sum_plus; apply sum_ext; intros; ring).
    assert (E2 : Sa = sum n (fun j => y j * a j * V j) / Y)
      by (unfold Sa, Rdiv; rewrite <- sum_scal_r; apply sum_ext; intros; field; lra).
    rewrite E1, E2. unfold Oq. field. lra. }
  assert (EL : (sum n (fun j => y j * (1 + b j)) + Labs) / Y = 1 + Sb + Labs / Y).
  { assert (E3 : sum n (fun j => y j * (1 + b j)) = Y + sum n (fun j => y j * b j))
      by (unfold Y; rewrite <- sum_plus; apply sum_ext; intros; ring).
    assert (E4 : Sb = sum n (fun j => y j * b j) / Y)
      by (unfold Sb, Rdiv; rewrite <- sum_scal_r; apply sum_ext; intros; field; lra).
    rewrite E3, E4. field. lra. }
  (* bounds of Sa, Sb, Zt / Y, Labs / Y *)
  assert (HSa : Rabs Sa <= sum n (fun j => whi j * A j * Rabs (V j))).
  { unfold Sa. eapply Rle_trans; [apply sum_abs|]. apply sum_le. intros j Hj.
    rewrite !Rabs_mult. rewrite (Rabs_right (y j / Y)) by (apply Rle_ge, div_nonneg; [apply Hy, Hj | lra]).
    pose proof (Rabs_pos (a j)). pose proof (Rabs_pos (V j)).
    assert (0 <= y j / Y) by (apply div_nonneg; [apply Hy, Hj | lra]).
    apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat; [lra | lra | apply Hw, Hj | apply Ha, Hj]. }
  assert (HSb : Rabs Sb <= SB).
  { unfold Sb, SB. eapply Rle_trans; [apply sum_abs|]. apply sum_le. intros j Hj.
    rewrite Rabs_mult. rewrite (Rabs_right (y j / Y)) by (apply Rle_ge, div_nonneg; [apply Hy, Hj | lra]).
    pose proof (Rabs_pos (b j)).
    assert (0 <= y j / Y) by (apply div_nonneg; [apply Hy, Hj | lra]).
    apply Rmult_le_compat; [lra | lra | apply Hw, Hj | apply Hb, Hj]. }
  assert (HZY : Rabs (Zt / Y) <= Zb / Ymin).
  { unfold Rdiv. rewrite Rabs_mult, (Rabs_right (/ Y)) by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
    pose proof (Rabs_pos Zt).
    apply Rmult_le_compat; [lra | left; apply Rinv_0_lt_compat; lra | exact HZ | apply Rinv_le_contravar; lra]. }
  assert (HLY : Rabs (Labs / Y) <= Lb / Ymin).
  { unfold Rdiv. rewrite Rabs_mult, (Rabs_right (/ Y)) by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
    pose proof (Rabs_pos Labs).
    apply Rmult_le_compat; [lra | left; apply Rinv_0_lt_compat; lra | exact HL | apply Rinv_le_contravar; lra]. }
  set (l := sum n (fun j => y j * (1 + b j)) + Labs) in *.
  set (N := sum n (fun j => y j * (1 + a j) * V j) + Zt) in *.
  assert (Hl : 0 < l / Y).
  { rewrite EL. assert (- Rabs Sb <= Sb) by (apply Ropp_le_cancel; rewrite Ropp_involutive; apply Rle_trans with (Rabs (- Sb)); [apply RRle_abs | rewrite Rabs_Ropp; lra]).
    assert (- Rabs (Labs / Y) <= Labs / Y) by (apply Ropp_le_cancel; rewrite Ropp_involutive; apply Rle_trans with (Rabs (- (Labs / Y))); [apply RRle_abs | rewrite Rabs_Ropp; lra]).
    lra. }
  assert (Hl0 : 0 < l) by (apply Rmult_lt_reg_r with (/ Y); [apply Rinv_0_lt_compat; lra | rewrite Rmult_0_l; exact Hl]).
  (* N / l - Oq = (N / Y - Oq (l / Y)) / (l / Y) = (Sa + Zt / Y - Oq (Sb + Labs / Y)) / (l / Y) *)
  replace (N / l - Oq) with ((Sa + Zt / Y - Oq * (Sb + Labs / Y)) / (l / Y)).
  2: { assert (ESa : Sa = N / Y - Oq - Zt / Y) by lra.
       assert (ESb : Sb = l / Y - 1 - Labs / Y) by lra.
       rewrite ESa, ESb. field. split; lra. }
  unfold Rdiv at 1. rewrite Rabs_mult, (Rabs_right (/ (l / Y))) by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
  assert (HlY : 1 - SB - Lb / Ymin <= l / Y).
  { rewrite EL. assert (- Rabs Sb <= Sb) by (apply Ropp_le_cancel; rewrite Ropp_involutive; apply Rle_trans with (Rabs (- Sb)); [apply RRle_abs | rewrite Rabs_Ropp; lra]).
    assert (- Rabs (Labs / Y) <= Labs / Y) by (apply Ropp_le_cancel; rewrite Ropp_involutive; apply Rle_trans with (Rabs (- (Labs / Y))); [apply RRle_abs | rewrite Rabs_Ropp; lra]).
    lra. }
  assert (Hnum : Rabs (Sa + Zt / Y - Oq * (Sb + Labs / Y))
                 <= sum n (fun j => whi j * A j * Rabs (V j)) + Zb / Ymin + Oqb * (SB + Lb / Ymin)).
  { eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp, Rabs_mult.
    eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    assert (Rabs (Sb + Labs / Y) <= SB + Lb / Ymin) by (eapply Rle_trans; [apply Rabs_triang | lra]).
    assert (Rabs Oq * Rabs (Sb + Labs / Y) <= Oqb * (SB + Lb / Ymin))
      by (apply Rmult_le_compat; [apply Rabs_pos | apply Rabs_pos | exact HO | assumption]).
    lra. }
  set (Num := sum n (fun j => whi j * A j * Rabs (V j)) + Zb / Ymin + Oqb * (SB + Lb / Ymin)) in *.
  set (Den := 1 - SB - Lb / Ymin) in *.
  set (X := Sa + Zt / Y - Oq * (Sb + Labs / Y)) in *.
  set (LY := l / Y) in *.
  assert (HN0 : 0 <= Num) by (eapply Rle_trans; [apply Rabs_pos | exact Hnum]).
  apply Rle_trans with (Num * / LY).
  - apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra | exact Hnum].
  - unfold Rdiv. apply Rmult_le_compat_l; [exact HN0|]. apply Rinv_le_contravar; lra.
Qed.

(* ---- the bound: B = B1 + T + ((1 + u)^3 - 1)(|Oq| + T) + 2^-148 --------------

   o: the kernel's output, O': its value before the output's three roundings,
   which add at most ((1 + u)^3 - 1) |O'| + 2^-148. *)
Theorem SAGE_ATT_07 : forall o O' Oq Os B1 T Oqb u,
  Rabs (Oq - Os) <= B1 -> Rabs (O' - Oq) <= T -> Rabs Oq <= Oqb -> 0 <= u ->
  Rabs (o - O') <= ((1 + u) ^ 3 - 1) * Rabs O' + / 2 ^ 148 ->
  Rabs (o - Os) <= B1 + T + ((1 + u) ^ 3 - 1) * (Oqb + T) + / 2 ^ 148.
Proof.
  intros o O' Oq Os B1 T Oqb u H1 H2 H3 Hu H4.
  assert (HO' : Rabs O' <= Oqb + T).
  { replace O' with (Oq + (O' - Oq)) by ring. eapply Rle_trans; [apply Rabs_triang | lra]. }
  assert (Hc : 0 <= (1 + u) ^ 3 - 1).
  { assert (1 <= (1 + u) ^ 3) by (rewrite <- (pow1 3); apply pow_incr; lra). lra. }
  assert (((1 + u) ^ 3 - 1) * Rabs O' <= ((1 + u) ^ 3 - 1) * (Oqb + T)) by (apply Rmult_le_compat_l; lra).
  replace (o - Os) with ((o - O') + (O' - Oq) + (Oq - Os)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. lra.
Qed.
