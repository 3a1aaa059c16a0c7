(* SageT.v -- spec/sage.md [SAGE-ATT-07]: the totals that SAGE_ATT_07_f takes as
   hypotheses.  (b) every later scaling of a weight lies in [0, G], G =
   ((1 + e_x)(1 + u))^R; (c) the numerator's absolute part Z_c from the P~
   roundings; (e) the denominator's absolute part L_abs from the flushed weights;
   (f) the numerator's absolute total, Z_c + E_c vs_c / 448 + G 2^-124 sum |V|. *)
From Coq Require Import Reals Lra Lia Psatz.
From Flocq Require Import Core.
From KvqCoq Require Import Sums Sage Arith KeyQuant SageW.
Open Scope R_scope.
Local Instance prec24t : Prec_gt_0 24 := eq_refl.

(* one rescale factor EXP2(RN32(a - b)), a <= b binary32: in (0, 1 + e_x] *)
Lemma exp2_rescale_le : forall (E2 : R -> R) e a b,
  0 <= e < 1 -> (forall x, Rabs (E2 x - pow2 x) <= e * pow2 x) -> a <= b ->
  0 < E2 (RN32 (a - b)) <= 1 + e.
Proof.
  intros E2 e a b He HE Hab.
  assert (Hx : RN32 (a - b) <= 0).
  { unfold RN32. rewrite <- (round_0 radix2 (FLT_exp (-149) 24) ZnearestE).
    apply round_le; try typeclasses eauto; lra. }
  set (x := RN32 (a - b)) in *.
  pose proof (HE x) as H. pose proof (pow2_pos x) as P.
  assert (P0 : pow2 0 = 1) by (unfold pow2; rewrite Rmult_0_l; apply exp_0).
  assert (P1 : pow2 x <= 1) by (rewrite <- P0; apply pow2_le; lra).
  revert H. unfold Rabs. destruct (Rcase_abs (E2 x - pow2 x)); intros; split; nra.
Qed.

(* (b) G: the r <= R rescalings after a key's block, each EXP2(RN32(m_k - m_{k+1}))
   applied by a binary32 product (|d_k| <= u), running maxima m_k <= m_{k+1},
   multiply its weight by c in [0, G], G = ((1 + e_x)(1 + u))^R. *)
Theorem SAGE_ATT_07_b_G : forall (E2 : R -> R) ex (m d : nat -> R) r R,
  0 <= ex < 1 -> (forall x, Rabs (E2 x - pow2 x) <= ex * pow2 x) ->
  (forall k, (k < r)%nat -> m k <= m (S k)) ->
  (forall k, (k < r)%nat -> Rabs (d k) <= u24) -> (r <= R)%nat ->
  0 <= prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k)) <= ((1 + ex) * (1 + u24)) ^ R.
Proof.
  intros E2 ex m d r R He HE Hm Hd HrR.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (Hr : 0 <= prod r (fun k => E2 (RN32 (m k - m (S k))) * (1 + d k)) <= ((1 + ex) * (1 + u24)) ^ r).
  { clear HrR. induction r as [|r IH]; simpl; [lra|].
    destruct IH as [L U]; [intros; apply Hm; lia | intros; apply Hd; lia |].
    pose proof (exp2_rescale_le E2 ex (m r) (m (S r)) He HE (Hm r ltac:(lia))) as [F0 F1].
    pose proof (Hd r ltac:(lia)) as Hdr.
    assert (- u24 <= d r <= u24) by (revert Hdr; unfold Rabs; destruct (Rcase_abs (d r)); intros; lra).
    assert (0 <= E2 (RN32 (m r - m (S r))) * (1 + d r)) by nra.
    split; [nra|].
    rewrite (Rmult_comm ((1 + ex) * (1 + u24))).
    apply Rmult_le_compat; [lra | lra | exact U | apply Rmult_le_compat; lra]. }
  split; [lra|]. eapply Rle_trans; [apply Hr|]. apply Rle_pow; [nra | exact HrR].
