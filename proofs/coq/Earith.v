(* Earith.v -- spec/bounds/cert.md §7, E_arith [CERT-AR-01]: step 1 (a
   score's roundings, any summation order), steps 2-3 (the exponent arguments
   and the effective weights' Lambda, with R_s), step 4 (the perturbed weights
   from K.1 and Eq. 7, and the absolute parts of exp), the sum of steps 4-6 into
   the formula of spec/cert.md [CERT-AR-01], and step 7 (E_deq: the kernel's own
   reconstructions of values and of keys). *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums Softmax KeyTerm Value Arith KeyQuant Vidkv.
From Flocq Require Import Core.
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

(* ---- steps 2-3: the exponent arguments and the effective weights ------------

   The model of exp's relative part: |expt(x) - e^x| <= eps_e e^x, eps_e < 1
   (U_exp 2^-23; the absolute parts a_x are the next theorem's).  An argument
   x~ = RN32(a - b) of two binary32 numbers is a difference rounded with relative
   error only (H). *)

Lemma ln_rel : forall e eps, 0 <= eps < 1 -> Rabs e <= eps ->
  Rabs (ln (1 + e)) <= - ln (1 - eps).
Proof.
  intros e eps He Hab.
  assert (- eps <= e <= eps) as [E1 E2] by (unfold Rabs in Hab; destruct (Rcase_abs e); lra).
  assert (L1 : ln (1 - eps) <= ln (1 + e)).
  { destruct (Req_dec (1 - eps) (1 + e)) as [->|Hne]; [lra|]. left. apply ln_increasing; lra. }
  assert (L2 : ln (1 + e) <= - ln (1 - eps)).
  { rewrite <- ln_Rinv by lra.
    destruct (Req_dec (1 + e) (/ (1 - eps))) as [->|Hne]; [lra|]. left. apply ln_increasing; [lra|].
    apply Rmult_lt_reg_l with (1 - eps); [lra|]. rewrite Rinv_r by lra.
    assert (e <= eps) by lra. assert ((1 - eps) * (1 + e) <= 1) by nra.
    assert ((1 - eps) * (1 + e) <> 1).
    { intro H1. apply Hne. apply Rmult_eq_reg_l with (1 - eps); [|lra]. rewrite Rinv_r by lra. lra. }
    lra. }
  unfold Rabs. destruct (Rcase_abs (ln (1 + e))); lra.
Qed.

Lemma RN32_minus_rel : forall a b, format32 a -> format32 b ->
  Rabs (RN32 (a - b) - (a - b)) <= u24 * Rabs (a - b).
Proof.
  intros a b Ha Hb. unfold Rminus.
  apply (RN32_plus_rel a (- b) Ha). unfold format32. apply generic_format_opp. exact Hb.
Qed.

(* Step 2: expt(RN32(a - b)) = e^{a - b + th}, |th| <= 2^-24 R_s + lam, lam = -ln(1 - eps_e),
   when a, b are binary32 and |a - b| <= R_s. *)
Theorem CERT_AR_01_exparg : forall (expt : R -> R) eps_e a b Rs,
  0 <= eps_e < 1 -> (forall x, Rabs (expt x - exp x) <= eps_e * exp x) ->
  format32 a -> format32 b -> Rabs (a - b) <= Rs ->
  exists th, Rabs th <= u24 * Rs + - ln (1 - eps_e) /\ expt (RN32 (a - b)) = exp (a - b + th).
Proof.
  intros expt eps_e a b Rs He Hexp Ha Hb HR.
  set (x := RN32 (a - b)).
  assert (Hx : Rabs (x - (a - b)) <= u24 * Rs).
  { eapply Rle_trans; [apply RN32_minus_rel; assumption|].
    apply Rmult_le_compat_l; [unfold u24; lra | exact HR]. }
  set (e := (expt x - exp x) / exp x).
  assert (Hex : 0 < exp x) by apply exp_pos.
  assert (He1 : Rabs e <= eps_e).
  { unfold e. unfold Rdiv. rewrite Rabs_mult, (Rabs_right (/ exp x)) by (left; apply Rinv_0_lt_compat; exact Hex).
    apply Rmult_le_reg_r with (exp x); [exact Hex|]. rewrite Rmult_assoc, Rinv_l by lra. rewrite Rmult_1_r. apply Hexp. }
  assert (Hpos : 0 < 1 + e) by (unfold Rabs in He1; destruct (Rcase_abs e); lra).
  exists (x - (a - b) + ln (1 + e)). split.
  - eapply Rle_trans; [apply Rabs_triang|]. pose proof (ln_rel e eps_e He He1). lra.
  - replace (a - b + (x - (a - b) + ln (1 + e))) with (x + ln (1 + e)) by ring.
    rewrite exp_plus, exp_ln by exact Hpos. unfold e. field. lra.
Qed.

(* R_s: every running maximum is some computed score s~_j, so with |s~_i - s^_i| <= eps_s
   for every attended token, |s~_i - s~_j| <= (max s^ - min s^) + 2 eps_s = R_s. *)
Theorem CERT_AR_01_Rs : forall si sj shi shj eps_s smin smax,
  Rabs (si - shi) <= eps_s -> Rabs (sj - shj) <= eps_s ->
  smin <= shi <= smax -> smin <= shj <= smax ->
  Rabs (si - sj) <= smax - smin + 2 * eps_s.
Proof.
  intros si sj shi shj e smin smax H1 H2 [A1 A2] [B1 B2].
  revert H1 H2. unfold Rabs. destruct (Rcase_abs (si - shi)), (Rcase_abs (sj - shj)), (Rcase_abs (si - sj)); lra.
Qed.

(* Step 3: token i's computed exp (argument RN32(s~_i - m_0), m_0 the running maximum
   then) and the r <= Nr rescaling factors expt(RN32(m_{k} - m_{k+1})) it undergoes,
   multiplied, are e^{s^_i - m_r + theta_i}, |theta_i| <= eps_s + (1 + Nr)(2^-24 R_s + lam)
   = Lambda: the product telescopes to e^{s~_i - m_r} and each of the 1 + r factors adds
   at most 2^-24 R_s + lam to the exponent (step 2); |s~_i - s^_i| <= eps_s (step 1).
   The same computed factors scale l and acc, so theta_i is a perturbation of token i's
   weight and no mismatch between numerator and denominator. *)
Theorem CERT_AR_01_Lambda : forall (expt : R -> R) eps_e eps_s Rs st sh (m : nat -> R) r Nr,
  0 <= eps_e < 1 -> (forall x, Rabs (expt x - exp x) <= eps_e * exp x) ->
  0 <= Rs -> (r <= Nr)%nat ->
  format32 st -> (forall k, (k <= r)%nat -> format32 (m k)) ->
  Rabs (st - m 0%nat) <= Rs -> (forall k, (k < r)%nat -> Rabs (m k - m (S k)) <= Rs) ->
  Rabs (st - sh) <= eps_s ->
  exists theta, Rabs theta <= eps_s + (1 + INR Nr) * (u24 * Rs + - ln (1 - eps_e)) /\
    expt (RN32 (st - m 0%nat)) * prod r (fun k => expt (RN32 (m k - m (S k))))
    = exp (sh - m r + theta).
Proof.
  intros expt eps_e eps_s Rs st sh m r Nr He Hexp HRs Hr Fst Fm H0 Hk Hs.
  set (c := u24 * Rs + - ln (1 - eps_e)).
  assert (Hc : 0 <= c).
  { unfold c. assert (ln (1 - eps_e) <= 0).
    { destruct (Req_dec eps_e 0) as [->|]; [replace (1 - 0) with 1 by ring; rewrite ln_1; lra|].
      left. rewrite <- ln_1. apply ln_increasing; lra. }
    assert (0 <= u24 * Rs) by (apply Rmult_le_pos; [unfold u24; lra | exact HRs]). lra. }
  (* the telescoped product, by induction on the number of rescalings *)
  assert (T : forall j, (j <= r)%nat -> exists th, Rabs th <= (1 + INR j) * c /\
            expt (RN32 (st - m 0%nat)) * prod j (fun k => expt (RN32 (m k - m (S k))))
            = exp (st - m j + th)).
  { induction j as [|j IH]; intros Hj.
    - destruct (CERT_AR_01_exparg expt eps_e st (m 0%nat) Rs He Hexp Fst (Fm 0%nat ltac:(lia)) H0)
        as [th [Hth Eth]].
      exists th. split; [simpl; fold c in Hth; lra|]. simpl. rewrite Rmult_1_r. exact Eth.
    - destruct (IH ltac:(lia)) as [th [Hth Eth]].
      destruct (CERT_AR_01_exparg expt eps_e (m j) (m (S j)) Rs He Hexp (Fm j ltac:(lia)) (Fm (S j) Hj)
                  (Hk j ltac:(lia))) as [th' [Hth' Eth']].
      exists (th + th'). split.
      + rewrite S_INR. eapply Rle_trans; [apply Rabs_triang|]. fold c in Hth'. lra.
      + simpl prod. rewrite <- Rmult_assoc, Eth, Eth', <- exp_plus. f_equal. ring. }
  destruct (T r (Nat.le_refl r)) as [th [Hth Eth]].
  exists (st - sh + th). split.
  - eapply Rle_trans; [apply Rabs_triang|].
    assert (INR r <= INR Nr) by (apply le_INR; exact Hr).
    assert ((1 + INR r) * c <= (1 + INR Nr) * c) by (apply Rmult_le_compat_r; lra).
    fold c. lra.
  - rewrite Eth. f_equal. ring.
Qed.

(* ---- step 4, the absolute parts --------------------------------------------

   The kernel's weights w_i = w'_i + a_i: w'_i = C pi_i e^{theta_i} (step 3, C > 0 the
   common factor e^{-m_f} sum_j e^{s^_j}), a_i the absolute parts of exp, sum |a_i| <= alpha
   (nS (U + 1) 2^-149), total weight W = sum w_i >= 1/2 (the maximal token's argument is 0).
   The output of the normalised weights w / W is within 2 Vh tanh(Lambda / 2) + 4 Vh alpha
   of O_2 = sum pi_i v_i: 4 alpha = nS (U + 1) 2^-147 = 2 nS (U + 1) 2^-148. *)
Theorem CERT_AR_01_weights_abs : forall d n pi theta a (v : nat -> vec) C Vh Lambda alpha,
  is_dist n pi -> 0 <= Lambda -> 0 < C ->
  (forall i, (i < n)%nat -> Rabs (theta i) <= Lambda) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vh) ->
  sum n (fun i => Rabs (a i)) <= alpha ->
  / 2 <= sum n (fun i => C * pi i * exp (theta i) + a i) ->
  norm d (vsub (out n (fun i => (C * pi i * exp (theta i) + a i)
                               / sum n (fun j => C * pi j * exp (theta j) + a j)) v)
               (out n pi v))
  <= 2 * Vh * tanh (Lambda / 2) + 4 * Vh * alpha.
Proof.
  intros d n pi theta a v C Vh Lambda alpha Hd HL HC Ht HV Ha HW.
  set (w' := fun i => C * pi i * exp (theta i)).
  set (W' := sum n w').
  set (W := sum n (fun i => w' i + a i)).
  change (/ 2 <= W) in HW.
  change (norm d (vsub (out n (fun i => (w' i + a i) / W) v) (out n pi v))
          <= 2 * Vh * tanh (Lambda / 2) + 4 * Vh * alpha).
  destruct (Nat.eq_dec n 0) as [->|Hn].
  { exfalso. unfold W in HW. simpl in HW. lra. }
  assert (HV0 : 0 <= Vh) by (eapply Rle_trans; [apply norm_nonneg | apply (HV 0%nat ltac:(lia))]).
  assert (Hw' : forall i, (i < n)%nat -> 0 <= w' i).
  { intros i Hi. unfold w'. destruct Hd as [Hp _]. pose proof (Hp i Hi). pose proof (exp_pos (theta i)).
    apply Rmult_le_pos; [apply Rmult_le_pos|]; lra. }
  assert (HW'sum : W = W' + sum n a) by (unfold W, W'; apply sum_plus).
  assert (Hsa : Rabs (sum n a) <= alpha) by (eapply Rle_trans; [apply sum_abs | exact Ha]).
  assert (Halpha : 0 <= alpha) by (eapply Rle_trans; [apply Rabs_pos | exact Hsa]).
  (* W' > 0: W' >= C e^{-Lambda} sum pi = C e^{-Lambda} *)
  assert (HPpos : 0 < sum n (fun j => pi j * exp (theta j))).
  { destruct Hd as [Hp H1].
    apply Rlt_le_trans with (sum n (fun j => pi j * exp (- Lambda))).
    - rewrite sum_scal_r, H1. rewrite Rmult_1_l. apply exp_pos.
    - apply sum_le. intros i Hi. apply Rmult_le_compat_l; [apply Hp, Hi|].
      apply exp_le. pose proof (Ht i Hi) as H. unfold Rabs in H. destruct (Rcase_abs (theta i)); lra. }
  assert (EW' : W' = C * sum n (fun j => pi j * exp (theta j))).
  { unfold W', w'. rewrite <- sum_scal. apply sum_ext. intros. ring. }
  assert (HW'pos : 0 < W') by (rewrite EW'; apply Rmult_lt_0_compat; assumption).
  (* the tilt of pi is w' / W' *)
  assert (Htilt : forall i, (i < n)%nat -> w' i / W' = tilt n pi theta i).
  { intros i Hi. unfold tilt. rewrite EW'. unfold w'. field. lra. }
  (* split: (w / W) against (w' / W'), then (w' / W') against pi *)
  replace (norm d (vsub (out n (fun i => (w' i + a i) / W) v) (out n pi v)))
    with (norm d (vadd (vsub (out n (fun i => (w' i + a i) / W) v) (out n (fun i => w' i / W') v))
               (vsub (out n (fun i => w' i / W') v) (out n pi v))))
    by (apply norm_ext; intros c _; unfold vadd, vsub; ring).
  eapply Rle_trans; [apply norm_triangle|].
  rewrite (Rplus_comm (2 * Vh * tanh (Lambda / 2))).
  apply Rplus_le_compat.
  - (* sum_i |(w'_i + a_i)/W - w'_i/W'| <= 2 alpha / W <= 4 alpha *)
    rewrite out_sub. eapply Rle_trans; [apply norm_wsum|].
    apply Rle_trans with (sum n (fun i => Rabs ((w' i + a i) / W - w' i / W')) * Vh).
    { rewrite <- sum_scal_r. apply sum_le. intros i Hi. apply Rmult_le_compat_l; [apply Rabs_pos | apply HV, Hi]. }
    rewrite Rmult_comm. replace (4 * Vh * alpha) with (Vh * (4 * alpha)) by ring.
    apply Rmult_le_compat_l; [exact HV0|].
    assert (HWp : 0 < W) by lra.
    apply Rle_trans with (sum n (fun i => Rabs (a i) / W + w' i * (Rabs (sum n a) / (W * W')))).
    { apply sum_le. intros i Hi.
      replace ((w' i + a i) / W - w' i / W') with (a i / W + w' i * ((W' - W) / (W * W'))) by (field; lra).
      eapply Rle_trans; [apply Rabs_triang|].
      unfold Rdiv. rewrite !Rabs_mult, (Rabs_right (/ W)) by (left; apply Rinv_0_lt_compat; lra).
      rewrite (Rabs_right (w' i)) by (apply Rle_ge, Hw', Hi).
      rewrite (Rabs_right (/ (W * W'))) by (left; apply Rinv_0_lt_compat; nra).
      replace (W' - W) with (- sum n a) by lra. rewrite Rabs_Ropp. lra. }
    rewrite sum_plus. unfold Rdiv. rewrite sum_scal_r, sum_scal_r. fold W'.
    replace (W' * (Rabs (sum n a) * / (W * W'))) with (Rabs (sum n a) * / W) by (field; lra).
    assert (sum n (fun i => Rabs (a i)) * / W <= alpha * 2).
    { apply Rmult_le_compat; [apply sum_nonneg; intros; apply Rabs_pos | left; apply Rinv_0_lt_compat; lra | exact Ha|].
      replace 2 with (/ / 2) by field. apply Rinv_le_contravar; lra. }
    assert (Rabs (sum n a) * / W <= alpha * 2).
    { apply Rmult_le_compat; [apply Rabs_pos | left; apply Rinv_0_lt_compat; lra | exact Hsa|].
      replace 2 with (/ / 2) by field. apply Rinv_le_contravar; lra. }
    lra.
  - replace (norm d (vsub (out n (fun i => w' i / W') v) (out n pi v)))
      with (norm d (vsub (out n (tilt n pi theta) v) (out n pi v))).
    + apply CERT_AR_01_weights; assumption.
    + apply norm_ext. intros c _. unfold vsub, out, vsum, vscal. f_equal. apply sum_ext. intros i Hi.
      rewrite Htilt by exact Hi. reflexivity.
Qed.

(* ---- step 7: dequantization ------------------------------------------------

   Values: a kernel that multiplies its own reconstructions v'_i, within E_deq of the
   pinned v~_i in L2 ([KIVI-B-03] per element), and meets steps 1-6 against its own
   target sum pi_i v'_i within Ea, is within Ea + E_deq of O_2 = sum pi_i v~_i
   (the paper's Theorem 4.1).  With the pinned reconstructions E_deq = 0. *)
Theorem CERT_AR_01_deq_values : forall d n pi (vk vt : nat -> vec) (Ok : vec) Ea Edeq,
  is_dist n pi ->
  (forall i, (i < n)%nat -> norm d (vsub (vk i) (vt i)) <= Edeq) ->
  norm d (vsub Ok (out n pi vk)) <= Ea ->
  norm d (vsub Ok (out n pi vt)) <= Ea + Edeq.
Proof.
  intros d n pi vk vt Ok Ea Edeq [Hp H1] Hv HO.
  pose proof (paper_thm41 d n pi vk vt Edeq Hp H1 Hv) as T.
  replace (norm d (vsub Ok (out n pi vt)))
    with (norm d (vadd (vsub Ok (out n pi vk)) (out n pi (fun i => vsub (vk i) (vt i))))).
  - eapply Rle_trans; [apply norm_triangle | lra].
  - apply norm_ext. intros c _. unfold vadd, vsub, out, vsum, vscal.
    rewrite (sum_ext n (fun i => pi i * (vk i c - vt i c)) (fun i => pi i * vk i c - pi i * vt i c))
      by (intros; ring).
    rewrite sum_minus. ring.
Qed.

(* Keys: a score computed as in step 1 from the kernel's reconstruction k'_c, within
   b_c of the pinned k^_c, is within
     gamma_{d+1} scale sum_c |q_c| (|k^_c| + b_c) + (scale d + 1) 2^-149 + scale sum_c |q_c| b_c
   of scale (q . k^): eps_s with |k^_c| + b_c in place of |k^_c| and the reconstructions'
   own term scale sum_c |q_c| b_c added. *)
Theorem CERT_AR_01_deq_keys : forall (q k kh b : nat -> R) t scale,
  0 <= scale -> INR (size t + 1) * u24 <= / 2 ->
  (forall c, Rabs (k c - kh c) <= b c) ->
  Rabs (RN32 (scale * fl (fun c => RN32 (q c * k c)) t) - scale * ex (fun c => q c * kh c) t)
  <= gamma (size t + 1) u24 * scale * asum (fun c => Rabs (q c) * (Rabs (kh c) + b c)) t
     + (scale * INR (size t) + 1) * / 2 ^ 149
     + scale * asum (fun c => q c * b c) t.
Proof.
  intros q k kh b t scale Hs Hd Hb.
  pose proof (CERT_AR_01_scores q k t scale Hs Hd) as S1. simpl in S1.
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  assert (Hg : 0 <= gamma (size t + 1) u24).
  { apply gamma_nonneg; [exact Hu|]. pose proof (pos_INR (size t + 1)). lra. }
  (* sum |q k| <= sum |q| (|k^| + b) *)
  assert (A1 : asum (fun c => q c * k c) t <= asum (fun c => Rabs (q c) * (Rabs (kh c) + b c)) t).
  { pose proof (asum_le (fun c => q c * k c) (fun c => Rabs (q c) * (Rabs (kh c) + b c)) t 1 0 ltac:(lra)) as A.
    rewrite Rmult_0_r, Rplus_0_r, Rmult_1_l in A. apply A. intros c.
    rewrite Rmult_1_l, Rplus_0_r, Rabs_mult.
    assert (Rabs (k c) <= Rabs (kh c) + b c).
    { replace (k c) with (kh c + (k c - kh c)) by ring. eapply Rle_trans; [apply Rabs_triang|]. specialize (Hb c). lra. }
    assert (0 <= Rabs (kh c) + b c) by (pose proof (Rabs_pos (kh c)); pose proof (Rabs_pos (k c - kh c)); specialize (Hb c); lra).
    rewrite (Rabs_right (Rabs (q c) * (Rabs (kh c) + b c))) by (apply Rle_ge, Rmult_le_pos; [apply Rabs_pos | lra]).
    apply Rmult_le_compat_l; [apply Rabs_pos | lra]. }
  (* |q . k - q . k^| <= sum |q| b *)
  assert (A2 : Rabs (ex (fun c => q c * k c) t - ex (fun c => q c * kh c) t) <= asum (fun c => q c * b c) t).
  { eapply Rle_trans; [apply ex_diff|].
    pose proof (asum_le (fun c => q c * k c - q c * kh c) (fun c => q c * b c) t 1 0 ltac:(lra)) as A.
    rewrite Rmult_0_r, Rplus_0_r, Rmult_1_l in A. apply A. intros c.
    rewrite Rmult_1_l, Rplus_0_r. replace (q c * k c - q c * kh c) with (q c * (k c - kh c)) by ring.
    rewrite !Rabs_mult. apply Rmult_le_compat_l; [apply Rabs_pos|].
    specialize (Hb c). eapply Rle_trans; [exact Hb | apply Rle_abs]. }
  replace (RN32 (scale * fl (fun c => RN32 (q c * k c)) t) - scale * ex (fun c => q c * kh c) t)
    with ((RN32 (scale * fl (fun c => RN32 (q c * k c)) t) - scale * ex (fun c => q c * k c) t)
          + scale * (ex (fun c => q c * k c) t - ex (fun c => q c * kh c) t)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_right scale) by lra.
  assert (gamma (size t + 1) u24 * scale * asum (fun c => q c * k c) t
          <= gamma (size t + 1) u24 * scale * asum (fun c => Rabs (q c) * (Rabs (kh c) + b c)) t)
    by (apply Rmult_le_compat_l; [apply Rmult_le_pos|]; lra).
  assert (scale * Rabs (ex (fun c => q c * k c) t - ex (fun c => q c * kh c) t) <= scale * asum (fun c => q c * b c) t)
    by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

(* ---- steps 3-6 chained ---------------------------------------------------------

   One pass: the kernel's weights w_i = C pi_i e^{theta_i} + a_i >= 0 (step 3 gives theta_i,
   |theta_i| <= Lambda, CERT_AR_01_Lambda; the absolute parts a_i of exp sum to at most
   nS (U + 1) 2^-149), total W >= 1/2; Obar the output of w / W; Q = acc / l within step 5's
   bound of Obar; the output each component of Q rounded once (step 6).  Then
   ||O_kernel - O_2|| <= E_arith of [CERT-AR-01] with E_deq = 0 (step 7 adds E_deq). *)
Theorem CERT_AR_01_pass : forall d n pi theta a (v : nat -> vec) (Q : vec) C Vh Lambda g D nS U,
  is_dist n pi -> 0 <= Lambda -> 0 < C -> 0 <= Vh -> 0 <= g < 1 -> 0 <= D -> 0 <= nS -> 0 <= U ->
  (forall i, (i < n)%nat -> Rabs (theta i) <= Lambda) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vh) ->
  (forall i, (i < n)%nat -> 0 <= C * pi i * exp (theta i) + a i) ->
  sum n (fun i => Rabs (a i)) <= nS * (U + 1) * / 2 ^ 149 ->
  / 2 <= sum n (fun i => C * pi i * exp (theta i) + a i) ->
  let W := sum n (fun i => C * pi i * exp (theta i) + a i) in
  let Obar := out n (fun i => (C * pi i * exp (theta i) + a i) / W) v in
  norm d (vsub Q Obar) <= 2 * g * Vh / (1 - g) + sqrt (INR d) * (2 * D) * / 2 ^ 150 ->
  norm d (vsub (fun c => RN32 (Q c)) (out n pi v))
  <= 2 * Vh * tanh (Lambda / 2) + 2 * Vh * g / (1 - g) + / 16777216 * Vh * (1 + 2 * g / (1 - g))
     + 2 * Vh * nS * (U + 1) * / 2 ^ 148 + sqrt (INR d) * (1 + 4 * D) * / 2 ^ 150.
Proof.
  intros d n pi theta a v Q C Vh Lambda g D nS U Hd HL HC HV0 Hg HD HnS HU Ht HV Hw Ha HW W Obar H5.
  (* step 4 with its absolute part *)
  pose proof (CERT_AR_01_weights_abs d n pi theta a v C Vh Lambda (nS * (U + 1) * / 2 ^ 149) Hd HL HC Ht HV Ha HW) as H4.
  fold W Obar in H4.
  assert (E4 : 4 * Vh * (nS * (U + 1) * / 2 ^ 149) = 2 * Vh * nS * (U + 1) * / 2 ^ 148).
  { replace (2 ^ 149) with (2 * 2 ^ 148) by (simpl; ring). assert (0 < 2 ^ 148) by (apply pow_lt; lra). field. }
  rewrite E4 in H4.
  (* ||Obar|| <= Vh: the weights w / W are nonnegative and sum to 1 *)
  assert (HW0 : 0 < W) by (unfold W; lra).
  assert (HO : norm d Obar <= Vh).
  { unfold Obar, out. eapply Rle_trans; [apply norm_wsum|].
    apply Rle_trans with (sum n (fun i => (C * pi i * exp (theta i) + a i) / W * Vh)).
    - apply sum_le. intros i Hi. rewrite Rabs_right by (apply Rle_ge, div_nonneg; [apply Hw, Hi | exact HW0]).
      apply Rmult_le_compat_l; [apply div_nonneg; [apply Hw, Hi | exact HW0] | apply HV, Hi].
    - rewrite sum_scal_r. unfold Rdiv. rewrite sum_scal_r. fold W. rewrite Rinv_r by lra. lra. }
  (* step 6 *)
  pose proof (CERT_AR_01_division d Q) as H6. rewrite bpow_m24, bpow_m150 in H6. unfold u24 in H6.
  apply (CERT_AR_01_sum d (fun c => RN32 (Q c)) Q Obar (out n pi v) Vh Lambda g D nS U); assumption.
Qed.
