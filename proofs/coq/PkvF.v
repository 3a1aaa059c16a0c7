(* PkvF.v -- spec/bounds/pkv.md §1, [PKV-B-01] for the pinned binary32 sequence
   itself: the residual, the group's extremes, range, scale and offset, the code
   (KIVI's quotient, rounded to an integer and clamped) and the reconstruction,
   each step one binary32 rounding to nearest (Flocq), a group whose scale did not
   flush to 0. *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core Relative.
From KvqCoq Require Import Sums Arith KeyQuant Pkv SageW.
Open Scope R_scope.

Local Instance prec24' : Prec_gt_0 24 := eq_refl.

(* step 3 as §1 now states it: s <= (mx32 - mn32)(1 + u) / (cmax (1 - u)) (the scale's
   relative error against the normal result s), with the rest of PKV_B_01_real *)
Theorem PKV_B_01_real_s : forall x m r32 s z c cmax rh y w K,
  let u := / 16777216 in
  3 <= cmax -> 0 <= c <= cmax -> 0 <= s -> 0 <= w <= K -> Rabs m <= K -> Rabs x <= K ->
  Rabs ((x - m) - r32) <= u * K ->                                   (* step 1 *)
  Rabs (c * s + z - r32) <= s * (/ 2 + / 262144) ->                  (* step 2 *)
  s * cmax * (1 - u) <= (w + u * K) * (1 + u) ->                     (* step 3 *)
  Rabs z <= (1 + u) * K ->                                           (* z = RN32(min r) *)
  Rabs (rh - (c * s + z)) <= u * Rabs (c * s + z) + / 2 ^ 150 ->      (* step 4 *)
  Rabs (y - (rh + m)) <= u * Rabs (rh + m) ->                        (* step 5 *)
  Rabs (x - y) <= (1 + / 65536) * w / (2 * cmax) + / 1048576 * K + / 2 ^ 121.
Proof.
  intros x m r32 s z c cmax rh y w K u Hcm Hc Hs Hw Hm Hx H1 H2 H3 Hz H4 H5.
  unfold u in *.
  assert (Hp150 : 0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra).
  assert (E : / 2 ^ 121 = 536870912 * / 2 ^ 150).
  { assert (H : 2 ^ 150 = 2 ^ 121 * 536870912).
    { replace 150%nat with (121 + 29)%nat by reflexivity. rewrite pow_add. f_equal. simpl. ring. }
    rewrite H. assert (0 < 2 ^ 121) by (apply pow_lt; lra). field. }
  assert (HK : 0 <= K) by (pose proof (Rabs_pos m); lra).
  (* s cmax <= (w + u K)(1 + u) / (1 - u) <= (w + u K)(1 + 2^-22) *)
  assert (H3' : s * cmax <= (w + / 16777216 * K) * (1 + / 4194304)).
  { assert (0 <= w + / 16777216 * K) by lra. nra. }
  (* step 3: s (1/2 + 2^-18) <= (1 + 2^-16) w / (2 cmax) + u K *)
  assert (S3 : s * (/ 2 + / 262144) <= (1 + / 65536) * w / (2 * cmax) + / 16777216 * K).
  { assert (s * cmax * (1 + / 131072) <= (w + / 16777216 * K) * (1 + / 4194304) * (1 + / 131072))
      by (apply Rmult_le_compat_r; lra).
    assert (K * 3 <= K * cmax) by (apply Rmult_le_compat_l; lra).
    assert (T : s * cmax * (1 + / 131072) <= (1 + / 65536) * w + / 8388608 * (K * cmax)) by lra.
    replace (s * (/ 2 + / 262144)) with (s * cmax * (1 + / 131072) / (2 * cmax)) by (field; lra).
    replace ((1 + / 65536) * w / (2 * cmax) + / 16777216 * K)
      with (((1 + / 65536) * w + / 8388608 * (K * cmax)) / (2 * cmax)) by (field; lra).
    unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra | exact T]. }
  (* step 4: |c s + z| <= 3.001 K *)
  assert (Hcs : Rabs (c * s + z) <= 3001 / 1000 * K).
  { assert (c * s <= s * cmax) by nra.
    assert (0 <= c * s) by nra.
    assert (s * cmax <= (K + / 16777216 * K) * (1 + / 4194304)).
    { eapply Rle_trans; [exact H3'|]. apply Rmult_le_compat_r; [lra | lra]. }
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_right by lra. nra. }
  assert (S4 : Rabs (rh - (c * s + z)) <= / 16777216 * (3001 / 1000 * K) + / 2 ^ 150).
  { eapply Rle_trans; [exact H4|]. apply Rplus_le_compat_r. apply Rmult_le_compat_l; lra. }
  assert (Hrm : Rabs (rh + m) <= 401 / 100 * K + 2 * / 2 ^ 150).
  { replace (rh + m) with ((rh - (c * s + z)) + (c * s + z) + m) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    lra. }
  assert (S5 : Rabs (y - (rh + m)) <= / 16777216 * (401 / 100 * K + 2 * / 2 ^ 150)).
  { eapply Rle_trans; [exact H5|]. apply Rmult_le_compat_l; lra. }
  replace (x - y) with (((x - m) - r32) - (c * s + z - r32) - (rh - (c * s + z)) - (y - (rh + m))) by ring.
  unfold Rminus at 1 2 3.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. rewrite Rabs_Ropp.
  eapply Rle_trans; [apply Rplus_le_compat_r, Rplus_le_compat_r, Rabs_triang|]. rewrite Rabs_Ropp.
  fold (x - m). rewrite E. lra.
Qed.

(* a rounding whose result is normal has relative error u against the result *)
Lemma RN32_rel_result : forall v, 0 <= v -> bpow radix2 (-126) <= RN32 v ->
  Rabs (RN32 v - v) <= u24 * RN32 v.
Proof.
  intros v Hv Hr. rewrite <- bpow_m24.
  destruct (Rle_lt_dec (bpow radix2 (-126)) v) as [Hn|Hs].
  - unfold RN32 in *. replace (bpow radix2 (-24)) with (/ 2 * bpow radix2 (- 24 + 1)) by apply bpow_half.
    pose proof (bpow_gt_0 radix2 (-126)).
    eapply Rle_trans; [apply relative_error_N_FLT_round; [reflexivity | rewrite (Rabs_right v) by lra; exact Hn]|].
    rewrite (Rabs_right (round radix2 (FLT_exp (-149) 24) ZnearestE v)) by lra. apply Rle_refl.
  - unfold RN32 in *. eapply Rle_trans; [apply (error_le_half_ulp radix2 (FLT_exp (-149) 24))|].
    rewrite (ulp_FLT_small radix2 (-149) 24).
    + apply Rle_trans with (bpow radix2 (-24) * bpow radix2 (-126)).
      * rewrite <- bpow_plus. replace (-24 + -126)%Z with (-150)%Z by reflexivity. rewrite <- (bpow_half (-150)). right. reflexivity.
      * apply Rmult_le_compat_l; [apply bpow_ge_0 | exact Hr].
    + rewrite Rabs_right by lra. eapply Rlt_le_trans; [exact Hs|]. apply bpow_le. lia.
Qed.

Lemma RN32_mono : forall a b, a <= b -> RN32 a <= RN32 b.
Proof. intros. unfold RN32. apply round_le; auto with typeclass_instances. Qed.

Lemma RN32_0 : RN32 0 = 0.
Proof. unfold RN32. apply round_0; auto with typeclass_instances. Qed.

(* bounds/kivi.md (a), the pinned quotient [KIVI-B-01]: t = RN32(x' - z), q = RN32(t / s)
   of binary32 x', z and a scale s > 0 is within rho(u) = |u| ((1 + 2^-24)^2 - 1) + 2^-150 of
   the real quotient u = (x' - z) / s (the subtraction relative only, by (H)). *)
Theorem KIVI_B_01_quotient : forall x z s, format32 x -> format32 z -> 0 < s ->
  Rabs (RN32 (RN32 (x - z) / s) - (x - z) / s) <= Rabs ((x - z) / s) * ((1 + u24) ^ 2 - 1) + a150.
Proof.
  intros x z s Fx Fz Hs.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  set (t := RN32 (x - z)). pose proof (RN32_minus_rel2 x z Fx Fz) as Et. fold t in Et.
  pose proof (RN32_abs_err (t / s)) as Eq.
  assert (Hts : Rabs (t / s - (x - z) / s) <= u24 * Rabs ((x - z) / s)).
  { replace (t / s - (x - z) / s) with ((t - (x - z)) * / s) by (field; lra).
    unfold Rdiv. rewrite !Rabs_mult, (Rabs_right (/ s)) by (left; apply Rinv_0_lt_compat; lra).
    rewrite <- Rmult_assoc. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra | exact Et]. }
  assert (Hts2 : Rabs (t / s) <= (1 + u24) * Rabs ((x - z) / s)).
  { replace (t / s) with ((x - z) / s + (t / s - (x - z) / s)) by ring.
    eapply Rle_trans; [apply Rabs_triang | lra]. }
  replace (RN32 (t / s) - (x - z) / s) with ((RN32 (t / s) - t / s) + (t / s - (x - z) / s)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (u24 * Rabs (t / s) <= u24 * ((1 + u24) * Rabs ((x - z) / s))) by (apply Rmult_le_compat_l; lra).
  pose proof (Rabs_pos ((x - z) / s)).
  replace ((1 + u24) ^ 2 - 1) with (2 * u24 + u24 * u24) by ring. nra.
Qed.

(* [PKV-B-01] for the pinned sequence.  x, m binary32 (m = 0 for a raw value), the
   group's exact extreme residuals xa - ma <= x - m <= xb - mb (binary32 operands),
   mn = RN32(xa - ma), mx = RN32(xb - mb) (the least and largest RN32 residual, by
   monotone rounding), the range R = RN32(mx - mn), the scale s = RN32(R / cmax), not
   flushed (s >= 2^-126), z = mn, the code c = clamp(k, 0, cmax) of an integer k within
   1/2 of q = RN32(RN32(r32 - z) / s) (any tie rule), r^ = fmaf(c, s, z), y = RN32(r^ + m). *)
Theorem PKV_B_01 : forall x m xa ma xb mb (cm k : Z),
  format32 x -> format32 m -> format32 xa -> format32 ma -> format32 xb -> format32 mb ->
  (3 <= cm <= 15)%Z -> xa - ma <= x - m <= xb - mb ->
  let cmax := IZR cm in
  let mn := RN32 (xa - ma) in let mx := RN32 (xb - mb) in
  let s := RN32 (RN32 (mx - mn) / cmax) in let z := mn in
  let r32 := RN32 (x - m) in let q := RN32 (RN32 (r32 - z) / s) in
  bpow radix2 (-126) <= s -> Rabs (IZR k - q) <= / 2 ->
  let c := IZR (Z.max 0 (Z.min cm k)) in
  let y := RN32 (RN32 (c * s + z) + m) in
  let w := (xb - mb) - (xa - ma) in
  let K := Rabs x + Rabs m + Rabs (xb - mb) + Rabs (xa - ma) in
  Rabs (x - y) <= (1 + / 65536) * w / (2 * cmax) + / 1048576 * K + / 2 ^ 121.
Proof.
  intros x m xa ma xb mb cm k Fx Fm Fxa Fma Fxb Fmb Hcm [Hlo Hhi] cmax mn mx s z r32 q Hs Hk c y w K.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (Hcm' : 3 <= cmax <= 15) by (unfold cmax; split; apply IZR_le; lia).
  assert (Hs0 : 0 < s) by (pose proof (bpow_gt_0 radix2 (-126)); lra).
  pose proof (Rabs_pos x) as Ax. pose proof (Rabs_pos m) as Am.
  pose proof (Rabs_pos (xb - mb)) as Ab. pose proof (Rabs_pos (xa - ma)) as Aa.
  assert (HK0 : 0 <= K) by (unfold K; lra).
  (* step 1 *)
  assert (H1 : Rabs ((x - m) - r32) <= / 16777216 * K).
  { rewrite Rabs_minus_sym. eapply Rle_trans; [apply RN32_minus_rel2; assumption|]. fold u24.
    apply Rmult_le_compat_l; [lra|]. unfold K. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra. }
  (* monotone rounding: mn <= r32 <= mx *)
  assert (Hmn : mn <= r32) by (apply RN32_mono; exact Hlo).
  assert (Hmx : r32 <= mx) by (apply RN32_mono; exact Hhi).
  pose proof (RN32_minus_rel2 xa ma Fxa Fma) as Emn. fold mn in Emn.
  pose proof (RN32_minus_rel2 xb mb Fxb Fmb) as Emx. fold mx in Emx.
  (* z *)
  assert (Hz : Rabs z <= (1 + / 16777216) * K).
  { unfold z. replace mn with ((xa - ma) + (mn - (xa - ma))) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. fold u24. unfold K. nra. }
  (* the range and the scale *)
  set (R := RN32 (mx - mn)) in *.
  assert (HR0 : 0 <= mx - mn) by lra.
  pose proof (RN32_minus_rel2 mx mn (format32_RN32 _) (format32_RN32 _)) as ER. fold R in ER.
  rewrite (Rabs_right (mx - mn)) in ER by lra.
  assert (HR : (mx - mn) * (1 - u24) <= R <= (mx - mn) * (1 + u24))
    by (revert ER; unfold Rabs; destruct (Rcase_abs (R - (mx - mn))); intros; nra).
  assert (HRc : 0 <= R / cmax) by (apply div_nonneg; [nra | lra]).
  pose proof (RN32_rel_result (R / cmax) HRc Hs) as Es. fold s in Es.
  assert (Hs1 : s * (1 - u24) <= R / cmax <= s * (1 + u24))
    by (revert Es; unfold Rabs; destruct (Rcase_abs (s - R / cmax)); intros; nra).
  assert (Hw : mx - mn <= w + u24 * (Rabs (xb - mb) + Rabs (xa - ma))).
  { unfold w. revert Emn Emx. unfold Rabs.
    destruct (Rcase_abs (mn - (xa - ma))), (Rcase_abs (mx - (xb - mb))), (Rcase_abs (xa - ma)), (Rcase_abs (xb - mb)); intros; nra. }
  assert (H3 : s * cmax * (1 - / 16777216) <= (w + / 16777216 * K) * (1 + / 16777216)).
  { fold u24. assert (s * (1 - u24) * cmax <= R) by (apply (Rmult_le_reg_r (/ cmax)); [apply Rinv_0_lt_compat; lra|];
      replace (s * (1 - u24) * cmax * / cmax) with (s * (1 - u24)) by (field; lra); lra).
    assert (u24 * (Rabs (xb - mb) + Rabs (xa - ma)) <= u24 * K) by (apply Rmult_le_compat_l; unfold K; lra).
    assert ((mx - mn) * (1 + u24) <= (w + u24 * K) * (1 + u24)) by (apply Rmult_le_compat_r; lra).
    lra. }
  (* step 2: the code *)
  set (ur := (r32 - z) / s).
  assert (Hur0 : 0 <= ur) by (apply div_nonneg; [unfold z; lra | lra]).
  assert (Hur1 : ur <= cmax * (1 + u24) / (1 - u24)).
  { unfold ur. apply div_le_r; [lra|].
    assert (Hrz : r32 - z <= mx - mn) by (unfold z; lra).
    assert (HRs : R / cmax <= s * (1 + u24)) by lra.
    assert (R <= s * (1 + u24) * cmax)
      by (apply (Rmult_le_reg_r (/ cmax)); [apply Rinv_0_lt_compat; lra|];
          replace (s * (1 + u24) * cmax * / cmax) with (s * (1 + u24)) by (field; lra); exact HRs).
    assert ((mx - mn) * (1 - u24) <= s * (1 + u24) * cmax) by lra.
    replace (cmax * (1 + u24) / (1 - u24) * s) with (s * (1 + u24) * cmax / (1 - u24)) by (field; lra).
    apply le_div_r; [lra|]. nra. }
  set (t := RN32 (r32 - z)).
  pose proof (RN32_minus_rel2 r32 z (format32_RN32 _) (format32_RN32 _)) as Et. fold t in Et.
  rewrite (Rabs_right (r32 - z)) in Et by (unfold z; lra).
  assert (Ht : 0 <= t <= (r32 - z) * (1 + u24)) by (revert Et; unfold Rabs; destruct (Rcase_abs (t - (r32 - z))); intros; unfold z in *; nra).
  pose proof (RN32_abs_err (t / s)) as Eq.
  assert (Eqq : q = RN32 (t / s)) by reflexivity. rewrite <- Eqq in Eq.
  assert (Hts : 0 <= t / s <= ur * (1 + u24)).
  { split; [apply div_nonneg; lra|]. unfold ur. unfold Rdiv. rewrite Rmult_assoc, (Rmult_comm (/ s)), <- Rmult_assoc.
    apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra | lra]. }
  rewrite (Rabs_right (t / s)) in Eq by lra.
  assert (Hq0 : 0 <= q) by (rewrite Eqq, <- RN32_0; apply RN32_mono; lra).
  assert (Hrho : Rabs (q - ur) <= (2 * u24 + u24 * u24) * ur + a150).
  { replace (q - ur) with ((q - t / s) + (t / s - ur)) by ring. eapply Rle_trans; [apply Rabs_triang|].
    assert (Rabs (t / s - ur) <= u24 * ur).
    { replace (t / s - ur) with ((t - (r32 - z)) * / s) by (unfold ur; field; lra).
      rewrite Rabs_mult, (Rabs_right (/ s)) by (left; apply Rinv_0_lt_compat; lra).
      unfold ur. unfold Rdiv. rewrite <- Rmult_assoc.
      apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra | exact Et]. }
    assert (u24 * (t / s) <= u24 * (ur * (1 + u24))) by (apply Rmult_le_compat_l; lra).
    lra. }
  assert (Hur2 : ur <= 16).
  { eapply Rle_trans; [exact Hur1|]. apply div_le_r; [lra|]. unfold u24 in *. nra. }
  assert (Ha150 : 0 < a150 < / 2 ^ 100).
  { unfold a150. split; [apply Rinv_0_lt_compat, pow_lt; lra|]. apply Rinv_lt_contravar.
    - apply Rmult_lt_0_compat; apply pow_lt; lra.
    - apply Rlt_pow; [lra | lia]. }
  assert (Hp100 : / 2 ^ 100 < / 1000000) by (apply Rinv_lt_contravar; [apply Rmult_lt_0_compat; [lra | apply pow_lt; lra] | ];
    apply Rlt_le_trans with (2 ^ 20); [simpl; lra | apply Rle_pow; [lra | lia]]).
  assert (Hc : Rabs (c - ur) <= / 2 + / 262144).
  { unfold c. destruct (Z_lt_le_dec k 0) as [Hk0|Hk0].
    - exfalso. apply IZR_lt in Hk0. assert (IZR k <= -1).
      { assert (k <= -1)%Z by (apply lt_IZR in Hk0; lia). apply IZR_le in H. exact H. }
      revert Hk. unfold Rabs. destruct (Rcase_abs (IZR k - q)); intros; lra.
    - destruct (Z_le_gt_dec k cm) as [Hk1|Hk1].
      + replace (Z.max 0 (Z.min cm k)) with k by lia.
        replace (IZR k - ur) with ((IZR k - q) + (q - ur)) by ring. eapply Rle_trans; [apply Rabs_triang|].
        assert ((2 * u24 + u24 * u24) * ur <= (2 * u24 + u24 * u24) * 16) by (apply Rmult_le_compat_l; unfold u24; nra).
        unfold u24 in *. lra.
      + replace (Z.max 0 (Z.min cm k)) with cm by lia. fold cmax.
        assert (IZR k >= cmax + 1) by (unfold cmax; apply Rle_ge; rewrite <- plus_IZR; apply IZR_le; lia).
        assert (Hq : q >= IZR k - / 2) by (revert Hk; unfold Rabs; destruct (Rcase_abs (IZR k - q)); intros; lra).
        assert ((2 * u24 + u24 * u24) * ur <= (2 * u24 + u24 * u24) * 16) by (apply Rmult_le_compat_l; unfold u24; nra).
        assert (ur >= cmax) by (revert Hrho; unfold Rabs; destruct (Rcase_abs (q - ur)); intros; unfold u24 in *; lra).
        rewrite Rabs_left1 by lra.
        assert (cmax * (1 + u24) / (1 - u24) - cmax = cmax * (2 * u24) / (1 - u24)) by (field; lra).
        assert (cmax * (2 * u24) / (1 - u24) <= / 262144).
        { apply div_le_r; [lra|]. unfold u24. nra. }
        lra. }
  assert (H2 : Rabs (c * s + z - r32) <= s * (/ 2 + / 262144)).
  { replace (c * s + z - r32) with (s * (c - ur)) by (unfold ur; field; lra).
    rewrite Rabs_mult, Rabs_right by lra. apply Rmult_le_compat_l; lra. }
  assert (Hc0 : 0 <= c <= cmax).
  { unfold c, cmax. split; apply IZR_le; lia. }
  assert (Hw0 : 0 <= w <= K).
  { unfold w, K. split; [lra|]. pose proof (Rle_abs (xb - mb)). pose proof (Rle_abs (- (xa - ma))).
    rewrite Rabs_Ropp in H0. lra. }
  pose proof (RN32_abs_err (c * s + z)) as H4.
  set (rh := RN32 (c * s + z)) in *.
  destruct (RN32_plus_rel rh m (format32_RN32 _) Fm) as [H5 _].
  assert (Hcm3 : 3 <= cmax) by lra. assert (Hs0' : 0 <= s) by lra.
  assert (HmK : Rabs m <= K) by (unfold K; lra). assert (HxK : Rabs x <= K) by (unfold K; lra).
  exact (PKV_B_01_real_s x m r32 s z c cmax rh y w K Hcm3 Hc0 Hs0' Hw0 HmK HxK H1 H2 H3 Hz H4 H5).
Qed.
