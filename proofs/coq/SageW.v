(* SageW.v -- spec/sage.md [SAGE-ATT-07] (b)-(e): the kernel's weights from its
   EXP2 and binary32 steps (the factor theta_j), the numerator's P~ with its E4M3
   rounding (Flocq), the weight factors 1 + a_j and 1 + b_j of the numerator and
   the denominator that SAGE_ATT_07_f takes, and the accumulator's error recursion
   under the class K(p, b) with its flushes. *)
From Coq Require Import Reals Lra Lia Psatz.
From Flocq Require Import Core Relative.
From KvqCoq Require Import Sums Sage Arith KeyQuant.
Open Scope R_scope.

Lemma pow2_plus : forall a b, pow2 (a + b) = pow2 a * pow2 b.
Proof. intros. unfold pow2. rewrite Rmult_plus_distr_r. apply exp_plus. Qed.

Lemma RN32_minus_rel2 : forall a b, format32 a -> format32 b ->
  Rabs (RN32 (a - b) - (a - b)) <= u24 * Rabs (a - b).
Proof.
  intros a b Ha Hb. unfold Rminus.
  apply (RN32_plus_rel a (- b) Ha). unfold format32. apply generic_format_opp. exact Hb.
Qed.

(* one EXP2 of a rounded difference a - b <= 0 of binary32 numbers: within
   [(1 - e) 2^(a - b - u (b - a)), (1 + e) 2^(a - b + u (b - a))] *)
Lemma exp2_step : forall (E2 : R -> R) e a b,
  0 <= e < 1 -> (forall x, Rabs (E2 x - pow2 x) <= e * pow2 x) ->
  format32 a -> format32 b -> a <= b ->
  (1 - e) * pow2 (a - b) * pow2 (- (u24 * (b - a))) <= E2 (RN32 (a - b)) <=
  (1 + e) * pow2 (a - b) * pow2 (u24 * (b - a)).
Proof.
  intros E2 e a b He HE Ha Hb Hab.
  pose proof (RN32_minus_rel2 a b Ha Hb) as H.
  rewrite (Rabs_left1 (a - b)) in H by lra. replace (- (a - b)) with (b - a) in H by ring.
  set (x := RN32 (a - b)) in *.
  assert (Hx : a - b - u24 * (b - a) <= x <= a - b + u24 * (b - a)).
  { revert H. unfold Rabs. destruct (Rcase_abs (x - (a - b))); intros; lra. }
  pose proof (HE x) as Hx2.
  assert (E1 : (1 - e) * pow2 x <= E2 x <= (1 + e) * pow2 x).
  { revert Hx2. unfold Rabs. destruct (Rcase_abs (E2 x - pow2 x)); intros; lra. }
  rewrite !Rmult_assoc, <- !pow2_plus.
  pose proof (pow2_le _ _ (proj1 Hx)) as L. pose proof (pow2_le _ _ (proj2 Hx)) as U.
  replace (a - b + - (u24 * (b - a))) with (a - b - u24 * (b - a)) by ring.
  split.
  - eapply Rle_trans; [|exact (proj1 E1)]. apply Rmult_le_compat_l; [lra | exact L].
  - eapply Rle_trans; [exact (proj2 E1)|]. apply Rmult_le_compat_l; [lra | exact U].
Qed.

(* (b) Key j's weight in the final frame: its own EXP2, p_j = EXP2(RN32(s_j - m_0)), m_0
   the running maximum after its block, then r rescalings, each a factor
   EXP2(RN32(m_k - m_{k+1})) applied by a binary32 product (relative error d_k, |d_k| <= u);
   s_j <= m_0 <= ... <= m_r = M' (running maxima), all binary32.  The weight is
   y_j theta_j, y_j = 2^(s_j - M'), theta_j in
   [(1 - e_x)^(r+1) (1 - u)^r 2^(-u (M' - s_j)), (1 + e_x)^(r+1) (1 + u)^r 2^(u (M' - s_j))]:
   the arguments' roundings add up to at most u (M' - s_j), since the arguments telescope. *)