Qed.

(* (c) the numerator's part from the P~ roundings: key j's P~_j = 448 p_j (1 + phi_j) +
   zeta_j (SAGE_ATT_07_c_P), scaled by c_j in [0, G] (SAGE_ATT_07_b_G) to the final frame,
   where c_j p_j = y_j theta_j <= theta_hi y_j, divided by 448, times V_j:
   sum_j c_j P~_j / 448 V_j = sum_j y_j theta_j (1 + phi_j) V_j + Z_c,
   |Z_c| <= G sum_j min(2^-10 / 448, (1 + u)(1 + 2^-4) theta_hi y_j) |V_j|. *)
Theorem SAGE_ATT_07_c_Z : forall n (c p y theta phi zeta V : nat -> R) G thi,
  1 <= G ->
  (forall j, (j < n)%nat -> 0 <= c j <= G /\ 0 <= p j /\ 0 <= y j /\
     c j * p j = y j * theta j /\ theta j <= thi /\
     Rabs (zeta j) <= / 1024 /\ Rabs (zeta j) <= (1 + u24) * (448 * p j)) ->
  let Z := sum n (fun j => c j * zeta j / 448 * V j) in
  sum n (fun j => c j * (448 * p j * (1 + phi j) + zeta j) / 448 * V j)
    = sum n (fun j => y j * (theta j * (1 + phi j)) * V j) + Z /\
  Rabs Z <= G * sum n (fun j => Rmin (/ 1024 / 448) ((1 + u24) * (1 + / 16) * thi * y j) * Rabs (V j)).
Proof.
  intros n c p y theta phi zeta V G thi HG Hj Z. unfold Z.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  split.
  - rewrite <- sum_plus. apply sum_ext. intros j Hjn.
    destruct (Hj j Hjn) as [_ [_ [_ [E _]]]].
    replace (c j * (448 * p j * (1 + phi j) + zeta j) / 448 * V j)
      with ((c j * p j) * (1 + phi j) * V j + c j * zeta j / 448 * V j) by field.
    rewrite E. ring.
  - eapply Rle_trans; [apply sum_abs|]. rewrite <- sum_scal. apply sum_le. intros j Hjn.
    destruct (Hj j Hjn) as [[C0 C1] [P0 [Y0 [E [T [Z1 Z2]]]]]].
    replace (c j * zeta j / 448 * V j) with (c j * (zeta j / 448) * V j) by field.
    rewrite !Rabs_mult, (Rabs_right (c j)) by lra.
    pose proof (Rabs_pos (V j)) as HV.
    rewrite <- Rmult_assoc. apply Rmult_le_compat_r; [exact HV|].
    assert (Hz : Rabs (zeta j / 448) = Rabs (zeta j) / 448)
      by (unfold Rdiv; rewrite Rabs_mult, (Rabs_right (/ 448)) by lra; reflexivity).
    rewrite Hz. pose proof (Rabs_pos (zeta j)).
    assert (A1 : c j * (Rabs (zeta j) / 448) <= G * (/ 1024 / 448))
      by (apply Rmult_le_compat; [lra | apply Rmult_le_pos; lra | exact C1 | lra]).
    assert (A2 : c j * (Rabs (zeta j) / 448) <= G * ((1 + u24) * (1 + / 16) * thi * y j)).
    { (* c_j |zeta_j| / 448 <= (1 + u) c_j p_j = (1 + u) y_j theta_j <= G (1 + u)(1 + 2^-4) thi y_j *)
      apply Rle_trans with ((1 + u24) * (c j * p j)).
      * apply Rle_trans with (c j * ((1 + u24) * (448 * p j)) / 448); [|right; field].
        unfold Rdiv. rewrite Rmult_assoc. apply Rmult_le_compat_l; [lra|].
        apply Rmult_le_compat_r; lra.
      * rewrite E.
        assert (y j * theta j <= y j * thi) by (apply Rmult_le_compat_l; lra).
        assert (0 <= y j * theta j) by (rewrite <- E; apply Rmult_le_pos; lra).
        assert (0 <= thi * y j) by nra.
        assert ((1 + u24) * (y j * theta j) <= (1 + u24) * (thi * y j)) by (apply Rmult_le_compat_l; lra).
        assert ((1 + u24) * (thi * y j) <= G * ((1 + u24) * (1 + / 16) * thi * y j)).
        { replace (G * ((1 + u24) * (1 + / 16) * thi * y j)) with ((G * (1 + / 16)) * ((1 + u24) * (thi * y j))) by ring.
          rewrite <- (Rmult_1_l ((1 + u24) * (thi * y j))) at 1.
          apply Rmult_le_compat_r; [nra | nra]. }
        lra. }
    unfold Rmin. destruct (Rle_dec (/ 1024 / 448) ((1 + u24) * (1 + / 16) * thi * y j)); assumption.
