(* Earith.v -- spec/bounds/cert.md §7, E_arith [CERT-AR-01]: step 1 (a
   score's roundings, any summation order), step 4 (the
   perturbed weights) from K.1 and Eq. 7, and the sum of steps 4-6 into the
   formula of spec/cert.md [CERT-AR-01] (with E_deq = 0: pinned reconstructions). *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums Softmax KeyTerm Arith KeyQuant Vidkv.
Open Scope R_scope.

(* Step 4: weights proportional to pi_i e^{theta_i}, |theta_i| <= Lambda, move the
   output by at most 2 Vh tanh(Lambda / 2). *)
Theorem CERT_AR_01_weights : forall d n pi theta (v : nat -> vec) Vh Lambda,
  is_dist n pi -> 0 <= Lambda ->
  (forall i, (i < n)%nat -> Rabs (theta i) <= Lambda) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vh) ->
  norm d (vsub (out n (tilt n pi theta) v) (out n pi v)) <= 2 * Vh * tanh (Lambda / 2).
Proof.
  intros d n pi theta v Vh Lambda Hd HL Ht HV.
  eapply Rle_trans; [apply paper_thm43_eq7; exact HV|].
  destruct (Nat.eq_dec n 0) as [->|Hn].
  - unfold TV. simpl. rewrite Rmult_0_r, Rmult_0_r.
    assert (0 <= tanh (Lambda / 2)) by (apply tanh_nonneg; lra).
    destruct Hd as [_ H1]. simpl in H1. lra.
  - assert (HV0 : 0 <= Vh) by (eapply Rle_trans; [apply norm_nonneg | apply (HV 0%nat ltac:(lia))]).
    apply Rmult_le_compat_l; [lra|]. apply kvq_lemma_K1_tilt; assumption.
Qed.

(* Steps 4-6 summed.  O2: the exact Phase-2 output; Obar: the output of the
   kernel's computed weights (a convex combination of values of norm <= Vh);
   Q = acc / l before the final rounding; Ok = the kernel's output.  The
   underflows of step 5 move Q by at most D 2^-149 per component. *)
Theorem CERT_AR_01_sum : forall d (Ok Q Obar O2 : vec) Vh Lambda g D nS U,
  0 <= Vh -> 0 <= g < 1 -> 0 <= D -> 0 <= nS -> 0 <= U ->
  norm d Obar <= Vh ->
  norm d (vsub Obar O2) <= 2 * Vh * tanh (Lambda / 2) + 2 * Vh * nS * (U + 1) * / 2 ^ 148 ->
  norm d (vsub Q Obar) <= 2 * g * Vh / (1 - g) + sqrt (INR d) * (2 * D) * / 2 ^ 150 ->
  norm d (vsub Ok Q) <= / 16777216 * norm d Q + sqrt (INR d) * / 2 ^ 150 ->
  norm d (vsub Ok O2)
  <= 2 * Vh * tanh (Lambda / 2) + 2 * Vh * g / (1 - g) + / 16777216 * Vh * (1 + 2 * g / (1 - g))
     + 2 * Vh * nS * (U + 1) * / 2 ^ 148 + sqrt (INR d) * (1 + 4 * D) * / 2 ^ 150.
