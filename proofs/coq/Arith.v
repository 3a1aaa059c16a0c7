(* Arith.v -- spec/bounds/cert.md: the rounding model of its notation paragraph
   for binary32 and binary64, proved from Flocq's definition of rounding to
   nearest; Higham's gamma_n; and steps 5 and 6 of §7 (E_arith [CERT-AR-01]):
   the accumulation and the final division of the online softmax. *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core Relative.
From KvqCoq Require Import Sums.
Open Scope R_scope.

(* binary32 and binary64 rounding to nearest, ties to even (Flocq's FLT format:
   precision 24 / 53, least exponent -149 / -1074, no overflow) *)
Definition RN32 (x : R) : R := round radix2 (FLT_exp (-149) 24) ZnearestE x.
Definition RN64 (x : R) : R := round radix2 (FLT_exp (-1074) 53) ZnearestE x.

Lemma bpow_half : forall e, / 2 * bpow radix2 (e + 1) = bpow radix2 e.
Proof.
  intros. rewrite bpow_plus. simpl. unfold Z.pow_pos. simpl. field.
Qed.

(* RN32(x) = x (1 + e) + a, |e| <= 2^-24, |a| <= 2^-150, e a = 0 *)
Theorem spec_RN32_model : forall x, exists e a,
  Rabs e <= bpow radix2 (-24) /\ Rabs a <= bpow radix2 (-150) /\ e * a = 0 /\
  RN32 x = x * (1 + e) + a.
Proof.
  intros x. destruct (error_N_FLT radix2 (-149) 24 eq_refl (fun z => negb (Z.even z)) x)
    as [e [a [He [Ha [Hea Hx]]]]].
  exists e, a. split; [|split; [|split]].
  - replace (-24)%Z with (-24 + 1 - 1)%Z by lia. rewrite <- bpow_half.
    replace (-24 + 1 - 1 + 1)%Z with (-24 + 1)%Z by lia. exact He.
  - rewrite <- bpow_half. replace (-150 + 1)%Z with (-149)%Z by lia. exact Ha.
  - exact Hea.
  - exact Hx.
Qed.

(* when the result is normal: |RN32(x) - x| <= 2^-24 |x| *)
Theorem spec_RN32_normal : forall x, bpow radix2 (-126) <= Rabs x ->
  Rabs (RN32 x - x) <= bpow radix2 (-24) * Rabs x.
Proof.
  intros x Hx. unfold RN32.
  replace (bpow radix2 (-24)) with (/ 2 * bpow radix2 (- 24 + 1)) by apply bpow_half.
  apply relative_error_N_FLT; [reflexivity|]. exact Hx.
Qed.

Theorem spec_RN64_model : forall x, exists e a,
  Rabs e <= bpow radix2 (-53) /\ Rabs a <= bpow radix2 (-1075) /\ e * a = 0 /\
  RN64 x = x * (1 + e) + a.
Proof.
  intros x. destruct (error_N_FLT radix2 (-1074) 53 eq_refl (fun z => negb (Z.even z)) x)
    as [e [a [He [Ha [Hea Hx]]]]].
  exists e, a. split; [|split; [|split]].
  - rewrite <- bpow_half. replace (-53 + 1)%Z with (-53 + 1)%Z by lia. exact He.
  - rewrite <- bpow_half. replace (-1075 + 1)%Z with (-1074)%Z by lia. exact Ha.
  - exact Hea.
  - exact Hx.
Qed.

(* ---- gamma_n (Higham, Lemma 3.1) ----------------------------------------- *)

Fixpoint prod (n : nat) (f : nat -> R) : R :=
  match n with
  | O => 1
  | S m => prod m f * f m
  end.

Definition gamma (n : nat) (u : R) : R := INR n * u / (1 - INR n * u).

Lemma bernoulli : forall n u, 0 <= u <= 1 -> 1 - INR n * u <= (1 - u) ^ n.
Proof.
  induction n as [|n IH]; intros u Hu; [simpl; lra|].
  rewrite S_INR. change ((1 - u) ^ S n) with ((1 - u) * (1 - u) ^ n). specialize (IH u Hu). pose proof (pos_INR n).
  destruct (Rle_dec 0 (1 - INR n * u)).
  - assert ((1 - INR n * u) * (1 - u) <= (1 - u) ^ n * (1 - u)) by (apply Rmult_le_compat_r; lra).
    assert (0 <= INR n * u * u) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra). nra.
  - assert (0 <= (1 - u) ^ n) by (apply pow_le; lra).
    assert (0 <= (1 - u) * (1 - u) ^ n) by (apply Rmult_le_pos; lra). nra.
Qed.

Lemma prod_bounds : forall n u f, 0 <= u < 1 ->
  (forall j, (j < n)%nat -> 1 - u <= f j <= / (1 - u)) ->
  (1 - u) ^ n <= prod n f <= / ((1 - u) ^ n).