Qed.

(* (1 + u)^K <= 2 when K u <= 1/2: (1 + u)^K (1 - u)^K <= 1 and (1 - u)^K >= 1 - K u *)
Lemma pow_1pu_le2 : forall K, INR K * u24 <= / 2 -> (1 + u24) ^ K <= 2.
Proof.
  intros K HK. assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  pose proof (bernoulli K u24 ltac:(lra)) as B.
  assert (H1 : (1 + u24) ^ K * (1 - u24) ^ K <= 1).
  { rewrite <- Rpow_mult_distr. apply pow_le1. nra. }
  assert (0 <= (1 + u24) ^ K) by (apply pow_le; lra).
  assert (/ 2 <= (1 - u24) ^ K) by lra. nra.
Qed.

(* (e) L_abs: a key's weight is y_j theta_j + f_j, f_j its flushed part ((b): |f_j| <=
   2^-125 G); the denominator carries each weight through K = 66 + 2R roundings
   (prod (1 + delta_ij), |delta_ij| <= u), so
   l' = sum_j y_j theta_j P_j + L_abs, L_abs = sum_j f_j P_j, |L_abs| <= G n 2^-124
   when K u <= 1/2 (K <= 2^23). *)
Theorem SAGE_ATT_07_e_Labs : forall n K (y theta f : nat -> R) (delta : nat -> nat -> R) G,
  0 <= G -> INR K * u24 <= / 2 ->
  (forall j, (j < n)%nat -> Rabs (f j) <= G / 2 ^ 125) ->
  (forall j i, (j < n)%nat -> (i < K)%nat -> Rabs (delta j i) <= u24) ->
  let P j := prod K (fun i => 1 + delta j i) in
  let Labs := sum n (fun j => f j * P j) in
  sum n (fun j => (y j * theta j + f j) * P j) = sum n (fun j => y j * theta j * P j) + Labs /\
  Rabs Labs <= G * INR n / 2 ^ 124.
Proof.
  intros n K y theta f delta G HG HK Hf Hd P Labs. unfold Labs.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  split; [rewrite <- sum_plus; apply sum_ext; intros; ring|].
  eapply Rle_trans; [apply sum_abs|].
  apply Rle_trans with (sum n (fun _ => G / 2 ^ 124)).
  - apply sum_le. intros j Hj. rewrite Rabs_mult.
    assert (HP : Rabs (P j) <= 2).
    { unfold P. assert (H : 0 <= prod K (fun i => 1 + delta j i) <= (1 + u24) ^ K).
      { clear HK. induction K as [|K IH]; simpl; [lra|].
        destruct IH as [L U]; [intros; apply Hd; lia|].
        pose proof (Hd j K Hj ltac:(lia)) as Hk.
        assert (- u24 <= delta j K <= u24) by (revert Hk; unfold Rabs; destruct (Rcase_abs (delta j K)); intros; lra).
        split; [nra|]. rewrite (Rmult_comm (1 + u24)). apply Rmult_le_compat; lra. }
      rewrite Rabs_right by lra. pose proof (pow_1pu_le2 K HK). lra. }
    pose proof (Hf j Hj). pose proof (Rabs_pos (f j)). pose proof (Rabs_pos (P j)).
    replace (G / 2 ^ 124) with (G / 2 ^ 125 * 2) by (simpl; field).
    apply Rmult_le_compat; lra.
  - right. assert (C : forall k (a : R), sum k (fun _ => a) = INR k * a).
    { intros k a. induction k as [|k IH]; simpl sum; [simpl; ring|]. rewrite IH, S_INR. ring. }
    rewrite C. field.
