(* SageP.v -- spec/sage.md [SAGE-ATT-07] (c) in the spec's form, |zeta_j| <= min(2^-10,
   448 p_j), from a case analysis of E4M3's ties at 2^-10 (SageW.v's SAGE_ATT_07_c_P has
   (1 + u) 448 p_j in place of 448 p_j); and (d)'s per-product bounds: P~_j in the final
   frame at most Pf_j, its 2^e(P~_j) at most max(Pf_j, G Lambda_b 2^-6) (e the E4M3
   operand exponent of [SAGE-ACC-01], emin -6), a P~_j that is surely +0, and the frame
   factor Lambda_b from the rescalings. *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core Relative.
From KvqCoq Require Import Sums Sage Arith KeyQuant SageW SageA.
Open Scope R_scope.

Local Instance prec4p : Prec_gt_0 4 := eq_refl.
Local Instance prec24p : Prec_gt_0 24 := eq_refl.

Lemma b10 : bpow radix2 (-10) = / 1024.
Proof. simpl. unfold Z.pow_pos. simpl. lra. Qed.

Lemma b6 : bpow radix2 (-6) = / 64.
Proof. simpl. unfold Z.pow_pos. simpl. lra. Qed.

(* E4M3 rounds every x in [0, 2^-10] to +0: below 2^-10 the nearest is 0, and at the tie
   2^-10 (halfway between 0 and the least subnormal 2^-9) the even mantissa 0 wins *)
Lemma RN8_small : forall x, 0 <= x <= / 1024 -> RN8 x = 0.
Proof.
  intros x Hx. destruct (Req_dec x 0) as [->|Hx0].
  - unfold RN8. apply round_0. auto with typeclass_instances.
  - assert (Hm : (mag radix2 x <= -9)%Z).
    { apply mag_le_bpow; [exact Hx0|]. rewrite Rabs_pos_eq by lra.
      simpl. unfold Z.pow_pos. simpl. lra. }
    unfold RN8, round, scaled_mantissa, cexp, FLT_exp.
    replace (Z.max (mag radix2 x - 4) (-9)) with (-9)%Z by lia.
    assert (Hs : 0 <= x * bpow radix2 (- -9) <= / 2).
    { simpl. unfold Z.pow_pos. simpl. lra. }
    set (m := x * bpow radix2 (- -9)) in *.
    unfold Znearest. rewrite (Zfloor_imp 0 m) by (simpl; lra).
    destruct (Rcompare_spec (m - IZR 0) (/ 2)) as [L|E|G]; simpl.
    + unfold F2R. simpl. ring.
    + unfold F2R. simpl. ring.
    + exfalso. simpl in G. lra.
Qed.

Lemma RN8_nonneg : forall x, 0 <= x -> 0 <= RN8 x.
Proof.
  intros x Hx. unfold RN8. apply round_ge_generic; auto with typeclass_instances.
  apply generic_format_0.
Qed.

Lemma RN32_le_1024 : forall y, y <= / 1024 -> RN32 y <= / 1024.
Proof.
  intros y Hy. rewrite <- b10. unfold RN32. apply round_le_generic.
  - auto with typeclass_instances.
  - auto with typeclass_instances.
  - apply generic_format_bpow. unfold FLT_exp. lia.
  - rewrite b10. exact Hy.
Qed.

(* [SAGE-ATT-07] (c), the spec's form: P~ = E4M3(RN32(448 p)), p = 0 or p >= 2^-126, is
   448 p (1 + phi) + zeta, 1 + phi in [(1 - u)(1 - 2^-4), (1 + u)(1 + 2^-4)],
   |zeta| <= min(2^-10, 448 p). *)
Theorem SAGE_ATT_07_c : forall p, (p = 0 \/ bpow radix2 (-126) <= p) ->
  exists phi zeta, RN8 (RN32 (448 * p)) = 448 * p * (1 + phi) + zeta /\
    (1 - u24) * (1 - / 16) <= 1 + phi <= (1 + u24) * (1 + / 16) /\
    Rabs zeta <= Rmin (/ 1024) (448 * p).
