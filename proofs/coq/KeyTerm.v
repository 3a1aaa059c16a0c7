(* KeyTerm.v -- spec/bounds/cert.md §4 (output form), §5 and §6a: the paper's
   Theorem 4.3 (Eq. 7), its Lemma A.3 with (20) and (21), kvq Theorem K.4
   [CERT-EK-04] and the paper's Eq. 15 form as a sound claim for the paper
   variant [CERT-VAR-03], kvq Theorem K.3 [CERT-EK-01]. *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums Softmax.
Open Scope R_scope.

(* the attention output sum_i w_i v_i of dimension d *)
Definition out (n : nat) (w : nat -> R) (v : nat -> vec) : vec :=
  vsum n (fun i => vscal (w i) (v i)).

Lemma out_sub : forall d n a b v,
  norm d (vsub (out n a v) (out n b v)) = norm d (vsum n (fun i => vscal (a i - b i) (v i))).
Proof.
  intros. apply norm_ext. intros c _. unfold vsub, out, vsum, vscal.
  rewrite <- sum_minus. apply sum_ext. intros. ring.
Qed.

(* ---- the paper's Theorem 4.3, Eq. 7 ---------------------------------------- *)

(* || sum_i (a_i - b_i) v_i || <= sum_i |a_i - b_i| V = 2 V TV(a, b) when every ||v_i|| <= V *)
Theorem paper_thm43_eq7 : forall d n a b v V,
  (forall i, (i < n)%nat -> norm d (v i) <= V) ->
  norm d (vsub (out n a v) (out n b v)) <= 2 * V * TV n a b.
Proof.
  intros d n a b v V HV. rewrite out_sub.
  eapply Rle_trans; [apply norm_wsum|].
  unfold TV. replace (2 * V * (/ 2 * sum n (fun i => Rabs (a i - b i))))
    with (sum n (fun i => Rabs (a i - b i)) * V) by field.
  rewrite <- sum_scal_r. apply sum_le. intros i Hi.
  apply Rmult_le_compat_l; [apply Rabs_pos | apply HV, Hi].
Qed.

(* ---- elementary facts ------------------------------------------------------ *)

Lemma exp_sub_bound : forall s s' D, Rabs (s' - s) <= D ->
  Rabs (exp s' - exp s) <= (exp D - 1) * exp s.
Proof.
  intros s s' D H.
  assert (- D <= s' - s <= D) as [H1 H2] by (unfold Rabs in H; destruct (Rcase_abs (s' - s)); lra).
  replace (exp s') with (exp s * exp (s' - s)) by (rewrite <- exp_plus; f_equal; ring).
  pose proof (exp_pos s). pose proof (exp_le _ _ H2). pose proof (exp_le _ _ H1).
  pose proof (exp_opp_mul D) as Hm. pose proof (exp_pos D). pose proof (exp_pos (- D)).
  (* 1 - e^{-D} <= e^D - 1 *)
  assert (1 - exp (- D) <= exp D - 1).
  { assert (0 <= (exp D - 1) * (exp D - 1)) by apply Rle_0_sqr.
    assert (exp D * (exp D - 1 - (1 - exp (- D))) = (exp D - 1) * (exp D - 1)).
    { replace (exp D * (exp D - 1 - (1 - exp (- D)))) with
        (exp D * exp D - 2 * exp D + exp (- D) * exp D) by ring. rewrite Hm. ring. }
    nra. }
  unfold Rabs. destruct (Rcase_abs (exp s * exp (s' - s) - exp s)); nra.
Qed.

Lemma one_minus_le : forall D, 0 <= D -> 1 - exp (- (2 * D)) <= exp (2 * D) - 1.
Proof.
  intros D HD. pose proof (exp_opp_mul (2 * D)). pose proof (exp_pos (2 * D)).
  pose proof (exp_pos (- (2 * D))).
  assert (0 <= (exp (2 * D) - 1) * (exp (2 * D) - 1)) by apply Rle_0_sqr.
  nra.
Qed.

Lemma softmax_ext : forall n x y i, (i < n)%nat -> (forall j, (j < n)%nat -> x j = y j) ->
  softmax n x i = softmax n y i.
Proof.
  intros n x y i Hi H. unfold softmax.
  rewrite (sum_ext n (fun j => exp (x j)) (fun j => exp (y j))) by (intros; rewrite H; auto).
  rewrite H by exact Hi. reflexivity.
Qed.

Lemma Rabs_minus_sym' : forall a b, Rabs (a - b) = Rabs (b - a).
Proof. intros. apply Rabs_minus_sym. Qed.

(* ---- the paper's Lemma A.3 ---------------------------------------------------

   a = softmax s (exact scores), a' = softmax s' with s' = s off the tail T (on F)
   and abs(s' - s) <= D on T; alpha_T = a(T) the true tail mass. *)

Section LemmaA3.
Variables (n : nat) (T : nat -> bool) (s s' : nat -> R) (D : R).
Hypothesis Hn : (0 < n)%nat.
Hypothesis HD : 0 <= D.
Hypothesis HF : forall i, (i < n)%nat -> T i = false -> s' i = s i.
Hypothesis HT : forall i, (i < n)%nat -> Rabs (s' i - s i) <= D.

Let Z := sum n (fun j => exp (s j)).
Let Z' := sum n (fun j => exp (s' j)).
Let ZT := sum n (mask T (fun j => exp (s j))).
Let ZF := sum n (mask (compl T) (fun j => exp (s j))).
Let ZT' := sum n (mask T (fun j => exp (s' j))).
Let ZF' := sum n (mask (compl T) (fun j => exp (s' j))).