Proof.
  induction n as [|n IH]; intros u f Hu Hf; simpl.
  - rewrite Rinv_1. lra.
  - destruct (IH u f Hu) as [L U]; [intros; apply Hf; lia|].
    destruct (Hf n) as [l r]; [lia|].
    assert (Hp : 0 < (1 - u) ^ n) by (apply pow_lt; lra).
    split.
    + replace ((1 - u) * (1 - u) ^ n) with ((1 - u) ^ n * (1 - u)) by ring.
      apply Rmult_le_compat; lra.
    + rewrite Rinv_mult.
      replace (/ (1 - u) * / (1 - u) ^ n) with (/ (1 - u) ^ n * / (1 - u)) by ring.
      apply Rmult_le_compat; [| |exact U| exact r].
      * apply Rle_trans with ((1 - u) ^ n); [lra | exact L].
      * lra.
Qed.

(* A product of n factors (1 + e_j) or 1 / (1 + e_j), |e_j| <= u, n u < 1, lies
   in [1 - gamma_n, 1 + gamma_n]. *)
Theorem spec_gamma_n : forall n u (e : nat -> R) (inv : nat -> bool),
  0 <= u -> INR n * u < 1 ->
  (forall j, (j < n)%nat -> Rabs (e j) <= u) ->
  1 - gamma n u <= prod n (fun j => if inv j then / (1 + e j) else 1 + e j) <= 1 + gamma n u.
