(* SageE.v -- spec/sage.md [SAGE-ATT-07] (e): the count of the denominator's roundings.
   Each of T threads keeps its row sum l over nb = R + 1 blocks, l_{b+1} =
   RN32(RN32(l_b alpha_b) + rs_b) (a rescale product and an addition, relative errors
   within u), rs_b the block's binary32 sum of its terms, each through at most 63
   roundings (a sum of 64); the final reduction adds at most 2 roundings per thread's l.
   Then every term q sits in l' with its rescalings w and a product of at most
   66 + 2R factors (1 +- u): 63 in its block, 1 to join l, 2 per later block, 2 at the end. *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums Arith Accum.
Open Scope R_scope.

(* the recursion of l (no rounding on the added term): at most 2n - 1 factors per term *)
Lemma racc_form_l : forall (a t rho sg : nat -> R) u n, 0 <= u < 1 ->
  (forall k, (k < n)%nat -> Rabs (rho k) <= u /\ Rabs (sg k) <= u) ->
  exists P, (forall k, (k < n)%nat -> (1 - u) ^ (2 * n - 1) <= P k <= (1 + u) ^ (2 * n - 1)) /\
    racc a t rho sg (fun _ => 0) n = sum n (fun k => weff a t n k * P k).
Proof.
  intros a t rho sg u n Hu. induction n as [|n IH]; intros H.
  - exists (fun _ => 1). split; [intros; lia | reflexivity].
  - destruct IH as [P [HP E]]; [intros; apply H; lia|].
    destruct (H n ltac:(lia)) as [Hr Hs].
    assert (B : forall x, Rabs x <= u -> 1 - u <= 1 + x <= 1 + u)
      by (intros x Hx; revert Hx; unfold Rabs; destruct (Rcase_abs x); intros; lra).
    destruct (B _ Hr) as [r0 r1]. destruct (B _ Hs) as [s0 s1].
    exists (fun k => if Nat.ltb k n then P k * ((1 + rho n) * (1 + sg n)) else 1 + sg n).
    split.
    + intros k Hk.
      destruct (Nat.ltb_spec k n) as [Hkn|Hkn].
      * destruct (HP k Hkn) as [P0 P1].
        replace (2 * S n - 1)%nat with (S (S (2 * n - 1))) by lia.
        assert (L2 : (1 - u) ^ S (S (2 * n - 1)) = (1 - u) ^ (2 * n - 1) * ((1 - u) * (1 - u))) by (simpl; ring).
        assert (U2 : (1 + u) ^ S (S (2 * n - 1)) = (1 + u) ^ (2 * n - 1) * ((1 + u) * (1 + u))) by (simpl; ring).
        assert (0 <= (1 - u) ^ (2 * n - 1)) by (apply pow_le; lra).
        rewrite L2, U2. split; apply Rmult_le_compat; try nra.
      * set (e := (2 * S n - 1 - 1)%nat).
        assert (0 <= (1 - u) ^ e) by (apply pow_le; lra).
        assert ((1 - u) ^ e <= 1) by (apply pow_le_one; lra).
        assert (1 <= (1 + u) ^ e) by (apply pow_R1_Rle; lra).
        replace (2 * S n - 1)%nat with (S e) by (unfold e; lia).
        change ((1 - u) ^ S e) with ((1 - u) * (1 - u) ^ e). change ((1 + u) ^ S e) with ((1 + u) * (1 + u) ^ e).
        split; nra.
    + simpl racc. rewrite E.
      simpl sum. simpl weff. rewrite Nat.ltb_irrefl.
      rewrite Rplus_0_r, Rmult_1_r, Rmult_plus_distr_r. f_equal; try ring.
      rewrite !Rmult_assoc, <- sum_scal_r. apply sum_ext. intros k Hk.
      destruct (Nat.ltb_spec k n) as [_|Hkn]; [ring | lia].
Qed.

Theorem SAGE_ATT_07_e_count : forall T nb u (alpha F : nat -> R) (q Q : nat -> nat -> nat -> R)
    (rl sl : nat -> nat -> R),
  0 <= u < 1 ->
  (forall th k, (th < T)%nat -> (k < nb)%nat -> Rabs (rl th k) <= u /\ Rabs (sl th k) <= u) ->
  (forall th b j, (1 - u) ^ 63 <= Q th b j <= (1 + u) ^ 63) ->
  (forall th, (1 - u) ^ 2 <= F th <= (1 + u) ^ 2) ->
  let rs th b := sum 64 (fun j => q th b j * Q th b j) in
  let l th := racc alpha (rs th) (rl th) (sl th) (fun _ => 0) nb in
  exists Pi : nat -> nat -> nat -> R,
    (forall th b j, (th < T)%nat -> (b < nb)%nat ->
       (1 - u) ^ (66 + 2 * (nb - 1)) <= Pi th b j <= (1 + u) ^ (66 + 2 * (nb - 1))) /\
    sum T (fun th => l th * F th)
    = sum T (fun th => sum nb (fun b => weff alpha (fun _ => 1) nb b * sum 64 (fun j => q th b j * Pi th b j))).
Proof.
  intros T nb u alpha F q Q rl sl Hu Hr HQ HF rs l.
  (* per thread: the recursion's factors *)
  assert (Hth : forall th, (th < T)%nat -> exists P : nat -> R,
            (forall b, (b < nb)%nat -> (1 - u) ^ (2 * nb - 1) <= P b <= (1 + u) ^ (2 * nb - 1)) /\
            l th = sum nb (fun b => weff alpha (rs th) nb b * P b)).
  { intros th Hth. apply racc_form_l; [exact Hu|]. intros k Hk. apply Hr; assumption. }
  (* choose them for every thread *)
  assert (Ch : exists P : nat -> nat -> R, forall th, (th < T)%nat ->
            (forall b, (b < nb)%nat -> (1 - u) ^ (2 * nb - 1) <= P th b <= (1 + u) ^ (2 * nb - 1)) /\
            l th = sum nb (fun b => weff alpha (rs th) nb b * P th b)).
  { clear -Hth. induction T as [|T IH].
    - exists (fun _ _ => 1). intros; lia.
    - destruct IH as [P HP]; [intros; apply Hth; lia|].
      destruct (Hth T ltac:(lia)) as [PT HPT].
      exists (fun th => if Nat.eqb th T then PT else P th). intros th Hth'.
      destruct (Nat.eqb_spec th T) as [->|Hne]; [exact HPT | apply HP; lia]. }
  destruct Ch as [P HP].
  exists (fun th b j => Q th b j * P th b * F th). split.
  - intros th b j Hth' Hb. destruct (HP th Hth') as [HPb _]. destruct (HPb b Hb) as [P0 P1].
    destruct (HQ th b j) as [Q0 Q1]. destruct (HF th) as [F0 F1].
    assert (E : (66 + 2 * (nb - 1) = 63 + (2 * nb - 1) + 2)%nat) by lia.
    rewrite E, !pow_add.
    assert (0 <= (1 - u) ^ 63) by (apply pow_le; lra).
    assert (0 <= (1 - u) ^ (2 * nb - 1)) by (apply pow_le; lra).
    assert (0 <= (1 - u) ^ 2) by (apply pow_le; lra).
    assert (A : (1 - u) ^ 63 * (1 - u) ^ (2 * nb - 1) <= Q th b j * P th b) by (apply Rmult_le_compat; lra).
    assert (B : Q th b j * P th b <= (1 + u) ^ 63 * (1 + u) ^ (2 * nb - 1)) by (apply Rmult_le_compat; lra).
    assert (0 <= (1 - u) ^ 63 * (1 - u) ^ (2 * nb - 1)) by (apply Rmult_le_pos; lra).
    split; apply Rmult_le_compat; lra.
  - apply sum_ext. intros th Hth'. destruct (HP th Hth') as [_ ->].
    rewrite <- sum_scal_r. apply sum_ext. intros b Hb.
    (* weff of the block sums: the block's sum times its rescalings *)
    assert (W : forall (t : nat -> R), weff alpha t nb b = weff alpha (fun _ => 1) nb b * t b).
    { intros t. clear -Hb. induction nb as [|n IH]; [lia|]. simpl.
      destruct (Nat.ltb_spec b n) as [Hbn|Hbn]; [rewrite IH by exact Hbn; ring | replace b with n by lia; ring]. }
    rewrite W. unfold rs. rewrite Rmult_assoc, Rmult_assoc. f_equal.
    rewrite <- sum_scal_r. apply sum_ext. intros j _. ring.
Qed.

(* (e) B_j from the count: a term's factor Pi in [(1 - u)^K, (1 + u)^K] (K = 66 + 2R,
   SAGE_ATT_07_e_count) times theta_j in [tlo, thi] is 1 + b_j with
   |b_j| <= B_j = max(thi (1 + u)^K - 1, 1 - tlo (1 - u)^K) *)
Theorem SAGE_ATT_07_e_B : forall theta tlo thi Pi u K,
  0 <= u < 1 -> 0 <= tlo <= theta -> theta <= thi -> (1 - u) ^ K <= Pi <= (1 + u) ^ K ->
  Rabs (theta * Pi - 1) <= Rmax (thi * (1 + u) ^ K - 1) (1 - tlo * (1 - u) ^ K).
Proof.
  intros theta tlo thi Pi u K Hu [H0 H1] H2 [P0 P1].
  assert (0 <= (1 - u) ^ K) by (apply pow_le; lra).
  assert (theta * Pi <= thi * (1 + u) ^ K) by (apply Rmult_le_compat; lra).
  assert (tlo * (1 - u) ^ K <= theta * Pi) by (apply Rmult_le_compat; lra).
  unfold Rabs. destruct (Rcase_abs (theta * Pi - 1)).
  - eapply Rle_trans; [|apply Rmax_r]. lra.
  - eapply Rle_trans; [|apply Rmax_l]. lra.
Qed.