Proof.
  intros p [->|Hp].
  - exists 0, 0. rewrite Rmult_0_r. unfold RN8, RN32. rewrite round_0, round_0 by auto with typeclass_instances.
    rewrite Rabs_R0. unfold u24. split; [ring|]. split; [lra|]. apply Rmin_glb; lra.
  - assert (H126 : 0 < bpow radix2 (-126)) by apply bpow_gt_0.
    set (y := 448 * p). assert (Hy : bpow radix2 (-126) <= Rabs y) by (unfold y; rewrite Rabs_right by lra; lra).
    pose proof (RN32_normal_rel y Hy) as Hd.
    rewrite (Rabs_right y) in Hd, Hy by (unfold y; lra).
    set (x1 := RN32 y) in *.
    assert (Hy0 : 0 < y) by lra.
    set (d := (x1 - y) / y).
    assert (Ex1 : x1 = y * (1 + d)) by (unfold d; field; lra).
    assert (Hdd : Rabs d <= u24).
    { unfold d, Rdiv. rewrite Rabs_mult, (Rabs_right (/ y)) by (left; apply Rinv_0_lt_compat; lra).
      apply Rmult_le_reg_r with y; [lra|]. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra. exact Hd. }
    assert (Hd2 : - u24 <= d <= u24) by (revert Hdd; unfold Rabs; destruct (Rcase_abs d); intros; lra).
    assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
    assert (Hx0 : 0 <= x1) by (rewrite Ex1; nra).
    destruct (Rle_lt_dec (bpow radix2 (-6)) x1) as [Hn|Hs].
    + (* a normal E4M3 result: relative error 2^-4, zeta = 0 *)
      assert (He : Rabs (RN8 x1 - x1) <= / 16 * Rabs x1).
      { unfold RN8. replace (/ 16) with (/ 2 * bpow radix2 (- 4 + 1)) by (simpl; unfold Z.pow_pos; simpl; field).
        apply relative_error_N_FLT; [reflexivity|]. rewrite Rabs_right by lra. exact Hn. }
      rewrite (Rabs_right x1) in He by lra.
      assert (Hx1 : 0 < x1) by (pose proof (bpow_gt_0 radix2 (-6)); lra).
      set (e := (RN8 x1 - x1) / x1).
      assert (Ee : RN8 x1 = x1 * (1 + e)) by (unfold e; field; lra).
      assert (He2 : - / 16 <= e <= / 16).
      { assert (Rabs e <= / 16).
        { unfold e, Rdiv. rewrite Rabs_mult, (Rabs_right (/ x1)) by (left; apply Rinv_0_lt_compat; lra).
          apply Rmult_le_reg_r with x1; [lra|]. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra. exact He. }
        revert H. unfold Rabs. destruct (Rcase_abs e); intros; lra. }
      exists ((1 + d) * (1 + e) - 1), 0. rewrite Ee, Ex1. split; [ring|].
      rewrite Rabs_R0. split; [split; replace (1 + ((1 + d) * (1 + e) - 1)) with ((1 + d) * (1 + e)) by ring; nra|].
      apply Rmin_glb; lra.
    + destruct (Rle_lt_dec x1 (/ 1024)) as [Hz|Hnz].
      * (* x1 <= 2^-10: P~ = +0 (the tie at 2^-10 included); zeta = -448 p (1 + phi) *)
        rewrite (RN8_small x1 (conj Hx0 Hz)).
        destruct (Rle_lt_dec d 0) as [Dn|Dp].
        -- exists d, (- x1). split; [rewrite Ex1; ring|]. split; [split; nra|].
           rewrite Rabs_Ropp, Rabs_pos_eq by lra. apply Rmin_glb; [lra | rewrite Ex1; fold y; nra].
        -- exists 0, (- y). split; [ring|]. split; [split; nra|].
           rewrite Rabs_Ropp, Rabs_pos_eq by lra. apply Rmin_glb; [rewrite Ex1 in Hz; nra | fold y; lra].
      * (* x1 > 2^-10: then 448 p > 2^-10, and a subnormal E4M3 result is within 2^-10 *)
        assert (Hy10 : / 1024 < y).
        { destruct (Rle_lt_dec y (/ 1024)) as [Hle|Hlt]; [|exact Hlt].
          pose proof (RN32_le_1024 y Hle). fold x1 in H. lra. }
        assert (Ha1 : Rabs (RN8 x1 - x1) <= / 1024).
        { unfold RN8. eapply Rle_trans; [apply (error_le_half_ulp radix2 (FLT_exp (-9) 4))|]. rewrite (ulp_FLT_small radix2 (-9) 4).
          - simpl. unfold Z.pow_pos. simpl. lra.
          - rewrite Rabs_right by lra. eapply Rlt_le_trans; [exact Hs|]. apply bpow_le. lia. }
        exists d, (RN8 x1 - x1). split; [rewrite <- Ex1; ring|].
        split; [split; nra|]. apply Rmin_glb; [exact Ha1 | fold y; lra].