Proof.
  intros n u e inv Hu Hnu He.
  destruct n as [|m].
  - unfold gamma. simpl. replace (0 * u) with 0 by ring. unfold Rdiv. rewrite Rmult_0_l. lra.
  - set (n := S m) in *.
    assert (Hn1 : 1 <= INR n) by (unfold n; rewrite S_INR; pose proof (pos_INR m); lra).
    assert (Hu1 : u < 1) by nra.
    pose proof (prod_bounds n u (fun j => if inv j then / (1 + e j) else 1 + e j)) as PB.
    destruct PB as [L U]; [lra| |].
    + intros j Hj. pose proof (He j Hj) as Hj'.
      assert (- u <= e j <= u) as [E1 E2] by (unfold Rabs in Hj'; destruct (Rcase_abs (e j)); lra).
      destruct (inv j).
      * split.
        -- apply Rmult_le_reg_l with (1 + e j); [lra|]. rewrite Rinv_r by lra. nra.
        -- apply Rinv_le_contravar; lra.
      * split; [lra|]. apply Rmult_le_reg_l with (1 - u); [lra|]. rewrite Rinv_r by lra. nra.
    + pose proof (bernoulli n u ltac:(lra)) as B.
      assert (Hg : INR n * u <= gamma n u).
      { unfold gamma. apply le_div_r; [lra|].
        assert (0 <= INR n * u) by (apply Rmult_le_pos; lra). nra. }
      assert (Hg' : / ((1 - u) ^ n) <= 1 + gamma n u).
      { unfold gamma. replace (1 + INR n * u / (1 - INR n * u)) with (/ (1 - INR n * u)) by (field; lra).
        apply Rinv_le_contravar; lra. }
      split; lra.
Qed.

(* ---- E_arith, step 5: the accumulation ------------------------------------

   Total weight W > 0, computed l = W (1 + f) with |f| <= g < 1; computed
   acc = W Obar + E with ||E|| <= g W Vh, where Obar = sum_i (w_i / W) v_i is the
   output of the computed weights and ||Obar|| <= Vh.  Then
   || acc / l - Obar || <= 2 g Vh / (1 - g). *)

Lemma norm_sub_le : forall d x y, norm d (vsub x y) <= norm d x + norm d y.
Proof.
  intros. replace (norm d (vsub x y)) with (norm d (vadd x (vscal (-1) y))).
  - eapply Rle_trans; [apply norm_triangle|]. rewrite norm_scal.
    replace (Rabs (-1)) with 1 by (rewrite Rabs_left by lra; ring). lra.
  - apply norm_ext. intros. unfold vadd, vscal, vsub. ring.
Qed.

Theorem CERT_AR_01_accumulation : forall d (Obar E acc : vec) W l f g Vh,
  0 < W -> Rabs f <= g -> g < 1 ->
  l = W * (1 + f) ->
  (forall c, (c < d)%nat -> acc c = W * Obar c + E c) ->
  norm d E <= g * W * Vh -> norm d Obar <= Vh ->
  norm d (vsub (vscal (/ l) acc) Obar) <= 2 * g * Vh / (1 - g).
Proof.
  intros d Obar E acc W l f g Vh HW Hf Hg Hl Hacc HE HO.
  assert (- g <= f <= g) as [F1 F2] by (unfold Rabs in Hf; destruct (Rcase_abs f); lra).
  assert (Hf1 : 0 < 1 + f) by lra.
  replace (norm d (vsub (vscal (/ l) acc) Obar))
    with (norm d (vscal (/ (1 + f)) (vsub (vscal (/ W) E) (vscal f Obar)))).
  2: { apply norm_ext. intros c Hc. unfold vscal, vsub. rewrite Hacc by exact Hc. rewrite Hl.
       field. lra. }
  rewrite norm_scal. rewrite Rabs_right by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
  pose proof (norm_sub_le d (vscal (/ W) E) (vscal f Obar)) as T.
  rewrite !norm_scal in T. rewrite Rabs_right in T by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
  assert (HVh : 0 <= Vh) by (eapply Rle_trans; [apply norm_nonneg | exact HO]).
  assert (H1 : / W * norm d E <= g * Vh).
  { apply Rmult_le_reg_l with W; [exact HW|]. rewrite <- Rmult_assoc, Rinv_r, Rmult_1_l by lra. lra. }
  assert (H2 : Rabs f * norm d Obar <= g * Vh)
    by (apply Rmult_le_compat; [apply Rabs_pos | apply norm_nonneg | exact Hf | exact HO]).
  pose proof (norm_nonneg d (vsub (vscal (/ W) E) (vscal f Obar))).
  apply Rle_trans with (/ (1 + f) * (2 * g * Vh)).
  - apply Rmult_le_compat_l; [left; apply Rinv_0_lt_compat; lra | lra].
  - unfold Rdiv. rewrite Rmult_comm. apply Rmult_le_compat_l.
    + assert (0 <= g) by (eapply Rle_trans; [apply Rabs_pos | exact Hf]).
      apply Rmult_le_pos; [lra | exact HVh].
    + apply Rinv_le_contravar; lra.
Qed.

(* ---- E_arith, step 6: the final division ----------------------------------

   Each component of the output is rounded once to binary32:
   || RN32(x) - x || <= 2^-24 ||x|| + sqrt(d) 2^-150. *)

Lemma sq_abs : forall y, y * y = Rabs y * Rabs y.
Proof. intros. rewrite <- Rabs_mult. rewrite Rabs_right; [reflexivity|]. apply Rle_ge. nra. Qed.

Lemma norm_le_comp : forall d x y, (forall c, (c < d)%nat -> Rabs (x c) <= Rabs (y c)) ->
  norm d x <= norm d y.
Proof.
  intros d x y H. unfold norm, dot. apply sqrt_le_1_alt. apply sum_le. intros c Hc.
  specialize (H c Hc). pose proof (Rabs_pos (x c)).
  rewrite (sq_abs (x c)), (sq_abs (y c)). apply Rmult_le_compat; lra.
Qed.

Lemma norm_const_bound : forall d (a : vec) k, 0 <= k ->
  (forall c, (c < d)%nat -> Rabs (a c) <= k) -> norm d a <= sqrt (INR d) * k.
Proof.
  intros d a k Hk H. unfold norm, dot.
  rewrite <- (sqrt_square k) by exact Hk. rewrite <- sqrt_mult by (apply pos_INR || nra).
  apply sqrt_le_1_alt.
  replace (INR d * (k * k)) with (sum d (fun _ => k * k)).
  - apply sum_le. intros c Hc. specialize (H c Hc). pose proof (Rabs_pos (a c)).
    rewrite sq_abs. apply Rmult_le_compat; lra.
  - clear H. induction d as [|d IH]; simpl sum; [simpl; ring|]. rewrite IH, S_INR. ring.
Qed.

Lemma spec_RN32_abs : forall x,
  Rabs (RN32 x - x) <= bpow radix2 (-24) * Rabs x + bpow radix2 (-150).
Proof.
  intros x. destruct (spec_RN32_model x) as [e [a [He [Ha [_ Hx]]]]]. rewrite Hx.
  replace (x * (1 + e) + a - x) with (x * e + a) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult.
  pose proof (Rabs_pos x).
  assert (Rabs x * Rabs e <= bpow radix2 (-24) * Rabs x) by (rewrite Rmult_comm; apply Rmult_le_compat_r; lra).
  lra.
Qed.

Theorem CERT_AR_01_division : forall d (x : vec),
  norm d (vsub (fun c => RN32 (x c)) x)
  <= bpow radix2 (-24) * norm d x + sqrt (INR d) * bpow radix2 (-150).
Proof.
  intros d x. set (u := bpow radix2 (-24)). set (k := bpow radix2 (-150)).
  assert (Hu : 0 <= u) by apply bpow_ge_0. assert (Hk : 0 <= k) by apply bpow_ge_0.
  apply Rle_trans with (norm d (vadd (vscal u (fun c => Rabs (x c))) (fun _ => k))).
  - apply norm_le_comp. intros c _. unfold vsub, vadd, vscal.
    rewrite (Rabs_right (u * Rabs (x c) + k)).
    + apply spec_RN32_abs.
    + apply Rle_ge. pose proof (Rabs_pos (x c)). nra.
  - eapply Rle_trans; [apply norm_triangle|]. rewrite norm_scal, (Rabs_right u) by lra.
    apply Rplus_le_compat.
    + right. f_equal. unfold norm, dot. f_equal. apply sum_ext. intros. rewrite <- sq_abs. reflexivity.
    + apply norm_const_bound; [exact Hk|]. intros. rewrite Rabs_right; lra.
Qed.
