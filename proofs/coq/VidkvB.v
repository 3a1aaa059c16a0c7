(* VidkvB.v -- spec/bounds/vidkv.md §4-§6: the component scale [VIDKV-B-02], the
   inverse DFT's division [VIDKV-B-03] and the ternary threshold [VIDKV-B-04], from
   the rounding model (Flocq's RN32) and lemma W's summation tree (Vidkv.v). *)
From Coq Require Import Reals Lra Lia Psatz.
From Flocq Require Import Core.
From KvqCoq Require Import Sums Arith KeyQuant Vidkv.
Open Scope R_scope.
Local Instance prec24v : Prec_gt_0 24 := eq_refl.

Lemma rn32_model : forall x, exists e a,
  Rabs e <= u24 /\ Rabs a <= eta150 /\ RN32 x = x * (1 + e) + a.
Proof.
  intros x. destruct (spec_RN32_model x) as [e [a [He [Ha [_ Hx]]]]].
  exists e, a. rewrite bpow_m24 in He. rewrite bpow_m150 in Ha. auto.
Qed.

Lemma abs_le_split : forall x b, Rabs x <= b -> - b <= x <= b.
Proof. intros x b H. revert H. unfold Rabs. destruct (Rcase_abs x); intros; lra. Qed.

(* a tree whose leaves are all added *)
Fixpoint addonly (t : stree) : Prop :=
  match t with SLeaf _ s => s = false | SNode a b => addonly a /\ addonly b end.

Lemma ex_addonly : forall p t, addonly t -> (forall i, 0 <= p i) -> ex p t = asum p t.
Proof.
  intros p t Ht Hp. induction t as [i s | a IHa b IHb]; simpl in *.
  - subst s. simpl. rewrite Rabs_right by (apply Rle_ge, Hp). reflexivity.
  - destruct Ht. rewrite IHa, IHb by assumption. reflexivity.
Qed.

Lemma fl_nonneg : forall p t, addonly t -> (forall i, 0 <= p i) -> 0 <= fl p t.
Proof.
  intros p t Ht Hp. induction t as [i s | a IHa b IHb]; simpl in *.
  - subst s. simpl. apply Hp.
  - destruct Ht as [Ha Hb]. unfold RN32. rewrite <- (round_0 radix2 (FLT_exp (-149) 24) ZnearestE).
    apply round_le; try typeclasses eauto. specialize (IHa Ha). specialize (IHb Hb). lra.
Qed.

(* ---- [VIDKV-B-03] the inverse DFT's division -------------------------------------
   S^ within Dl of S (lemma W or F), |S| <= Aa, x'^ = RN32(S^ / N):
   |x'^ - S / N| <= Dl (1 + u) / N + u Aa / N + eta = rho_i. *)
Theorem VIDKV_B_03 : forall Sh S Dl Aa N,
  0 < N -> Rabs (Sh - S) <= Dl -> Rabs S <= Aa ->
  Rabs (RN32 (Sh / N) - S / N) <= Dl * (1 + u24) / N + u24 * Aa / N + eta150.
Proof.
  intros Sh S Dl Aa N HN HD HA.
  destruct (rn32_model (Sh / N)) as [e [a [He [Ha E]]]]. rewrite E.
  replace (Sh / N * (1 + e) + a - S / N) with ((Sh - S) / N * (1 + e) + e * (S / N) + a) by (field; lra).
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  pose proof (abs_le_split _ _ He).
  assert (H1 : Rabs ((Sh - S) / N * (1 + e)) <= Dl * (1 + u24) / N).
  { rewrite Rabs_mult, (Rabs_right (1 + e)) by lra. unfold Rdiv. rewrite Rabs_mult, (Rabs_right (/ N)) by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
    pose proof (Rabs_pos (Sh - S)). assert (0 < / N) by (apply Rinv_0_lt_compat; lra).
    replace (Dl * (1 + u24) * / N) with (Dl * / N * (1 + u24)) by ring.
    apply Rmult_le_compat; [apply Rmult_le_pos; lra | lra | apply Rmult_le_compat_r; lra | lra]. }
  assert (H2 : Rabs (e * (S / N)) <= u24 * Aa / N).
  { unfold Rdiv. rewrite !Rabs_mult, (Rabs_right (/ N)) by (apply Rle_ge; left; apply Rinv_0_lt_compat; lra).
    pose proof (Rabs_pos e). pose proof (Rabs_pos S). assert (0 < / N) by (apply Rinv_0_lt_compat; lra).
    rewrite <- Rmult_assoc. apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat; lra. }
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. lra.
Qed.

(* ---- [VIDKV-B-02] the component scale ----------------------------------------------
   S^ the binary32 sum along a tree t (leaves added, G = size t) of |y^_t|, binary32;
   |y^_t - Y_t| <= rho_t; s* = sum |Y_t| / G; s32^ = RN32(S^ / G):
   |s32^ - s*| <= (sum rho + gamma_{G-1}(sum |Y| + sum rho))(1 + u)/G + u s* + eta = rho_s. *)
Theorem VIDKV_B_02 : forall (yh Y rho : nat -> R) t,
  (forall i, format32 (yh i)) -> addonly t -> INR (size t - 1) * u24 < 1 ->
  (forall i, Rabs (yh i - Y i) <= rho i) ->
  let G := INR (size t) in
  let sY := asum Y t in
  let sr := asum rho t in
  Rabs (RN32 (fl (fun i => Rabs (yh i)) t / G) - sY / G)
  <= (sr + gamma (size t - 1) u24 * (sY + sr)) * (1 + u24) / G + u24 * (sY / G) + eta150.
Proof.
  intros yh Y rho t Fy Ht Hn Hr G sY sr.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (HG : 0 < G) by (unfold G; apply lt_0_INR; pose proof (size_pos t); lia).
  set (p := fun i => Rabs (yh i)).
  assert (Fp : forall i, format32 (p i)) by (intros; unfold p; apply generic_format_abs, Fy).
  pose proof (sum_tree_error p t Fp Hn) as T.
  assert (Ep : ex p t = asum p t) by (apply ex_addonly; [exact Ht | intros; apply Rabs_pos]).
  assert (EY : ex (fun i => Rabs (Y i)) t = sY) by (unfold sY; rewrite ex_addonly by (auto || (intros; apply Rabs_pos)); clear; induction t; simpl; [rewrite Rabs_Rabsolu | rewrite IHt1, IHt2]; reflexivity).
  assert (Hd : Rabs (asum p t - sY) <= sr).
  { rewrite <- Ep, <- EY. eapply Rle_trans; [apply ex_diff|]. unfold sr.
    clear -Hr. induction t; simpl; [|lra]. unfold p. eapply Rle_trans; [apply Rabs_triang_inv2|].
    eapply Rle_trans; [apply Hr | apply RRle_abs]. }
  assert (HsY : 0 <= sY) by (unfold sY; apply asum_nonneg).
  assert (Hsr : 0 <= sr) by (unfold sr; apply asum_nonneg).
  assert (Hg : 0 <= gamma (size t - 1) u24) by (apply gamma_nonneg; lra).
  rewrite Ep in T.
  assert (Hap : asum p t <= sY + sr) by (pose proof (abs_le_split _ _ Hd); lra).
  assert (HT : Rabs (fl p t - sY) <= sr + gamma (size t - 1) u24 * (sY + sr)).
  { replace (fl p t - sY) with ((fl p t - asum p t) + (asum p t - sY)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (gamma (size t - 1) u24 * asum p t <= gamma (size t - 1) u24 * (sY + sr)) by (apply Rmult_le_compat_l; lra).
    lra. }
  pose proof (VIDKV_B_03 (fl p t) sY _ sY G HG HT ltac:(rewrite Rabs_right by lra; lra)) as B.
  unfold p in B. eapply Rle_trans; [exact B|]. right. unfold Rdiv. ring.
Qed.

(* ---- [VIDKV-B-04] the ternary threshold ---------------------------------------------
   S^ = sum |v_i| (1 + theta), |theta| <= gamma_{m-1} (the binary32 sum of non-negative
   terms along any tree of m leaves); mean^ = RN32(S^ r), r = 1/m exactly (RN32(S^/m)) or
   RN32(1/m) (1/m >= 2^-126 normal: within u/m); alpha^ = RN32(gam mean^), 0 <= gam,
   gam u <= 1; alpha* = gam S / m:
   |alpha^ - alpha*| <= alpha* ((1 + gamma_{m-1})(1 + u)^3 - 1) + (gam + 2) eta = rho_a. *)
Theorem VIDKV_B_04 : forall (v : nat -> R) t r gam,
  (forall i, format32 (v i)) -> addonly t -> INR (size t - 1) * u24 < 1 ->
  Rabs (r - / INR (size t)) <= u24 * / INR (size t) -> 0 <= gam -> gam * u24 <= 1 ->
  let m := INR (size t) in
  let S := asum v t in
  let astar := gam * S / m in
  let ah := RN32 (gam * RN32 (fl (fun i => Rabs (v i)) t * r)) in
  Rabs (ah - astar) <= astar * ((1 + gamma (size t - 1) u24) * (1 + u24) ^ 3 - 1) + (gam + 2) * eta150.
Proof.
  intros v t r gam Fv Ht Hn Hr Hgam Hgu m S astar ah.
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  assert (Hm : 0 < m) by (unfold m; apply lt_0_INR; pose proof (size_pos t); lia).
  set (p := fun i => Rabs (v i)).
  assert (Fp : forall i, format32 (p i)) by (intros; unfold p; apply generic_format_abs, Fv).
  pose proof (sum_tree_error p t Fp Hn) as T.
  assert (Ep : ex p t = asum p t) by (apply ex_addonly; [exact Ht | intros; apply Rabs_pos]).
  assert (ES : asum p t = S) by (unfold S, p; clear; induction t; simpl; [rewrite Rabs_Rabsolu | rewrite IHt1, IHt2]; reflexivity).
  rewrite Ep, ES in T. set (g := gamma (size t - 1) u24) in *.
  assert (Hg : 0 <= g) by (apply gamma_nonneg; lra).
  assert (HS : 0 <= S) by (unfold S; apply asum_nonneg).
  set (Sh := fl p t) in *.
  (* r = (1/m)(1 + d0) *)
  set (d0 := (r - / m) * m).
  assert (Er : r = / m * (1 + d0)) by (unfold d0; field; lra).
  assert (Hd0 : Rabs d0 <= u24).
  { unfold d0. rewrite Rabs_mult, (Rabs_right m) by lra. fold m in Hr.
    apply Rle_trans with (u24 * / m * m); [apply Rmult_le_compat_r; lra | right; field; lra]. }
  destruct (rn32_model (Sh * r)) as [d1 [a1 [Hd1 [Ha1 E1]]]].
  destruct (rn32_model (gam * RN32 (Sh * r))) as [d2 [a2 [Hd2 [Ha2 E2]]]].
  unfold ah. change (fl (fun i => Rabs (v i)) t) with Sh. rewrite E2, E1.
  pose proof (abs_le_split _ _ Hd0). pose proof (abs_le_split _ _ Hd1). pose proof (abs_le_split _ _ Hd2).
  pose proof (abs_le_split _ _ Ha1). pose proof (abs_le_split _ _ Ha2).
  assert (He : 0 < eta150) by (unfold eta150; apply Rinv_0_lt_compat, pow_lt; lra).
  (* Sh = S (1 + th) *)
  assert (HT : - (g * S) <= Sh - S <= g * S) by (apply abs_le_split; exact T).
  set (X := Sh / S).
  (* the relative part: astar times a factor within [(1 - g)(1 - u)^3, (1 + g)(1 + u)^3] *)
  assert (Rel : Rabs (gam * (Sh * r * (1 + d1)) * (1 + d2) - astar) <= astar * ((1 + g) * (1 + u24) ^ 3 - 1)).
  { unfold astar. rewrite Er.
    replace (gam * (Sh * (/ m * (1 + d0)) * (1 + d1)) * (1 + d2) - gam * S / m)
      with (gam / m * (Sh * ((1 + d0) * (1 + d1) * (1 + d2)) - S)) by (field; lra).
    replace (gam * S / m * ((1 + g) * (1 + u24) ^ 3 - 1)) with (gam / m * (S * ((1 + g) * (1 + u24) ^ 3 - 1))) by (field; lra).
    assert (Hgm : 0 <= gam / m) by (apply div_nonneg; lra).
    rewrite Rabs_mult, (Rabs_right (gam / m)) by lra. apply Rmult_le_compat_l; [exact Hgm|].
    set (Q := (1 + d0) * (1 + d1) * (1 + d2)).
    assert (Q0 : (1 - u24) ^ 3 <= Q) by (unfold Q; simpl; rewrite Rmult_1_r;
      assert (0 <= (1 - u24) * (1 - u24)) by nra; assert ((1 - u24) * (1 - u24) <= (1 + d0) * (1 + d1)) by (apply Rmult_le_compat; lra);
      replace ((1 - u24) * ((1 - u24) * (1 - u24))) with ((1 - u24) * (1 - u24) * (1 - u24)) by ring; apply Rmult_le_compat; lra).
    assert (Q1 : Q <= (1 + u24) ^ 3) by (unfold Q; simpl; rewrite Rmult_1_r;
      assert ((1 + d0) * (1 + d1) <= (1 + u24) * (1 + u24)) by (apply Rmult_le_compat; lra);
      replace ((1 + u24) * ((1 + u24) * (1 + u24))) with ((1 + u24) * (1 + u24) * (1 + u24)) by ring; apply Rmult_le_compat; nra).
    assert (HSh0 : 0 <= Sh) by (unfold Sh; apply fl_nonneg; [exact Ht | intros; unfold p; apply Rabs_pos]).
    assert (HQ0 : 0 <= Q) by (assert (0 <= (1 - u24) ^ 3) by (apply pow_le; lra); lra).
    assert (Up : Sh * Q <= S * (1 + g) * (1 + u24) ^ 3) by (apply Rmult_le_compat; lra).
    assert (Lo : S * (1 - g) * (1 - u24) ^ 3 <= Sh * Q).
    { destruct (Rle_dec 0 (1 - g)).
      - apply Rmult_le_compat; [nra | assert (0 <= (1 - u24) ^ 3) by (apply pow_le; lra); lra | lra | exact Q0].
      - assert (0 <= (1 - u24) ^ 3) by (apply pow_le; lra). assert (0 <= Sh * Q) by (apply Rmult_le_pos; lra). nra. }
    (* (1 - u)^3 + (1 + u)^3 >= 2 and the g terms *)
    assert (C3 : (1 - u24) ^ 3 + (1 + u24) ^ 3 >= 2) by (simpl; nra).
    assert (C4 : (1 - u24) ^ 3 <= (1 + u24) ^ 3) by (apply pow_incr; lra).
    assert (0 <= (1 - u24) ^ 3) by (apply pow_le; lra).
    unfold Rabs. destruct (Rcase_abs (Sh * Q - S)); nra. }
  assert (Abs : Rabs (gam * a1 * (1 + d2) + a2) <= (gam + 2) * eta150).
  { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_right gam), (Rabs_right (1 + d2)) by lra.
    pose proof (Rabs_pos a1).
    assert (gam * Rabs a1 * (1 + d2) <= gam * eta150 * (1 + u24)) by (apply Rmult_le_compat; [nra | lra | apply Rmult_le_compat_l; lra | lra]).
    assert (gam * eta150 * u24 <= eta150) by nra. nra. }
  replace (gam * (Sh * r * (1 + d1) + a1) * (1 + d2) + a2 - astar)
    with ((gam * (Sh * r * (1 + d1)) * (1 + d2) - astar) + (gam * a1 * (1 + d2) + a2)) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

(* the decision: a value farther than rho_a from alpha* compares with alpha^ as with alpha* *)
Theorem VIDKV_B_04_decide : forall x ah astar rho,
  Rabs (ah - astar) <= rho -> rho < Rabs (x - astar) -> (astar < x <-> ah < x).
Proof.
  intros x ah astar rho H1 H2. revert H1 H2. unfold Rabs.
  destruct (Rcase_abs (ah - astar)), (Rcase_abs (x - astar)); intros; split; intros; lra.
Qed.
