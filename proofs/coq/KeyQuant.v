(* KeyQuant.v -- spec/bounds/cert.md §1: the per-element key bound
   |k - k^| <= sigma/2 + gamma [CERT-K8-04] of the pinned INT8 key quantizer
   [CERT-K8-01..03], gamma = 2^-22 (|u| + |l| + |z|) + 2^-16 sigma + 2^-149.

   CERT_K8_04_real derives it from the error of each step as §1 states it;
   CERT_K8_04 derives those errors from Flocq's binary32 rounding of each step
   (dd = RN32(u - l), sigma = RN32(dd / 255), z = RN32(l + 128 sigma),
   t = RN32(k - z), qv = RN32(t / sigma), k^ = RN32(c sigma + z), the fmaf). *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core Relative Plus_error.
From KvqCoq Require Import Sums Arith.
Open Scope R_scope.

Definition u24 : R := / 16777216.            (* 2^-24 *)
Definition eta_q : R := / 8388608 + / 281474976710656.   (* 2^-23 + 2^-48 *)
Definition a150 : R := / 2 ^ 150.

Definition gamma_key (u l z sigma : R) : R :=
  / 4194304 * (Rabs u + Rabs l + Rabs z) + / 65536 * sigma + / 2 ^ 149.

Theorem CERT_K8_04_real : forall l u k dd sigma z qv c kh,
  l <= k <= u -> 0 < sigma -> Rabs c <= 128 ->
  Rabs (dd - (u - l)) <= u24 * (u - l) ->
  Rabs (sigma - dd / 255) <= u24 * (dd / 255) ->
  Rabs (z - (l + 128 * sigma)) <= u24 * Rabs z ->
  Rabs (qv - (k - z) / sigma) <= Rabs ((k - z) / sigma) * eta_q + a150 ->
  Rabs (kh - (c * sigma + z)) <= u24 * Rabs (c * sigma + z) + a150 ->
  (Rabs (qv - c) <= / 2 \/ (c = 127 /\ 127.5 <= qv) \/ (c = -128 /\ qv <= -128.5)) ->
  Rabs (k - kh) <= sigma / 2 + gamma_key u l z sigma.
Proof.
  intros l u k dd sigma z qv c kh Hk Hs Hc H1 H2 H3 H5 H6 Hcase.
  unfold gamma_key, u24, eta_q, a150 in *.
  assert (Hp150 : 0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra).
  assert (E149 : / 2 ^ 149 = 2 * / 2 ^ 150).
  { change (2 ^ 150) with (2 * 2 ^ 149). assert (0 < 2 ^ 149) by (apply pow_lt; lra). field; lra. }
  set (w := (k - z) / sigma) in *.
  set (ez := z - (l + 128 * sigma)) in *.
  assert (Hw : k - z = sigma * w) by (unfold w; field; lra).
  (* |k - z| <= |u| + |l| + |z| *)
  assert (Hkz : Rabs (k - z) <= Rabs u + Rabs l + Rabs z).
  { pose proof (Rabs_triang k (- z)). rewrite Rabs_Ropp in H.
    assert (Rabs k <= Rabs u + Rabs l) by (unfold Rabs; destruct (Rcase_abs k), (Rcase_abs u), (Rcase_abs l); lra).
    unfold Rminus. lra. }
  (* the rounding part sigma |w - c| *)
  assert (Hr : sigma * Rabs (w - c)
               <= sigma / 2 + (/ 8388608 + / 70368744177664) * (Rabs u + Rabs l + Rabs z) + / 2 ^ 150 * sigma).
  { destruct Hcase as [Hn | [[Hc1 Hq] | [Hc1 Hq]]].
    - (* not clamped *)
      assert (Rabs (w - c) <= / 2 + Rabs (qv - w)).
      { replace (w - c) with ((qv - c) - (qv - w)) by ring.
        eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra. }
      assert (Rabs w * sigma = Rabs (k - z)) by (rewrite Hw, Rabs_mult, (Rabs_right sigma); lra).
      assert (sigma * Rabs (qv - w) <= Rabs (k - z) * (/ 8388608 + / 281474976710656) + / 2 ^ 150 * sigma).
      { apply Rle_trans with (sigma * (Rabs w * (/ 8388608 + / 281474976710656) + / 2 ^ 150)).
        - apply Rmult_le_compat_l; lra.
        - rewrite <- H0. lra. }
      assert (0 <= Rabs (k - z)) by apply Rabs_pos.
      assert (sigma * Rabs (w - c) <= sigma * (/ 2 + Rabs (qv - w))) by (apply Rmult_le_compat_l; lra).
      assert (Rabs (k - z) * (/ 8388608 + / 281474976710656)
              <= (Rabs u + Rabs l + Rabs z) * (/ 8388608 + / 70368744177664))
        by (apply Rmult_le_compat; lra).
      lra.
    - (* clamped high: c = 127, w > 127 *)
      subst c.
      assert (Hw127 : 127 < w).
      { destruct (Rlt_le_dec 127 w) as [|Hle]; [assumption|]. exfalso.
        unfold Rabs in H5. destruct (Rcase_abs (qv - w)), (Rcase_abs w); nra. }
      rewrite Rabs_right by lra.
      assert (Hdd : Rabs (255 * sigma - dd) <= / 16777216 * dd).
      { replace (255 * sigma - dd) with (255 * (sigma - dd / 255)) by field.
        rewrite Rabs_mult, (Rabs_right 255) by lra. lra. }
      assert (Hul : 0 <= u - l) by lra.
      assert (dd <= (u - l) * (1 + / 16777216)) by (unfold Rabs in H1; destruct (Rcase_abs (dd - (u - l))); lra).
      assert (sigma * (w - 127) <= (u - l) - 255 * sigma - ez).
      { unfold ez. replace (sigma * (w - 127)) with (sigma * w - 127 * sigma) by ring. rewrite <- Hw. lra. }
      assert (u - l <= Rabs u + Rabs l) by (unfold Rabs; destruct (Rcase_abs u), (Rcase_abs l); lra).
      pose proof (Rabs_pos z). pose proof (Rabs_pos u). pose proof (Rabs_pos l).
      assert (- ez <= / 16777216 * Rabs z)
        by (pose proof (RRle_abs (- ez)) as T; rewrite Rabs_Ropp in T; lra).
      assert (u - l - dd <= / 16777216 * (u - l))
        by (pose proof (RRle_abs (- (dd - (u - l)))) as T; rewrite Rabs_Ropp in T; lra).
      assert (dd - 255 * sigma <= / 16777216 * dd)
        by (pose proof (RRle_abs (- (255 * sigma - dd))) as T; rewrite Rabs_Ropp in T; lra).
      lra.
    - (* clamped low: c = -128, w < -128 *)
      subst c.
      assert (Hw128 : w < -128).
      { destruct (Rlt_le_dec w (-128)) as [|Hle]; [assumption|]. exfalso.
        unfold Rabs in H5. destruct (Rcase_abs (qv - w)), (Rcase_abs w); nra. }
      rewrite Rabs_left by lra.
      assert (sigma * - (w - -128) <= ez).
      { unfold ez. replace (sigma * - (w - -128)) with (- (sigma * w) - 128 * sigma) by ring. rewrite <- Hw. lra. }
      assert (ez <= / 16777216 * Rabs z) by (pose proof (RRle_abs ez); lra).
      pose proof (Rabs_pos u). pose proof (Rabs_pos l). pose proof (Rabs_pos z).
      nra. }
  (* the fmaf: |k^ - (c sigma + z)| <= 2^-24 (128 sigma + |z|) + 2^-150 *)
  assert (Hf : Rabs (kh - (c * sigma + z)) <= / 16777216 * (128 * sigma + Rabs z) + / 2 ^ 150).
  { eapply Rle_trans; [exact H6|]. apply Rplus_le_compat_r. apply Rmult_le_compat_l; [lra|].
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, (Rabs_right sigma) by lra. nra. }
  (* total *)
  replace (k - kh) with ((k - z - c * sigma) - (kh - (c * sigma + z))) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
  replace (k - z - c * sigma) with (sigma * (w - c)) by (rewrite Rmult_minus_distr_l, <- Hw; ring).
  rewrite Rabs_mult, (Rabs_right sigma) by lra.
  pose proof (Rabs_pos u). pose proof (Rabs_pos l). pose proof (Rabs_pos z).
  rewrite E149. lra.
Qed.

(* ---- the step errors from Flocq's binary32 rounding ------------------------- *)

Definition format32 (x : R) : Prop := generic_format radix2 (FLT_exp (-149) 24) x.

Lemma bpow_m24 : bpow radix2 (-24) = u24.
Proof. unfold u24. simpl. unfold Z.pow_pos. simpl. reflexivity. Qed.

Lemma format32_RN32 : forall x, format32 (RN32 x).
Proof. intros. unfold format32, RN32. apply generic_format_round; [apply FLT_exp_valid; reflexivity | apply valid_rnd_N]. Qed.

(* scaling by 2^7 = 128 is exact: m = RN32(128 sigma) = 128 sigma *)
Lemma format32_mul128 : forall x, format32 x -> format32 (128 * x).
Proof.
  intros x Hx. unfold format32 in *. apply FLT_format_generic in Hx; [|reflexivity].
  destruct Hx as [[m e] H1 H2 H3]. simpl in H2, H3.
  apply generic_format_FLT. apply FLT_spec with (Float radix2 m (e + 7)); simpl; [|exact H2|lia].
  rewrite H1. unfold F2R. simpl. rewrite bpow_plus. simpl. unfold Z.pow_pos. simpl. ring.
Qed.

Lemma m_exact : forall sigma, format32 sigma -> RN32 (128 * sigma) = 128 * sigma.
Proof.
  intros sigma H. unfold RN32. apply round_generic; auto with typeclass_instances.
  apply format32_mul128, H.
Qed.


(* (H): a sum of two binary32 values is rounded with relative error <= 2^-24,
   relative to the exact sum and to the result (a subnormal sum is exact) *)
Lemma RN32_plus_rel : forall x y, format32 x -> format32 y ->
  Rabs (RN32 (x + y) - (x + y)) <= u24 * Rabs (x + y) /\
  Rabs (RN32 (x + y) - (x + y)) <= u24 * Rabs (RN32 (x + y)).
Proof.
  intros x y Hx Hy. rewrite <- bpow_m24.
  destruct (Rle_lt_dec (bpow radix2 (-126)) (Rabs (x + y))) as [Hn|Hs].
  - split.
    + apply spec_RN32_normal, Hn.
    + unfold RN32. replace (bpow radix2 (-24)) with (/ 2 * bpow radix2 (- 24 + 1)) by apply bpow_half.
      apply relative_error_N_FLT_round; [reflexivity | exact Hn].
  - assert (E : RN32 (x + y) = x + y).
    { unfold RN32. apply round_generic; auto with typeclass_instances.
      apply FLT_format_plus_small; [reflexivity | exact Hx | exact Hy |].
      left. eapply Rlt_le_trans; [exact Hs|]. apply bpow_le. lia. }
    rewrite E, Rminus_eq_0, Rabs_R0.
    split; apply Rmult_le_pos; try apply Rabs_pos; apply bpow_ge_0.
Qed.

Lemma RN32_normal_rel : forall x, bpow radix2 (-126) <= Rabs x ->
  Rabs (RN32 x - x) <= u24 * Rabs x.
Proof. intros. rewrite <- bpow_m24. apply spec_RN32_normal. assumption. Qed.

Lemma bpow_m150 : bpow radix2 (-150) = / 2 ^ 150.
Proof. rewrite pow_IZR. unfold bpow. f_equal. Qed.

Lemma RN32_abs_err : forall x, Rabs (RN32 x - x) <= u24 * Rabs x + a150.
Proof.
  intros. rewrite <- bpow_m24. unfold a150.
  rewrite <- bpow_m150. apply spec_RN32_abs.
Qed.

(* [CERT-K8-04] for the pinned binary32 sequence of [CERT-K8-01..03]: the
   extremes l < u and the key k in [l, u] are binary32 numbers (binary16 ones are),
   u - l and dd / 255 are normal (u - l >= 2^-24 for binary16 extremes), and the
   code c is round(qv) or its clamp (|c| <= 128). *)
Theorem CERT_K8_04 : forall l u k c,
  format32 l -> format32 u -> format32 k -> l <= k <= u ->
  bpow radix2 (-126) <= u - l ->
  bpow radix2 (-126) <= RN32 (u - l) / 255 ->
  Rabs c <= 128 ->
  let dd := RN32 (u - l) in
  let sigma := RN32 (dd / 255) in
  let z := RN32 (l + RN32 (128 * sigma)) in
  let qv := RN32 (RN32 (k - z) / sigma) in
  let kh := RN32 (c * sigma + z) in
  (Rabs (qv - c) <= / 2 \/ (c = 127 /\ 127.5 <= qv) \/ (c = -128 /\ qv <= -128.5)) ->
  Rabs (k - kh) <= sigma / 2 + gamma_key u l z sigma.
Proof.
  intros l u k c Fl Fu Fk Hk Hul Hdd Hc dd sigma z qv kh Hcase.
  assert (Fs : format32 sigma) by apply format32_RN32.
  assert (Fz : format32 z) by apply format32_RN32.
  assert (Hm : RN32 (128 * sigma) = 128 * sigma) by (apply m_exact, Fs).
  assert (Hpos : 0 < bpow radix2 (-126)) by apply bpow_gt_0.
  assert (Hu24 : u24 = / 16777216) by reflexivity.
  (* step 1: dd *)
  assert (H1 : Rabs (dd - (u - l)) <= u24 * (u - l)).
  { pose proof (RN32_normal_rel (u - l)) as T. rewrite (Rabs_right (u - l)) in T by lra.
    apply T. lra. }
  (* step 2: sigma *)
  assert (H2 : Rabs (sigma - dd / 255) <= u24 * (dd / 255)).
  { fold dd in Hdd. pose proof (RN32_normal_rel (dd / 255)) as T.
    rewrite (Rabs_right (dd / 255)) in T by lra. apply T. lra. }
  assert (Hs : 0 < sigma).
  { fold dd in Hdd. pose proof (RRle_abs (- (sigma - dd / 255))) as T. rewrite Rabs_Ropp in T.
    rewrite Hu24 in H2. lra. }
  (* step 3-4: z *)
  assert (H3 : Rabs (z - (l + 128 * sigma)) <= u24 * Rabs z).
  { unfold z. rewrite Hm. apply (RN32_plus_rel l (128 * sigma) Fl (format32_mul128 _ Fs)). }
  (* step 5: t and qv *)
  assert (H5 : Rabs (qv - (k - z) / sigma) <= Rabs ((k - z) / sigma) * eta_q + a150).
  { set (t := RN32 (k - z)).
    assert (Ht : Rabs (t - (k - z)) <= u24 * Rabs (k - z)).
    { unfold t. replace (k - z) with (k + - z) by ring.
      apply (RN32_plus_rel k (- z) Fk (generic_format_opp _ _ _ Fz)). }
    assert (Hq : Rabs (qv - t / sigma) <= u24 * Rabs (t / sigma) + a150) by apply RN32_abs_err.
    set (w := (k - z) / sigma).
    assert (Htw : Rabs (t / sigma - w) <= u24 * Rabs w).
    { unfold w. replace (t / sigma - (k - z) / sigma) with ((t - (k - z)) / sigma) by (field; lra).
      unfold Rdiv. rewrite !Rabs_mult, (Rabs_right (/ sigma)) by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
      assert (0 < / sigma) by (apply Rinv_0_lt_compat; lra). nra. }
    assert (Hts : Rabs (t / sigma) <= (1 + u24) * Rabs w).
    { replace (t / sigma) with (w + (t / sigma - w)) by ring.
      eapply Rle_trans; [apply Rabs_triang | lra]. }
    replace (qv - w) with ((qv - t / sigma) + (t / sigma - w)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    unfold eta_q. rewrite Hu24 in *. pose proof (Rabs_pos w).
    assert (/ 16777216 * Rabs (t / sigma) <= / 16777216 * ((1 + / 16777216) * Rabs w))
      by (apply Rmult_le_compat_l; lra).
    lra. }
  (* step 6: the fmaf *)
  assert (H6 : Rabs (kh - (c * sigma + z)) <= u24 * Rabs (c * sigma + z) + a150) by apply RN32_abs_err.
  apply (CERT_K8_04_real l u k dd sigma z qv c kh Hk Hs Hc H1 H2 H3 H5 H6 Hcase).
Qed.
