(* Tail.v -- tail masses at the level of blocks: the selector's slack
   [CERT-SEL-02] (spec/bounds/cert.md §4) and the paper's Eq. 12, the
   e^{3 Delta} form, under delta1 <= Delta / 2 [CERT-EK-05] (§6a). *)
From Coq Require Import Reals Lra Lia Psatz Arith.
From KvqCoq Require Import Sums Softmax KeyTerm Value.
Open Scope R_scope.

(* the Phase-1 log-mass of block b, L_b = ln sum_{i in b} e^{sh_i} [CERT-LM-01] *)
Definition logmass (n : nat) (blk : nat -> nat) (sh : nat -> R) (b : nat) : R :=
  ln (block_mass n blk (fun i => exp (sh i)) b).

Section Blocks.
Variables (n nb : nat) (blk : nat -> nat).
Hypothesis Hblk : forall i, (i < n)%nat -> (blk i < nb)%nat.
Hypothesis Hfull : forall b, (b < nb)%nat -> exists i, (i < n)%nat /\ blk i = b.

Lemma block_mass_pos : forall sh b, (b < nb)%nat -> 0 < block_mass n blk (fun i => exp (sh i)) b.
Proof.
  intros sh b Hb. destruct (Hfull b Hb) as [i [Hi Hbi]]. unfold block_mass.
  apply Rlt_le_trans with (if Nat.eqb (blk i) b then exp (sh i) else 0).
  - rewrite Hbi, Nat.eqb_refl. apply exp_pos.
  - apply (sum_ge_term n (fun j => if Nat.eqb (blk j) b then exp (sh j) else 0) i Hi).
    intros j _. destruct (Nat.eqb (blk j) b); [left; apply exp_pos | lra].
Qed.

(* the estimated tail mass over tokens equals the one over blocks *)
Lemma tail_mass_blocks : forall (Tb : nat -> bool) sh,
  tail_mass n (fun i => Tb (blk i)) sh = tail_mass nb Tb (logmass n blk sh).
Proof.
  intros Tb sh. unfold tail_mass, logmass.
  assert (Hnum : sum n (mask (fun i => Tb (blk i)) (fun j => exp (sh j)))
                 = sum nb (mask Tb (fun b => exp (ln (block_mass n blk (fun i => exp (sh i)) b))))).
  { transitivity (sum n (fun i => exp (sh i) * (if Tb (blk i) then 1 else 0))).
    { apply sum_ext. intros. unfold mask. destruct (Tb (blk i)); ring. }
    rewrite (regroup n nb blk (fun i => exp (sh i)) (fun b => if Tb b then 1 else 0) Hblk).
    apply sum_ext. intros b Hb. unfold mask. rewrite exp_ln by (apply block_mass_pos; exact Hb).
    destruct (Tb b); ring. }
  assert (Hden : sum n (fun j => exp (sh j))
                 = sum nb (fun b => exp (ln (block_mass n blk (fun i => exp (sh i)) b)))).
  { transitivity (sum n (fun i => exp (sh i) * 1)); [apply sum_ext; intros; ring|].
    rewrite (regroup n nb blk (fun i => exp (sh i)) (fun _ => 1) Hblk).
    apply sum_ext. intros b Hb. rewrite exp_ln by (apply block_mass_pos; exact Hb). ring. }
  rewrite Hnum, Hden. reflexivity.
Qed.

(* [CERT-SEL-02]: a kernel's log-masses Lt within delta1 of L; its own tail mass
   alpha~ <= 1 - tau implies alpha^ <= A(1 - tau, delta1), i.e.
   odds(alpha^) <= e^{2 delta1} odds(1 - tau): the coverage condition. *)
Theorem CERT_SEL_02_slack : forall (Tb : nat -> bool) sh (Lt : nat -> R) delta1 tau,
  (0 < nb)%nat -> 0 <= tau <= 1 ->
  (forall b, (b < nb)%nat -> Rabs (logmass n blk sh b - Lt b) <= delta1) ->
  tail_mass nb Tb Lt <= 1 - tau ->
  tail_mass n (fun i => Tb (blk i)) sh <= Aodds (1 - tau) delta1.
Proof.
  intros Tb sh Lt d1 tau Hnb Htau Hd Ht.
  assert (Hd1 : 0 <= d1) by (eapply Rle_trans; [apply Rabs_pos | apply (Hd 0%nat Hnb)]).
  rewrite tail_mass_blocks.
  eapply Rle_trans; [apply kvq_lemma_K2; [exact Hnb | exact Hd]|].
  apply Aodds_mono; [split; [apply tail_mass_range; exact Hnb | exact Ht] | lra | exact Hd1].
Qed.

(* [CERT-EK-05]: the paper variant's key term is at most the paper's Eq. 12,
   2 Vmax e^{3 Delta} alpha~ (e^{2 Delta} - 1), when the kernel's log-masses are
   within delta1 <= Delta / 2 of L_b. *)
Theorem CERT_EK_05 : forall d (Tb : nat -> bool) s sh v Vmax D (Lt : nat -> R) delta1,
  (0 < n)%nat ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vmax) ->
  (forall b, (b < nb)%nat -> Rabs (logmass n blk sh b - Lt b) <= delta1) ->
  delta1 <= D / 2 ->
  norm d (vsub (out n (softmax n (phase2_paper (fun i => Tb (blk i)) s sh)) v) (out n (softmax n s) v))
  <= 2 * Vmax * exp (3 * D) * tail_mass nb Tb Lt * (exp (2 * D) - 1).
