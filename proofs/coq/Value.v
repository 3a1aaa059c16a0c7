(* Value.v -- spec/bounds/cert.md §9: the paper's Theorem 4.1 and Corollary 4.2
   (the value term, [CERT-EV-01]) and the Phase-1 bound of the Phase-2 block
   masses [CERT-EV-03]; and kvq Theorem K.5, the contract [CERT-CON-01]. *)
From Coq Require Import Reals Lra Lia Psatz Arith.
From KvqCoq Require Import Sums Softmax KeyTerm.
Open Scope R_scope.

(* Token i lies in block blk i < nb.  The mass of block b under w: *)
Definition block_mass (n : nat) (blk : nat -> nat) (w : nat -> R) (b : nat) : R :=
  sum n (fun i => if Nat.eqb (blk i) b then w i else 0).

Lemma sum_indicator : forall nb k (g : nat -> R), (k < nb)%nat ->
  sum nb (fun b => if Nat.eqb k b then g b else 0) = g k.
Proof.
  induction nb as [|nb IH]; intros k g Hk; [lia|]. simpl.
  destruct (Nat.eq_dec k nb) as [->|Hne].
  - rewrite Nat.eqb_refl. rewrite (sum_ext nb _ (fun _ => 0)); [rewrite sum_const0; ring|].
    intros b Hb. destruct (Nat.eqb_spec nb b); [lia | reflexivity].
  - rewrite IH by lia. destruct (Nat.eqb_spec k nb); [lia | ring].
Qed.

(* sum_i w_i eta_{blk i} = sum_b rho_b eta_b *)
Lemma regroup : forall n nb blk (w eta : nat -> R),
  (forall i, (i < n)%nat -> (blk i < nb)%nat) ->
  sum n (fun i => w i * eta (blk i)) = sum nb (fun b => block_mass n blk w b * eta b).
Proof.
  intros n nb blk w eta Hb. unfold block_mass.
  rewrite (sum_ext nb _ (fun b => sum n (fun i => if Nat.eqb (blk i) b then w i * eta b else 0))).
  2: { intros b _. rewrite <- sum_scal_r. apply sum_ext. intros i _. destruct (Nat.eqb (blk i) b); ring. }
  rewrite <- sum_swap. apply sum_ext. intros i Hi.
  rewrite (sum_indicator nb (blk i) (fun b => w i * eta b)) by (apply Hb, Hi). reflexivity.
Qed.

(* The paper's Theorem 4.1: a distribution w over tokens whose reconstructions
   are within eta of the originals moves the output by at most eta. *)
Theorem paper_thm41 : forall d n w vt v eta,
  (forall i, (i < n)%nat -> 0 <= w i) -> sum n w = 1 ->
  (forall i, (i < n)%nat -> norm d (vsub (vt i) (v i)) <= eta) ->
  norm d (out n w (fun i => vsub (vt i) (v i))) <= eta.
Proof.
  intros d n w vt v eta Hw H1 He. unfold out.
  eapply Rle_trans; [apply norm_wsum|].
  replace eta with (sum n w * eta) by (rewrite H1; ring). rewrite <- sum_scal_r.
  apply sum_le. intros i Hi. rewrite Rabs_right by (apply Rle_ge, Hw, Hi).
  apply Rmult_le_compat_l; [apply Hw, Hi | apply He, Hi].
Qed.

(* Corollary 4.2 [CERT-EV-01]: || sum_i w_i (vt_i - v_i) || <= sum_b rho_b eta_b
   for the Phase-2 distribution w of either variant (the sparse one is 0 off S). *)
Theorem CERT_EV_01 : forall d n nb blk w vt v eta,
  (forall i, (i < n)%nat -> (blk i < nb)%nat) ->
  (forall i, (i < n)%nat -> 0 <= w i) ->
  (forall i, (i < n)%nat -> norm d (vsub (vt i) (v i)) <= eta (blk i)) ->
  norm d (out n w (fun i => vsub (vt i) (v i))) <= sum nb (fun b => block_mass n blk w b * eta b).
Proof.
  intros d n nb blk w vt v eta Hb Hw He. unfold out.
  eapply Rle_trans; [apply norm_wsum|].
  rewrite <- regroup by exact Hb.
  apply sum_le. intros i Hi. rewrite Rabs_right by (apply Rle_ge, Hw, Hi).
  apply Rmult_le_compat_l; [apply Hw, Hi | apply He, Hi].
Qed.

(* [CERT-EV-03]: s' and sh differ by at most D on every token (they agree on the
   tail), so each Phase-2 block mass rho'_b lies within e^{+-2D} of the Phase-1
   estimated mass M_b = (softmax sh)(b). *)
Theorem CERT_EV_03 : forall n blk T s sh D b,
  (0 < n)%nat ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  exp (- (2 * D)) * block_mass n blk (softmax n sh) b
  <= block_mass n blk (softmax n (phase2_paper T s sh)) b
  <= exp (2 * D) * block_mass n blk (softmax n sh) b.
