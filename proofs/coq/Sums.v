(* Sums.v -- finite sums over the indices 0 .. n-1, masks, and the
   Euclidean norm of vectors of dimension d.  The other files state their
   theorems with these definitions. *)
From Coq Require Import Reals Lra Lia Psatz.
Open Scope R_scope.

(* sum n f = f 0 + ... + f (n - 1) *)
Fixpoint sum (n : nat) (f : nat -> R) : R :=
  match n with
  | O => 0
  | S m => sum m f + f m
  end.

Lemma sum_ext : forall n f g,
  (forall i, (i < n)%nat -> f i = g i) -> sum n f = sum n g.
Proof.
  induction n as [|n IH]; intros f g H; simpl; [reflexivity|].
  rewrite (IH f g) by (intros; apply H; lia). rewrite (H n) by lia. reflexivity.
Qed.

Lemma sum_plus : forall n f g, sum n (fun i => f i + g i) = sum n f + sum n g.
Proof. induction n as [|n IH]; intros; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_minus : forall n f g, sum n (fun i => f i - g i) = sum n f - sum n g.
Proof. induction n as [|n IH]; intros; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_scal : forall n c f, sum n (fun i => c * f i) = c * sum n f.
Proof. induction n as [|n IH]; intros; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_scal_r : forall n c f, sum n (fun i => f i * c) = sum n f * c.
Proof. induction n as [|n IH]; intros; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_const0 : forall n, sum n (fun _ => 0) = 0.
Proof. induction n as [|n IH]; simpl; [lra|]. rewrite IH. lra. Qed.

Lemma sum_le : forall n f g,
  (forall i, (i < n)%nat -> f i <= g i) -> sum n f <= sum n g.
Proof.
  induction n as [|n IH]; intros f g H; simpl; [lra|].
  assert (sum n f <= sum n g) by (apply IH; intros; apply H; lia).
  assert (f n <= g n) by (apply H; lia). lra.
Qed.

Lemma sum_nonneg : forall n f,
  (forall i, (i < n)%nat -> 0 <= f i) -> 0 <= sum n f.
Proof.
  intros n f H. rewrite <- (sum_const0 n). apply sum_le. exact H.
Qed.

Lemma sum_pos : forall n f,
  (0 < n)%nat -> (forall i, (i < n)%nat -> 0 < f i) -> 0 < sum n f.
Proof.
  intros n f Hn H. destruct n as [|n]; [lia|]. simpl.
  assert (0 <= sum n f) by (apply sum_nonneg; intros; left; apply H; lia).
  assert (0 < f n) by (apply H; lia). lra.
Qed.

Lemma sum_abs : forall n f, Rabs (sum n f) <= sum n (fun i => Rabs (f i)).
Proof.
  induction n as [|n IH]; intros; simpl.
  - rewrite Rabs_R0. lra.
  - eapply Rle_trans; [apply Rabs_triang|]. specialize (IH f). lra.
Qed.

(* Exchange of a double sum. *)
Lemma sum_swap : forall n m (f : nat -> nat -> R),
  sum n (fun i => sum m (fun j => f i j)) = sum m (fun j => sum n (fun i => f i j)).
Proof.
  induction n as [|n IH]; intros; simpl.
  - rewrite sum_const0. reflexivity.
  - rewrite IH. rewrite <- sum_plus. reflexivity.
Qed.

(* Masks: sets of indices as boolean predicates. *)
Definition mask (T : nat -> bool) (f : nat -> R) (i : nat) : R :=
  if T i then f i else 0.

Definition compl (T : nat -> bool) (i : nat) : bool := negb (T i).

Lemma sum_mask_split : forall n T f,
  sum n f = sum n (mask T f) + sum n (mask (compl T) f).
Proof.
  intros. rewrite <- sum_plus. apply sum_ext. intros i _.
  unfold mask, compl. destruct (T i); simpl; lra.
Qed.

Lemma sum_mask_le : forall n T f,
  (forall i, (i < n)%nat -> 0 <= f i) -> sum n (mask T f) <= sum n f.
Proof.
  intros n T f H. apply sum_le. intros i Hi. unfold mask.
  destruct (T i); [lra|]. apply H; exact Hi.
Qed.