Proof.
  intros d Ok Q Obar O2 Vh Lambda g D nS U HV Hg HD HnS HU HO H4 H5 H6.
  assert (Hsq : 0 <= sqrt (INR d)) by apply sqrt_pos.
  assert (Hp : 0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra).
  assert (Hg1 : 0 <= 2 * g * Vh / (1 - g)) by (apply div_nonneg; [apply Rmult_le_pos; lra | lra]).
  (* ||Q|| <= Vh + 2 g Vh / (1 - g) + sqrt(d) 2 D 2^-150 *)
  assert (HQ : norm d Q <= Vh + 2 * g * Vh / (1 - g) + sqrt (INR d) * (2 * D) * / 2 ^ 150).
  { replace (norm d Q) with (norm d (vadd Obar (vsub Q Obar))).
    - eapply Rle_trans; [apply norm_triangle | lra].
    - apply norm_ext. intros. unfold vadd, vsub. ring. }
  assert (Htri : norm d (vsub Ok O2) <= norm d (vsub Ok Q) + norm d (vsub Q Obar) + norm d (vsub Obar O2)).
  { replace (norm d (vsub Ok O2)) with (norm d (vadd (vadd (vsub Ok Q) (vsub Q Obar)) (vsub Obar O2))).
    - eapply Rle_trans; [apply norm_triangle|]. pose proof (norm_triangle d (vsub Ok Q) (vsub Q Obar)). lra.
    - apply norm_ext. intros. unfold vadd, vsub. ring. }
  assert (E1 : / 16777216 * Vh * (1 + 2 * g / (1 - g)) = / 16777216 * (Vh + 2 * g * Vh / (1 - g)))
    by (field; lra).
  assert (E2 : 2 * Vh * g / (1 - g) = 2 * g * Vh / (1 - g)) by (field; lra).
  rewrite E1, E2.
  assert (/ 16777216 * (sqrt (INR d) * (2 * D) * / 2 ^ 150) <= sqrt (INR d) * (2 * D) * / 2 ^ 150).
  { assert (0 <= sqrt (INR d) * (2 * D) * / 2 ^ 150) by (apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
    lra. }
  assert (sqrt (INR d) * (1 + 4 * D) * / 2 ^ 150
          = sqrt (INR d) * / 2 ^ 150 + 2 * (sqrt (INR d) * (2 * D) * / 2 ^ 150)) by ring.
  lra.
Qed.

(* Step 1: a score s~ = RN32(scale * dot~), dot~ the binary32 sum of the products
   RN32(q_c k_c) in any order and parenthesisation (the tree t, each channel a
   leaf), is within gamma_{d+1} scale sum_c |q_c k_c| + (scale d + 1) 2^-149 of
   scale (q . k), d = size t (d u <= 1/2). *)
Theorem CERT_AR_01_scores : forall (q k : nat -> R) t scale,
  0 <= scale -> INR (size t + 1) * u24 <= / 2 ->
  let d := size t in
  let A := asum (fun c => q c * k c) t in
  Rabs (RN32 (scale * fl (fun c => RN32 (q c * k c)) t) - scale * ex (fun c => q c * k c) t)
  <= gamma (d + 1) u24 * scale * A + (scale * INR d + 1) * / 2 ^ 149.
Proof.
  intros q k t scale Hs Hd d A.
  set (p := fun c => RN32 (q c * k c)).
  set (x := fun c => q c * k c).
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  assert (Hu1 : u24 < 1) by (unfold u24; lra).
  assert (He : 0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra).
  assert (E149 : / 2 ^ 149 = 2 * / 2 ^ 150).
  { change (2 ^ 150) with (2 * 2 ^ 149). assert (0 < 2 ^ 149) by (apply pow_lt; lra). field; lra. }
  pose proof (size_pos t) as Hd1. fold d in Hd1, Hd.
  pose proof (pos_INR d).
  assert (Hdm1 : INR (d - 1) * u24 < 1).
  { assert (INR (d - 1) <= INR (d + 1)) by (apply le_INR; lia).
    assert (INR (d - 1) * u24 <= INR (d + 1) * u24) by (apply Rmult_le_compat_r; lra). lra. }
  set (g := gamma (d - 1) u24).
  assert (Hg : 0 <= g) by (apply gamma_nonneg; assumption).
  (* the products *)
  assert (Hp1 : forall c, Rabs (p c - x c) <= u24 * Rabs (x c) + / 2 ^ 150)
    by (intros c; apply RN32_abs_err).
  assert (Hp2 : forall c, Rabs (p c) <= (1 + u24) * Rabs (x c) + / 2 ^ 150).
  { intros c. specialize (Hp1 c). replace (p c) with (x c + (p c - x c)) by ring.
    eapply Rle_trans; [apply Rabs_triang | lra]. }
  pose proof (sum_tree_error p t (fun c => format32_RN32 _) Hdm1) as S1. fold d in S1. fold g in S1.
  pose proof (ex_diff p x t) as S2. unfold x in S2 at 2.
  pose proof (asum_le p x t (1 + u24) (/ 2 ^ 150) ltac:(lra) Hp2) as A1.
  pose proof (asum_le (fun c => p c - x c) x t u24 (/ 2 ^ 150) Hu Hp1) as A2.
  unfold x in A1, A2. fold d A in A1, A2.
  assert (HA : 0 <= A) by apply asum_nonneg.
  assert (Hex : Rabs (ex x t) <= A) by apply ex_le_asum.
  (* X bounds |dot~ - dot| *)
  set (X := (g * (1 + u24) + u24) * A + INR d * / 2 ^ 150 * (1 + g)).
  assert (HX : Rabs (fl p t - ex x t) <= X).
  { replace (fl p t - ex x t) with ((fl p t - ex p t) + (ex p t - ex x t)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (g * asum p t <= g * ((1 + u24) * A + INR d * / 2 ^ 150)) by (apply Rmult_le_compat_l; lra).
    unfold X. nra. }
  (* the scaling *)
  pose proof (RN32_abs_err (scale * fl p t)) as S3. unfold a150 in S3.
  rewrite Rabs_mult, (Rabs_right scale) in S3 by lra.
  assert (Hfl : Rabs (fl p t) <= A + X).
  { replace (fl p t) with (ex x t + (fl p t - ex x t)) by ring. eapply Rle_trans; [apply Rabs_triang | lra]. }
  replace (RN32 (scale * fl p t) - scale * ex x t)
    with ((RN32 (scale * fl p t) - scale * fl p t) + scale * (fl p t - ex x t)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_right scale) by lra.
  assert (T1 : u24 * (scale * Rabs (fl p t)) <= u24 * (scale * (A + X)))
    by (apply Rmult_le_compat_l; [lra|]; apply Rmult_le_compat_l; lra).
  assert (T2 : scale * Rabs (fl p t - ex x t) <= scale * X) by (apply Rmult_le_compat_l; lra).
  (* constants: (1 + u)^2 (1 + g) - 1 <= gamma_{d+1} and (1 + g)(1 + u) <= 2 *)
  assert (Hg1 : 1 + u24 <= 1 + gamma 1 u24).
  { unfold gamma. simpl INR. apply Rplus_le_compat_l. apply le_div_r; [lra|]. nra. }
  assert (Hd1' : INR (d + 1) * u24 < 1) by lra.
  assert (G1 : (1 + u24) * (1 + g) <= 1 + gamma d u24).
  { eapply Rle_trans. { apply Rmult_le_compat_r; [lra | exact Hg1]. }
    unfold g. replace (gamma d u24) with (gamma (1 + (d - 1)) u24) by (f_equal; lia).
    apply gamma_add; [exact Hu|]. replace (1 + (d - 1))%nat with d by lia.
    assert (INR d <= INR (d + 1)) by (apply le_INR; lia).
    assert (INR d * u24 <= INR (d + 1) * u24) by (apply Rmult_le_compat_r; lra). lra. }
  assert (G2 : (1 + u24) * (1 + gamma d u24) <= 1 + gamma (d + 1) u24).
  { eapply Rle_trans. { apply Rmult_le_compat_r; [pose proof (gamma_nonneg d u24 Hu ltac:(assert (INR d <= INR (d + 1)) by (apply le_INR; lia); nra)); lra | exact Hg1]. }
    replace (d + 1)%nat with (1 + d)%nat by lia. apply gamma_add; [exact Hu|].
    replace (1 + d)%nat with (d + 1)%nat by lia. exact Hd1'. }
  assert (G3 : 1 + gamma d u24 <= 2).
  { unfold gamma. assert (INR d <= INR (d + 1)) by (apply le_INR; lia).
    assert (INR d * u24 <= / 2) by (assert (INR d * u24 <= INR (d + 1) * u24) by (apply Rmult_le_compat_r; lra); lra).
    assert (0 <= INR d * u24) by (apply Rmult_le_pos; lra).
    assert (INR d * u24 / (1 - INR d * u24) <= 1) by (apply div_le_r; lra). lra. }
  set (gd1 := gamma (d + 1) u24) in *.
  (* assemble: scale A [(1+u)(g(1+u) + u) + u] + scale d eta (1+g)(1+u) + eta *)
  assert (K1 : (1 + u24) * (g * (1 + u24) + u24) + u24 <= gd1).
  { assert ((1 + u24) * (1 + g) * (1 + u24) <= (1 + gamma d u24) * (1 + u24))
      by (apply Rmult_le_compat_r; lra).
    nra. }
  assert (K2 : (1 + g) * (1 + u24) <= 2) by lra.
  assert (scale * A * ((1 + u24) * (g * (1 + u24) + u24) + u24) <= scale * A * gd1)
    by (apply Rmult_le_compat_l; [apply Rmult_le_pos|]; lra).
  assert (scale * INR d * / 2 ^ 150 * ((1 + g) * (1 + u24)) <= scale * INR d * / 2 ^ 150 * 2)
    by (apply Rmult_le_compat_l; [repeat apply Rmult_le_pos|]; lra).
  rewrite E149. unfold X in *. nra.
Qed.