Proof.
  intros n blk T s sh D b Hn Hsh.
  set (e := fun i => phase2_paper T s sh i - sh i).
  assert (He : forall i, (i < n)%nat -> Rabs (e i) <= D).
  { intros i Hi. unfold e, phase2_paper. destruct (T i).
    - rewrite Rminus_eq_0, Rabs_R0. eapply Rle_trans; [apply Rabs_pos | apply (Hsh i Hi)].
    - rewrite Rabs_minus_sym. apply Hsh, Hi. }
  assert (Ha : forall i, (i < n)%nat ->
            softmax n (phase2_paper T s sh) i = tilt n (softmax n sh) e i).
  { intros i Hi. rewrite <- softmax_tilt by exact Hn. apply softmax_ext; [exact Hi|].
    intros. unfold vplus, e. ring. }
  unfold block_mass. rewrite <- !sum_scal. split; apply sum_le; intros i Hi;
    destruct (Nat.eqb (blk i) b); try lra; rewrite Ha by exact Hi;
    pose proof (paper_lemma_A1_tilt n (softmax n sh) e D i (softmax_dist n sh Hn) He Hi); lra.
Qed.

(* ---- kvq Theorem K.5, the contract [CERT-CON-01] ------------------------------

   O_kernel - O_ref_exact = (O_kernel - O_2) + sum_i w_i (vt_i - v_i)
                            + (sum_i w_i v_i - sum_i p_i v_i),
   O_2 = sum_i w_i vt_i, each term bounded by E_arith, E_val and E_key. *)

Theorem kvq_thm_K5 : forall d n (Ok : vec) w p vt v Ea Ev Ek,
  norm d (vsub Ok (out n w vt)) <= Ea ->
  norm d (out n w (fun i => vsub (vt i) (v i))) <= Ev ->
  norm d (vsub (out n w v) (out n p v)) <= Ek ->
  norm d (vsub Ok (out n p v)) <= Ea + Ev + Ek.
Proof.
  intros d n Ok w p vt v Ea Ev Ek Ha Hv Hk.
  assert (E : norm d (vsub Ok (out n p v))
              = norm d (vadd (vadd (vsub Ok (out n w vt)) (out n w (fun i => vsub (vt i) (v i))))
                             (vsub (out n w v) (out n p v)))).
  { apply norm_ext. intros c _. unfold vadd, vsub, out, vsum, vscal.
    assert (sum n (fun i => w i * (vt i c - v i c))
            = sum n (fun i => w i * vt i c) - sum n (fun i => w i * v i c))
      by (rewrite <- sum_minus; apply sum_ext; intros; ring).
    lra. }
  rewrite E. eapply Rle_trans; [apply norm_triangle|].
  pose proof (norm_triangle d (vsub Ok (out n w vt)) (out n w (fun i => vsub (vt i) (v i)))). lra.
Qed.

(* The contract of a paper-variant step at rungs 0-2: E_key of K.4, E_val of
   Corollary 4.2 with the Phase-2 masses, E_arith the kernel's (§7). *)
Theorem CERT_CON_01_paper : forall d n nb blk T s sh vt v (Ok : vec) Vmax D eta Ea,
  (0 < n)%nat ->
  (forall i, (i < n)%nat -> (blk i < nb)%nat) ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vmax) ->
  (forall i, (i < n)%nat -> norm d (vsub (vt i) (v i)) <= eta (blk i)) ->
  norm d (vsub Ok (out n (softmax n (phase2_paper T s sh)) vt)) <= Ea ->
  norm d (vsub Ok (out n (softmax n s) v))
  <= Ea + sum nb (fun b => block_mass n blk (softmax n (phase2_paper T s sh)) b * eta b)
        + ekey_paper_variant Vmax D (tail_mass n T sh).
Proof.
  intros d n nb blk T s sh vt v Ok Vmax D eta Ea Hn Hb Hsh HV He Ha.
  apply kvq_thm_K5 with (w := softmax n (phase2_paper T s sh)) (vt := vt); [exact Ha | |].
  - apply CERT_EV_01; [exact Hb | intros; apply (proj1 (softmax_dist n _ Hn)); assumption | exact He].
  - apply CERT_EK_04; assumption.
Qed.

(* The same for a sparse-variant step: E_key of K.3 [CERT-EK-01]. *)
Theorem CERT_CON_01_sparse : forall d n nb blk S s sh vt v (Ok : vec) Vmax D eta Ea,
  (exists j, (j < n)%nat /\ S j = true) ->
  (forall i, (i < n)%nat -> (blk i < nb)%nat) ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vmax) ->
  (forall i, (i < n)%nat -> norm d (vsub (vt i) (v i)) <= eta (blk i)) ->
  norm d (vsub Ok (out n (msoftmax n S sh) vt)) <= Ea ->
  norm d (vsub Ok (out n (softmax n s) v))
  <= Ea + sum nb (fun b => block_mass n blk (msoftmax n S sh) b * eta b)
        + ekey_sparse Vmax D (tail_mass n (compl S) sh).
Proof.
  intros d n nb blk S s sh vt v Ok Vmax D eta Ea HS Hb Hsh HV He Ha.
  apply kvq_thm_K5 with (w := msoftmax n S sh) (vt := vt); [exact Ha | |].
  - apply CERT_EV_01; [exact Hb | intros; apply (proj1 (msoftmax_dist n S sh HS)); assumption | exact He].
  - apply CERT_EK_01; assumption.
Qed.