Qed.

(* (f) the numerator's absolute total: Z_c (c), the accumulator's error E_c (d) times
   vs_c / 448, and the flushed weights' part sum_j f_j (1 + phi_j) V_j, |f_j| <=
   2^-125 G, 1 + phi_j <= (1 + u)(1 + 2^-4) <= 2:
   |Zt| <= Zc + Ec vs_c / 448 + G 2^-124 sum |V_j|, the Zb of SAGE_ATT_07_f. *)
Theorem SAGE_ATT_07_f_Z : forall n (f phi V : nat -> R) Z E vs Zc Ec G,
  0 <= vs -> Rabs Z <= Zc -> Rabs E <= Ec ->
  (forall j, (j < n)%nat -> Rabs (f j) <= G / 2 ^ 125 /\
     (1 - u24) * (1 - / 16) <= 1 + phi j <= (1 + u24) * (1 + / 16)) ->
  Rabs (Z + E * (vs / 448) + sum n (fun j => f j * (1 + phi j) * V j))
  <= Zc + Ec * (vs / 448) + G / 2 ^ 124 * sum n (fun j => Rabs (V j)).
Proof.
  intros n f phi V Z E vs Zc Ec G Hvs HZ HE Hj.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (HF : Rabs (sum n (fun j => f j * (1 + phi j) * V j)) <= G / 2 ^ 124 * sum n (fun j => Rabs (V j))).
  { eapply Rle_trans; [apply sum_abs|]. rewrite <- sum_scal. apply sum_le. intros j Hjn.
    destruct (Hj j Hjn) as [Hf [P0 P1]]. rewrite !Rabs_mult.
    assert (Hu16 : u24 <= / 16) by (unfold u24; lra).
    assert (Rabs (1 + phi j) <= 2) by (assert (0 <= 1 + phi j) by nra; rewrite Rabs_right by lra; nra).
    pose proof (Rabs_pos (f j)). pose proof (Rabs_pos (1 + phi j)). pose proof (Rabs_pos (V j)).
    apply Rmult_le_compat_r; [lra|].
    replace (G / 2 ^ 124) with (G / 2 ^ 125 * 2) by (simpl; field).
    apply Rmult_le_compat; lra. }
  assert (HEv : Rabs (E * (vs / 448)) <= Ec * (vs / 448)).
  { rewrite Rabs_mult, (Rabs_right (vs / 448)) by (apply Rle_ge, div_nonneg; lra).
    apply Rmult_le_compat_r; [apply div_nonneg; lra | exact HE]. }
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. lra.
Qed.

(* (b) the flushed part: EXP2 is flush-to-zero (+0, or within e_x, where 2^x < 2^-126;
   [TR-EX2]), and so is each rescale product (+0 where its result is below 2^-126 in
   magnitude).  The kernel's weight vch r (its own EXP2, then r rescalings) is the
   unflushed one, y_j theta_j of SAGE_ATT_07_b, plus f, |f| <= 2^-125 G: once a step
   flushes, the weight stays +0, and the unflushed one is then below 2^-126 (1 + e_x)
   times the later factors, each at most (1 + e_x)(1 + u). *)