Let HZ : 0 < Z.  Proof. apply sum_pos; [exact Hn | intros; apply exp_pos]. Qed.
Let HZ' : 0 < Z'. Proof. apply sum_pos; [exact Hn | intros; apply exp_pos]. Qed.
Let HZsplit : Z = ZT + ZF. Proof. apply sum_mask_split. Qed.
Let HZsplit' : Z' = ZT' + ZF'. Proof. apply sum_mask_split. Qed.
Let HZF : ZF' = ZF.
Proof.
  apply sum_ext. intros i Hi. unfold mask, compl. destruct (T i) eqn:Ti; simpl; [reflexivity|].
  rewrite HF by assumption. reflexivity.
Qed.
Let HZT0 : 0 <= ZT. Proof. apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos. Qed.
Let HZT0' : 0 <= ZT'. Proof. apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos. Qed.
Let HZF0 : 0 <= ZF. Proof. apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos. Qed.

Lemma alpha_T_eq : tail_mass n T s = ZT / Z.
Proof. reflexivity. Qed.

(* (20): on F, sum |a_t - a'_t| <= alpha_T (e^D - 1) *)
Theorem paper_lemma_A3_eq20 :
  sum n (mask (compl T) (fun i => Rabs (softmax n s i - softmax n s' i)))
  <= tail_mass n T s * (exp D - 1).
Proof.
  rewrite alpha_T_eq.
  (* each term on F: e^{s_i} |Z' - Z| / (Z Z') *)
  rewrite (sum_ext n _ (fun i => mask (compl T) (fun j => exp (s j)) i * (Rabs (Z' - Z) / (Z * Z')))).
  2: { intros i Hi. unfold mask, compl. destruct (T i) eqn:Ti; simpl; [ring|].
       unfold softmax. fold Z Z'. rewrite HF by assumption.
       replace (exp (s i) / Z - exp (s i) / Z') with (exp (s i) * ((Z' - Z) / (Z * Z')))
         by (field; lra).
       rewrite Rabs_mult, Rabs_right by (left; apply exp_pos).
       unfold Rdiv. rewrite Rabs_mult, (Rabs_right (/ (Z * Z'))).
       2: { left. apply Rinv_0_lt_compat. nra. }
       reflexivity. }
  rewrite sum_scal_r. fold ZF.
  (* |Z' - Z| = |ZT' - ZT| <= (e^D - 1) ZT *)
  assert (HdZ : Rabs (Z' - Z) <= (exp D - 1) * ZT).
  { rewrite HZsplit, HZsplit', HZF. replace (ZT' + ZF - (ZT + ZF)) with (ZT' - ZT) by ring.
    unfold ZT', ZT. rewrite <- sum_minus. eapply Rle_trans; [apply sum_abs|].
    rewrite <- sum_scal. apply sum_le. intros i Hi. unfold mask.
    destruct (T i); [| rewrite Rminus_0_r, Rabs_R0; ring_simplify; lra].
    apply exp_sub_bound, HT, Hi. }
  (* ZF <= Z' *)
  assert (HFZ : ZF <= Z') by (rewrite HZsplit', HZF; lra).
  pose proof (exp_ge_1 D HD).
  apply Rle_trans with (ZF * ((exp D - 1) * ZT / (Z * Z'))).
  { apply Rmult_le_compat_l; [exact HZF0|]. unfold Rdiv.
    apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; nra | exact HdZ]. }
  replace (ZT / Z * (exp D - 1)) with (Z' * ((exp D - 1) * ZT / (Z * Z'))) by (field; lra).
  apply Rmult_le_compat_r; [|exact HFZ].
  apply div_nonneg; [apply Rmult_le_pos; lra | nra].
Qed.

(* (21): on T, sum |a_t - a'_t| <= alpha_T (e^{2D} - 1), by the paper's Lemma A.1 *)
Theorem paper_lemma_A3_eq21 :
  sum n (mask T (fun i => Rabs (softmax n s i - softmax n s' i)))
  <= tail_mass n T s * (exp (2 * D) - 1).
Proof.
  set (e := fun i => s' i - s i).
  assert (He : forall i, (i < n)%nat -> Rabs (e i) <= D) by (intros; apply HT; assumption).
  apply Rle_trans with (sum n (mask T (fun i => (exp (2 * D) - 1) * softmax n s i))).
  - apply sum_le. intros i Hi. unfold mask. destruct (T i); [|lra].
    rewrite (softmax_ext n s' (vplus s e) i Hi) by (intros; unfold vplus, e; ring).
    rewrite softmax_tilt by exact Hn.
    pose proof (paper_lemma_A1_tilt n (softmax n s) e D i (softmax_dist n s Hn) He Hi) as [L U].
    pose proof (softmax_pos n s i Hn). pose proof (one_minus_le D HD).
    unfold Rabs. destruct (Rcase_abs (softmax n s i - tilt n (softmax n s) e i)); nra.
  - rewrite (sum_ext n _ (fun i => (exp (2 * D) - 1) * mask T (fun j => exp (s j)) i / Z)).
    2: { intros i Hi. unfold mask. destruct (T i); unfold softmax; fold Z; field; lra. }
    unfold Rdiv. rewrite sum_scal_r, sum_scal. fold ZT. unfold tail_mass. fold Z ZT.
    right. field. lra.
Qed.

(* Lemma A.3: ||a - a'||_1 <= alpha_T (e^{2D} + e^D - 2), so TV(a, a') <= alpha_T
   (e^{2D} + e^D - 2) / 2 <= alpha_T (e^{2D} - 1) (the lemma as the paper states it). *)
Theorem paper_lemma_A3_l1 :
  sum n (fun i => Rabs (softmax n s i - softmax n s' i))
  <= tail_mass n T s * (exp (2 * D) + exp D - 2).
Proof.
  rewrite (sum_mask_split n T). rewrite Rplus_comm.
  eapply Rle_trans; [apply Rplus_le_compat; [apply paper_lemma_A3_eq20 | apply paper_lemma_A3_eq21]|].
  right. ring.
Qed.

Theorem paper_lemma_A3 :
  TV n (softmax n s) (softmax n s') <= tail_mass n T s * (exp (2 * D) - 1).
Proof.
  unfold TV. pose proof paper_lemma_A3_l1.
  pose proof (tail_mass_range n T s Hn).
  assert (exp D <= exp (2 * D)) by (apply exp_le; lra).
  assert (tail_mass n T s * (exp (2 * D) + exp D - 2) <= tail_mass n T s * (2 * (exp (2 * D) - 1)))
    by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

End LemmaA3.

Lemma tanh_lt_1 : forall x, tanh x < 1.
Proof.
  intros. rewrite tanh_exp. pose proof (exp_pos x).
  apply Rlt_le_trans with ((exp x * exp x + 1) / (exp x * exp x + 1)).
  - apply Rmult_lt_compat_r; [apply Rinv_0_lt_compat; nra | lra].
  - right. field. nra.
Qed.

Lemma tanh_nonneg : forall x, 0 <= x -> 0 <= tanh x.
Proof. intros. rewrite <- tanh_0. apply tanh_le. exact H. Qed.

(* ---- kvq Theorem K.4 [CERT-EK-04]: the paper variant's key term --------------

   s: exact scores, sh: estimated scores (pinned INT8 keys), abs(sh_i - s_i) <= D
   on every token (Eq. 8 with D = Delta); T: the tail (unselected full blocks);
   the Phase-2 scores s' are s off T and sh on T; a = softmax s, a' = softmax s';
   alpha^ = the tail mass of softmax sh; Vmax >= ||v_i||. *)

Definition phase2_paper (T : nat -> bool) (s sh : nat -> R) (i : nat) : R :=
  if T i then sh i else s i.

Definition c2 (D : R) : R := (exp (2 * D) + exp D - 2) / 2.

Definition ekey_paper_variant (Vmax D alpha_hat : R) : R :=
  2 * Vmax * Rmin (tanh (D / 2)) (Aodds alpha_hat D * c2 D).

Theorem CERT_EK_04 : forall d n T s sh v Vmax D,
  (0 < n)%nat ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vmax) ->
  norm d (vsub (out n (softmax n (phase2_paper T s sh)) v) (out n (softmax n s) v))
  <= ekey_paper_variant Vmax D (tail_mass n T sh).
Proof.
  intros d n T s sh v Vmax D Hn Hsh HV.
  assert (HD : 0 <= D) by (eapply Rle_trans; [apply Rabs_pos | apply (Hsh 0%nat Hn)]).
  set (s' := phase2_paper T s sh).
  assert (HF : forall i, (i < n)%nat -> T i = false -> s' i = s i)
    by (intros i _ Ti; unfold s', phase2_paper; rewrite Ti; reflexivity).
  assert (HT : forall i, (i < n)%nat -> Rabs (s' i - s i) <= D).
  { intros i Hi. unfold s', phase2_paper. destruct (T i); [apply Hsh, Hi|].
    rewrite Rminus_eq_0, Rabs_R0. exact HD. }
  assert (HV0 : 0 <= Vmax) by (eapply Rle_trans; [apply norm_nonneg | apply (HV 0%nat Hn)]).
  eapply Rle_trans; [apply paper_thm43_eq7; exact HV|].
  unfold ekey_paper_variant. apply Rmult_le_compat_l; [lra|].
  apply Rmin_glb.
  - (* K.1 with e = s' - s *)
    replace (TV n (softmax n s') (softmax n s)) with
      (TV n (softmax n (vplus s (fun i => s' i - s i))) (softmax n s)).
    + apply kvq_lemma_K1; [exact Hn | exact HD | exact HT].
    + unfold TV. f_equal. apply sum_ext. intros i Hi.
      rewrite (softmax_ext n (vplus s (fun i => s' i - s i)) s' i Hi)
        by (intros; unfold vplus; ring). reflexivity.
  - (* Lemma A.3 before its last step, then alpha_T <= A by K.2 *)
    assert (Hl1 := paper_lemma_A3_l1 n T s s' D Hn HD HF HT).
    assert (HK2 : tail_mass n T s <= Aodds (tail_mass n T sh) D).
    { apply kvq_lemma_K2; [exact Hn|]. intros i Hi. rewrite Rabs_minus_sym. apply Hsh, Hi. }
    assert (Hc2 : 0 <= c2 D).
    { unfold c2. pose proof (exp_ge_1 D HD). pose proof (exp_ge_1 (2 * D) ltac:(lra)). lra. }
    unfold TV. rewrite (sum_ext n _ (fun i => Rabs (softmax n s i - softmax n s' i)))
      by (intros; apply Rabs_minus_sym).
    apply Rle_trans with (/ 2 * (tail_mass n T s * (exp (2 * D) + exp D - 2))).
    + apply Rmult_le_compat_l; [lra | exact Hl1].
    + replace (/ 2 * (tail_mass n T s * (exp (2 * D) + exp D - 2))) with (tail_mass n T s * c2 D)
        by (unfold c2; field).
      apply Rmult_le_compat_r; [exact Hc2 | exact HK2].
Qed.

(* The paper's Eq. 15 (Eq. 11) term 2 Vmax e^{2D} alpha^ (e^{2D} - 1) is at least
   K.4, so it is a sound claim for the paper variant [CERT-VAR-03]. *)
Theorem paper_eq15_ge_CERT_EK_04 : forall Vmax D alpha_hat,
  0 <= Vmax -> 0 <= D -> 0 <= alpha_hat <= 1 ->
  ekey_paper_variant Vmax D alpha_hat <= 2 * Vmax * exp (2 * D) * alpha_hat * (exp (2 * D) - 1).
Proof.
  intros Vmax D al HV HD Hal. unfold ekey_paper_variant.
  assert (HA := Aodds_le al D Hal HD).
  assert (HA0 : 0 <= Aodds al D).
  { unfold Aodds. pose proof (exp_ge_1 (2 * D) ltac:(lra)).
    apply div_nonneg; [apply Rmult_le_pos; lra|].
    assert (0 <= (exp (2 * D) - 1) * al) by (apply Rmult_le_pos; lra). lra. }
  assert (Hc : c2 D <= exp (2 * D) - 1).
  { unfold c2. assert (exp D <= exp (2 * D)) by (apply exp_le; lra). lra. }
  assert (Hc0 : 0 <= c2 D).
  { unfold c2. pose proof (exp_ge_1 D HD). pose proof (exp_ge_1 (2 * D) ltac:(lra)). lra. }
  eapply Rle_trans. { apply Rmult_le_compat_l; [lra | apply Rmin_r]. }
  replace (2 * Vmax * exp (2 * D) * al * (exp (2 * D) - 1))
    with (2 * Vmax * ((exp (2 * D) * al) * (exp (2 * D) - 1))) by ring.
  apply Rmult_le_compat_l; [lra|]. apply Rmult_le_compat; assumption.
Qed.

Theorem CERT_VAR_03 : forall d n T s sh v Vmax D,
  (0 < n)%nat ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vmax) ->
  norm d (vsub (out n (softmax n (phase2_paper T s sh)) v) (out n (softmax n s) v))
  <= 2 * Vmax * exp (2 * D) * tail_mass n T sh * (exp (2 * D) - 1).
Proof.
  intros d n T s sh v Vmax D Hn Hsh HV.
  assert (HD : 0 <= D) by (eapply Rle_trans; [apply Rabs_pos | apply (Hsh 0%nat Hn)]).
  assert (HV0 : 0 <= Vmax) by (eapply Rle_trans; [apply norm_nonneg | apply (HV 0%nat Hn)]).
  eapply Rle_trans; [apply CERT_EK_04; eassumption|].
  apply paper_eq15_ge_CERT_EK_04; [exact HV0 | exact HD | apply tail_mass_range; exact Hn].
Qed.

(* ---- kvq Theorem K.3 [CERT-EK-01]: the sparse variant's key term -------------

   pi = softmax of the estimated scores sh over the selection S (0 off S),
   p = softmax of the exact scores s over all tokens, T = compl S the tail. *)

Lemma msoftmax_dist : forall n S x,
  (exists j, (j < n)%nat /\ S j = true) -> is_dist n (msoftmax n S x).
Proof.
  intros n S x [j [Hj Sj]].
  assert (HZ : 0 < sum n (mask S (fun k => exp (x k))))
    by (apply sum_mask_pos with j; [exact Hj | exact Sj | intros; apply exp_pos]).
  split.
  - intros i Hi. unfold msoftmax. apply div_nonneg; [apply mask_nonneg; left; apply exp_pos | exact HZ].
  - unfold msoftmax, Rdiv. rewrite sum_scal_r. field. lra.
Qed.

Lemma TV_sym : forall n a b, TV n a b = TV n b a.
Proof. intros. unfold TV. f_equal. apply sum_ext. intros. apply Rabs_minus_sym. Qed.

Definition ekey_sparse (Vmax D alpha_hat : R) : R :=
  2 * Vmax * (Aodds alpha_hat D + (1 - Aodds alpha_hat D) * tanh (D / 2)).

Theorem kvq_thm_K3_TV : forall n S s sh D,
  (exists j, (j < n)%nat /\ S j = true) ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  TV n (msoftmax n S sh) (softmax n s)
  <= tail_mass n (compl S) s + (1 - tail_mass n (compl S) s) * tanh (D / 2).
Proof.
  intros n S s sh D HS Hsh.
  assert (Hn : (0 < n)%nat) by (destruct HS as [j [Hj _]]; lia).
  assert (HD : 0 <= D) by (eapply Rle_trans; [apply Rabs_pos | apply (Hsh 0%nat Hn)]).
  set (pi := msoftmax n S sh). set (p := softmax n s). set (pS := msoftmax n S s).
  set (al := tail_mass n (compl S) s).
  set (Z := sum n (fun j => exp (s j))).
  set (ZS := sum n (mask S (fun j => exp (s j)))).
  set (ZT := sum n (mask (compl S) (fun j => exp (s j)))).
  assert (HZ : 0 < Z) by (apply sum_pos; [exact Hn | intros; apply exp_pos]).
  assert (HZS : 0 < ZS) by (destruct HS as [j [Hj Sj]]; apply sum_mask_pos with j;
                            [exact Hj | exact Sj | intros; apply exp_pos]).
  assert (HZsplit : Z = ZS + ZT) by apply sum_mask_split.
  assert (HZT : 0 <= ZT) by (apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos).
  assert (Hal : al = ZT / Z) by reflexivity.
  assert (H1al : 1 - al = ZS / Z).
  { rewrite Hal. apply (Rmult_eq_reg_r Z); [|lra].
    unfold Rdiv. rewrite Rmult_minus_distr_r, !Rmult_assoc, Rinv_l by lra. lra. }
  assert (Hal01 : 0 <= 1 - al <= 1).
  { rewrite H1al. split; [apply div_nonneg; lra | apply div_le_r; lra]. }
  destruct (msoftmax_dist n S sh HS) as [Hpi0 Hpi1].
  destruct (msoftmax_dist n S s HS) as [HpS0 HpS1].
  destruct (softmax_dist n s Hn) as [Hp0 Hp1].
  fold pi in Hpi0, Hpi1. fold pS in HpS0, HpS1. fold p in Hp0, Hp1.
  rewrite TV_sym. rewrite TV_pos_part by (rewrite Hp1, Hpi1; reflexivity).
  rewrite (sum_mask_split n S). rewrite Rplus_comm.
  apply Rplus_le_compat.
  - (* the tail: pi = 0, sum_T p = alpha_T *)
    right. rewrite Hal.
    rewrite (sum_ext n _ (fun i => mask (compl S) (fun j => exp (s j)) i * / Z)).
    + rewrite sum_scal_r. reflexivity.
    + intros i Hi. unfold mask, compl. destruct (S i) eqn:Si; simpl; [ring|].
      assert (Hz : pi i = 0) by (unfold pi, msoftmax, mask; rewrite Si; unfold Rdiv; ring).
      rewrite Hz, Rminus_0_r. unfold pos. rewrite Rmax_left.
      * unfold p, softmax. fold Z. reflexivity.
      * left. unfold p. apply softmax_pos. exact Hn.
  - (* the selection: p = (1 - alpha_T) pS, and ((1 - al) a - b)^+ <= (1 - al) (a - b)^+ *)
    apply Rle_trans with ((1 - al) * sum n (fun i => pos (pS i - pi i))).
    + rewrite <- sum_scal. apply sum_le. intros i Hi. unfold mask.
      destruct (S i) eqn:Si.
      * assert (Hp : p i = (1 - al) * pS i).
        { unfold p, pS, softmax, msoftmax. fold Z ZS. rewrite H1al. unfold mask. rewrite Si. field. lra. }
        rewrite Hp. assert (0 <= pi i) by (apply Hpi0, Hi).
        unfold pos, Rmax.
        destruct (Rle_dec ((1 - al) * pS i - pi i) 0), (Rle_dec (pS i - pi i) 0); nra.
      * apply Rmult_le_pos; [lra | apply pos_nonneg].
    + apply Rmult_le_compat_l; [lra|].
      rewrite <- TV_pos_part by (rewrite HpS1, Hpi1; reflexivity).
      rewrite TV_sym.
      set (e := fun i => sh i - s i).
      replace (TV n pi pS) with (TV n (tilt n pS e) pS).
      * apply kvq_lemma_K1_tilt; [apply msoftmax_dist; exact HS | exact HD | exact Hsh].
      * unfold TV. f_equal. apply sum_ext. intros i Hi. unfold pi, pS.
        rewrite <- msoftmax_tilt by exact HZS.
        unfold msoftmax, vplus, e, mask.
        rewrite (sum_ext n (fun j => if S j then exp (s j + (sh j - s j)) else 0)
                           (fun j => if S j then exp (sh j) else 0))
          by (intros; destruct (S i0); [f_equal; f_equal; ring | reflexivity]).
        destruct (S i); [replace (s i + (sh i - s i)) with (sh i) by ring|]; reflexivity.
Qed.

Theorem CERT_EK_01 : forall d n S s sh v Vmax D,
  (exists j, (j < n)%nat /\ S j = true) ->
  (forall i, (i < n)%nat -> Rabs (sh i - s i) <= D) ->
  (forall i, (i < n)%nat -> norm d (v i) <= Vmax) ->
  norm d (vsub (out n (msoftmax n S sh) v) (out n (softmax n s) v))
  <= ekey_sparse Vmax D (tail_mass n (compl S) sh).
Proof.
  intros d n S s sh v Vmax D HS Hsh HV.
  assert (Hn : (0 < n)%nat) by (destruct HS as [j [Hj _]]; lia).
  assert (HD : 0 <= D) by (eapply Rle_trans; [apply Rabs_pos | apply (Hsh 0%nat Hn)]).
  assert (HV0 : 0 <= Vmax) by (eapply Rle_trans; [apply norm_nonneg | apply (HV 0%nat Hn)]).
  eapply Rle_trans; [apply paper_thm43_eq7; exact HV|].
  unfold ekey_sparse. apply Rmult_le_compat_l; [lra|].
  eapply Rle_trans; [apply kvq_thm_K3_TV; eassumption|].
  (* x + (1 - x) t is increasing in x (t < 1), and alpha_T <= A by K.2 *)
  assert (HK2 : tail_mass n (compl S) s <= Aodds (tail_mass n (compl S) sh) D).
  { apply kvq_lemma_K2; [exact Hn|]. intros i Hi. rewrite Rabs_minus_sym. apply Hsh, Hi. }
  pose proof (tanh_lt_1 (D / 2)).
  assert (tail_mass n (compl S) s * (1 - tanh (D / 2))
          <= Aodds (tail_mass n (compl S) sh) D * (1 - tanh (D / 2)))
    by (apply Rmult_le_compat_r; lra).
  lra.
Qed.