Theorem SAGE_ATT_07_b : forall (E2 : R -> R) ex s (m d : nat -> R) r,
  0 <= ex < 1 -> (forall x, Rabs (E2 x - pow2 x) <= ex * pow2 x) ->
  format32 s -> (forall k, (k <= r)%nat -> format32 (m k)) ->
  s <= m 0%nat -> (forall k, (k < r)%nat -> m k <= m (S k)) ->
  (forall k, (k < r)%nat -> Rabs (d k) <= u24) ->
  let w := E2 (RN32 (s - m 0%nat)) * prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k)) in
  let z := u24 * (m r - s) in
  (1 - ex) ^ (r + 1) * (1 - u24) ^ r * pow2 (- z) * pow2 (s - m r) <= w <=
  (1 + ex) ^ (r + 1) * (1 + u24) ^ r * pow2 z * pow2 (s - m r).
Proof.
  intros E2 ex s m d r He HE Fs Fm H0 Hm Hd w z. unfold w, z. clear w z.
  assert (Hu : 0 <= u24 < 1) by (unfold u24; lra).
  induction r as [|r IH].
  - simpl prod. simpl pow. rewrite !Rmult_1_r.
    pose proof (exp2_step E2 ex s (m 0%nat) He HE Fs (Fm 0%nat ltac:(lia)) H0) as T.
    split; [eapply Rle_trans; [|exact (proj1 T)] | eapply Rle_trans; [exact (proj2 T)|]]; right; ring.
  - destruct IH as [L U].
    + intros k Hk. apply Fm. lia.
    + intros k Hk. apply Hm. lia.
    + intros k Hk. apply Hd. lia.
    + simpl prod.
      set (W := E2 (RN32 (s - m 0%nat)) * prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k))) in *.
      pose proof (exp2_step E2 ex (m r) (m (S r)) He HE (Fm r ltac:(lia)) (Fm (S r) ltac:(lia)) (Hm r ltac:(lia))) as T.
      set (F := E2 (RN32 (m r - m (S r)))) in *.
      assert (Hdr : - u24 <= d r <= u24) by (pose proof (Hd r ltac:(lia)) as Hd'; revert Hd'; unfold Rabs; destruct (Rcase_abs (d r)); intros; lra).
      replace (E2 (RN32 (s - m 0%nat)) * (prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k)) * (F * (1 + d r))))
        with (W * F * (1 + d r)) by (unfold W; ring).
      (* the bounds multiply: all factors positive *)
      set (Lw := (1 - ex) ^ (r + 1) * (1 - u24) ^ r * pow2 (- (u24 * (m r - s))) * pow2 (s - m r)) in *.
      set (Uw := (1 + ex) ^ (r + 1) * (1 + u24) ^ r * pow2 (u24 * (m r - s)) * pow2 (s - m r)) in *.
      set (Lf := (1 - ex) * pow2 (m r - m (S r)) * pow2 (- (u24 * (m (S r) - m r)))) in *.
      set (Uf := (1 + ex) * pow2 (m r - m (S r)) * pow2 (u24 * (m (S r) - m r))) in *.
      assert (HLw : 0 <= Lw).
      { unfold Lw. pose proof (pow2_pos (- (u24 * (m r - s)))). pose proof (pow2_pos (s - m r)).
        assert (0 <= (1 - ex) ^ (r + 1)) by (apply pow_le; lra). assert (0 <= (1 - u24) ^ r) by (apply pow_le; lra).
        apply Rmult_le_pos; [apply Rmult_le_pos; [apply Rmult_le_pos|]|]; lra. }
      assert (HLf : 0 <= Lf).
      { unfold Lf. pose proof (pow2_pos (m r - m (S r))). pose proof (pow2_pos (- (u24 * (m (S r) - m r)))).
        apply Rmult_le_pos; [apply Rmult_le_pos|]; lra. }
      assert (EL : (1 - ex) ^ (S r + 1) * (1 - u24) ^ S r * pow2 (- (u24 * (m (S r) - s))) * pow2 (s - m (S r))
                   = Lw * Lf * (1 - u24)).
      { unfold Lw, Lf.
        replace (S r + 1)%nat with (S (r + 1)) by lia. simpl pow.
        assert (P : pow2 (- (u24 * (m (S r) - s))) = pow2 (- (u24 * (m r - s))) * pow2 (- (u24 * (m (S r) - m r))))
          by (rewrite <- pow2_plus; f_equal; ring).
        assert (Q : pow2 (s - m (S r)) = pow2 (s - m r) * pow2 (m r - m (S r)))
          by (rewrite <- pow2_plus; f_equal; ring).
        rewrite P, Q. ring. }
      assert (EU : (1 + ex) ^ (S r + 1) * (1 + u24) ^ S r * pow2 (u24 * (m (S r) - s)) * pow2 (s - m (S r))
                   = Uw * Uf * (1 + u24)).
      { unfold Uw, Uf.
        replace (S r + 1)%nat with (S (r + 1)) by lia. simpl pow.
        assert (P : pow2 (u24 * (m (S r) - s)) = pow2 (u24 * (m r - s)) * pow2 (u24 * (m (S r) - m r)))
          by (rewrite <- pow2_plus; f_equal; ring).
        assert (Q : pow2 (s - m (S r)) = pow2 (s - m r) * pow2 (m r - m (S r)))
          by (rewrite <- pow2_plus; f_equal; ring).
        rewrite P, Q. ring. }
      rewrite EL, EU. split.
      * apply Rmult_le_compat; [apply Rmult_le_pos; lra | lra | apply Rmult_le_compat; lra | lra].
      * apply Rmult_le_compat; [apply Rmult_le_pos; lra | lra | apply Rmult_le_compat; lra | lra].