Qed.

(* [SAGE-ATT-07] (d): a P~ that is surely +0.  When (1 + u) 448 p <= 2^-10 (p >= 2^-126,
   or p = 0), E4M3(RN32(448 p)) = +0, and the product takes no part in the instruction. *)
Theorem SAGE_ATT_07_d_zero : forall p, (p = 0 \/ bpow radix2 (-126) <= p) ->
  (1 + u24) * (448 * p) <= / 1024 -> RN8 (RN32 (448 * p)) = 0.
Proof.
  intros p Hp Hle. apply RN8_small.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  destruct Hp as [->|Hp].
  - rewrite Rmult_0_r. unfold RN32. rewrite round_0 by auto with typeclass_instances. lra.
  - pose proof (bpow_gt_0 radix2 (-126)).
    assert (Hy : bpow radix2 (-126) <= Rabs (448 * p)) by (rewrite Rabs_right; lra).
    pose proof (RN32_normal_rel _ Hy) as Hd. rewrite (Rabs_right (448 * p)) in Hd by lra.
    revert Hd. unfold Rabs. destruct (Rcase_abs (RN32 (448 * p) - 448 * p)); intros; split; nra.
Qed.

(* [SAGE-ATT-07] (d): key j's product in the final frame.  P~ = E4M3(RN32(448 p)) is
   scaled by c in [0, G Lambda] (the rescalings after its block: SAGE_ATT_07_d_Lambda), with
   c p = y theta, 0 <= theta <= theta_hi, G >= 1.  Then
     0 <= c P~ <= Pf = G (448 (1 + u)(1 + 2^-4) theta_hi y + 2^-10 Lambda),
   and a nonzero P~ has c 2^e(P~) <= max(Pf, G Lambda 2^-6), e(x) = max(floor(log2 x), -6);
   with a V code v: |c P~ v| <= Pf |v| (the T_g of (d)) and
   c 2 2^e(P~) 2^e(v) <= 2 max(Pf, G Lambda 2^-6) 2^e(v) (the X_g of (d)). *)
Theorem SAGE_ATT_07_d_P : forall p c y theta thi G Lam v,
  (p = 0 \/ bpow radix2 (-126) <= p) -> 1 <= G -> 0 <= c <= G * Lam ->
  0 <= y -> 0 <= theta <= thi -> c * p = y * theta ->
  let P := RN8 (RN32 (448 * p)) in
  let Pf := G * (448 * ((1 + u24) * (1 + / 16)) * thi * y + / 1024 * Lam) in
  0 <= c * P <= Pf /\
  (P <> 0 -> c * bpow radix2 (eop (-6) P) <= Rmax Pf (G * Lam * / 64)) /\
  Rabs (c * P * v) <= Pf * Rabs v /\
  (P <> 0 -> c * (2 * bpow radix2 (eop (-6) P) * bpow radix2 (eop (-6) v))
             <= 2 * Rmax Pf (G * Lam * / 64) * bpow radix2 (eop (-6) v)).
