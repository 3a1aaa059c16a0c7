(* Vidkv.v -- spec/bounds/vidkv.md §2: lemma W, a weighted sum with approximate
   weights, summed in binary32 in any order and any parenthesisation (a summation
   tree whose leaves are the products, each added or subtracted). *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core.
From KvqCoq Require Import Sums Arith KeyQuant.
Open Scope R_scope.

(* ---- gamma_n ------------------------------------------------------------ *)

Lemma gamma_nonneg : forall n u, 0 <= u -> INR n * u < 1 -> 0 <= gamma n u.
Proof.
  intros. unfold gamma. apply div_nonneg; [apply Rmult_le_pos; [apply pos_INR | lra] | lra].
Qed.

Lemma gamma_mono : forall a b u, (a <= b)%nat -> 0 <= u -> INR b * u < 1 -> gamma a u <= gamma b u.
Proof.
  intros a b u Hab Hu Hb. unfold gamma. apply le_INR in Hab.
  assert (INR a * u <= INR b * u) by (apply Rmult_le_compat_r; lra).
  pose proof (pos_INR a).
  assert (0 <= INR a * u) by (apply Rmult_le_pos; lra).
  apply div_le_div; [lra | lra |]. nra.
Qed.

(* (1 + gamma_a)(1 + gamma_b) <= 1 + gamma_{a+b} *)
Lemma gamma_add : forall a b u, 0 <= u -> INR (a + b) * u < 1 ->
  (1 + gamma a u) * (1 + gamma b u) <= 1 + gamma (a + b) u.
Proof.
  intros a b u Hu H. rewrite plus_INR in H.
  pose proof (pos_INR a). pose proof (pos_INR b).
  assert (0 <= INR a * u) by (apply Rmult_le_pos; lra).
  assert (0 <= INR b * u) by (apply Rmult_le_pos; lra).
  unfold gamma. rewrite plus_INR.
  replace (1 + INR a * u / (1 - INR a * u)) with (/ (1 - INR a * u)) by (field; lra).
  replace (1 + INR b * u / (1 - INR b * u)) with (/ (1 - INR b * u)) by (field; lra).
  replace (1 + (INR a + INR b) * u / (1 - (INR a + INR b) * u)) with (/ (1 - (INR a + INR b) * u))
    by (field; lra).
  rewrite <- Rinv_mult. apply Rinv_le_contravar; [lra|].
  assert (0 <= INR a * u * (INR b * u)) by (apply Rmult_le_pos; lra). nra.
Qed.

(* ---- summation trees ---------------------------------------------------- *)

(* a leaf is term i, added (false) or subtracted (true) *)
Inductive stree : Type :=
  | SLeaf : nat -> bool -> stree
  | SNode : stree -> stree -> stree.

Fixpoint size (t : stree) : nat :=
  match t with SLeaf _ _ => 1 | SNode a b => size a + size b end.

Definition sgn (neg : bool) (x : R) : R := if neg then - x else x.

(* the exact value, the sum of |terms|, and the binary32 evaluation *)
Fixpoint ex (p : nat -> R) (t : stree) : R :=
  match t with SLeaf i s => sgn s (p i) | SNode a b => ex p a + ex p b end.
Fixpoint asum (p : nat -> R) (t : stree) : R :=
  match t with SLeaf i _ => Rabs (p i) | SNode a b => asum p a + asum p b end.
Fixpoint fl (p : nat -> R) (t : stree) : R :=
  match t with SLeaf i s => sgn s (p i) | SNode a b => RN32 (fl p a + fl p b) end.

Lemma size_pos : forall t, (1 <= size t)%nat.
Proof. induction t; simpl; lia. Qed.

Lemma asum_nonneg : forall p t, 0 <= asum p t.
Proof. induction t; simpl; [apply Rabs_pos | lra]. Qed.

Lemma format32_fl : forall p t, (forall i, format32 (p i)) -> format32 (fl p t).
Proof.
  intros p t H. destruct t; simpl.
  - unfold sgn. destruct b; [apply generic_format_opp|]; apply H.
  - apply format32_RN32.
Qed.

Lemma abs_sgn : forall s x, Rabs (sgn s x) = Rabs x.
Proof. intros. unfold sgn. destruct s; [apply Rabs_Ropp | reflexivity]. Qed.

Lemma ex_le_asum : forall p t, Rabs (ex p t) <= asum p t.
Proof.
  intros p t. induction t; simpl; [rewrite abs_sgn; lra|].
  eapply Rle_trans; [apply Rabs_triang | lra].
Qed.

(* Higham (4.4) for any order: |fl - ex| <= gamma_{M-1} sum |p_i| *)
Theorem sum_tree_error : forall p t,
  (forall i, format32 (p i)) -> INR (size t - 1) * u24 < 1 ->
  Rabs (fl p t - ex p t) <= gamma (size t - 1) u24 * asum p t.
Proof.
  intros p t Hp. assert (Hu : 0 <= u24) by (unfold u24; lra).
  induction t as [i s | a IHa b IHb]; intros Hn.
  - simpl. rewrite Rminus_eq_0, Rabs_R0. unfold gamma. simpl. unfold Rdiv. rewrite !Rmult_0_l. lra.
  - simpl size in *. simpl fl. simpl ex. simpl asum.
    pose proof (size_pos a). pose proof (size_pos b).
    set (na := size a) in *. set (nb := size b) in *.
    assert (Hna : INR (na - 1) * u24 < 1).
    { eapply Rle_lt_trans; [|exact Hn]. apply Rmult_le_compat_r; [exact Hu|]. apply le_INR. lia. }
    assert (Hnb : INR (nb - 1) * u24 < 1).
    { eapply Rle_lt_trans; [|exact Hn]. apply Rmult_le_compat_r; [exact Hu|]. apply le_INR. lia. }
    specialize (IHa Hna). specialize (IHb Hnb).
    set (fa := fl p a) in *. set (fb := fl p b) in *.
    set (ga := gamma (na - 1) u24) in *. set (gb := gamma (nb - 1) u24) in *.
    assert (Hga : 0 <= ga) by (apply gamma_nonneg; assumption).
    assert (Hgb : 0 <= gb) by (apply gamma_nonneg; assumption).
    pose proof (asum_nonneg p a). pose proof (asum_nonneg p b).
    (* the rounding of the addition: relative error only (H) *)
    destruct (RN32_plus_rel fa fb (format32_fl p a Hp) (format32_fl p b Hp)) as [Hr _].
    (* |fa| <= (1 + ga) asum a *)
    assert (Hfa : Rabs fa <= (1 + ga) * asum p a).
    { assert (Rabs (ex p a) <= asum p a).
      { clear -a. induction a; simpl; [rewrite abs_sgn; lra|].
        eapply Rle_trans; [apply Rabs_triang | lra]. }
      replace fa with (ex p a + (fa - ex p a)) by ring.
      eapply Rle_trans; [apply Rabs_triang | lra]. }
    assert (Hfb : Rabs fb <= (1 + gb) * asum p b).
    { assert (Rabs (ex p b) <= asum p b).
      { clear -b. induction b; simpl; [rewrite abs_sgn; lra|].
        eapply Rle_trans; [apply Rabs_triang | lra]. }
      replace fb with (ex p b + (fb - ex p b)) by ring.
      eapply Rle_trans; [apply Rabs_triang | lra]. }
    (* ga + u (1 + ga) <= gamma_{n-1}, and the same for b *)
    set (g := gamma (na + nb - 1) u24).
    assert (Hu1 : 1 + u24 <= 1 + gamma 1 u24).
    { unfold gamma. simpl INR. assert (u24 < 1) by (unfold u24; lra).
      apply Rplus_le_compat_l. apply le_div_r; [lra|]. nra. }
    assert (Ka : (1 + u24) * (1 + ga) <= 1 + g).
    { eapply Rle_trans. { apply Rmult_le_compat_r; [lra | exact Hu1]. }
      eapply Rle_trans; [apply gamma_add; [exact Hu|]|].
      - eapply Rle_lt_trans; [|exact Hn]. apply Rmult_le_compat_r; [exact Hu|]. apply le_INR. lia.
      - apply Rplus_le_compat_l. apply gamma_mono; [lia | exact Hu | exact Hn]. }
    assert (Kb : (1 + u24) * (1 + gb) <= 1 + g).
    { eapply Rle_trans. { apply Rmult_le_compat_r; [lra | exact Hu1]. }
      eapply Rle_trans; [apply gamma_add; [exact Hu|]|].
      - eapply Rle_lt_trans; [|exact Hn]. apply Rmult_le_compat_r; [exact Hu|]. apply le_INR. lia.
      - apply Rplus_le_compat_l. apply gamma_mono; [lia | exact Hu | exact Hn]. }
    replace (RN32 (fa + fb) - (ex p a + ex p b))
      with ((RN32 (fa + fb) - (fa + fb)) + (fa - ex p a) + (fb - ex p b)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    assert (Rabs (fa + fb) <= (1 + ga) * asum p a + (1 + gb) * asum p b)
      by (eapply Rle_trans; [apply Rabs_triang | lra]).
    assert (u24 * Rabs (fa + fb) <= u24 * ((1 + ga) * asum p a + (1 + gb) * asum p b))
      by (apply Rmult_le_compat_l; lra).
    (* ga A + u (1 + ga) A <= g A *)
    assert ((ga + u24 * (1 + ga)) * asum p a <= g * asum p a) by (apply Rmult_le_compat_r; nra).
    assert ((gb + u24 * (1 + gb)) * asum p b <= g * asum p b) by (apply Rmult_le_compat_r; nra).
    nra.
Qed.

(* ---- lemma W -------------------------------------------------------------- *)

Lemma asum_le : forall p z t c k, 0 <= c ->
  (forall i, Rabs (p i) <= c * Rabs (z i) + k) ->
  asum p t <= c * asum z t + INR (size t) * k.
Proof.
  intros p z t c k Hc H. induction t as [i s | a IHa b IHb]; simpl.
  - rewrite Rmult_1_l. apply H.
  - rewrite plus_INR. lra.
Qed.

Lemma ex_diff : forall p q t, Rabs (ex p t - ex q t) <= asum (fun i => p i - q i) t.
Proof.
  intros p q t. induction t as [i s | a IHa b IHb]; simpl.
  - unfold sgn. destruct s; [replace (- p i - - q i) with (- (p i - q i)) by ring; rewrite Rabs_Ropp|]; lra.
  - replace (ex p a + ex p b - (ex q a + ex q b)) with ((ex p a - ex q a) + (ex p b - ex q b)) by ring.
    eapply Rle_trans; [apply Rabs_triang | lra].
Qed.

Definition eta150 : R := / 2 ^ 150.

(* S = sum_i w_i z_i over the leaves of t (each term added or subtracted), |w_i| <= 1;
   S^ the binary32 evaluation along t of the products p_i = RN32(z_i w^_i),
   |w^_i - w_i| <= tau; M = size t:
   |S^ - S| <= (sum |z_i|) e_M + M eta (1 + gamma_{M-1}),
   e_M = tau + (1 + tau)(u + gamma_{M-1} (1 + u)). *)
Theorem VIDKV_lemma_W : forall (z w wh : nat -> R) tau t,
  0 <= tau ->
  (forall i, Rabs (w i) <= 1) -> (forall i, Rabs (wh i - w i) <= tau) ->
  INR (size t - 1) * u24 < 1 ->
  let g := gamma (size t - 1) u24 in
  Rabs (fl (fun i => RN32 (z i * wh i)) t - ex (fun i => z i * w i) t)
  <= asum z t * (tau + (1 + tau) * (u24 + g * (1 + u24)))
     + INR (size t) * eta150 * (1 + g).
Proof.
  intros z w wh tau t Htau Hw Hwh Hn g.
  set (p := fun i => RN32 (z i * wh i)).
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  assert (He : 0 <= eta150) by (unfold eta150; left; apply Rinv_0_lt_compat, pow_lt; lra).
  assert (Hg : 0 <= g) by (apply gamma_nonneg; assumption).
  assert (Hwh1 : forall i, Rabs (wh i) <= 1 + tau).
  { intros i. replace (wh i) with (w i + (wh i - w i)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. specialize (Hw i). specialize (Hwh i). lra. }
  (* per term *)
  assert (Hp1 : forall i, Rabs (p i - z i * w i) <= (tau + (1 + tau) * u24) * Rabs (z i) + eta150).
  { intros i. unfold p.
    replace (RN32 (z i * wh i) - z i * w i)
      with ((RN32 (z i * wh i) - z i * wh i) + z i * (wh i - w i)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    pose proof (RN32_abs_err (z i * wh i)) as R. fold eta150 in R. unfold a150 in R.
    rewrite Rabs_mult in *. pose proof (Rabs_pos (z i)).
    assert (Rabs (z i) * Rabs (wh i) <= Rabs (z i) * (1 + tau)) by (apply Rmult_le_compat_l; [lra | apply Hwh1]).
    assert (Rabs (z i) * Rabs (wh i - w i) <= Rabs (z i) * tau) by (apply Rmult_le_compat_l; [lra | apply Hwh]).
    assert (u24 * (Rabs (z i) * Rabs (wh i)) <= u24 * (Rabs (z i) * (1 + tau))) by (apply Rmult_le_compat_l; lra).
    unfold eta150. lra. }
  assert (Hp2 : forall i, Rabs (p i) <= (1 + tau) * (1 + u24) * Rabs (z i) + eta150).
  { intros i. unfold p.
    replace (RN32 (z i * wh i)) with (z i * wh i + (RN32 (z i * wh i) - z i * wh i)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    pose proof (RN32_abs_err (z i * wh i)) as R. unfold a150 in R.
    rewrite Rabs_mult in *. pose proof (Rabs_pos (z i)).
    assert (Rabs (z i) * Rabs (wh i) <= Rabs (z i) * (1 + tau)) by (apply Rmult_le_compat_l; [lra | apply Hwh1]).
    assert (u24 * (Rabs (z i) * Rabs (wh i)) <= u24 * (Rabs (z i) * (1 + tau))) by (apply Rmult_le_compat_l; lra).
    unfold eta150. nra. }
  assert (Fp : forall i, format32 (p i)) by (intros; apply format32_RN32).
  (* the summation, then the terms *)
  pose proof (sum_tree_error p t Fp Hn) as S1. fold g in S1.
  pose proof (ex_diff p (fun i => z i * w i) t) as S2.
  pose proof (asum_le p z t ((1 + tau) * (1 + u24)) eta150 ltac:(nra) Hp2) as A1.
  pose proof (asum_le (fun i => p i - z i * w i) z t (tau + (1 + tau) * u24) eta150 ltac:(nra) Hp1) as A2.
  pose proof (asum_nonneg z t). pose proof (pos_INR (size t)).
  replace (fl p t - ex (fun i => z i * w i) t) with ((fl p t - ex p t) + (ex p t - ex (fun i => z i * w i) t)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  assert (g * asum p t <= g * ((1 + tau) * (1 + u24) * asum z t + INR (size t) * eta150))
    by (apply Rmult_le_compat_l; lra).
  nra.
Qed.