Lemma mask_nonneg : forall T f i, 0 <= f i -> 0 <= mask T f i.
Proof. intros. unfold mask. destruct (T i); lra. Qed.

(* The positive part. *)
Definition pos (x : R) : R := Rmax x 0.

Lemma pos_nonneg : forall x, 0 <= pos x.
Proof. intros. unfold pos. apply Rmax_r. Qed.

Lemma abs_pos : forall x, Rabs x = 2 * pos x - x.
Proof.
  intros. unfold pos, Rmax. destruct (Rle_dec x 0).
  - rewrite Rabs_left1 by lra. lra.
  - rewrite Rabs_right by lra. lra.
Qed.

Lemma pos_neg_mult : forall a b, 0 < a -> b < 0 -> a * b < 0.
Proof. intros. nra. Qed.

(* ---- Euclidean norm of vectors of dimension d ---------------------------- *)

Definition vec := nat -> R.

Definition dot (d : nat) (x y : vec) : R := sum d (fun c => x c * y c).

Definition norm (d : nat) (x : vec) : R := sqrt (dot d x x).

Definition vadd (x y : vec) : vec := fun c => x c + y c.
Definition vsub (x y : vec) : vec := fun c => x c - y c.
Definition vscal (a : R) (x : vec) : vec := fun c => a * x c.
Definition vzero : vec := fun _ => 0.

(* sum_{i < n} w i * v i, componentwise *)
Definition vsum (n : nat) (v : nat -> vec) : vec := fun c => sum n (fun i => v i c).

Lemma dot_self_nonneg : forall d x, 0 <= dot d x x.
Proof. intros. apply sum_nonneg. intros. apply Rle_0_sqr. Qed.

Lemma norm_nonneg : forall d x, 0 <= norm d x.
Proof. intros. apply sqrt_pos. Qed.

Lemma cauchy_schwarz : forall d x y,
  Rsqr (dot d x y) <= dot d x x * dot d y y.
Proof.
  intros d x y.
  set (A := dot d y y). set (B := dot d x y). set (C := dot d x x).
  assert (HA : 0 <= A) by apply dot_self_nonneg.
  assert (HC : 0 <= C) by apply dot_self_nonneg.
  (* sum (A x - B y)^2 = A (A C - B^2) *)
  assert (H1 : 0 <= A * (A * C - B * B)).
  { assert (E : sum d (fun c => Rsqr (A * x c - B * y c)) = A * (A * C - B * B)).
    { transitivity (sum d (fun c => A * A * (x c * x c) - 2 * A * B * (x c * y c)
                                    + B * B * (y c * y c))).
      { apply sum_ext. intros. unfold Rsqr. ring. }
      rewrite sum_plus, sum_minus, !sum_scal. fold (dot d x x) (dot d x y) (dot d y y).
      fold A B C. ring. }
    rewrite <- E. apply sum_nonneg. intros. apply Rle_0_sqr. }
  assert (H2 : 0 <= C * (A * C - B * B)).
  { assert (E : sum d (fun c => Rsqr (C * y c - B * x c)) = C * (A * C - B * B)).
    { transitivity (sum d (fun c => C * C * (y c * y c) - 2 * C * B * (x c * y c)
                                    + B * B * (x c * x c))).
      { apply sum_ext. intros. unfold Rsqr. ring. }
      rewrite sum_plus, sum_minus, !sum_scal. fold (dot d x x) (dot d x y) (dot d y y).
      fold A B C. ring. }
    rewrite <- E. apply sum_nonneg. intros. apply Rle_0_sqr. }
  (* 2 |B| <= A + C *)
  assert (H3 : 2 * Rabs B <= A + C).
  { unfold B. eapply Rle_trans. { apply Rmult_le_compat_l; [lra|]. apply sum_abs. }
    unfold A, C, dot. rewrite <- sum_scal, <- sum_plus. apply sum_le. intros c _.
    rewrite Rabs_mult.
    assert (Ex : x c * x c = Rabs (x c) * Rabs (x c))
      by (rewrite <- Rabs_mult; symmetry; apply Rabs_right; nra).
    assert (Ey : y c * y c = Rabs (y c) * Rabs (y c))
      by (rewrite <- Rabs_mult; symmetry; apply Rabs_right; nra).
    rewrite Ex, Ey. pose proof (Rle_0_sqr (Rabs (x c) - Rabs (y c))). unfold Rsqr in *.
    nra. }
  unfold Rsqr. destruct (Rlt_dec 0 A) as [HA'|HA'].
  - assert (0 <= A * C - B * B); [|nra].
    destruct (Rle_dec 0 (A * C - B * B)); [assumption|].
    assert (A * (A * C - B * B) < 0) by (apply pos_neg_mult; lra). lra.
  - destruct (Rlt_dec 0 C) as [HC'|HC'].
    { assert (0 <= A * C - B * B); [|nra].
      destruct (Rle_dec 0 (A * C - B * B)); [assumption|].
      assert (C * (A * C - B * B) < 0) by (apply pos_neg_mult; lra). lra. }
    assert (A = 0) by lra. assert (C = 0) by lra.
    pose proof (Rabs_pos B). assert (Rabs B = 0) by lra.
    assert (B = 0) by (destruct (Rcase_abs B); [rewrite Rabs_left in *; lra | rewrite Rabs_right in *; lra]). subst. nra.
