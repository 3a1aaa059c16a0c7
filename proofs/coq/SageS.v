(* SageS.v -- spec/sage.md [SAGE-ATT-07] (e): the per-term form of a binary32 sum along
   any binary summation tree (Vidkv.v's stree: any order, any parenthesisation).  Every
   term reaches the result through the roundings of the nodes above it, at most the tree's
   height: the sum is sum_i p_i Q_i with each Q_i in [(1 - u)^h, (1 + u)^h].  A block's own
   sum of 64 terms (the row sum's block term, h <= 63) and the final reduction of the
   threads' sums (a balanced tree of 4, h = 2) are the two instances SAGE_ATT_07_e_count
   takes in this form. *)
From Coq Require Import Reals Lra Lia Psatz ZArith List Permutation.
From Flocq Require Import Core.
From KvqCoq Require Import Sums Arith KeyQuant Vidkv SageW.
Import ListNotations.
Open Scope R_scope.

Fixpoint height (t : stree) : nat :=
  match t with SLeaf _ _ => O | SNode a b => S (Nat.max (height a) (height b)) end.

Fixpoint leaves (t : stree) : list nat :=
  match t with SLeaf i _ => [i] | SNode a b => leaves a ++ leaves b end.

(* every term added (a sum of nonnegative weights, not a difference) *)
Fixpoint added (t : stree) : Prop :=
  match t with SLeaf _ s => s = false | SNode a b => added a /\ added b end.

Lemma NoDup_app_split : forall (l m : list nat), NoDup (l ++ m) ->
  NoDup l /\ NoDup m /\ (forall x, In x l -> In x m -> False).
Proof.
  intros l m. induction l as [|a l IH]; simpl; intros H.
  - split; [constructor | split; [exact H | intros x []]].
  - inversion H as [|a' l' Hn Hd]; subst. destruct (IH Hd) as [Hl [Hm Hx]].
    split; [constructor; [intros Hi; apply Hn, in_or_app; left; exact Hi | exact Hl]|].
    split; [exact Hm|]. intros x [<-|Hi] Hj; [apply Hn, in_or_app; right; exact Hj | exact (Hx x Hi Hj)].
Qed.

Lemma height_size : forall t, (height t <= size t - 1)%nat.
Proof. induction t; simpl; [lia|]. pose proof (size_pos t1). pose proof (size_pos t2). lia. Qed.

Lemma size_leaves : forall t, length (leaves t) = size t.
Proof. induction t; simpl; [reflexivity|]. rewrite app_length. lia. Qed.

Lemma ex_ext : forall f g t, (forall i, In i (leaves t) -> f i = g i) -> ex f t = ex g t.
Proof.
  intros f g t H. induction t as [i s|a IHa b IHb]; simpl.
  - rewrite H; [reflexivity | simpl; auto].
  - rewrite IHa, IHb; [reflexivity| |]; intros i Hi; apply H; simpl; apply in_or_app; auto.
Qed.

Lemma ex_scal : forall f c t, ex (fun i => f i * c) t = ex f t * c.
Proof. intros f c t. induction t as [i s|a IHa b IHb]; simpl; [unfold sgn; destruct s; ring | rewrite IHa, IHb; ring]. Qed.

Lemma pow_1mu_anti : forall u k K, 0 <= u <= 1 -> (k <= K)%nat -> (1 - u) ^ K <= (1 - u) ^ k.
Proof.
  intros u k K Hu HkK. replace K with (k + (K - k))%nat by lia. rewrite pow_add.
  assert (0 <= (1 - u) ^ k) by (apply pow_le; lra).
  assert ((1 - u) ^ (K - k) <= 1) by (apply pow_le1; lra).
  assert (0 <= (1 - u) ^ (K - k)) by (apply pow_le; lra). nra.
Qed.

(* a binary32 sum along t of binary32 terms (leaf indices distinct) is sum_leaves p_i Q_i,
   each Q_i in [(1 - u)^h, (1 + u)^h], h the height of t *)
Theorem SAGE_ATT_07_e_tree : forall p t,
  (forall i, format32 (p i)) -> NoDup (leaves t) ->
  exists Q : nat -> R, (forall i, (1 - u24) ^ height t <= Q i <= (1 + u24) ^ height t) /\
    fl p t = ex (fun i => p i * Q i) t.
Proof.
  intros p t Hp. assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  induction t as [i s|a IHa b IHb]; intros Hd.
  - exists (fun _ => 1). split; [intros; simpl; lra|]. simpl. rewrite Rmult_1_r. reflexivity.
  - simpl leaves in Hd. destruct (NoDup_app_split _ _ Hd) as [Ha [Hb Hab]].
    destruct (IHa Ha) as [Qa [HQa Ea]]. destruct (IHb Hb) as [Qb [HQb Eb]].
    simpl fl. set (fa := fl p a) in *. set (fb := fl p b) in *.
    destruct (RN32_plus_rel fa fb (format32_fl p a Hp) (format32_fl p b Hp)) as [Hr _].
    destruct (Req_dec (fa + fb) 0) as [Z|NZ].
    + (* an exact zero: any factor in range *)
      exists (fun i => if in_dec Nat.eq_dec i (leaves a) then Qa i else Qb i).
      split.
      * intros i. simpl height. destruct (in_dec Nat.eq_dec i (leaves a)).
        -- destruct (HQa i) as [L U]. split.
           ++ eapply Rle_trans; [|exact L]. apply pow_1mu_anti; [lra | lia].
           ++ eapply Rle_trans; [exact U|]. apply Rle_pow; [lra | lia].
        -- destruct (HQb i) as [L U]. split.
           ++ eapply Rle_trans; [|exact L]. apply pow_1mu_anti; [lra | lia].
           ++ eapply Rle_trans; [exact U|]. apply Rle_pow; [lra | lia].
      * rewrite Z in Hr |- *. rewrite Rminus_0_r, Rabs_R0, Rmult_0_r in Hr.
        assert (R0 : RN32 0 = 0) by (unfold RN32; apply round_0; auto with typeclass_instances).
        rewrite R0. simpl ex.
        rewrite (ex_ext _ (fun i => p i * Qa i) a), (ex_ext _ (fun i => p i * Qb i) b).
        -- rewrite <- Ea, <- Eb. fold fa fb. lra.
        -- intros i Hi. destruct (in_dec Nat.eq_dec i (leaves a)) as [Hia|]; [|reflexivity].
           exfalso. exact (Hab i Hia Hi).
        -- intros i Hi. destruct (in_dec Nat.eq_dec i (leaves a)); [reflexivity | contradiction].
    + set (dl := (RN32 (fa + fb) - (fa + fb)) / (fa + fb)).
      assert (Ed : RN32 (fa + fb) = (fa + fb) * (1 + dl)) by (unfold dl; field; exact NZ).
      assert (Hdl : - u24 <= dl <= u24).
      { assert (Rabs dl <= u24).
        { unfold dl, Rdiv. rewrite Rabs_mult, Rabs_inv.
          apply Rmult_le_reg_r with (Rabs (fa + fb)); [apply Rabs_pos_lt; exact NZ|].
          rewrite Rmult_assoc, Rinv_l, Rmult_1_r by (apply Rabs_no_R0; exact NZ). exact Hr. }
        revert H. unfold Rabs. destruct (Rcase_abs dl); intros; lra. }
      exists (fun i => (if in_dec Nat.eq_dec i (leaves a) then Qa i else Qb i) * (1 + dl)).
      split.
      * intros i. simpl height. change ((1 - u24) ^ S (Nat.max (height a) (height b)))
          with ((1 - u24) * (1 - u24) ^ Nat.max (height a) (height b)).
        change ((1 + u24) ^ S (Nat.max (height a) (height b)))
          with ((1 + u24) * (1 + u24) ^ Nat.max (height a) (height b)).
        assert (HQ : (1 - u24) ^ Nat.max (height a) (height b) <= (if in_dec Nat.eq_dec i (leaves a) then Qa i else Qb i)
                     <= (1 + u24) ^ Nat.max (height a) (height b)).
        { destruct (in_dec Nat.eq_dec i (leaves a)).
          - destruct (HQa i) as [L U]. split.
            + eapply Rle_trans; [|exact L]. apply pow_1mu_anti; [lra | lia].
            + eapply Rle_trans; [exact U|]. apply Rle_pow; [lra | lia].
          - destruct (HQb i) as [L U]. split.
            + eapply Rle_trans; [|exact L]. apply pow_1mu_anti; [lra | lia].
            + eapply Rle_trans; [exact U|]. apply Rle_pow; [lra | lia]. }
        assert (0 <= (1 - u24) ^ Nat.max (height a) (height b)) by (apply pow_le; lra).
        split; rewrite Rmult_comm; apply Rmult_le_compat; lra.
      * rewrite Ed. simpl ex.
        rewrite (ex_ext _ (fun i => p i * Qa i * (1 + dl)) a), (ex_ext _ (fun i => p i * Qb i * (1 + dl)) b).
        -- rewrite ex_scal, ex_scal, <- Ea, <- Eb. fold fa fb. ring.
        -- intros i Hi. destruct (in_dec Nat.eq_dec i (leaves a)) as [Hia|]; [|ring].
           exfalso. exact (Hab i Hia Hi).
        -- intros i Hi. destruct (in_dec Nat.eq_dec i (leaves a)); [ring | contradiction].
Qed.

(* ex over the leaves as a list *)
Fixpoint lsum (f : nat -> R) (l : list nat) : R :=
  match l with [] => 0 | i :: l' => f i + lsum f l' end.

Lemma lsum_app : forall f l m, lsum f (l ++ m) = lsum f l + lsum f m.
Proof. intros f l m. induction l; simpl; [ring | rewrite IHl; ring]. Qed.

Lemma ex_lsum : forall f t, added t -> ex f t = lsum f (leaves t).
Proof.
  intros f t. induction t as [i s|a IHa b IHb]; simpl; intros H.
  - subst s. simpl. ring.
  - destruct H as [Ha Hb]. rewrite IHa, IHb, lsum_app by assumption. reflexivity.
Qed.

Lemma lsum_perm : forall f l m, Permutation l m -> lsum f l = lsum f m.
Proof. intros f l m H. induction H; simpl; [reflexivity | rewrite IHPermutation | ring | ]; [reflexivity | congruence]. Qed.

Lemma lsum_seq : forall f n, lsum f (seq 0 n) = sum n f.
Proof. intros f n. induction n as [|n IH]; [reflexivity|]. rewrite seq_S, lsum_app, IH. simpl. ring. Qed.

(* [SAGE-ATT-07] (e): a block's own sum, the n terms p_0 .. p_{n-1} added in binary32 in
   any order and parenthesisation (a tree whose leaves are 0 .. n-1, each once), is
   sum_i p_i Q_i with each Q_i in [(1 - u)^(n-1), (1 + u)^(n-1)]: at most n - 1 roundings
   per term, 63 for a block of 64. *)
Theorem SAGE_ATT_07_e_block : forall p t n,
  (forall i, format32 (p i)) -> added t -> Permutation (leaves t) (seq 0 n) ->
  exists Q : nat -> R, (forall i, (1 - u24) ^ (n - 1) <= Q i <= (1 + u24) ^ (n - 1)) /\
    fl p t = sum n (fun i => p i * Q i).
Proof.
  intros p t n Hp Ht HP.
  assert (Hd : NoDup (leaves t)) by (apply Permutation_NoDup with (seq 0 n); [apply Permutation_sym; exact HP | apply seq_NoDup]).
  assert (Hn : size t = n) by (rewrite <- size_leaves, (Permutation_length HP); apply seq_length).
  destruct (SAGE_ATT_07_e_tree p t Hp Hd) as [Q [HQ E]].
  assert (Hu : 0 < u24 < 1) by (unfold u24; lra).
  exists Q. split.
  - intros i. destruct (HQ i) as [L U]. pose proof (height_size t). rewrite Hn in H. split.
    + eapply Rle_trans; [|exact L]. apply pow_1mu_anti; [lra | lia].
    + eapply Rle_trans; [exact U|]. apply Rle_pow; [lra | lia].
  - rewrite E, ex_lsum by exact Ht. rewrite (lsum_perm _ _ _ HP). apply lsum_seq.
Qed.
