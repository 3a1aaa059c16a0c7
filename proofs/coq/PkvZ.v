(* PkvZ.v -- spec/bounds/pkv.md §1 step 6, [PKV-B-01]: a group whose scale flushed to 0.
   The pinned sequence of PkvF.v with s = RN32(RN32(mx - mn) / cmax) below 2^-126, so
   the stored scale is 0 ([KIVI-M-03]) and every element reconstructs to
   y = RN32(RN32(c 0 + z) + m) = RN32(z + m), whatever its code c: [PKV-B-01] holds; and
   the same with the residuals read as 0 under DAZ (the step's last sentence). *)
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

(* ---- DAZ: residuals read as 0 ---------------------------------------------------------

   Under DAZ (denormals are zero) a binary32 residual below 2^-126 in magnitude is read as
   0: daz r = 0 when |r| < 2^-126, else r.  It moves by less than 2^-126, keeps the format,
   does not grow and keeps the order, so the group's extremes read under DAZ are the DAZ
   readings of the extremes. *)
Definition daz (r : R) : R := if Rlt_dec (Rabs r) (bpow radix2 (-126)) then 0 else r.

Lemma daz_err : forall r, Rabs (daz r - r) < bpow radix2 (-126).
Proof.
  intros r. unfold daz. destruct (Rlt_dec (Rabs r) (bpow radix2 (-126))) as [H|H].
  - rewrite Rminus_0_l, Rabs_Ropp. exact H.
  - rewrite Rminus_diag_eq, Rabs_R0 by reflexivity. apply bpow_gt_0.
Qed.

Lemma daz_abs : forall r, Rabs (daz r) <= Rabs r.
Proof.
  intros r. unfold daz. destruct (Rlt_dec (Rabs r) (bpow radix2 (-126))); [rewrite Rabs_R0; apply Rabs_pos | lra].
Qed.

Lemma daz_format : forall r, format32 r -> format32 (daz r).
Proof.
  intros r H. unfold daz. destruct (Rlt_dec (Rabs r) (bpow radix2 (-126))); [apply generic_format_0 | exact H].
Qed.

Lemma daz_mono : forall a b, a <= b -> daz a <= daz b.
Proof.
  intros a b Hab. pose proof (bpow_gt_0 radix2 (-126)) as Hp. unfold daz.
  destruct (Rlt_dec (Rabs a) (bpow radix2 (-126))) as [Ha|Ha];
  destruct (Rlt_dec (Rabs b) (bpow radix2 (-126))) as [Hb|Hb]; try lra;
  revert Ha Hb; unfold Rabs; destruct (Rcase_abs a); destruct (Rcase_abs b); intros; lra.
Qed.

(* [PKV-B-01] step 6, its last sentence: a group whose scale flushed to 0 with its
   residuals read under DAZ -- the extremes mn' = daz(mn), mx' = daz(mx), the flush test
   RN32(RN32(mx' - mn') / cmax) < 2^-126 and z = mn' -- reconstructs every element within
   [PKV-B-01]: the 2^-126 the reading moves adds to the range's 2^-122, inside 2^-121. *)
Theorem PKV_B_01_daz : forall x m xa ma xb mb (cm : Z) c,
  format32 x -> format32 m -> format32 xa -> format32 ma -> format32 xb -> format32 mb ->
  (3 <= cm <= 15)%Z -> xa - ma <= x - m <= xb - mb ->
  let cmax := IZR cm in
  let mn := daz (RN32 (xa - ma)) in let mx := daz (RN32 (xb - mb)) in
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
  assert (Hb126 : bpow radix2 (-126) = / 2 ^ 126) by (rewrite pow_IZR; unfold bpow; f_equal).
  (* step 1 *)
  assert (H1 : Rabs ((x - m) - r32) <= u24 * K).
  { rewrite Rabs_minus_sym. eapply Rle_trans; [apply RN32_minus_rel2; assumption|].
    apply Rmult_le_compat_l; [lra|]. unfold K. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra. }
  set (mn0 := RN32 (xa - ma)) in *. set (mx0 := RN32 (xb - mb)) in *.
  assert (Hmn : mn0 <= r32) by (apply RN32_mono; exact Hlo).
  assert (Hmx : r32 <= mx0) by (apply RN32_mono; exact Hhi).
  pose proof (daz_err mn0) as Dn. pose proof (daz_err mx0) as Dx. fold mn mx in Dn, Dx.
  rewrite Hb126 in Dn, Dx.
  pose proof (RN32_minus_rel2 xa ma Fxa Fma) as Emn. fold mn0 in Emn.
  assert (Hz : Rabs z <= (1 + u24) * K).
  { unfold z. eapply Rle_trans; [apply daz_abs|]. fold mn0.
    replace mn0 with ((xa - ma) + (mn0 - (xa - ma))) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. unfold K. nra. }
  assert (Fmn : format32 mn) by (apply daz_format, format32_RN32).
  assert (Fmx : format32 mx) by (apply daz_format, format32_RN32).
  assert (HR0 : mn <= mx) by (apply daz_mono; lra).
  (* the flushed scale: the range read under DAZ is below 2^-122, as in PKV_B_01_flush *)
  set (R := RN32 (mx - mn)) in *.
  assert (HQ : R / cmax < bpow radix2 (-126)).
  { destruct (Rlt_le_dec (R / cmax) (bpow radix2 (-126))) as [H|H]; [exact H|].
    exfalso. assert (bpow radix2 (-126) <= RN32 (R / cmax)); [|lra].
    unfold RN32. apply round_ge_generic; try typeclasses eauto; [|exact H].
    apply generic_format_bpow. unfold FLT_exp. simpl. lia. }
  rewrite Hb126 in HQ.
  pose proof (RN32_minus_rel2 mx mn Fmx Fmn) as ER. fold R in ER.
  rewrite (Rabs_right (mx - mn)) in ER by lra.
  assert (HRl : (mx - mn) * (1 - u24) <= R)
    by (revert ER; unfold Rabs; destruct (Rcase_abs (R - (mx - mn))); intros; nra).
  assert (HRc : R < cmax / 2 ^ 126).
  { assert (E : R = R / cmax * cmax) by (field; lra). rewrite E.
    replace (cmax / 2 ^ 126) with (/ 2 ^ 126 * cmax) by (unfold Rdiv; ring).
    apply Rmult_lt_compat_r; [lra | exact HQ]. }
  assert (H126 : 0 < / 2 ^ 126) by (apply Rinv_0_lt_compat, pow_lt; lra).
  assert (Hr122 : mx - mn <= 16 * / 2 ^ 126).
  { set (t := / 2 ^ 126) in *. unfold Rdiv in *. fold t in HRc.
    assert (cmax * t <= 15 * t) by (apply Rmult_le_compat_r; lra).
    assert (15 * t <= 16 * t * (1 - u24)) by (unfold u24; lra).
    left. apply Rmult_lt_reg_r with (1 - u24); [lra | unfold u24 in *; lra]. }
  (* |r32 - z| <= 2^-122 + 2^-126: the DAZ readings move the extremes by less than 2^-126 *)
  assert (Hrange : Rabs (r32 - z) <= 17 * / 2 ^ 126).
  { unfold z. revert Dn Dx. unfold Rabs at 1 2. destruct (Rcase_abs (mn - mn0)); destruct (Rcase_abs (mx - mx0)); intros;
    unfold Rabs; destruct (Rcase_abs (r32 - mn)); lra. }
  (* step 4 with s = 0: RN32(c 0 + z) = z *)
  assert (Er : RN32 (c * 0 + z) = z).
  { rewrite Rmult_0_r, Rplus_0_l. unfold RN32. apply round_generic; try typeclasses eauto. exact Fmn. }
  (* step 5 *)
  assert (H5 : Rabs (y - (z + m)) <= u24 * (Rabs z + Rabs m)).
  { unfold y. rewrite Er. destruct (RN32_plus_rel z m Fmn Fm) as [H _].
    eapply Rle_trans; [exact H|]. apply Rmult_le_compat_l; [lra | apply Rabs_triang]. }
  replace (x - y) with (((x - m) - r32) + (r32 - z) - (y - (z + m))) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
  assert (0 <= (1 + / 65536) * w / (2 * cmax)) by (apply div_nonneg; [apply Rmult_le_pos; lra | lra]).
  assert (u24 * (Rabs z + Rabs m) <= u24 * ((1 + u24) * K + K)) by (apply Rmult_le_compat_l; [lra|]; unfold K in *; lra).
  assert (Hsmall : u24 * K + u24 * ((1 + u24) * K + K) <= / 1048576 * K) by (unfold u24 in *; nra).
  assert (17 * / 2 ^ 126 <= / 2 ^ 121).
  { replace (/ 2 ^ 121) with (32 * / 2 ^ 126) by (simpl; field). lra. }
  lra.
Qed.
