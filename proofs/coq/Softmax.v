(* Softmax.v -- spec/bounds/cert.md §4: the paper's Lemma A.1, kvq Lemma K.1
   (TV <= tanh(D/2)) and the paper's Lemma A.2 (TV <= tanh D) as its corollary,
   and kvq Lemma K.2 (the odds form of the paper's Eq. 14) with Eq. 14 itself.

   Distributions are functions nat -> R on the indices 0 .. n-1.  A perturbed
   distribution is written as a tilt of the unperturbed one:
   tilt p e i = p i e^{e i} / sum_j p j e^{e j}; softmax (x + e) = tilt (softmax x) e
   (softmax_tilt), and a softmax over a subset S is a tilt of the softmax over S
   with the same e, so one statement covers both. *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums.
Open Scope R_scope.

Definition is_dist (n : nat) (p : nat -> R) : Prop :=
  (forall i, (i < n)%nat -> 0 <= p i) /\ sum n p = 1.

(* softmax over all n indices *)
Definition softmax (n : nat) (x : nat -> R) (i : nat) : R :=
  exp (x i) / sum n (fun j => exp (x j)).

(* softmax over the subset S (0 off S) *)
Definition msoftmax (n : nat) (S : nat -> bool) (x : nat -> R) (i : nat) : R :=
  mask S (fun j => exp (x j)) i / sum n (mask S (fun j => exp (x j))).

Definition tilt (n : nat) (p e : nat -> R) (i : nat) : R :=
  p i * exp (e i) / sum n (fun j => p j * exp (e j)).

(* total variation distance, (1/2) sum |a_i - b_i| *)
Definition TV (n : nat) (a b : nat -> R) : R := / 2 * sum n (fun i => Rabs (a i - b i)).

Definition vplus (x e : nat -> R) (i : nat) : R := x i + e i.

(* ---- elementary facts ------------------------------------------------------ *)

Lemma exp_2D : forall D, exp (2 * D) = exp D * exp D.
Proof. intros. rewrite <- exp_plus. f_equal. ring. Qed.

Lemma exp_D_half : forall D, exp D = exp (D / 2) * exp (D / 2).
Proof. intros. rewrite <- exp_plus. f_equal. field. Qed.

Lemma exp_opp_mul : forall D, exp (- D) * exp D = 1.
Proof. intros. rewrite <- exp_plus. replace (- D + D) with 0 by ring. apply exp_0. Qed.

Lemma exp_ge_1 : forall D, 0 <= D -> 1 <= exp D.
Proof.
  intros D HD. destruct HD as [HD|HD].
  - left. rewrite <- exp_0. apply exp_increasing. exact HD.
  - subst. rewrite exp_0. lra.
Qed.

Lemma exp_le : forall x y, x <= y -> exp x <= exp y.
Proof.
  intros x y [H|H]; [left; apply exp_increasing; exact H | subst; lra].
Qed.

Lemma exp_bounds : forall y D, Rabs y <= D -> exp (- D) <= exp y <= exp D.
Proof.
  intros y D H.
  assert (- D <= y <= D) as [H1 H2] by (unfold Rabs in H; destruct (Rcase_abs y); lra).
  split; apply exp_le; assumption.
Qed.



Lemma tanh_exp : forall x, tanh x = (exp x * exp x - 1) / (exp x * exp x + 1).
Proof.
  intros. unfold tanh, sinh, cosh. rewrite exp_Ropp. pose proof (exp_pos x).
  field. split; [|lra]. nra.
Qed.

Lemma tanh_0 : tanh 0 = 0.
Proof. rewrite tanh_exp, exp_0. field. Qed.

Lemma tanh_le : forall x y, x <= y -> tanh x <= tanh y.
Proof.
  intros x y H. rewrite !tanh_exp.
  pose proof (exp_pos x). pose proof (exp_pos y). pose proof (exp_le x y H).
  assert (exp x * exp x <= exp y * exp y) by nra.
  apply Rmult_le_reg_r with ((exp x * exp x + 1) * (exp y * exp y + 1)); [nra|].
  field_simplify; [nra| nra | nra].
Qed.

Lemma pos_scal : forall k z, 0 <= k -> pos (k * z) = k * pos z.
Proof.
  intros k z Hk. unfold pos, Rmax.
  destruct (Rle_dec (k * z) 0), (Rle_dec z 0); try nra.
Qed.

(* ---- distributions ---------------------------------------------------------- *)

Lemma tilt_norm_bounds : forall n p e D,
  is_dist n p -> (forall i, (i < n)%nat -> Rabs (e i) <= D) ->
  exp (- D) <= sum n (fun j => p j * exp (e j)) <= exp D.
Proof.
  intros n p e D [Hp H1] He. split.
  - replace (exp (- D)) with (sum n p * exp (- D)) by (rewrite H1; ring).
    rewrite <- sum_scal_r. apply sum_le. intros i Hi.
    apply Rmult_le_compat_l; [apply Hp; exact Hi|]. apply (exp_bounds (e i) D (He i Hi)).
  - replace (exp D) with (sum n p * exp D) by (rewrite H1; ring).
    rewrite <- sum_scal_r. apply sum_le. intros i Hi.
    apply Rmult_le_compat_l; [apply Hp; exact Hi|]. apply (exp_bounds (e i) D (He i Hi)).
Qed.

Lemma tilt_dist : forall n p e D,
  is_dist n p -> (forall i, (i < n)%nat -> Rabs (e i) <= D) -> is_dist n (tilt n p e).
Proof.
  intros n p e D Hd He. pose proof (tilt_norm_bounds n p e D Hd He) as [Hlo _].
  pose proof (exp_pos (- D)). destruct Hd as [Hp H1]. split.
  - intros i Hi. unfold tilt. apply div_nonneg; [|lra].
    apply Rmult_le_pos; [apply Hp; exact Hi | left; apply exp_pos].
  - unfold tilt. unfold Rdiv. rewrite sum_scal_r. field. lra.
Qed.

Lemma softmax_dist : forall n x, (0 < n)%nat -> is_dist n (softmax n x).
Proof.
  intros n x Hn. assert (0 < sum n (fun j => exp (x j))) by
    (apply sum_pos; [exact Hn | intros; apply exp_pos]).
  split.
  - intros i Hi. unfold softmax. apply div_nonneg; [left; apply exp_pos | exact H].
  - unfold softmax, Rdiv. rewrite sum_scal_r. field. lra.
Qed.

Lemma softmax_pos : forall n x i, (0 < n)%nat -> 0 < softmax n x i.
Proof.
  intros. unfold softmax. apply div_pos; [apply exp_pos|].
  apply sum_pos; [assumption | intros; apply exp_pos].
Qed.

(* softmax (x + e) is the tilt of softmax x by e *)
Lemma softmax_tilt : forall n x e i, (0 < n)%nat ->
  softmax n (vplus x e) i = tilt n (softmax n x) e i.
Proof.
  intros n x e i Hn. unfold softmax, tilt, vplus.
  set (Z := sum n (fun j => exp (x j))).
  assert (HZ : 0 < Z) by (apply sum_pos; [exact Hn | intros; apply exp_pos]).
  assert (E : sum n (fun j => exp (x j) / Z * exp (e j)) = sum n (fun j => exp (x j + e j)) / Z).
  { unfold Rdiv. rewrite <- sum_scal_r. apply sum_ext. intros. rewrite exp_plus. ring. }
  rewrite E. rewrite exp_plus.
  assert (0 < sum n (fun j => exp (x j + e j))) by (apply sum_pos; [exact Hn | intros; apply exp_pos]).
  field. lra.
Qed.

(* the same over a subset M, when M is not empty *)
Lemma msoftmax_tilt : forall n M x e i,
  0 < sum n (mask M (fun j => exp (x j))) ->
  msoftmax n M (vplus x e) i = tilt n (msoftmax n M x) e i.
Proof.
  intros n M x e i HZ. unfold msoftmax, tilt, vplus.
  set (Z := sum n (mask M (fun j => exp (x j)))). fold Z in HZ.
  assert (E : sum n (fun j => mask M (fun j0 => exp (x j0)) j / Z * exp (e j))
              = sum n (mask M (fun j => exp (x j + e j))) / Z).
  { unfold Rdiv. rewrite <- sum_scal_r. apply sum_ext. intros j _. unfold mask.
    destruct (M j); [rewrite exp_plus; ring | ring]. }
  rewrite E.
  assert (HZ' : 0 < sum n (mask M (fun j => exp (x j + e j)))).
  { destruct (ex_true M n) as [[j [Hj Mj]]|Hno].
    - apply sum_mask_pos with j; [exact Hj | exact Mj | intros; apply exp_pos].
    - exfalso. unfold Z in HZ.
      rewrite (sum_ext _ _ (fun _ => 0)) in HZ; [rewrite sum_const0 in HZ; lra|].
      intros k Hk. unfold mask. rewrite (Hno k Hk). reflexivity. }
  set (Z' := sum n (mask M (fun j => exp (x j + e j)))) in *.
  unfold mask. destruct (M i); [rewrite exp_plus|]; field; split; lra.
Qed.

(* ---- the paper's Lemma A.1 ------------------------------------------------ *)

(* Multiplicative form on any distribution p (no division, p i may be 0). *)
Theorem paper_lemma_A1_tilt : forall n p e D i,
  is_dist n p -> (forall j, (j < n)%nat -> Rabs (e j) <= D) -> (i < n)%nat ->
  exp (- (2 * D)) * p i <= tilt n p e i <= exp (2 * D) * p i.
Proof.
  intros n p e D i Hd He Hi.
  pose proof (tilt_norm_bounds n p e D Hd He) as [Elo Ehi].
  set (E := sum n (fun j => p j * exp (e j))) in *.
  pose proof (exp_bounds (e i) D (He i Hi)) as [ylo yhi].
  assert (Hpi : 0 <= p i) by (apply (proj1 Hd); exact Hi).
  pose proof (exp_pos (- D)). pose proof (exp_pos D).
  assert (HE : 0 < E) by lra.
  unfold tilt. fold E. split.
  - apply le_div_r; [exact HE|].
    replace (- (2 * D)) with (- D + - D) by ring. rewrite exp_plus.
    assert (exp (- D) * E <= 1) by (pose proof (exp_opp_mul D); nra).
    assert (exp (- D) * p i <= p i * exp (e i)) by nra.
    assert (exp (- D) * p i * (exp (- D) * E) <= exp (- D) * p i * 1)
      by (apply Rmult_le_compat_l; [apply Rmult_le_pos|]; lra).
    replace (exp (- D) * exp (- D) * p i * E) with (exp (- D) * p i * (exp (- D) * E)) by ring.
    lra.
  - apply div_le_r; [exact HE|].
    rewrite exp_2D.
    assert (1 <= exp D * E) by (pose proof (exp_opp_mul D); nra).
    assert (p i * exp (e i) <= exp D * p i) by nra.
    assert (exp D * p i * 1 <= exp D * p i * (exp D * E))
      by (apply Rmult_le_compat_l; [apply Rmult_le_pos|]; lra).
    replace (exp D * exp D * p i * E) with (exp D * p i * (exp D * E)) by ring.
    lra.
Qed.

(* The paper's statement: e^{-2D} <= p'_i / p_i <= e^{2D} for p = softmax x,
   p' = softmax (x + e), |e_j| <= D. *)
Theorem paper_lemma_A1 : forall n x e D i,
  (forall j, (j < n)%nat -> Rabs (e j) <= D) -> (i < n)%nat ->
  exp (- (2 * D)) <= softmax n (vplus x e) i / softmax n x i <= exp (2 * D).
Proof.
  intros n x e D i He Hi. assert (Hn : (0 < n)%nat) by lia.
  pose proof (softmax_pos n x i Hn) as Hp.
  rewrite softmax_tilt by exact Hn.
  pose proof (paper_lemma_A1_tilt n (softmax n x) e D i (softmax_dist n x Hn) He Hi) as [L U].
  split; [apply le_div_r | apply div_le_r]; assumption.
Qed.

(* ---- kvq Lemma K.1 and the paper's Lemma A.2 ------------------------------ *)

Lemma TV_pos_part : forall n a b, sum n a = sum n b ->
  TV n a b = sum n (fun i => pos (a i - b i)).
Proof.
  intros n a b H. unfold TV.
  rewrite (sum_ext n _ (fun i => 2 * pos (a i - b i) - (a i - b i)))
    by (intros; apply abs_pos).
  rewrite sum_minus, sum_scal, sum_minus, H. field.
Qed.

(* the chord of the convex function pos on [b, a] *)
Lemma chord_pos : forall a b y E p,
  b <= y <= a -> b <= E <= a -> 0 <= p ->
  (a - b) * (p * pos (y - E)) <= (a - E) * (p * y - p * b).
Proof.
  intros a b y E p Hy HE Hp. unfold pos, Rmax. destruct (Rle_dec (y - E) 0).
  - assert (0 <= (a - E) * (p * y - p * b)).
    { apply Rmult_le_pos; [lra|]. nra. }
    lra.
  - assert ((a - E) * (y - b) - (a - b) * (y - E) = (a - y) * (E - b)) by ring.
    assert (0 <= (a - y) * (E - b)) by (apply Rmult_le_pos; lra).
    nra.
Qed.

Theorem kvq_lemma_K1_tilt : forall n p e D,
  is_dist n p -> 0 <= D -> (forall i, (i < n)%nat -> Rabs (e i) <= D) ->
  TV n (tilt n p e) p <= tanh (D / 2).
Proof.
  intros n p e D Hd HD He.
  pose proof (tilt_norm_bounds n p e D Hd He) as [Elo Ehi].
  pose proof (tilt_dist n p e D Hd He) as [_ Ht1].
  destruct Hd as [Hp H1].
  set (E := sum n (fun j => p j * exp (e j))) in *.
  set (a := exp D) in *. set (b := exp (- D)) in *.
  pose proof (exp_pos (- D)). pose proof (exp_pos D). fold a b in H, H0.
  assert (HE : 0 < E) by lra.
  rewrite TV_pos_part by (rewrite Ht1, H1; reflexivity).
  (* each term: pos (p_i y_i / E - p_i) = p_i pos (y_i - E) / E *)
  rewrite (sum_ext n _ (fun i => / E * (p i * pos (exp (e i) - E)))).
  2: { intros i Hi. unfold tilt. fold E.
       replace (p i * exp (e i) / E - p i) with ((/ E * p i) * (exp (e i) - E)) by (field; lra).
       rewrite pos_scal by (apply Rmult_le_pos; [left; apply Rinv_0_lt_compat; lra | apply Hp, Hi]).
       ring. }
  rewrite sum_scal.
  (* the chord, summed: (a - b) sum p_i pos (y_i - E) <= (a - E) (E - b) *)
  assert (Hch : (a - b) * sum n (fun i => p i * pos (exp (e i) - E)) <= (a - E) * (E - b)).
  { rewrite <- sum_scal.
    apply Rle_trans with (sum n (fun i => (a - E) * (p i * exp (e i) - p i * b))).
    - apply sum_le. intros i Hi. apply chord_pos; [| lra | apply Hp, Hi].
      apply (exp_bounds (e i) D (He i Hi)).
    - rewrite sum_scal, sum_minus, sum_scal_r, H1. fold E. lra. }
  (* tanh (D/2) in terms of c = e^{D/2}: a = c^2, b = 1/c^2 *)
  set (c := exp (D / 2)).
  assert (Hc : 0 < c) by apply exp_pos.
  assert (Ha : a = c * c) by (unfold a, c; apply exp_D_half).
  assert (Hb : b * (c * c) = 1) by (rewrite <- Ha; unfold a, b; apply exp_opp_mul).
  rewrite tanh_exp. fold c.
  assert (Hs : 0 <= sum n (fun i => p i * pos (exp (e i) - E))).
  { apply sum_nonneg. intros. apply Rmult_le_pos; [apply Hp; assumption | apply pos_nonneg]. }
  destruct HD as [HD|HD].
  - (* D > 0: a > b *)
    assert (Hab : b < a) by (unfold a, b; apply exp_increasing; lra).
    set (s := sum n (fun i => p i * pos (exp (e i) - E))) in *.
    (* goal: s / E <= (c^2 - 1) / (c^2 + 1); with (a-b) s <= (a-E)(E-b) and
       (a - E)(E - b) <= tanh(D/2) (a - b) E  <=>  c^2 (E - 1)^2 >= 0 *)
    assert (Hkey : (a - E) * (E - b) * (c * c + 1) <= (c * c - 1) * (a - b) * E).
    { set (k := c * c) in *. assert (Hk : 0 < k) by (unfold k; nra).
      assert (Hb' : b = / k) by (apply (Rmult_eq_reg_r k); [rewrite Hb; field | ]; lra).
      rewrite Ha, Hb'.
      assert (D1 : ((k - 1) * (k - / k) * E - (k - E) * (E - / k) * (k + 1)) * k
                   = (k + 1) * k * ((E - 1) * (E - 1))) by (field; lra).
      assert (0 <= (k + 1) * k * ((E - 1) * (E - 1))).
      { apply Rmult_le_pos; [apply Rmult_le_pos; lra | apply Rle_0_sqr]. }
      assert (0 <= (k - 1) * (k - / k) * E - (k - E) * (E - / k) * (k + 1)); [|lra].
      destruct (Rle_dec 0 ((k - 1) * (k - / k) * E - (k - E) * (E - / k) * (k + 1))); [assumption|].
      assert (((k - 1) * (k - / k) * E - (k - E) * (E - / k) * (k + 1)) * k < 0)
        by (apply Rmult_lt_0_compat_r_neg; lra). lra. }
    assert (Hcc : 0 < c * c + 1) by nra.
    apply Rmult_le_reg_r with ((a - b) * E * (c * c + 1)).
    { apply Rmult_lt_0_compat; [apply Rmult_lt_0_compat|]; lra. }
    replace (/ E * s * ((a - b) * E * (c * c + 1))) with ((a - b) * s * (c * c + 1)) by (field; lra).
    replace ((c * c - 1) / (c * c + 1) * ((a - b) * E * (c * c + 1))) with ((c * c - 1) * (a - b) * E)
      by (field; lra).
    assert ((a - b) * s * (c * c + 1) <= (a - E) * (E - b) * (c * c + 1))
      by (apply Rmult_le_compat_r; lra).
    lra.
  - (* D = 0: every e_i = 0, the tilt is p, TV = 0 *)
    subst D. replace (0 / 2) with 0 in c by lra.
    assert (c = 1) by (unfold c; replace (0/2) with 0 by lra; apply exp_0).
    assert (Ea : a = 1) by (unfold a; apply exp_0).
    assert (Eb : b = 1) by (unfold b; rewrite Ropp_0; apply exp_0).
    assert (E = 1) by lra.
    rewrite (sum_ext n _ (fun _ => 0)).
    2: { intros i Hi. pose proof (exp_bounds (e i) 0 (He i Hi)) as [l u]. fold a b in l, u.
         assert (exp (e i) = E) by lra. rewrite H4. replace (E - E) with 0 by ring.
         unfold pos. rewrite Rmax_left by lra. ring. }
    rewrite sum_const0, H2. replace ((1 * 1 - 1) / (1 * 1 + 1)) with 0 by field. lra.
Qed.

(* kvq Lemma K.1: TV (softmax x, softmax (x + e)) <= tanh (D / 2) when |e_i| <= D. *)
Theorem kvq_lemma_K1 : forall n x e D,
  (0 < n)%nat -> 0 <= D -> (forall i, (i < n)%nat -> Rabs (e i) <= D) ->
  TV n (softmax n (vplus x e)) (softmax n x) <= tanh (D / 2).
Proof.
  intros n x e D Hn HD He.
  replace (TV n (softmax n (vplus x e)) (softmax n x)) with (TV n (tilt n (softmax n x) e) (softmax n x)).
  - apply kvq_lemma_K1_tilt; [apply softmax_dist; exact Hn | exact HD | exact He].
  - unfold TV. f_equal. apply sum_ext. intros. rewrite softmax_tilt by exact Hn. reflexivity.
Qed.

(* The paper's Lemma A.2 (TV <= tanh D), a corollary: tanh is increasing. *)
Theorem paper_lemma_A2 : forall n x e D,
  (0 < n)%nat -> 0 <= D -> (forall i, (i < n)%nat -> Rabs (e i) <= D) ->
  TV n (softmax n (vplus x e)) (softmax n x) <= tanh D.
Proof.
  intros. eapply Rle_trans; [apply kvq_lemma_K1; eassumption|]. apply tanh_le. lra.
Qed.

(* ---- kvq Lemma K.2 and the paper's Eq. 14 --------------------------------- *)

(* the mass of the index set T under softmax x *)
Definition tail_mass (n : nat) (T : nat -> bool) (x : nat -> R) : R :=
  sum n (mask T (fun j => exp (x j))) / sum n (fun j => exp (x j)).

(* A(alpha, D) = e^{2D} alpha / (1 + (e^{2D} - 1) alpha): odds(A) = e^{2D} odds(alpha) *)
Definition Aodds (alpha D : R) : R :=
  exp (2 * D) * alpha / (1 + (exp (2 * D) - 1) * alpha).

Lemma tail_mass_range : forall n T x, (0 < n)%nat -> 0 <= tail_mass n T x <= 1.
Proof.
  intros n T x Hn. unfold tail_mass.
  assert (HZ : 0 < sum n (fun j => exp (x j))) by (apply sum_pos; [exact Hn | intros; apply exp_pos]).
  assert (0 <= sum n (mask T (fun j => exp (x j))))
    by (apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos).
  assert (sum n (mask T (fun j => exp (x j))) <= sum n (fun j => exp (x j)))
    by (apply sum_mask_le; intros; left; apply exp_pos).
  split; [apply div_nonneg; assumption | apply div_le_r; lra].
Qed.

(* The true tail mass alpha_T (scores x) against the estimated one (scores xh),
   |x_i - xh_i| <= D on every index: alpha_T <= A(alpha^, D). *)
Theorem kvq_lemma_K2 : forall n T x xh D,
  (0 < n)%nat -> (forall i, (i < n)%nat -> Rabs (x i - xh i) <= D) ->
  tail_mass n T x <= Aodds (tail_mass n T xh) D.
Proof.
  intros n T x xh D Hn He.
  assert (HD : 0 <= D) by (eapply Rle_trans; [apply Rabs_pos | apply (He 0%nat Hn)]).
  unfold tail_mass, Aodds.
  set (WT := sum n (mask T (fun j => exp (x j)))).
  set (WS := sum n (mask (compl T) (fun j => exp (x j)))).
  set (VT := sum n (mask T (fun j => exp (xh j)))).
  set (VS := sum n (mask (compl T) (fun j => exp (xh j)))).
  rewrite (sum_mask_split n T (fun j => exp (x j))), (sum_mask_split n T (fun j => exp (xh j))).
  fold WT WS VT VS.
  assert (HWT : 0 <= WT) by (apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos).
  assert (HWS : 0 <= WS) by (apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos).
  assert (HVT : 0 <= VT) by (apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos).
  assert (HVS : 0 <= VS) by (apply sum_nonneg; intros; apply mask_nonneg; left; apply exp_pos).
  assert (HW : 0 < WT + WS).
  { unfold WT, WS. rewrite <- sum_mask_split. apply sum_pos; [exact Hn | intros; apply exp_pos]. }
  assert (HV : 0 < VT + VS).
  { unfold VT, VS. rewrite <- sum_mask_split. apply sum_pos; [exact Hn | intros; apply exp_pos]. }
  (* W_T <= e^D W^_T and W^_S <= e^D W_S *)
  assert (H1 : WT <= exp D * VT).
  { unfold WT, VT. rewrite <- sum_scal. apply sum_le. intros i Hi. unfold mask.
    destruct (T i); [|lra]. replace (x i) with (xh i + (x i - xh i)) by ring.
    rewrite exp_plus. rewrite Rmult_comm. apply Rmult_le_compat_r; [left; apply exp_pos|].
    apply (exp_bounds _ D (He i Hi)). }
  assert (H2 : VS <= exp D * WS).
  { unfold WS, VS. rewrite <- sum_scal. apply sum_le. intros i Hi. unfold mask, compl.
    destruct (negb (T i)); [|lra]. replace (xh i) with (x i + - (x i - xh i)) by ring.
    rewrite exp_plus. rewrite Rmult_comm. apply Rmult_le_compat_r; [left; apply exp_pos|].
    apply exp_bounds. rewrite Rabs_Ropp. apply He, Hi. }
  pose proof (exp_pos D). rewrite exp_2D.
  set (X := exp D * exp D).
  assert (HX : 1 <= X) by (unfold X; pose proof (exp_ge_1 D HD); nra).
  replace (X * (VT / (VT + VS)) / (1 + (X - 1) * (VT / (VT + VS))))
    with (X * VT / (X * VT + VS)).
  2: { field. split; [lra|]. assert (0 <= (X - 1) * VT) by (apply Rmult_le_pos; lra). lra. }
  destruct (Req_dec (X * VT + VS) 0) as [Z|Z].
  - (* VT = VS = 0 is impossible: VT + VS > 0 *)
    exfalso. assert (0 <= (X - 1) * VT) by (apply Rmult_le_pos; lra). lra.
  - apply div_le_div; [exact HW | assert (0 <= (X - 1) * VT) by (apply Rmult_le_pos; lra); lra|].
    (* WT (X VT + VS) <= X VT (WT + WS)  <=>  WT VS <= X VT WS *)
    assert (WT * VS <= (exp D * VT) * (exp D * WS)).
    { apply Rmult_le_compat; lra. }
    unfold X. nra.
Qed.

(* The paper's Eq. 14: alpha_T <= e^{2D} alpha^ (A(alpha, D) <= e^{2D} alpha). *)
Lemma Aodds_le : forall alpha D, 0 <= alpha <= 1 -> 0 <= D -> Aodds alpha D <= exp (2 * D) * alpha.
Proof.
  intros alpha D Ha HD. unfold Aodds.
  assert (1 <= exp (2 * D)) by (apply exp_ge_1; lra).
  assert (0 <= (exp (2 * D) - 1) * alpha) by (apply Rmult_le_pos; lra).
  apply div_le_r; [lra|]. assert (0 <= exp (2 * D) * alpha) by (apply Rmult_le_pos; lra). nra.
Qed.

Theorem paper_eq14 : forall n T x xh D,
  (0 < n)%nat -> (forall i, (i < n)%nat -> Rabs (x i - xh i) <= D) ->
  tail_mass n T x <= exp (2 * D) * tail_mass n T xh.
Proof.
  intros n T x xh D Hn He.
  assert (HD : 0 <= D) by (eapply Rle_trans; [apply Rabs_pos | apply (He 0%nat Hn)]).
  eapply Rle_trans; [apply kvq_lemma_K2; eassumption|].
  apply Aodds_le; [apply tail_mass_range; exact Hn | exact HD].
Qed.

(* A is increasing in alpha (the exact path evaluates it from upper bounds). *)
Lemma Aodds_mono : forall a1 a2 D, 0 <= a1 <= a2 -> a2 <= 1 -> 0 <= D -> Aodds a1 D <= Aodds a2 D.
Proof.
  intros a1 a2 D H1 H2 HD. unfold Aodds.
  assert (1 <= exp (2 * D)) by (apply exp_ge_1; lra).
  set (X := exp (2 * D)) in *.
  assert (0 <= (X - 1) * a1) by (apply Rmult_le_pos; lra).
  assert (0 <= (X - 1) * a2) by (apply Rmult_le_pos; lra).
  apply div_le_div; [lra | lra |]. nra.
Qed.