Qed.

(* ---- (c) P~: E4M3 of RN32(448 p) ------------------------------------------------ *)

(* E4M3 rounding to nearest, ties to even: 4 significant bits, smallest subnormal 2^-9
   (no overflow: 448 p <= 448) *)
Definition RN8 (x : R) : R := round radix2 (FLT_exp (-9) 4) ZnearestE x.
Local Instance prec4 : Prec_gt_0 4 := eq_refl.
Local Instance prec24 : Prec_gt_0 24 := eq_refl.

(* p is an EXP2 result: +0 or at least 2^-126 (ftz).  P~ = 448 p (1 + phi) + zeta,
   1 + phi in [(1 - u)(1 - 2^-4), (1 + u)(1 + 2^-4)], |zeta| <= min(2^-10, (1 + u) 448 p). *)
Theorem SAGE_ATT_07_c_P : forall p, (p = 0 \/ bpow radix2 (-126) <= p) ->
  exists phi zeta, RN8 (RN32 (448 * p)) = 448 * p * (1 + phi) + zeta /\
    (1 - u24) * (1 - / 16) <= 1 + phi <= (1 + u24) * (1 + / 16) /\
    Rabs zeta <= / 1024 /\ Rabs zeta <= (1 + u24) * (448 * p).
Proof.
  intros p [->|Hp].
  - exists 0, 0. rewrite Rmult_0_r. unfold RN8, RN32. rewrite round_0, round_0 by auto with typeclass_instances.
    rewrite Rabs_R0. unfold u24. split; [ring|]. split; [lra|]. split; lra.
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
    + (* a normal E4M3 result: relative error 2^-4 *)
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
      split; [lra|]. unfold y. nra.
    + (* a subnormal E4M3 result: absolute error <= 2^-10 and <= x1 *)
      assert (Ha1 : Rabs (RN8 x1 - x1) <= / 1024).
      { unfold RN8. eapply Rle_trans; [apply (error_le_half_ulp radix2 (FLT_exp (-9) 4))|]. rewrite (ulp_FLT_small radix2 (-9) 4).
        - simpl. unfold Z.pow_pos. simpl. lra.
        - rewrite Rabs_right by lra. eapply Rlt_le_trans; [exact Hs|]. apply bpow_le. lia. }
      assert (Ha2 : Rabs (RN8 x1 - x1) <= x1).
      { destruct (round_N_pt radix2 (FLT_exp (-9) 4) (fun z => negb (Z.even z)) x1) as [_ Hn0].
        specialize (Hn0 0 (generic_format_0 radix2 (FLT_exp (-9) 4))).
        unfold RN8. rewrite Rminus_0_l, Rabs_Ropp, (Rabs_right x1) in Hn0 by lra. exact Hn0. }
      exists d, (RN8 x1 - x1). split; [rewrite <- Ex1; ring|].
      assert (Hx1u : x1 <= (1 + u24) * y) by (rewrite Ex1; nra).
      split; [split; nra|]. split; [exact Ha1|]. fold y. lra.
Qed.

(* ---- the factors of SAGE_ATT_07_f ------------------------------------------------- *)

Lemma pow_le1 : forall a k, 0 <= a <= 1 -> a ^ k <= 1.
Proof. intros a k H. induction k; simpl; [lra|]. assert (0 <= a ^ k) by (apply pow_le; lra). nra. Qed.