Proof.
  intros p c y theta thi G Lam v Hp HG Hc Hy Ht Hcp P Pf.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (Hp0 : 0 <= p) by (destruct Hp as [->|Hp]; [lra | pose proof (bpow_gt_0 radix2 (-126)); lra]).
  destruct (SAGE_ATT_07_c p Hp) as [phi [zeta [E [Hphi Hz]]]].
  assert (Hz1 : Rabs zeta <= / 1024) by (eapply Rle_trans; [exact Hz | apply Rmin_l]).
  assert (HP0 : 0 <= P) by (unfold P; apply RN8_nonneg; unfold RN32; apply round_ge_generic;
    auto with typeclass_instances; [apply generic_format_0 | lra]).
  assert (HcP : c * P <= Pf).
  { unfold P. rewrite E.
    replace (c * (448 * p * (1 + phi) + zeta)) with (448 * (c * p) * (1 + phi) + c * zeta) by ring.
    rewrite Hcp.
    assert (A : 448 * (y * theta) * (1 + phi) <= 448 * ((1 + u24) * (1 + / 16)) * thi * y).
    { assert (y * theta <= y * thi) by (apply Rmult_le_compat_l; lra).
      assert (0 <= y * theta) by (apply Rmult_le_pos; lra). nra. }
    assert (B : c * zeta <= G * Lam * / 1024).
    { assert (c * zeta <= c * / 1024) by (apply Rmult_le_compat_l; [lra|]; revert Hz1; unfold Rabs; destruct (Rcase_abs zeta); intros; lra).
      assert (c * / 1024 <= G * Lam * / 1024) by (apply Rmult_le_compat_r; lra). lra. }
    assert (0 <= 448 * ((1 + u24) * (1 + / 16)) * thi * y)
      by (apply Rmult_le_pos; [apply Rmult_le_pos; [nra | lra] | lra]).
    unfold Pf. nra. }
  assert (HcP0 : 0 <= c * P) by (apply Rmult_le_pos; lra).
  assert (He : P <> 0 -> c * bpow radix2 (eop (-6) P) <= Rmax Pf (G * Lam * / 64)).
  { intros NZ. unfold eop. destruct (Z.max_spec (mag radix2 P - 1) (-6)) as [[_ M]|[_ M]]; rewrite M.
    - rewrite b6. eapply Rle_trans; [|apply Rmax_r]. apply Rmult_le_compat_r; lra.
    - eapply Rle_trans; [|apply Rmax_l]. eapply Rle_trans; [|exact HcP].
      apply Rmult_le_compat_l; [lra|]. pose proof (bpow_mag_le radix2 P NZ). rewrite Rabs_pos_eq in H by lra. exact H. }
  split; [lra|]. split; [exact He|]. split.
  - rewrite Rabs_mult, (Rabs_pos_eq (c * P)) by lra. apply Rmult_le_compat_r; [apply Rabs_pos | exact HcP].
  - intros NZ. pose proof (He NZ). pose proof (bpow_ge_0 radix2 (eop (-6) v)).
    replace (c * (2 * bpow radix2 (eop (-6) P) * bpow radix2 (eop (-6) v)))
      with (2 * (c * bpow radix2 (eop (-6) P)) * bpow radix2 (eop (-6) v)) by ring.
    apply Rmult_le_compat_r; [lra|]. lra.
Qed.

(* [SAGE-ATT-07] (d): the frame factor Lambda_b.  The r <= R rescalings after block b, each
   EXP2(RN32(m_k - m_{k+1})) (binary32 running maxima m_k <= m_{k+1}, EXP2 within a relative
   e_x < 1) applied by a binary32 product (|d_k| <= u), multiply a weight of block b by
   c <= G min(1, 2^((1 - u)(mhi_b - Mlo))), G = ((1 + e_x)(1 + u))^R, for any mhi_b >= m_0
   (the block's running maximum) and Mlo <= m_r (the final one).  The factor 1 - u in the
   exponent is the rescale arguments' rounding: RN32(m_k - m_{k+1}) is only known to be at
   most (1 - u)(m_k - m_{k+1}). *)
Theorem SAGE_ATT_07_d_Lambda : forall (E2 : R -> R) ex (m d : nat -> R) r R mhi Mlo,
  0 <= ex < 1 -> (forall x, Rabs (E2 x - pow2 x) <= ex * pow2 x) ->
  (forall k, (k <= r)%nat -> format32 (m k)) ->
  (forall k, (k < r)%nat -> m k <= m (S k)) ->
  (forall k, (k < r)%nat -> Rabs (d k) <= u24) -> (r <= R)%nat ->
  m 0%nat <= mhi -> Mlo <= m r ->
  0 <= prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k))
    <= ((1 + ex) * (1 + u24)) ^ R * Rmin 1 (pow2 ((1 - u24) * (mhi - Mlo))).