Qed.

Lemma norm_ext : forall d x y, (forall c, (c < d)%nat -> x c = y c) -> norm d x = norm d y.
Proof.
  intros d x y H. unfold norm, dot. f_equal. apply sum_ext. intros c Hc. rewrite H by exact Hc.
  reflexivity.
Qed.

Lemma norm_triangle : forall d x y, norm d (vadd x y) <= norm d x + norm d y.
Proof.
  intros d x y. unfold norm.
  set (A := dot d y y). set (B := dot d x y). set (C := dot d x x).
  assert (HA : 0 <= A) by apply dot_self_nonneg.
  assert (HC : 0 <= C) by apply dot_self_nonneg.
  assert (E : dot d (vadd x y) (vadd x y) = C + 2 * B + A).
  { unfold A, B, C, dot, vadd.
    transitivity (sum d (fun c => x c * x c + 2 * (x c * y c) + y c * y c)).
    { apply sum_ext. intros. ring. }
    rewrite !sum_plus, sum_scal. reflexivity. }
  rewrite E.
  pose proof (cauchy_schwarz d x y) as CS. fold A B C in CS. unfold Rsqr in CS.
  pose proof (sqrt_sqrt A HA). pose proof (sqrt_sqrt C HC).
  pose proof (sqrt_pos A). pose proof (sqrt_pos C).
  assert (HB : B <= sqrt C * sqrt A).
  { pose proof (Rmult_le_pos _ _ (sqrt_pos C) (sqrt_pos A)) as P.
    destruct (Rle_dec B 0); [lra|].
    assert (B * B <= (sqrt C * sqrt A) * (sqrt C * sqrt A)).
    { replace ((sqrt C * sqrt A) * (sqrt C * sqrt A)) with ((sqrt C * sqrt C) * (sqrt A * sqrt A))
        by ring. rewrite H, H0. lra. }
    nra. }
  rewrite <- (sqrt_square (sqrt C + sqrt A)) by lra.
  apply sqrt_le_1_alt.
  replace ((sqrt C + sqrt A) * (sqrt C + sqrt A))
    with (sqrt C * sqrt C + 2 * (sqrt C * sqrt A) + sqrt A * sqrt A) by ring.
  rewrite H, H0. lra.
Qed.

Lemma norm_scal : forall d a x, norm d (vscal a x) = Rabs a * norm d x.
Proof.
  intros. unfold norm, dot, vscal.
  transitivity (sqrt (Rsqr a * sum d (fun c => x c * x c))).
  { f_equal. rewrite <- sum_scal. apply sum_ext. intros. unfold Rsqr. ring. }
  rewrite sqrt_mult_alt by apply Rle_0_sqr. rewrite sqrt_Rsqr_abs. reflexivity.
Qed.

Lemma norm_opp_sub : forall d x y, norm d (vsub x y) = norm d (vsub y x).
Proof.
  intros. unfold norm, dot, vsub. f_equal. apply sum_ext. intros. ring.
Qed.