Lemma pow_ge1_mono : forall a k K, 1 <= a -> (k <= K)%nat -> a ^ k <= a ^ K.
Proof. intros. apply Rle_pow; assumption. Qed.

Lemma pow_le1_anti : forall a k K, 0 <= a <= 1 -> (k <= K)%nat -> a ^ K <= a ^ k.
Proof.
  intros a k K Ha HkK. replace K with (k + (K - k))%nat by lia. rewrite pow_add.
  assert (0 <= a ^ k) by (apply pow_le; lra). pose proof (pow_le1 a (K - k) Ha).
  assert (0 <= a ^ (K - k)) by (apply pow_le; lra). nra.
Qed.

(* (b) in the spec's form: r <= R rescalings, M' <= Mhi, slo_j <= s_j:
   theta_j in [(1 - e_x)^(R+1) (1 - u)^R 2^(-z_j), (1 + e_x)^(R+1) (1 + u)^R 2^(z_j)],
   z_j = 2u (Mhi - slo_j) (the spec's z_j; u (M' - s_j) is enough). *)
Theorem SAGE_ATT_07_b_theta : forall (E2 : R -> R) ex s (m d : nat -> R) r R Mhi slo,
  0 <= ex < 1 -> (forall x, Rabs (E2 x - pow2 x) <= ex * pow2 x) ->
  format32 s -> (forall k, (k <= r)%nat -> format32 (m k)) ->
  s <= m 0%nat -> (forall k, (k < r)%nat -> m k <= m (S k)) ->
  (forall k, (k < r)%nat -> Rabs (d k) <= u24) ->
  (r <= R)%nat -> m r <= Mhi -> slo <= s ->
  let w := E2 (RN32 (s - m 0%nat)) * prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k)) in
  let z := 2 * u24 * (Mhi - slo) in
  exists theta, w = pow2 (s - m r) * theta /\
    (1 - ex) ^ (R + 1) * (1 - u24) ^ R * pow2 (- z) <= theta <= (1 + ex) ^ (R + 1) * (1 + u24) ^ R * pow2 z.
