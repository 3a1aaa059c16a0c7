(* Scores.v -- spec/bounds/cert.md §3 and §3a: the paper's Eq. 8 with kvq's
   per-element bound [CERT-DLT-03], its corollary on block log-masses, and
   gamma from the stored metadata [CERT-DLT-05]. *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums Softmax.
Open Scope R_scope.

(* Eq. 8 [CERT-DLT-03]: with |k_c - k^_c| <= sigma_c/2 + gamma_c on every channel and
   Delta_b >= scale sum_c |q_c| (sigma_c/2 + gamma_c) (the upward rounding only
   enlarges it): |s_i - s^_i| <= Delta_b, s = scale (q . k), s^ = scale (q . k^). *)
Theorem CERT_DLT_03 : forall d (q k kh sigma gam : vec) scale Delta_b,
  0 <= scale ->
  (forall c, (c < d)%nat -> Rabs (k c - kh c) <= sigma c / 2 + gam c) ->
  scale * sum d (fun c => Rabs (q c) * (sigma c / 2 + gam c)) <= Delta_b ->
  Rabs (scale * dot d q k - scale * dot d q kh) <= Delta_b.
Proof.
  intros d q k kh sigma gam scale Db Hs Hk HD.
  replace (scale * dot d q k - scale * dot d q kh) with (scale * sum d (fun c => q c * (k c - kh c))).
  2: { unfold dot. rewrite <- Rmult_minus_distr_l, <- sum_minus. f_equal. apply sum_ext. intros. ring. }
  rewrite Rabs_mult, (Rabs_right scale) by lra.
  eapply Rle_trans; [|exact HD]. apply Rmult_le_compat_l; [exact Hs|].
  eapply Rle_trans; [apply sum_abs|]. apply sum_le. intros c Hc.
  rewrite Rabs_mult. apply Rmult_le_compat_l; [apply Rabs_pos | apply Hk, Hc].
Qed.

(* Its corollary: |L_b^true - L_b| <= Delta_b for the log-mass ln sum_{i in b} e^{s_i}
   of a non-empty block b (a mask over the tokens). *)
Theorem CERT_DLT_03_logmass : forall n (b : nat -> bool) s sh Delta_b,
  (exists j, (j < n)%nat /\ b j = true) ->
  (forall i, (i < n)%nat -> b i = true -> Rabs (s i - sh i) <= Delta_b) ->
  Rabs (ln (sum n (mask b (fun i => exp (s i)))) - ln (sum n (mask b (fun i => exp (sh i)))))
  <= Delta_b.
Proof.
  intros n b s sh Db [j [Hj bj]] H.
  assert (HD : 0 <= Db) by (eapply Rle_trans; [apply Rabs_pos | apply (H j Hj bj)]).
  set (X := sum n (mask b (fun i => exp (s i)))). set (Y := sum n (mask b (fun i => exp (sh i)))).
  assert (HX : 0 < X) by (apply sum_mask_pos with j; [exact Hj | exact bj | intros; apply exp_pos]).
  assert (HY : 0 < Y) by (apply sum_mask_pos with j; [exact Hj | exact bj | intros; apply exp_pos]).
  assert (H1 : X <= exp Db * Y).
  { unfold X, Y. rewrite <- sum_scal. apply sum_le. intros i Hi. unfold mask.
    destruct (b i) eqn:bi; [|lra]. rewrite <- exp_plus. apply exp_le.
    specialize (H i Hi bi). unfold Rabs in H. destruct (Rcase_abs (s i - sh i)); lra. }
  assert (H2 : Y <= exp Db * X).
  { unfold X, Y. rewrite <- sum_scal. apply sum_le. intros i Hi. unfold mask.
    destruct (b i) eqn:bi; [|lra]. rewrite <- exp_plus. apply exp_le.
    specialize (H i Hi bi). unfold Rabs in H. destruct (Rcase_abs (s i - sh i)); lra. }
  pose proof (exp_pos Db).
  assert (L1 : ln X <= Db + ln Y).
  { rewrite <- (ln_exp Db) at 1. rewrite <- ln_mult by assumption.
    destruct (Req_dec X (exp Db * Y)) as [E|E]; [rewrite E; lra|].
    left. apply ln_increasing; [exact HX | lra]. }
  assert (L2 : ln Y <= Db + ln X).
  { rewrite <- (ln_exp Db) at 1. rewrite <- ln_mult by assumption.
    destruct (Req_dec Y (exp Db * X)) as [E|E]; [rewrite E; lra|].
    left. apply ln_increasing; [exact HY | lra]. }
  unfold Rabs. destruct (Rcase_abs (ln X - ln Y)); lra.
Qed.

(* [CERT-DLT-05] (§3a): from the pinned metadata's roundings, each with relative
   error at most e = 2^-24 (an addition with a subnormal result is exact),
   gamma = 2^-22 (|u| + |l| + |z|) + 2^-16 sigma + 2^-149
   <= gamma' = 2^-20 |z| + 2^-12 sigma + 2^-149. *)
Definition e24 : R := / 16777216.

Theorem CERT_DLT_05 : forall l u dd sigma z,
  l <= u -> 0 < sigma ->
  Rabs (dd - (u - l)) <= e24 * (u - l) ->
  Rabs (sigma - dd / 255) <= e24 * (dd / 255) ->
  Rabs (z - (l + 128 * sigma)) <= e24 * Rabs (l + 128 * sigma) ->
  / 4194304 * (Rabs u + Rabs l + Rabs z) + / 65536 * sigma + / 2 ^ 149
  <= / 1048576 * Rabs z + / 4096 * sigma + / 2 ^ 149.
Proof.
  intros l u dd sigma z Hlu Hs Hdd Hsig Hz. unfold e24 in *.
  set (m := l + 128 * sigma) in *.
  assert (A1 : (u - l) * (1 - / 16777216) <= dd)
    by (unfold Rabs in Hdd; destruct (Rcase_abs (dd - (u - l))); lra).
  assert (A2 : dd / 255 * (1 - / 16777216) <= sigma)
    by (unfold Rabs in Hsig; destruct (Rcase_abs (sigma - dd / 255)); lra).
  assert (A3 : Rabs m * (1 - / 16777216) <= Rabs z).
  { pose proof (Rabs_triang_inv m (m - z)) as T. replace (m - (m - z)) with z in T by ring.
    rewrite (Rabs_minus_sym m z) in T. lra. }
  assert (A4 : Rabs l <= Rabs m + 128 * sigma).
  { replace l with (m + - (128 * sigma)) by (unfold m; ring).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp, (Rabs_right (128 * sigma)) by lra. lra. }
  assert (A5 : Rabs u <= Rabs l + (u - l)).
  { replace u with (l + (u - l)) at 1 by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite (Rabs_right (u - l)) by lra. lra. }
  pose proof (Rabs_pos m). pose proof (Rabs_pos z).
  assert (0 < 2 ^ 149) by (apply pow_lt; lra).
  lra.
Qed.