Proof.
  intros d Tb s sh v Vmax D Lt d1 Hn Hsh HV Hd Hd12.
  set (T := fun i => Tb (blk i)).
  assert (Hnb : (0 < nb)%nat) by (pose proof (Hblk 0%nat Hn); lia).
  assert (HD : 0 <= D) by (eapply Rle_trans; [apply Rabs_pos | apply (Hsh 0%nat Hn)]).
  assert (Hd1 : 0 <= d1) by (eapply Rle_trans; [apply Rabs_pos | apply (Hd 0%nat Hnb)]).
  assert (HV0 : 0 <= Vmax) by (eapply Rle_trans; [apply norm_nonneg | apply (HV 0%nat Hn)]).
  set (s' := phase2_paper T s sh).
  assert (HF : forall i, (i < n)%nat -> T i = false -> s' i = s i)
    by (intros i _ Ti; unfold s', phase2_paper; rewrite Ti; reflexivity).
  assert (HT : forall i, (i < n)%nat -> Rabs (s' i - s i) <= D).
  { intros i Hi. unfold s', phase2_paper. destruct (T i); [apply Hsh, Hi|].
    rewrite Rminus_eq_0, Rabs_R0. exact HD. }
  (* Eq. 7 and Lemma A.3 *)
  eapply Rle_trans; [apply paper_thm43_eq7; exact HV|]. rewrite TV_sym.
  pose proof (paper_lemma_A3 n T s s' D Hn HD HF HT) as HA3.
  (* Eq. 14 over tokens, then over blocks against the kernel's estimates *)
  assert (H14 : tail_mass n T s <= exp (2 * D) * tail_mass n T sh).
  { apply paper_eq14; [exact Hn|]. intros i Hi. rewrite Rabs_minus_sym. apply Hsh, Hi. }
  assert (H14b : tail_mass n T sh <= exp (2 * d1) * tail_mass nb Tb Lt).
  { unfold T. rewrite tail_mass_blocks. apply paper_eq14; [exact Hnb | exact Hd]. }
  assert (Hexp : exp (2 * D) * exp (2 * d1) <= exp (3 * D))
    by (rewrite <- exp_plus; apply exp_le; lra).
  pose proof (exp_ge_1 (2 * D) ltac:(lra)).
  pose proof (tail_mass_range n T s Hn) as [R0 _].
  pose proof (tail_mass_range n T sh Hn) as [R1 _].
  pose proof (tail_mass_range nb Tb Lt Hnb) as [R2 _].
  pose proof (exp_pos (2 * D)). pose proof (exp_pos (2 * d1)).
  assert (Hal : tail_mass n T s <= exp (3 * D) * tail_mass nb Tb Lt).
  { eapply Rle_trans; [exact H14|].
    eapply Rle_trans; [apply Rmult_le_compat_l; [lra | exact H14b]|].
    rewrite <- Rmult_assoc. apply Rmult_le_compat_r; [exact R2 | exact Hexp]. }
  replace (2 * Vmax * exp (3 * D) * tail_mass nb Tb Lt * (exp (2 * D) - 1))
    with (2 * Vmax * (exp (3 * D) * tail_mass nb Tb Lt * (exp (2 * D) - 1))) by ring.
  apply Rmult_le_compat_l; [lra|].
  eapply Rle_trans; [exact HA3|]. apply Rmult_le_compat_r; [lra | exact Hal].
Qed.

End Blocks.

(* The paper's Theorem 4.4, Eq. 13: the true unnormalised mass of a block b
   (a mask over the tokens), M_b = sum_{t in b} e^{s_t - m_global}, is at most
   S_b e^{m'_b - m'_global + 2 Delta}, S_b = sum_{t in b} e^{s'_t - m'_b}, where s'
   are the estimated scores, |s_t - s'_t| <= Delta on every token, m_global bounds
   every s_t (the true maximum does) and m'_global is attained by some s'_j. *)
Theorem paper_thm44_eq13 : forall n (b : nat -> bool) s s' D mg mg' mb',
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= D) ->
  (forall t, (t < n)%nat -> s t <= mg) ->
  (exists j, (j < n)%nat /\ s' j = mg') ->
  sum n (mask b (fun t => exp (s t - mg)))
  <= sum n (mask b (fun t => exp (s' t - mb'))) * exp (mb' - mg' + 2 * D).
Proof.
  intros n b s s' D mg mg' mb' Hs Hmg [j [Hj Hj']].
  (* factor 2: m_global >= m'_global - Delta *)
  assert (Hm : mg' - D <= mg).
  { specialize (Hs j Hj). specialize (Hmg j Hj).
    assert (s' j - s j <= D) by (pose proof (RRle_abs (- (s j - s' j))) as T; rewrite Rabs_Ropp in T; lra).
    lra. }
  rewrite <- sum_scal_r. apply sum_le. intros t Ht. unfold mask. destruct (b t); [|lra].
  rewrite <- exp_plus. apply exp_le.
  (* factor 1: s_t <= s'_t + Delta *)
  assert (s t - s' t <= D) by (pose proof (RRle_abs (s t - s' t)); specialize (Hs t Ht); lra).
  lra.
Qed.