Proof.
  intros E2 ex m d r R mhi Mlo He HE Fm Hm Hd HrR Hhi Hlo.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (P0 : pow2 0 = 1) by (unfold pow2; rewrite Rmult_0_l; apply exp_0).
  assert (Hr : 0 <= prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k))
               <= ((1 + ex) * (1 + u24)) ^ r * pow2 ((1 - u24) * (m 0%nat - m r)) /\ m 0%nat <= m r).
  { clear HrR Hhi Hlo. induction r as [|r IH].
    - simpl prod. simpl pow. replace ((1 - u24) * (m 0%nat - m 0%nat)) with 0 by ring. rewrite P0. lra.
    - destruct IH as [[L U] M0]; [intros; apply Fm; lia | intros; apply Hm; lia | intros; apply Hd; lia |].
      pose proof (Hm r ltac:(lia)) as Hmr.
      pose proof (RN32_minus_rel2 (m r) (m (S r)) (Fm r ltac:(lia)) (Fm (S r) ltac:(lia))) as Hx.
      rewrite (Rabs_left1 (m r - m (S r))) in Hx by lra.
      set (x := RN32 (m r - m (S r))) in *.
      assert (Hx1 : x <= (1 - u24) * (m r - m (S r))).
      { revert Hx. unfold Rabs. destruct (Rcase_abs (x - (m r - m (S r)))); intros; lra. }
      pose proof (HE x) as HEx. pose proof (pow2_pos x) as Px.
      assert (E1 : 0 <= E2 x <= (1 + ex) * pow2 x).
      { revert HEx. unfold Rabs. destruct (Rcase_abs (E2 x - pow2 x)); intros; split; nra. }
      pose proof (pow2_le _ _ Hx1) as Px1.
      pose proof (Hd r ltac:(lia)) as Hdr.
      assert (Hdr2 : - u24 <= d r <= u24) by (revert Hdr; unfold Rabs; destruct (Rcase_abs (d r)); intros; lra).
      assert (F : 0 <= E2 x * (1 + d r) <= (1 + ex) * (1 + u24) * pow2 ((1 - u24) * (m r - m (S r)))).
      { split; [nra|]. 
        assert (E2 x <= (1 + ex) * pow2 ((1 - u24) * (m r - m (S r)))) by (eapply Rle_trans; [apply E1 | apply Rmult_le_compat_l; lra]).
        assert (E2 x * (1 + d r) <= E2 x * (1 + u24)) by (apply Rmult_le_compat_l; lra).
        assert (E2 x * (1 + u24) <= (1 + ex) * pow2 ((1 - u24) * (m r - m (S r))) * (1 + u24)) by (apply Rmult_le_compat_r; lra).
        lra. }
      simpl prod. simpl pow. fold x.
      assert (Q : pow2 ((1 - u24) * (m 0%nat - m (S r)))
                  = pow2 ((1 - u24) * (m 0%nat - m r)) * pow2 ((1 - u24) * (m r - m (S r))))
        by (rewrite <- pow2_plus; f_equal; ring).
      destruct F as [F0 F1]. rewrite Q. split; [split; [apply Rmult_le_pos; lra|] | lra].
      pose proof (pow2_pos ((1 - u24) * (m 0%nat - m r))).
      pose proof (pow2_pos ((1 - u24) * (m r - m (S r)))).
      assert (0 <= ((1 + ex) * (1 + u24)) ^ r) by (apply pow_le; nra).
      replace (((1 + ex) * (1 + u24)) * ((1 + ex) * (1 + u24)) ^ r *
               (pow2 ((1 - u24) * (m 0%nat - m r)) * pow2 ((1 - u24) * (m r - m (S r)))))
        with ((((1 + ex) * (1 + u24)) ^ r * pow2 ((1 - u24) * (m 0%nat - m r))) *
              ((1 + ex) * (1 + u24) * pow2 ((1 - u24) * (m r - m (S r))))) by ring.
      apply Rmult_le_compat; lra. }
  destruct Hr as [[L U] M0]. split; [exact L|].
  eapply Rle_trans; [exact U|].
  assert (G : ((1 + ex) * (1 + u24)) ^ r <= ((1 + ex) * (1 + u24)) ^ R) by (apply Rle_pow; [nra | exact HrR]).
  assert (Hmin : pow2 ((1 - u24) * (m 0%nat - m r)) <= Rmin 1 (pow2 ((1 - u24) * (mhi - Mlo)))).
  { apply Rmin_glb.
    - rewrite <- P0. apply pow2_le. nra.
    - apply pow2_le. apply Rmult_le_compat_l; lra. }
  pose proof (pow2_pos ((1 - u24) * (m 0%nat - m r))).
  assert (0 <= ((1 + ex) * (1 + u24)) ^ r) by (apply pow_le; nra).
  apply Rmult_le_compat; lra.
Qed.
