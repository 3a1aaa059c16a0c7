(* Earith.v -- spec/bounds/cert.md §7, E_arith [CERT-AR-01]: step 4 (the
   perturbed weights) from K.1 and Eq. 7, and the sum of steps 4-6 into the
   formula of spec/cert.md [CERT-AR-01] (with E_deq = 0: pinned reconstructions). *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums Softmax KeyTerm Arith.
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