Section Flush.
Variables (E2 E2f : R -> R) (ex s : R) (m d : nat -> R) (fz : nat -> R -> R).

Fixpoint vch (k : nat) : R :=
  match k with
  | O => E2f (RN32 (s - m 0%nat))
  | S k' => fz k' (vch k' * (E2f (RN32 (m k' - m (S k'))) * (1 + d k')))
  end.

Definition wch (k : nat) : R := E2 (RN32 (s - m 0%nat)) * prod k (fun i => E2 (RN32 (m i - m (S i))) * (1 + d i)).

Theorem SAGE_ATT_07_b_flush : forall r R,
  0 <= ex < 1 -> (forall x, Rabs (E2 x - pow2 x) <= ex * pow2 x) ->
  (forall x, E2f x = E2 x \/ (E2f x = 0 /\ pow2 x < / 2 ^ 126)) ->
  (forall k y, fz k y = y \/ (fz k y = 0 /\ Rabs y < / 2 ^ 126)) ->
  s <= m 0%nat -> (forall k, (k < r)%nat -> m k <= m (S k)) ->
  (forall k, (k < r)%nat -> Rabs (d k) <= u24) -> (r <= R)%nat ->
  exists f, vch r = wch r + f /\ Rabs f <= ((1 + ex) * (1 + u24)) ^ R / 2 ^ 125.
