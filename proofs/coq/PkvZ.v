(* PkvZ.v -- spec/bounds/pkv.md §1 step 6, [PKV-B-01]: a group whose scale flushed to 0.
   The pinned sequence of PkvF.v with s = RN32(RN32(mx - mn) / cmax) below 2^-126, so
   the stored scale is 0 ([KIVI-M-03]) and every element reconstructs to
   y = RN32(RN32(c 0 + z) + m) = RN32(z + m), whatever its code c: [PKV-B-01] holds. *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core.
From KvqCoq Require Import Sums Arith KeyQuant SageW PkvF.
Open Scope R_scope.
Local Instance prec24z : Prec_gt_0 24 := eq_refl.

Theorem PKV_B_01_flush : forall x m xa ma xb mb (cm : Z) c,
  format32 x -> format32 m -> format32 xa -> format32 ma -> format32 xb -> format32 mb ->
  (3 <= cm <= 15)%Z -> xa - ma <= x - m <= xb - mb ->
  let cmax := IZR cm in
  let mn := RN32 (xa - ma) in let mx := RN32 (xb - mb) in
  RN32 (RN32 (mx - mn) / cmax) < bpow radix2 (-126) ->
  let z := mn in
  let r32 := RN32 (x - m) in
  let y := RN32 (RN32 (c * 0 + z) + m) in
  let w := (xb - mb) - (xa - ma) in
  let K := Rabs x + Rabs m + Rabs (xb - mb) + Rabs (xa - ma) in
  Rabs (x - y) <= (1 + / 65536) * w / (2 * cmax) + / 1048576 * K + / 2 ^ 121.
Proof.
  intros x m xa ma xb mb cm c Fx Fm Fxa Fma Fxb Fmb Hcm [Hlo Hhi] cmax mn mx Hs z r32 y w K.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (Hcm' : 3 <= cmax <= 15) by (unfold cmax; split; apply IZR_le; lia).
  pose proof (Rabs_pos x) as Ax. pose proof (Rabs_pos m) as Am.
  pose proof (Rabs_pos (xb - mb)) as Ab. pose proof (Rabs_pos (xa - ma)) as Aa.
  assert (HK0 : 0 <= K) by (unfold K; lra).
  assert (Hw : 0 <= w) by (unfold w; lra).
  (* step 1 *)
  assert (H1 : Rabs ((x - m) - r32) <= u24 * K).
  { rewrite Rabs_minus_sym. eapply Rle_trans; [apply RN32_minus_rel2; assumption|].
    apply Rmult_le_compat_l; [lra|]. unfold K. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra. }
  assert (Hmn : mn <= r32) by (apply RN32_mono; exact Hlo).
  assert (Hmx : r32 <= mx) by (apply RN32_mono; exact Hhi).
  pose proof (RN32_minus_rel2 xa ma Fxa Fma) as Emn. fold mn in Emn.
  assert (Hz : Rabs z <= (1 + u24) * K).
  { unfold z. replace mn with ((xa - ma) + (mn - (xa - ma))) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. unfold K. nra. }
  (* the flushed scale: RN32(mx - mn) / cmax < 2^-126 (2^-126 is binary32), so the range
     mx - mn is below 15 2^-126 / (1 - u) <= 2^-122 *)
  set (R := RN32 (mx - mn)) in *.
  assert (HQ : R / cmax < bpow radix2 (-126)).
  { destruct (Rlt_le_dec (R / cmax) (bpow radix2 (-126))) as [H|H]; [exact H|].
    exfalso. assert (bpow radix2 (-126) <= RN32 (R / cmax)); [|lra].
    unfold RN32. apply round_ge_generic; try typeclasses eauto; [|exact H].
    apply generic_format_bpow. unfold FLT_exp. simpl. lia. }
  assert (Hb126 : bpow radix2 (-126) = / 2 ^ 126) by (rewrite pow_IZR; unfold bpow; f_equal).
  rewrite Hb126 in HQ.
  assert (HR0 : 0 <= mx - mn) by lra.
  pose proof (RN32_minus_rel2 mx mn (format32_RN32 _) (format32_RN32 _)) as ER. fold R in ER.
  rewrite (Rabs_right (mx - mn)) in ER by lra.
  assert (HRl : (mx - mn) * (1 - u24) <= R)
    by (revert ER; unfold Rabs; destruct (Rcase_abs (R - (mx - mn))); intros; nra).
  assert (HRc : R < cmax / 2 ^ 126).
  { assert (E : R = R / cmax * cmax) by (field; lra). rewrite E.
    replace (cmax / 2 ^ 126) with (/ 2 ^ 126 * cmax) by (unfold Rdiv; ring).
    apply Rmult_lt_compat_r; [lra | exact HQ]. }
  assert (Hrange : r32 - z <= / 2 ^ 122).
  { unfold z. assert (mx - mn <= / 2 ^ 122); [|lra].
    assert (E : / 2 ^ 122 = 16 / 2 ^ 126) by (field_simplify; [reflexivity | apply pow_nonzero; lra..] || (simpl; field)).
    rewrite E. assert (H126 : 0 < / 2 ^ 126) by (apply Rinv_0_lt_compat, pow_lt; lra).
    set (t := / 2 ^ 126) in *. unfold Rdiv in *. fold t in HRc.
    assert (cmax * t <= 15 * t) by (apply Rmult_le_compat_r; lra).
    assert (15 * t <= 16 * t * (1 - u24)) by (unfold u24; lra).
    left. change (/ 2 ^ 126) with t. apply Rmult_lt_reg_r with (1 - u24); [lra | unfold u24 in *; lra]. }
  (* step 4 with s = 0: RN32(c 0 + z) = z *)
  assert (Er : RN32 (c * 0 + z) = z).
  { rewrite Rmult_0_r, Rplus_0_l. unfold z, mn, RN32. apply round_generic; try typeclasses eauto. apply format32_RN32. }
  (* step 5 *)
  assert (H5 : Rabs (y - (z + m)) <= u24 * (Rabs z + Rabs m)).
  { unfold y. rewrite Er. destruct (RN32_plus_rel z m (format32_RN32 _) Fm) as [H _].
    eapply Rle_trans; [exact H|]. apply Rmult_le_compat_l; [lra | apply Rabs_triang]. }
  replace (x - y) with (((x - m) - r32) + (r32 - z) - (y - (z + m))) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
  rewrite (Rabs_right (r32 - z)) by (unfold z; lra).
  assert (0 <= (1 + / 65536) * w / (2 * cmax)) by (apply div_nonneg; [apply Rmult_le_pos; lra | lra]).
  assert (u24 * (Rabs z + Rabs m) <= u24 * ((1 + u24) * K + K)) by (apply Rmult_le_compat_l; [lra|]; unfold K in *; lra).
  assert (Hsmall : u24 * K + u24 * ((1 + u24) * K + K) <= / 1048576 * K) by (unfold u24 in *; nra).
  assert (/ 2 ^ 122 <= / 2 ^ 121) by (apply Rinv_le_contravar; [apply pow_lt; lra | simpl; lra]).
  lra.
Qed.