Proof.
  intros E2 ex s m d r R Mhi slo He HE Fs Fm H0 Hm Hd HrR HM Hs w z.
  destruct (SAGE_ATT_07_b E2 ex s m d r He HE Fs Fm H0 Hm Hd) as [L U]. fold w in L, U.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (Hmr : s <= m r).
  { clear -H0 Hm. induction r as [|r IH]; [exact H0|].
    apply Rle_trans with (m r); [apply IH; intros k Hk; apply Hm; lia | apply Hm; lia]. }
  pose proof (pow2_pos (s - m r)) as Hp.
  exists (w / pow2 (s - m r)). split; [field; lra|].
  assert (Hz : u24 * (m r - s) <= z) by (unfold z; nra).
  pose proof (pow2_le _ _ Hz) as Pz. assert (- z <= - (u24 * (m r - s))) by lra. pose proof (pow2_le _ _ H) as Pz'.
  assert (A1 : (1 - ex) ^ (R + 1) <= (1 - ex) ^ (r + 1)) by (apply pow_le1_anti; [lra | lia]).
  assert (A2 : (1 - u24) ^ R <= (1 - u24) ^ r) by (apply pow_le1_anti; [lra | lia]).
  assert (A3 : (1 + ex) ^ (r + 1) <= (1 + ex) ^ (R + 1)) by (apply Rle_pow; [lra | lia]).
  assert (A4 : (1 + u24) ^ r <= (1 + u24) ^ R) by (apply Rle_pow; [lra | lia]).
  assert (0 <= (1 - ex) ^ (R + 1)) by (apply pow_le; lra). assert (0 <= (1 - u24) ^ R) by (apply pow_le; lra).
  assert (0 <= (1 + ex) ^ (r + 1)) by (apply pow_le; lra). assert (0 <= (1 + u24) ^ r) by (apply pow_le; lra).
  pose proof (pow2_pos (- z)). pose proof (pow2_pos (u24 * (m r - s))).
  split.
  - apply (Rmult_le_reg_r (pow2 (s - m r))); [exact Hp|].
    replace (w / pow2 (s - m r) * pow2 (s - m r)) with w by (field; lra).
    eapply Rle_trans; [|exact L]. apply Rmult_le_compat_r; [lra|].
    apply Rmult_le_compat; [apply Rmult_le_pos; lra | lra | apply Rmult_le_compat; lra | exact Pz'].
  - apply (Rmult_le_reg_r (pow2 (s - m r))); [exact Hp|].
    replace (w / pow2 (s - m r) * pow2 (s - m r)) with w by (field; lra).
    eapply Rle_trans; [exact U|]. apply Rmult_le_compat_r; [lra|].
    apply Rmult_le_compat; [apply Rmult_le_pos; lra | lra | apply Rmult_le_compat; lra | exact Pz].
Qed.

(* (c) the numerator's weight factor: 1 + a_j = theta_j (1 + phi_j), |a_j| <= A_j =
   max(theta_hi (1 + u)(1 + 2^-4) - 1, 1 - theta_lo (1 - u)(1 - 2^-4)) *)
Theorem SAGE_ATT_07_c_a : forall theta phi tlo thi,
  0 <= tlo <= theta -> theta <= thi ->
  (1 - u24) * (1 - / 16) <= 1 + phi <= (1 + u24) * (1 + / 16) ->
  Rabs (theta * (1 + phi) - 1)
  <= Rmax (thi * ((1 + u24) * (1 + / 16)) - 1) (1 - tlo * ((1 - u24) * (1 - / 16))).
Proof.
  intros theta phi tlo thi [H0 H1] H2 [P1 P2].
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (theta * (1 + phi) <= thi * ((1 + u24) * (1 + / 16))) by (apply Rmult_le_compat; nra).
  assert (tlo * ((1 - u24) * (1 - / 16)) <= theta * (1 + phi)) by (apply Rmult_le_compat; nra).
  unfold Rabs. destruct (Rcase_abs (theta * (1 + phi) - 1)).
  - eapply Rle_trans; [|apply Rmax_r]. lra.
  - eapply Rle_trans; [|apply Rmax_l]. lra.
Qed.

(* (e) the denominator's weight factor: 1 + b_j = theta_j prod_{i<K} (1 + delta_i),
   |delta_i| <= u (K = 66 + 2R roundings), |b_j| <= B_j = max(theta_hi (1 + u)^K - 1,
   1 - theta_lo (1 - u)^K) *)
Theorem SAGE_ATT_07_e_b : forall theta tlo thi (delta : nat -> R) K,
  0 <= tlo <= theta -> theta <= thi ->
  (forall i, (i < K)%nat -> Rabs (delta i) <= u24) ->
  Rabs (theta * prod K (fun i => 1 + delta i) - 1)
  <= Rmax (thi * (1 + u24) ^ K - 1) (1 - tlo * (1 - u24) ^ K).
Proof.
  intros theta tlo thi delta K [H0 H1] H2 Hd.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (HP : (1 - u24) ^ K <= prod K (fun i => 1 + delta i) <= (1 + u24) ^ K).
  { clear -Hd Hu. induction K as [|K IH]; simpl; [lra|].
    destruct IH as [L U]; [intros; apply Hd; lia|].
    pose proof (Hd K ltac:(lia)) as H. assert (- u24 <= delta K <= u24) by (revert H; unfold Rabs; destruct (Rcase_abs (delta K)); intros; lra).
    assert (0 <= (1 - u24) ^ K) by (apply pow_le; lra).
    split; [rewrite Rmult_comm; apply Rmult_le_compat; lra|].
    rewrite Rmult_comm. apply Rmult_le_compat; [lra | lra | lra | lra]. }
  assert (0 <= (1 - u24) ^ K) by (apply pow_le; lra).
  assert (theta * prod K (fun i => 1 + delta i) <= thi * (1 + u24) ^ K) by (apply Rmult_le_compat; lra).
  assert (tlo * (1 - u24) ^ K <= theta * prod K (fun i => 1 + delta i)) by (apply Rmult_le_compat; lra).
  unfold Rabs. destruct (Rcase_abs (theta * prod K (fun i => 1 + delta i) - 1)).
  - eapply Rle_trans; [|apply Rmax_r]. lra.
  - eapply Rle_trans; [|apply Rmax_l]. lra.
Qed.

(* ---- (d) the accumulator ------------------------------------------------------------

   One channel, instruction by instruction (32 products each, n + 1 = 33 terms with C),
   in the final frame.  The class K(p, b) of [SAGE-ACC-06]: an instruction from C = acc_g
   with exact product sum T_g, sum |a_k b_k| <= Tb_g, gives acc_{g+1} with
     |acc_{g+1} - (acc_g + T_g)| <= 33 ep H + eb (|acc_g| + Tb_g + 33 ep H),
   ep = 2^-p, eb = 2^(1-b), H = 2^E <= max(|acc_g|, X_g).  With the exact partial sums
   ex_{g+1} = ex_g + T_g, S_{g+1} = S_g + Tb_g and
     Ea_{g+1} = Ea_g + 33 ep h + eb (S_g + Ea_g + Tb_g + 33 ep h),  h = max(S_g + Ea_g, X_g),
   every |acc_g - ex_g| <= Ea_g (and |ex_g| <= S_g). *)
Section Accumulator.
Variables ep eb : R.
Variables (acc ex T Tb X : nat -> R) (S0 Ea0 : R).

Fixpoint Sacc (g : nat) : R := match g with O => S0 | S g' => Sacc g' + Tb g' end.
Fixpoint Eacc (g : nat) : R :=
  match g with
  | O => Ea0
  | S g' => let h := Rmax (Sacc g' + Eacc g') (X g') in
            Eacc g' + 33 * ep * h + eb * (Sacc g' + Eacc g' + Tb g' + 33 * ep * h)
  end.