Proof.
  intros r R He HE HEf Hfz H0 Hm Hd HrR.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  set (q := (1 + ex) * (1 + u24)).
  assert (Hq : 1 <= q) by (unfold q; nra).
  assert (H126 : 0 < / 2 ^ 126) by (apply Rinv_0_lt_compat, pow_lt; lra).
  (* the unflushed E2 of a non-positive argument: (0, 1 + e_x], and below (1 + e_x) 2^-126
     where the flushed one is +0 *)
  assert (Hfl : forall x, 0 <= pow2 x <= 1 -> E2f x = 0 -> E2 x < (1 + ex) / 2 ^ 126 \/ E2f x = E2 x).
  { intros x Hx Hz. destruct (HEf x) as [Eq|[_ Hp]]; [right; exact Eq|left].
    pose proof (HE x) as H. revert H. unfold Rabs. destruct (Rcase_abs (E2 x - pow2 x)); intros; unfold Rdiv; nra. }
  assert (Inv : forall k, (k <= r)%nat ->
            0 < wch k <= (1 + ex) * q ^ k /\
            (vch k = wch k \/ (vch k = 0 /\ wch k <= (1 + ex) * q ^ k / 2 ^ 126))).
  { induction k as [|k IH]; intros Hk.
    - unfold wch. simpl prod. rewrite Rmult_1_r. simpl pow. rewrite Rmult_1_r.
      pose proof (exp2_rescale_le E2 ex s (m 0%nat) He HE H0) as [P0 P1].
      split; [lra|]. simpl vch.
      destruct (HEf (RN32 (s - m 0%nat))) as [Eq|[Ez Hp]]; [left; exact Eq|right].
      split; [exact Ez|].
      pose proof (HE (RN32 (s - m 0%nat))) as H. revert H. unfold Rabs.
      destruct (Rcase_abs (E2 (RN32 (s - m 0%nat)) - pow2 (RN32 (s - m 0%nat)))); intros; unfold Rdiv; nra.
    - destruct (IH ltac:(lia)) as [[W0 W1] V]. clear IH.
      pose proof (exp2_rescale_le E2 ex (m k) (m (S k)) He HE (Hm k ltac:(lia))) as [F0 F1].
      pose proof (Hd k ltac:(lia)) as Hdk.
      assert (Hdk2 : - u24 <= d k <= u24) by (revert Hdk; unfold Rabs; destruct (Rcase_abs (d k)); intros; lra).
      set (F := E2 (RN32 (m k - m (S k)))) in *.
      assert (Ew : wch (S k) = wch k * (F * (1 + d k))) by (unfold wch; simpl prod; unfold F; ring).
      assert (Fq : 0 < F * (1 + d k) <= q) by (unfold q; split; [nra | apply Rmult_le_compat; lra]).
      assert (Eq : (1 + ex) * q ^ S k = (1 + ex) * q ^ k * q) by (simpl; ring).
      assert (0 <= (1 + ex) * q ^ k) by (apply Rmult_le_pos; [lra | apply pow_le; lra]).
      rewrite Ew, Eq. split; [split; [nra | apply Rmult_le_compat; lra]|].
      simpl vch. fold F.
      destruct V as [V|[V0 Vb]].
      + rewrite V. destruct (HEf (RN32 (m k - m (S k)))) as [EF|[EF Hp]].
        * rewrite EF. fold F. destruct (Hfz k (wch k * (F * (1 + d k)))) as [Z|[Z Zb]]; [left; exact Z|right].
          split; [exact Z|]. rewrite Rabs_right in Zb by nra.
          assert (1 <= (1 + ex) * q ^ k * q).
          { assert (1 <= q ^ k) by (apply pow_R1_Rle; lra). nra. }
          unfold Rdiv. nra.
        * (* the rescale factor flushed *)
          rewrite EF, Rmult_0_l, Rmult_0_r.
          assert (Hz : fz k 0 = 0) by (destruct (Hfz k 0) as [Z|[Z _]]; exact Z).
          rewrite Hz. right. split; [reflexivity|].
          pose proof (HE (RN32 (m k - m (S k)))) as HEk. fold F in HEk.
          assert (HF : F < (1 + ex) / 2 ^ 126).
          { revert HEk. unfold Rabs. destruct (Rcase_abs (F - pow2 (RN32 (m k - m (S k))))); intros; unfold Rdiv; nra. }
          (* wch k <= (1 + e_x) q^k and F (1 + d) < (1 + e_x)(1 + u) 2^-126 = q 2^-126 *)
          assert (F * (1 + d k) <= q / 2 ^ 126).
          { replace (q / 2 ^ 126) with ((1 + ex) / 2 ^ 126 * (1 + u24)) by (unfold q; field).
            apply Rmult_le_compat; lra. }
          unfold Rdiv in *. assert (0 <= F * (1 + d k)) by lra.
          replace ((1 + ex) * q ^ k * q * / 2 ^ 126) with (((1 + ex) * q ^ k) * (q * / 2 ^ 126)) by ring.
          apply Rmult_le_compat; lra.
      + rewrite V0, Rmult_0_l.
        assert (Hz : fz k 0 = 0) by (destruct (Hfz k 0) as [Z|[Z _]]; exact Z).
        rewrite Hz. right. split; [reflexivity|].
        unfold Rdiv in *. replace ((1 + ex) * q ^ k * q * / 2 ^ 126) with (((1 + ex) * q ^ k * / 2 ^ 126) * q) by ring.
        apply Rmult_le_compat; lra. }
  destruct (Inv r ltac:(lia)) as [[W0 W1] [V|[V0 Vb]]].
  - exists 0. split; [rewrite V; ring|]. rewrite Rabs_R0.
    apply div_nonneg; [apply pow_le; lra | apply pow_lt; lra].
  - exists (- wch r). split; [rewrite V0; ring|]. rewrite Rabs_Ropp, Rabs_right by lra.
    eapply Rle_trans; [exact Vb|].
    assert (q ^ r <= q ^ R) by (apply Rle_pow; [exact Hq | exact HrR]).
    assert (0 <= q ^ r) by (apply pow_le; lra).
    replace (q ^ R / 2 ^ 125) with (2 * q ^ R / 2 ^ 126) by (simpl; field).
    unfold Rdiv. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat; lra.
Qed.
End Flush.
