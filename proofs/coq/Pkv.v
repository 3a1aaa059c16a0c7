(* Pkv.v -- spec/bounds/pkv.md §1: the per-element reconstruction bound
   [PKV-B-01] of a residual group quantized with binary32 metadata, from the
   errors of its steps 1-5 as §1 states them (a group whose scale did not flush
   to 0; step 6, the flushed group, is not covered here). *)
From Coq Require Import Reals Lra Lia Psatz.
Open Scope R_scope.

(* u = 2^-24.  r = x - m the exact residual, r32 = RN32(r), s and z the
   group's scale and zero point, c its code (0 <= c <= cmax), rh = RN32(c s + z),
   y = RN32(rh + m); w the exact range of the group's residuals and
   K = |x| + |m| + |max r| + |min r|. *)
Theorem PKV_B_01_real : forall x m r32 s z c cmax rh y w K,
  let u := / 16777216 in
  3 <= cmax -> 0 <= c <= cmax -> 0 <= s -> 0 <= w <= K -> Rabs m <= K -> Rabs x <= K ->
  Rabs ((x - m) - r32) <= u * K ->                                   (* step 1 *)
  Rabs (c * s + z - r32) <= s * (/ 2 + / 262144) ->                  (* step 2 *)
  s * cmax <= (w + u * K) * ((1 + u) * (1 + u)) ->                   (* step 3 *)
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
  (* step 3: s (1/2 + 2^-18) <= (1 + 2^-16) w / (2 cmax) + u K *)
  assert (S3 : s * (/ 2 + / 262144) <= (1 + / 65536) * w / (2 * cmax) + / 16777216 * K).
  { assert (s * cmax * (1 + / 131072) <= (w + / 16777216 * K) * ((1 + / 16777216) * (1 + / 16777216)) * (1 + / 131072))
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
    assert (s * cmax <= (K + / 16777216 * K) * ((1 + / 16777216) * (1 + / 16777216))).
    { eapply Rle_trans; [exact H3|]. apply Rmult_le_compat_r; [nra | lra]. }
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_right by lra. nra. }
  assert (S4 : Rabs (rh - (c * s + z)) <= / 16777216 * (3001 / 1000 * K) + / 2 ^ 150).
  { eapply Rle_trans; [exact H4|]. apply Rplus_le_compat_r. apply Rmult_le_compat_l; lra. }
  (* step 5: |rh + m| <= 4.01 K *)
  assert (Hrm : Rabs (rh + m) <= 401 / 100 * K + 2 * / 2 ^ 150).
  { replace (rh + m) with ((rh - (c * s + z)) + (c * s + z) + m) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    lra. }
  assert (S5 : Rabs (y - (rh + m)) <= / 16777216 * (401 / 100 * K + 2 * / 2 ^ 150)).
  { eapply Rle_trans; [exact H5|]. apply Rmult_le_compat_l; lra. }
  (* the sum *)
  replace (x - y) with (((x - m) - r32) - (c * s + z - r32) - (rh - (c * s + z)) - (y - (rh + m))) by ring.
  unfold Rminus at 1 2 3.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. rewrite Rabs_Ropp.
  eapply Rle_trans; [apply Rplus_le_compat_r, Rplus_le_compat_r, Rabs_triang|]. rewrite Rabs_Ropp.
  fold (x - m). rewrite E. lra.
Qed.