Lemma norm_vsum : forall d n (v : nat -> vec),
  norm d (vsum n v) <= sum n (fun i => norm d (v i)).
Proof.
  intros d n v. induction n as [|n IH].
  - simpl. unfold norm, dot, vsum. simpl.
    rewrite (sum_ext d _ (fun _ => 0)) by (intros; ring). rewrite sum_const0, sqrt_0. lra.
  - change (vsum (S n) v) with (vadd (vsum n v) (v n)). simpl.
    eapply Rle_trans; [apply norm_triangle|]. lra.
Qed.

(* The triangle inequality for weighted sums: || sum_i w_i v_i || <= sum_i |w_i| ||v_i||. *)
Lemma norm_wsum : forall d n (w : nat -> R) (v : nat -> vec),
  norm d (vsum n (fun i => vscal (w i) (v i))) <= sum n (fun i => Rabs (w i) * norm d (v i)).
Proof.
  intros. eapply Rle_trans; [apply norm_vsum|]. apply sum_le. intros. rewrite norm_scal. lra.
Qed.

Lemma sum_ge_term : forall n f j, (j < n)%nat ->
  (forall i, (i < n)%nat -> 0 <= f i) -> f j <= sum n f.
Proof.
  induction n as [|n IH]; intros f j Hj H; [lia|]. simpl.
  destruct (Nat.eq_dec j n) as [->|Hne].
  - assert (0 <= sum n f) by (apply sum_nonneg; intros; apply H; lia). lra.
  - assert (f j <= sum n f) by (apply IH; [lia | intros; apply H; lia]).
    assert (0 <= f n) by (apply H; lia). lra.
Qed.

Lemma ex_true : forall (S : nat -> bool) n,
  (exists j, (j < n)%nat /\ S j = true) \/ (forall k, (k < n)%nat -> S k = false).
Proof.
  intros S n. induction n as [|n IH].
  - right. intros; lia.
  - destruct IH as [[j [Hj Sj]]|H].
    + left. exists j. split; [lia | exact Sj].
    + destruct (S n) eqn:Sn.
      * left. exists n. split; [lia | exact Sn].
      * right. intros k Hk. destruct (Nat.eq_dec k n) as [->|]; [exact Sn | apply H; lia].
Qed.

Lemma sum_mask_pos : forall n S f j, (j < n)%nat -> S j = true ->
  (forall i, (i < n)%nat -> 0 < f i) -> 0 < sum n (mask S f).
Proof.
  intros n S f j Hj Sj H.
  apply Rlt_le_trans with (mask S f j).
  - unfold mask. rewrite Sj. apply H, Hj.
  - apply sum_ge_term; [exact Hj|]. intros. apply mask_nonneg. left. apply H. assumption.
Qed.

Lemma div_nonneg : forall a b, 0 <= a -> 0 < b -> 0 <= a / b.
Proof. intros. unfold Rdiv. apply Rmult_le_pos; [assumption | left; apply Rinv_0_lt_compat; assumption]. Qed.

Lemma div_pos : forall a b, 0 < a -> 0 < b -> 0 < a / b.
Proof. intros. unfold Rdiv. apply Rmult_lt_0_compat; [assumption | apply Rinv_0_lt_compat; assumption]. Qed.

Lemma le_div_r : forall a b c, 0 < c -> a * c <= b -> a <= b / c.
Proof.
  intros a b c Hc H. apply Rmult_le_reg_r with c; [exact Hc|].
  unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra. exact H.
Qed.

Lemma div_le_r : forall a b c, 0 < c -> b <= a * c -> b / c <= a.
Proof.
  intros a b c Hc H. apply Rmult_le_reg_r with c; [exact Hc|].
  unfold Rdiv. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra. exact H.
Qed.

Lemma Rmult_lt_0_compat_r_neg : forall a b, a < 0 -> 0 < b -> a * b < 0.
Proof. intros. nra. Qed.

Lemma div_le_div : forall a b c d, 0 < b -> 0 < d -> a * d <= c * b -> a / b <= c / d.
Proof.
  intros a b c d Hb Hd H. apply le_div_r; [exact Hd|].
  replace (a / b * d) with ((a * d) / b) by (field; lra).
  apply div_le_r; [exact Hb|]. lra.
Qed.