Theorem SAGE_ATT_07_d : forall G, 0 <= ep -> 0 <= eb ->
  Rabs (acc 0%nat - ex 0%nat) <= Ea0 -> Rabs (ex 0%nat) <= S0 ->
  (forall g, (g < G)%nat -> ex (S g) = ex g + T g /\ Rabs (T g) <= Tb g /\
     exists H, 0 <= H <= Rmax (Rabs (acc g)) (X g) /\
       Rabs (acc (S g) - (acc g + T g)) <= 33 * ep * H + eb * (Rabs (acc g) + Tb g + 33 * ep * H)) ->
  forall g, (g <= G)%nat -> Rabs (acc g - ex g) <= Eacc g /\ Rabs (ex g) <= Sacc g.
Proof.
  intros G Hep Heb H0 HS0 Hstep g. induction g as [|g IH]; intros Hg; [simpl; split; assumption|].
  destruct (IH ltac:(lia)) as [IA IS].
  destruct (Hstep g ltac:(lia)) as [Ex [HT [H [[HH0 HH] Hacc]]]].
  simpl. set (h := Rmax (Sacc g + Eacc g) (X g)).
  assert (Ha : Rabs (acc g) <= Sacc g + Eacc g).
  { replace (acc g) with (ex g + (acc g - ex g)) by ring. eapply Rle_trans; [apply Rabs_triang | lra]. }
  assert (Hh : H <= h).
  { eapply Rle_trans; [exact HH|]. unfold h. apply Rmax_lub; [eapply Rle_trans; [exact Ha | apply Rmax_l] | apply Rmax_r]. }
  assert (HTb : 0 <= Tb g) by (eapply Rle_trans; [apply Rabs_pos | exact HT]).
  split.
  - rewrite Ex. replace (acc (S g) - (ex g + T g)) with ((acc (S g) - (acc g + T g)) + (acc g - ex g)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (33 * ep * H <= 33 * ep * h) by (apply Rmult_le_compat_l; lra).
    assert (eb * (Rabs (acc g) + Tb g + 33 * ep * H) <= eb * (Sacc g + Eacc g + Tb g + 33 * ep * h))
      by (apply Rmult_le_compat_l; lra).
    lra.
  - rewrite Ex. eapply Rle_trans; [apply Rabs_triang | lra].
Qed.
End Accumulator.

(* a flush buf' = RN32(buf + acc) of binary32 values adds at most u (|buf| + |acc|) *)
Theorem SAGE_ATT_07_d_flush : forall buf acc, format32 buf -> format32 acc ->
  Rabs (RN32 (buf + acc) - (buf + acc)) <= u24 * (Rabs buf + Rabs acc).
Proof.
  intros buf acc Hb Ha. destruct (RN32_plus_rel buf acc Hb Ha) as [H _].
  eapply Rle_trans; [exact H|]. apply Rmult_le_compat_l; [unfold u24; lra | apply Rabs_triang].
Qed.
