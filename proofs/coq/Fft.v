(* Fft.v -- spec/bounds/vidkv.md §2, lemma F: an FFT (Cooley-Tukey: stages of
   twiddle multiplications and sums, any radices and order) evaluated in binary32,
   componentwise.  A complex number is a vector of dimension 2 (0: real part, 1:
   imaginary part) and |z| its Euclidean norm. *)
From Coq Require Import Reals Lra Lia Psatz.
From Flocq Require Import Core.
From KvqCoq Require Import Sums Arith KeyQuant Vidkv.
Open Scope R_scope.

Definition cmod (z : vec) : R := norm 2 z.
Definition re (z : vec) : R := z 0%nat.
Definition im (z : vec) : R := z 1%nat.
Definition cmk (a b : R) : vec := fun c => match c with O => a | _ => b end.

(* exact complex product, and the binary32 one: four rounded products, a rounded
   difference and a rounded sum *)
Definition cmul (w z : vec) : vec := cmk (re w * re z - im w * im z) (re w * im z + im w * re z).
Definition cmul32 (w z : vec) : vec :=
  cmk (RN32 (RN32 (re w * re z) - RN32 (im w * im z))) (RN32 (RN32 (re w * im z) + RN32 (im w * re z))).

Lemma cmod_eq : forall z, cmod z = sqrt (re z * re z + im z * im z).
Proof. intros. unfold cmod, norm, dot, re, im. simpl. f_equal. ring. Qed.

Lemma cmod_nonneg : forall z, 0 <= cmod z.
Proof. intros. apply norm_nonneg. Qed.

Lemma cmod_ext : forall x y, re x = re y -> im x = im y -> cmod x = cmod y.
Proof.
  intros x y H0 H1. apply norm_ext. intros c Hc. destruct c as [|[|c]]; [exact H0 | exact H1 | lia].
Qed.

Lemma cmod_cmk : forall a b, cmod (cmk a b) = sqrt (a * a + b * b).
Proof. intros. rewrite cmod_eq. reflexivity. Qed.

Lemma cmod_tri : forall x y, cmod (cmk (re x + re y) (im x + im y)) <= cmod x + cmod y.
Proof.
  intros. unfold cmod. replace (norm 2 (cmk (re x + re y) (im x + im y))) with (norm 2 (vadd x y)).
  - apply norm_triangle.
  - apply norm_ext. intros c Hc. destruct c as [|[|c]]; [reflexivity | reflexivity | lia].
Qed.

Lemma cmod_sub_tri : forall x y z,
  cmod (cmk (re x - re z) (im x - im z)) <= cmod (cmk (re x - re y) (im x - im y)) + cmod (cmk (re y - re z) (im y - im z)).
Proof.
  intros. eapply Rle_trans; [|apply (cmod_tri (cmk (re x - re y) (im x - im y)) (cmk (re y - re z) (im y - im z)))].
  right. apply cmod_ext; unfold re, im, cmk; simpl; ring.
Qed.

Lemma cmod_le : forall a b a' b', Rabs a <= a' -> Rabs b <= b' -> cmod (cmk a b) <= cmod (cmk a' b').
Proof.
  intros a b a' b' Ha Hb. unfold cmod. apply norm_le_comp. intros c Hc.
  destruct c as [|[|c]]; simpl.
  - eapply Rle_trans; [exact Ha | apply Rle_abs].
  - eapply Rle_trans; [exact Hb | apply Rle_abs].
  - lia.
Qed.

Lemma re_le : forall z, Rabs (re z) <= cmod z.
Proof.
  intros. rewrite cmod_eq. rewrite <- sqrt_Rsqr_abs. apply sqrt_le_1_alt. unfold Rsqr.
  pose proof (Rle_0_sqr (im z)). unfold Rsqr in H. lra.
Qed.

Lemma im_le : forall z, Rabs (im z) <= cmod z.
Proof.
  intros. rewrite cmod_eq. rewrite <- sqrt_Rsqr_abs. apply sqrt_le_1_alt. unfold Rsqr.
  pose proof (Rle_0_sqr (re z)). unfold Rsqr in H. lra.
Qed.

Lemma cmod_scal : forall k a b, 0 <= k -> cmod (cmk (k * a) (k * b)) = k * cmod (cmk a b).
Proof.
  intros. unfold cmod. replace (norm 2 (cmk (k * a) (k * b))) with (norm 2 (vscal k (cmk a b))).
  - rewrite norm_scal, Rabs_right by lra. reflexivity.
  - apply norm_ext. intros c Hc. destruct c as [|[|c]]; [reflexivity | reflexivity | lia].
Qed.

Lemma cmod_const : forall k, 0 <= k -> cmod (cmk k k) = sqrt 2 * k.
Proof.
  intros. rewrite cmod_cmk. replace (k * k + k * k) with (2 * (k * k)) by ring.
  rewrite sqrt_mult by (lra || nra). rewrite sqrt_square by lra. reflexivity.
Qed.

Lemma cmod_mul : forall w z, cmod (cmul w z) = cmod w * cmod z.
Proof.
  intros. unfold cmul. rewrite cmod_cmk, !cmod_eq. rewrite <- sqrt_mult by nra. f_equal. ring.
Qed.

(* ---- one complex product (Higham, Lemma 3.5, with the absolute parts) ------- *)

Definition kappa (tau : R) : R := (1 + sqrt 2 * tau) * (1 + sqrt 2 * gamma 2 u24).
Definition beta : R := 2 * a150 * (1 + u24).

Lemma g2_ge : 2 * u24 + u24 * u24 <= gamma 2 u24.
Proof. unfold gamma, u24. simpl INR. apply le_div_r; lra. Qed.

(* one rounded product pair combined: |RN32(RN32(x) -+ RN32(y)) - (x -+ y)| <= g2 (|x| + |y|) + beta *)
Lemma pair_err : forall x y (neg : bool),
  let s := if neg then -1 else 1 in
  Rabs (RN32 (RN32 x + s * RN32 y) - (x + s * y)) <= gamma 2 u24 * (Rabs x + Rabs y) + beta.
Proof.
  intros x y neg s.
  assert (Hs : Rabs s = 1) by (unfold s; destruct neg; unfold Rabs; destruct (Rcase_abs _); lra).
  assert (Fs : format32 (s * RN32 y)).
  { unfold s. destruct neg.
    - replace (-1 * RN32 y) with (- RN32 y) by ring. apply generic_format_opp, format32_RN32.
    - rewrite Rmult_1_l. apply format32_RN32. }
  destruct (RN32_plus_rel (RN32 x) (s * RN32 y) (format32_RN32 x) Fs) as [H _].
  pose proof (RN32_abs_err x) as Ex. pose proof (RN32_abs_err y) as Ey.
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  assert (Ha : 0 <= a150) by (unfold a150; left; apply Rinv_0_lt_compat, pow_lt; lra).
  pose proof g2_ge as G.
  replace (RN32 (RN32 x + s * RN32 y) - (x + s * y))
    with ((RN32 (RN32 x + s * RN32 y) - (RN32 x + s * RN32 y)) + (RN32 x - x) + s * (RN32 y - y)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
  rewrite Rabs_mult, Hs, Rmult_1_l.
  assert (Rabs (RN32 x + s * RN32 y) <= Rabs (RN32 x) + Rabs (RN32 y)).
  { eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, Hs. lra. }
  assert (Rabs (RN32 x) <= (1 + u24) * Rabs x + a150).
  { replace (RN32 x) with (x + (RN32 x - x)) by ring. eapply Rle_trans; [apply Rabs_triang|]. lra. }
  assert (Rabs (RN32 y) <= (1 + u24) * Rabs y + a150).
  { replace (RN32 y) with (y + (RN32 y - y)) by ring. eapply Rle_trans; [apply Rabs_triang|]. lra. }
  assert (u24 * Rabs (RN32 x + s * RN32 y) <= u24 * ((1 + u24) * Rabs x + a150 + ((1 + u24) * Rabs y + a150)))
    by (apply Rmult_le_compat_l; lra).
  pose proof (Rabs_pos x). pose proof (Rabs_pos y).
  assert ((2 * u24 + u24 * u24) * (Rabs x + Rabs y) <= gamma 2 u24 * (Rabs x + Rabs y))
    by (apply Rmult_le_compat_r; lra).
  unfold beta. nra.
Qed.

(* |cmul32 w z - w z| <= sqrt2 gamma_2 |w| |z| + sqrt2 beta *)
Theorem cmul32_err : forall w z,
  cmod (cmk (re (cmul32 w z) - re (cmul w z)) (im (cmul32 w z) - im (cmul w z)))
  <= sqrt 2 * gamma 2 u24 * cmod w * cmod z + sqrt 2 * beta.
Proof.
  intros w z. set (a := re w). set (b := im w). set (c := re z). set (d := im z).
  set (g := gamma 2 u24).
  assert (Hg : 0 <= g) by (unfold g; apply gamma_nonneg; [unfold u24 | simpl INR; unfold u24]; lra).
  assert (Hb : 0 <= beta) by (unfold beta, a150, u24; assert (0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra); lra).
  pose proof (pair_err (a * c) (b * d) true) as P1. simpl in P1.
  pose proof (pair_err (a * d) (b * c) false) as P2. simpl in P2.
  replace (RN32 (a * c) + -1 * RN32 (b * d)) with (RN32 (a * c) - RN32 (b * d)) in P1 by ring.
  replace (a * c + -1 * (b * d)) with (a * c - b * d) in P1 by ring.
  rewrite !Rmult_1_l in P2.
  eapply Rle_trans.
  { apply (cmod_le _ _ (g * (Rabs (a * c) + Rabs (b * d)) + beta) (g * (Rabs (a * d) + Rabs (b * c)) + beta)).
    - unfold cmul32, cmul, re at 1, cmk. fold a b c d. simpl. exact P1.
    - unfold cmul32, cmul, im at 1, cmk. fold a b c d. simpl. exact P2. }
  eapply Rle_trans.
  { replace (cmk (g * (Rabs (a * c) + Rabs (b * d)) + beta) (g * (Rabs (a * d) + Rabs (b * c)) + beta))
      with (cmk (re (cmk (g * (Rabs (a * c) + Rabs (b * d))) (g * (Rabs (a * d) + Rabs (b * c)))) + re (cmk beta beta))
                (im (cmk (g * (Rabs (a * c) + Rabs (b * d))) (g * (Rabs (a * d) + Rabs (b * c)))) + im (cmk beta beta)))
      by reflexivity.
    apply cmod_tri. }
  rewrite cmod_scal by exact Hg. rewrite cmod_const by exact Hb.
  apply Rplus_le_compat_r. rewrite Rmult_assoc, Rmult_assoc, (Rmult_comm (sqrt 2)), Rmult_assoc.
  apply Rmult_le_compat_l; [exact Hg|].
  rewrite cmod_cmk, !cmod_eq. fold a b c d.
  rewrite <- !sqrt_mult by nra.
  apply sqrt_le_1_alt. rewrite !Rabs_mult.
  set (A := Rabs a). set (B := Rabs b). set (C := Rabs c). set (D := Rabs d).
  assert (a * a = A * A) by (unfold A; apply sq_abs). assert (b * b = B * B) by (unfold B; apply sq_abs).
  assert (c * c = C * C) by (unfold C; apply sq_abs). assert (d * d = D * D) by (unfold D; apply sq_abs).
  rewrite H, H0, H1, H2.
  assert (0 <= A) by apply Rabs_pos. assert (0 <= B) by apply Rabs_pos.
  assert (0 <= C) by apply Rabs_pos. assert (0 <= D) by apply Rabs_pos.
  clearbody A B C D.
  pose proof (Rle_0_sqr (A * D - B * C)). pose proof (Rle_0_sqr (A * C - B * D)). unfold Rsqr in *.
  nra.
Qed.

(* ---- a complex sum along a summation tree ------------------------------------ *)

(* the tree sum of nonnegative weights and their maximum over the leaves *)
Fixpoint tsum (g : nat -> R) (t : stree) : R :=
  match t with SLeaf i _ => g i | SNode a b => tsum g a + tsum g b end.
Fixpoint tmax (g : nat -> R) (t : stree) : R :=
  match t with SLeaf i _ => g i | SNode a b => Rmax (tmax g a) (tmax g b) end.

Definition cex (z : nat -> vec) (t : stree) : vec := cmk (ex (fun i => re (z i)) t) (ex (fun i => im (z i)) t).
Definition cfl (z : nat -> vec) (t : stree) : vec := cmk (fl (fun i => re (z i)) t) (fl (fun i => im (z i)) t).
Definition cdiff (x y : vec) : vec := cmk (re x - re y) (im x - im y).

Lemma cex_le : forall z t, cmod (cex z t) <= tsum (fun i => cmod (z i)) t.
Proof.
  intros z t. induction t as [i s | a IHa b IHb]; simpl.
  - unfold cex. simpl. rewrite cmod_cmk, cmod_eq. unfold sgn. destruct s; right; f_equal; ring.
  - eapply Rle_trans; [|apply Rplus_le_compat; [exact IHa | exact IHb]].
    eapply Rle_trans; [|apply cmod_tri]. right. apply cmod_ext; reflexivity.
Qed.

Lemma asum_pair_le : forall z t,
  cmod (cmk (asum (fun i => re (z i)) t) (asum (fun i => im (z i)) t)) <= tsum (fun i => cmod (z i)) t.
Proof.
  intros z t. induction t as [i s | a IHa b IHb]; simpl.
  - rewrite cmod_cmk, cmod_eq. right. f_equal. rewrite <- !sq_abs. reflexivity.
  - eapply Rle_trans; [|apply Rplus_le_compat; [exact IHa | exact IHb]].
    eapply Rle_trans; [|apply cmod_tri]. right. apply cmod_ext; reflexivity.
Qed.

(* the binary32 sum of complex terms along t: |cfl - cex| <= gamma_{M-1} sum |z_i| *)
Lemma cfl_err : forall z t, (forall i, format32 (re (z i)) /\ format32 (im (z i))) ->
  INR (size t - 1) * u24 < 1 ->
  cmod (cdiff (cfl z t) (cex z t)) <= gamma (size t - 1) u24 * tsum (fun i => cmod (z i)) t.
Proof.
  intros z t Hf Hn.
  pose proof (sum_tree_error (fun i => re (z i)) t (fun i => proj1 (Hf i)) Hn) as R.
  pose proof (sum_tree_error (fun i => im (z i)) t (fun i => proj2 (Hf i)) Hn) as I.
  assert (Hg : 0 <= gamma (size t - 1) u24) by (apply gamma_nonneg; [unfold u24; lra | exact Hn]).
  eapply Rle_trans.
  { apply (cmod_le _ _ (gamma (size t - 1) u24 * asum (fun i => re (z i)) t)
                       (gamma (size t - 1) u24 * asum (fun i => im (z i)) t)); assumption. }
  rewrite cmod_scal by exact Hg. apply Rmult_le_compat_l; [exact Hg | apply asum_pair_le].
Qed.

Lemma cex_diff : forall x y t,
  cmod (cdiff (cex x t) (cex y t)) <= tsum (fun i => cmod (cdiff (x i) (y i))) t.
Proof.
  intros x y t. eapply Rle_trans; [|apply (cex_le (fun i => cdiff (x i) (y i)))].
  right. apply cmod_ext; unfold cdiff, cex, re, im, cmk; simpl;
  (induction t as [i s | a IHa b IHb]; simpl; [unfold sgn; destruct s; ring | rewrite <- IHa, <- IHb; ring]).
Qed.

Lemma tsum_le : forall f g t, (forall i, f i <= g i) -> tsum f t <= tsum g t.
Proof. intros f g t H. induction t; simpl; [apply H | lra]. Qed.

Lemma tsum_nonneg : forall f t, (forall i, 0 <= f i) -> 0 <= tsum f t.
Proof. intros f t H. induction t; simpl; [apply H | lra]. Qed.

Lemma tsum_plus : forall f g t, tsum (fun i => f i + g i) t = tsum f t + tsum g t.
Proof. intros f g t. induction t; simpl; [reflexivity | rewrite IHt1, IHt2; ring]. Qed.

Lemma tsum_scal : forall k f t, tsum (fun i => k * f i) t = k * tsum f t.
Proof. intros k f t. induction t; simpl; [reflexivity | rewrite IHt1, IHt2; ring]. Qed.

(* a weight at most the maximum: sum_i P_i A_i <= (max P) sum A_i *)
Lemma tsum_max : forall P A t, (forall i, 0 <= A i) ->
  tsum (fun i => P i * A i) t <= tmax P t * tsum A t.
Proof.
  intros P A t HA. induction t as [i s | a IHa b IHb]; simpl; [lra|].
  pose proof (tsum_nonneg A a HA). pose proof (tsum_nonneg A b HA).
  assert (tmax P a * tsum A a <= Rmax (tmax P a) (tmax P b) * tsum A a)
    by (apply Rmult_le_compat_r; [lra | apply Rmax_l]).
  assert (tmax P b * tsum A b <= Rmax (tmax P a) (tmax P b) * tsum A b)
    by (apply Rmult_le_compat_r; [lra | apply Rmax_r]).
  lra.
Qed.

Lemma tsum_pm1 : forall P A t, tsum (fun i => (P i - 1) * A i) t = tsum (fun i => P i * A i) t - tsum A t.
Proof. intros P A t. induction t; simpl; [ring | rewrite IHt1, IHt2; ring]. Qed.

Lemma tmax_ge : forall P t k, (forall i, k <= P i) -> k <= tmax P t.
Proof.
  intros P t k H. induction t; simpl; [apply H|]. eapply Rle_trans; [exact IHt1 | apply Rmax_l].
Qed.

(* ---- FFT expressions ---------------------------------------------------------

   An output of an FFT is an expression over the inputs x_i: a leaf is an input; a
   twiddle node multiplies by a unit complex number w (stored as wh, each part within
   tau); a sum node adds (or subtracts) its terms along a summation tree in any order.
   A Cooley-Tukey FFT of S stages (any radices r_s, any order of the stages) gives each
   output as such an expression: per stage a sum of at most r_s terms, each the product
   of a twiddle and a butterfly constant with a stage input. *)
Inductive fexp : Type :=
  | FLeaf : nat -> fexp
  | FMul : vec -> vec -> fexp -> fexp
  | FSum : stree -> (nat -> fexp) -> fexp.

Section Eval.
Variable x : nat -> vec.       (* the inputs, binary32 parts *)
Variable tau : R.              (* the twiddles' error per part *)

Fixpoint exf (e : fexp) : vec :=
  match e with
  | FLeaf i => x i
  | FMul w _ e' => cmul w (exf e')
  | FSum t f => cex (fun i => exf (f i)) t
  end.

Fixpoint flf (e : fexp) : vec :=
  match e with
  | FLeaf i => x i
  | FMul _ wh e' => cmul32 wh (flf e')
  | FSum t f => cfl (fun i => flf (f i)) t
  end.

(* A: the sum of |x_i| over the leaves (with multiplicity: over the paths);
   P: the relative growth; E: the absolute (underflow) part *)
Fixpoint Aof (e : fexp) : R :=
  match e with
  | FLeaf i => cmod (x i)
  | FMul _ _ e' => Aof e'
  | FSum t f => tsum (fun i => Aof (f i)) t
  end.

Fixpoint Pof (e : fexp) : R :=
  match e with
  | FLeaf _ => 1
  | FMul _ _ e' => kappa tau * Pof e'
  | FSum t f => (1 + gamma (size t - 1) u24) * tmax (fun i => Pof (f i)) t
  end.

Fixpoint Eof (e : fexp) : R :=
  match e with
  | FLeaf _ => 0
  | FMul _ _ e' => kappa tau * Eof e' + sqrt 2 * beta
  | FSum t f => (1 + gamma (size t - 1) u24) * tsum (fun i => Eof (f i)) t
  end.

Fixpoint wf (e : fexp) : Prop :=
  match e with
  | FLeaf _ => True
  | FMul w wh e' => cmod w = 1 /\ Rabs (re wh - re w) <= tau /\ Rabs (im wh - im w) <= tau /\ wf e'
  | FSum t f => INR (size t - 1) * u24 < 1 /\ forall i, wf (f i)
  end.

Hypothesis Hx : forall i, format32 (re (x i)) /\ format32 (im (x i)).
Hypothesis Htau : 0 <= tau.

Lemma flf_format : forall e, format32 (re (flf e)) /\ format32 (im (flf e)).
Proof.
  induction e as [i | w wh e' IH | t f IH]; simpl.
  - apply Hx.
  - unfold cmul32, re, im, cmk. simpl. split; apply format32_RN32.
  - unfold cfl, re, im, cmk. simpl. split; apply format32_fl; intros i; apply (IH i).
Qed.
Lemma kappa_ge1 : 1 <= kappa tau.
Proof.
  unfold kappa. pose proof (sqrt_pos 2).
  assert (0 <= gamma 2 u24) by (apply gamma_nonneg; [unfold u24 | simpl INR; unfold u24]; lra).
  assert (0 <= sqrt 2 * tau) by (apply Rmult_le_pos; lra).
  assert (0 <= sqrt 2 * gamma 2 u24) by (apply Rmult_le_pos; lra). nra.
Qed.

Lemma beta_nonneg : 0 <= beta.
Proof. unfold beta, a150, u24. assert (0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra). lra. Qed.

Lemma cdiff_self : forall z, cmod (cdiff z z) = 0.
Proof. intros. unfold cdiff. rewrite cmod_cmk. replace ((re z - re z) * (re z - re z) + (im z - im z) * (im z - im z)) with 0 by ring. apply sqrt_0. Qed.

Lemma cmod_le_plus : forall a b, cmod a <= cmod b + cmod (cdiff a b).
Proof.
  intros. eapply Rle_trans; [|apply (cmod_tri b (cdiff a b))]. right. apply cmod_ext; unfold cdiff, cmk, re, im; simpl; ring.
Qed.

(* lemma F, componentwise, for one output: |X^ - X| <= (P - 1) A + E, with |X| <= A *)
Theorem VIDKV_lemma_F_expr : forall e, wf e ->
  cmod (exf e) <= Aof e /\ 1 <= Pof e /\ 0 <= Eof e /\
  cmod (cdiff (flf e) (exf e)) <= (Pof e - 1) * Aof e + Eof e.
Proof.
  pose proof kappa_ge1 as Hk. pose proof beta_nonneg as Hb. pose proof (sqrt_pos 2) as Hs2.
  induction e as [i | w wh e' IH | t f IH]; intros Hwf; simpl.
  - rewrite cdiff_self. lra.
  - destruct Hwf as [Hw [Hr [Hi Hwf]]]. destruct (IH Hwf) as [HA [HP [HE Herr]]].
    set (vh := flf e') in *. set (v := exf e') in *. set (A := Aof e') in *. set (P := Pof e') in *. set (E := Eof e') in *.
    assert (H0A : 0 <= A) by (eapply Rle_trans; [apply cmod_nonneg | exact HA]).
    split; [rewrite cmod_mul, Hw; lra|]. split; [nra|]. split; [nra|].
    (* three parts: the rounding, the twiddle's error, the input's error *)
    assert (Hd : cmod (cdiff wh w) <= sqrt 2 * tau).
    { rewrite <- cmod_const by exact Htau. apply cmod_le; assumption. }
    assert (Hwh : cmod wh <= 1 + sqrt 2 * tau) by (pose proof (cmod_le_plus wh w); lra).
    assert (Hvh : cmod vh <= P * A + E) by (pose proof (cmod_le_plus vh v); lra).
    pose proof (cmul32_err wh vh) as T1.
    assert (T2 : cmod (cdiff (cmul wh vh) (cmul w vh)) <= sqrt 2 * tau * cmod vh).
    { replace (cmod (cdiff (cmul wh vh) (cmul w vh))) with (cmod (cmul (cdiff wh w) vh)).
      - rewrite cmod_mul. apply Rmult_le_compat_r; [apply cmod_nonneg | exact Hd].
      - apply cmod_ext; unfold cdiff, cmul, cmk, re, im; simpl; ring. }
    assert (T3 : cmod (cdiff (cmul w vh) (cmul w v)) = cmod (cdiff vh v)).
    { replace (cmod (cdiff (cmul w vh) (cmul w v))) with (cmod (cmul w (cdiff vh v))).
      - rewrite cmod_mul, Hw. ring.
      - apply cmod_ext; unfold cdiff, cmul, cmk, re, im; simpl; ring. }
    pose proof (cmod_sub_tri (cmul32 wh vh) (cmul wh vh) (cmul w v)) as S1.
    pose proof (cmod_sub_tri (cmul wh vh) (cmul w vh) (cmul w v)) as S2.
    fold (cdiff (cmul32 wh vh) (cmul w v)) (cdiff (cmul32 wh vh) (cmul wh vh)) (cdiff (cmul wh vh) (cmul w v)) in S1.
    fold (cdiff (cmul wh vh) (cmul w v)) (cdiff (cmul wh vh) (cmul w vh)) (cdiff (cmul w vh) (cmul w v)) in S2.
    set (g := gamma 2 u24) in *.
    assert (Hg : 0 <= g) by (unfold g; apply gamma_nonneg; [unfold u24 | simpl INR; unfold u24]; lra).
    assert (B1 : sqrt 2 * g * cmod wh * cmod vh <= sqrt 2 * g * (1 + sqrt 2 * tau) * (P * A + E)).
    { apply Rmult_le_compat; [apply Rmult_le_pos; [apply Rmult_le_pos|]; [lra | lra | apply cmod_nonneg] | apply cmod_nonneg | |exact Hvh].
      apply Rmult_le_compat_l; [apply Rmult_le_pos; lra | exact Hwh]. }
    assert (B2 : sqrt 2 * tau * cmod vh <= sqrt 2 * tau * (P * A + E)) by (apply Rmult_le_compat_l; [apply Rmult_le_pos; lra | exact Hvh]).
    unfold cmul32 in T1. fold (cmul32 wh vh) in T1. fold (cdiff (cmul32 wh vh) (cmul wh vh)) in T1.
    assert (K : kappa tau = 1 + sqrt 2 * tau + sqrt 2 * g * (1 + sqrt 2 * tau)) by (unfold kappa; fold g; ring).
    rewrite K. nra.
  - destruct Hwf as [Hn Hwf].
    set (g := gamma (size t - 1) u24) in *.
    assert (Hg : 0 <= g) by (unfold g; apply gamma_nonneg; [unfold u24; lra | exact Hn]).
    assert (HA : forall i, cmod (exf (f i)) <= Aof (f i)) by (intros i; apply (IH i (Hwf i))).
    assert (HP : forall i, 1 <= Pof (f i)) by (intros i; apply (IH i (Hwf i))).
    assert (HE : forall i, 0 <= Eof (f i)) by (intros i; apply (IH i (Hwf i))).
    assert (Herr : forall i, cmod (cdiff (flf (f i)) (exf (f i))) <= (Pof (f i) - 1) * Aof (f i) + Eof (f i))
      by (intros i; apply (IH i (Hwf i))).
    assert (HA0 : forall i, 0 <= Aof (f i)) by (intros i; eapply Rle_trans; [apply cmod_nonneg | apply HA]).
    set (SA := tsum (fun i => Aof (f i)) t). set (SE := tsum (fun i => Eof (f i)) t).
    set (Pm := tmax (fun i => Pof (f i)) t).
    assert (HSA : 0 <= SA) by (apply tsum_nonneg; exact HA0).
    assert (HSE : 0 <= SE) by (apply tsum_nonneg; exact HE).
    assert (HPm : 1 <= Pm) by (apply tmax_ge; exact HP).
    assert (HPA : tsum (fun i => Pof (f i) * Aof (f i)) t <= Pm * SA) by (apply tsum_max; exact HA0).
    split; [eapply Rle_trans; [apply cex_le | apply tsum_le; exact HA]|].
    split; [nra|]. split; [nra|].
    pose proof (cmod_sub_tri (cfl (fun i => flf (f i)) t) (cex (fun i => flf (f i)) t) (cex (fun i => exf (f i)) t)) as S.
    fold (cdiff (cfl (fun i => flf (f i)) t) (cex (fun i => exf (f i)) t)) in S.
    fold (cdiff (cfl (fun i => flf (f i)) t) (cex (fun i => flf (f i)) t)) in S.
    fold (cdiff (cex (fun i => flf (f i)) t) (cex (fun i => exf (f i)) t)) in S.
    pose proof (cfl_err (fun i => flf (f i)) t (fun i => flf_format (f i)) Hn) as C1. fold g in C1.
    pose proof (cex_diff (fun i => flf (f i)) (fun i => exf (f i)) t) as C2.
    (* sum |vh_i| <= Pm SA + SE and sum |vh_i - v_i| <= (Pm - 1) SA + SE *)
    assert (V1 : tsum (fun i => cmod (flf (f i))) t <= Pm * SA + SE).
    { eapply Rle_trans.
      - apply (tsum_le _ (fun i => Pof (f i) * Aof (f i) + Eof (f i))). intros i.
        pose proof (cmod_le_plus (flf (f i)) (exf (f i))). pose proof (HA i). pose proof (Herr i). lra.
      - rewrite tsum_plus. fold SE. lra. }
    assert (V2 : tsum (fun i => cmod (cdiff (flf (f i)) (exf (f i)))) t <= (Pm - 1) * SA + SE).
    { eapply Rle_trans; [apply tsum_le; exact Herr|].
      rewrite (tsum_plus (fun i => (Pof (f i) - 1) * Aof (f i)) (fun i => Eof (f i))). fold SE.
      rewrite (tsum_pm1 (fun i => Pof (f i)) (fun i => Aof (f i))). fold SA. lra. }
    assert (g * tsum (fun i => cmod (flf (f i))) t <= g * (Pm * SA + SE)) by (apply Rmult_le_compat_l; lra).
    nra.
Qed.
End Eval.

(* ---- a Cooley-Tukey FFT: S stages of radices r_1 .. r_S --------------------- *)

From Coq Require Import List.
Import ListNotations.

(* a stage input reaches a stage's sum through at most two multiplications (a
   stored twiddle and a butterfly constant) *)
Definition mul2 (Q : fexp -> Prop) (e : fexp) : Prop :=
  Q e \/ (exists w wh e', e = FMul w wh e' /\ Q e') \/
  (exists w wh w' wh' e', e = FMul w wh (FMul w' wh' e') /\ Q e').

(* an output of the FFT with stages rs (the last stage first): a sum of at most r
   terms, each an output of the remaining stages through mul2; the inputs at the end *)
Fixpoint staged (rs : list nat) (e : fexp) : Prop :=
  match rs with
  | [] => exists i, e = FLeaf i
  | r :: rs' => exists t f, e = FSum t f /\ (size t <= r)%nat /\ forall i, mul2 (staged rs') (f i)
  end.

Fixpoint nprod (rs : list nat) : nat := match rs with [] => 1%nat | r :: rs' => (r * nprod rs')%nat end.
Fixpoint gprod (rs : list nat) : R :=
  match rs with [] => 1 | r :: rs' => (1 + gamma (r - 1) u24) * gprod rs' end.

Definition cabs (tau : R) : R := (1 + kappa tau) * sqrt 2 * beta.
Fixpoint Ebound (tau : R) (rs : list nat) : R :=
  match rs with
  | [] => 0
  | r :: rs' => (1 + gamma (r - 1) u24) * INR r * (kappa tau ^ 2 * Ebound tau rs' + cabs tau)
  end.

Lemma tmax_le : forall P t k, (forall i, P i <= k) -> tmax P t <= k.
Proof. intros P t k H. induction t; simpl; [apply H | apply Rmax_lub; assumption]. Qed.

Lemma tsum_le_const : forall g t k, (forall i, g i <= k) -> tsum g t <= INR (size t) * k.
Proof. intros g t k H. induction t; simpl; [rewrite Rmult_1_l; apply H | rewrite plus_INR; lra]. Qed.

Lemma nprod_pos : forall rs, Forall (fun r => (1 <= r)%nat) rs -> (1 <= nprod rs)%nat.
Proof. induction rs as [|r rs IH]; intros H; simpl; [lia|]. inversion H; subst. specialize (IH H3). nia. Qed.

(* sum_s (r_s - 1) <= prod_s r_s - 1, so prod (1 + gamma_{r_s - 1}) <= 1 + gamma_{N-1} (Higham, Lemma 3.3) *)
Lemma gprod_le : forall rs, Forall (fun r => (1 <= r)%nat) rs -> INR (nprod rs - 1) * u24 < 1 ->
  1 <= gprod rs <= 1 + gamma (nprod rs - 1) u24.
Proof.
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  induction rs as [|r rs IH]; intros H HN; simpl.
  - unfold gamma. simpl. unfold Rdiv. rewrite Rmult_0_l, Rmult_0_l. lra.
  - inversion H as [|r' rs' Hr Hrs]; subst. pose proof (nprod_pos rs Hrs) as HN1.
    assert (Hle : (nprod rs - 1 <= r * nprod rs - 1)%nat) by nia.
    assert (Hle2 : ((r - 1) + (nprod rs - 1) <= r * nprod rs - 1)%nat) by nia.
    assert (HN' : INR (nprod rs - 1) * u24 < 1).
    { eapply Rle_lt_trans; [|exact HN]. apply Rmult_le_compat_r; [exact Hu | apply le_INR; exact Hle]. }
    destruct (IH Hrs HN') as [L U].
    assert (Hsum : INR ((r - 1) + (nprod rs - 1)) * u24 < 1).
    { eapply Rle_lt_trans; [|exact HN]. apply Rmult_le_compat_r; [exact Hu | apply le_INR; exact Hle2]. }
    assert (Hr1 : INR (r - 1) * u24 < 1).
    { eapply Rle_lt_trans; [|exact Hsum]. apply Rmult_le_compat_r; [exact Hu | apply le_INR; lia]. }
    pose proof (gamma_nonneg (r - 1) u24 Hu Hr1).
    split; [nra|].
    eapply Rle_trans; [apply Rmult_le_compat_l; [lra | exact U]|].
    eapply Rle_trans; [apply gamma_add; [exact Hu | exact Hsum]|].
    apply Rplus_le_compat_l. apply gamma_mono; [exact Hle2 | exact Hu | exact HN].
Qed.

Definition radix_ok (r : nat) : Prop := (1 <= r)%nat /\ INR (r - 1) * u24 < 1.

Section Staged.
Variable x : nat -> vec.
Variable tau : R.
Hypothesis Hx : forall i, format32 (re (x i)) /\ format32 (im (x i)).
Hypothesis Htau : 0 <= tau.

Lemma mul2_bounds : forall (Q : fexp -> Prop) e Pb Eb, 0 <= Eb -> 1 <= Pb ->
  (forall e', Q e' -> wf tau e' -> Pof tau e' <= Pb /\ Eof tau e' <= Eb) -> mul2 Q e -> wf tau e ->
  Pof tau e <= kappa tau ^ 2 * Pb /\ Eof tau e <= kappa tau ^ 2 * Eb + cabs tau.
Proof.
  intros Q e Pb Eb HEb HPb HQ Hm Hwf. pose proof (kappa_ge1 tau Htau) as Hk. pose proof beta_nonneg.
  pose proof (sqrt_pos 2).
  assert (Hsb : 0 <= sqrt 2 * beta) by (apply Rmult_le_pos; lra).
  unfold cabs. replace ((1 + kappa tau) * sqrt 2 * beta) with (sqrt 2 * beta + kappa tau * (sqrt 2 * beta)) by ring.
  set (k := kappa tau) in *. set (c := sqrt 2 * beta) in *.
  replace (k ^ 2) with (k * k) by ring.
  assert (K1 : k <= k * k) by nra.
  assert (KP : k * Pb <= k * k * Pb) by (apply Rmult_le_compat_r; lra).
  assert (KE : k * Eb <= k * k * Eb) by (apply Rmult_le_compat_r; lra).
  assert (Pb <= k * Pb) by nra. assert (Eb <= k * Eb) by nra.
  assert (0 <= k * c) by nra.
  destruct Hm as [Hq | [[w [wh [e' [-> Hq]]]] | [w [wh [w' [wh' [e' [-> Hq]]]]]]]].
  - destruct (HQ _ Hq Hwf) as [P1 E1]. lra.
  - destruct Hwf as [_ [_ [_ Hwf]]]. destruct (HQ _ Hq Hwf) as [P1 E1]. simpl. fold k c.
    assert (k * Pof tau e' <= k * Pb) by (apply Rmult_le_compat_l; lra).
    assert (k * Eof tau e' <= k * Eb) by (apply Rmult_le_compat_l; lra). lra.
  - destruct Hwf as [_ [_ [_ [_ [_ [_ Hwf]]]]]]. destruct (HQ _ Hq Hwf) as [P1 E1]. simpl. fold k c.
    assert (k * Pof tau e' <= k * Pb) by (apply Rmult_le_compat_l; lra).
    assert (k * (k * Pof tau e') <= k * (k * Pb)) by (apply Rmult_le_compat_l; lra).
    assert (k * Eof tau e' <= k * Eb) by (apply Rmult_le_compat_l; lra).
    assert (k * (k * Eof tau e' + c) <= k * (k * Eb + c)) by (apply Rmult_le_compat_l; lra).
    lra.
Qed.

Lemma Ebound_nonneg : forall rs, Forall radix_ok rs -> 0 <= Ebound tau rs.
Proof.
  pose proof (kappa_ge1 tau Htau) as Hk. pose proof beta_nonneg. pose proof (sqrt_pos 2).
  assert (0 <= cabs tau) by (unfold cabs; apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  induction rs as [|r rs IH]; intros Hf; simpl; [lra|].
  inversion Hf as [|r' rs' [Hr1 Hr2] Hrs]; subst.
  pose proof (gamma_nonneg (r - 1) u24 ltac:(unfold u24; lra) Hr2). pose proof (pos_INR r).
  specialize (IH Hrs). assert (0 <= kappa tau ^ 2 * Ebound tau rs) by (apply Rmult_le_pos; [apply pow_le|]; lra).
  apply Rmult_le_pos; [apply Rmult_le_pos|]; lra.
Qed.

Lemma gprod_ge1 : forall rs, Forall radix_ok rs -> 1 <= gprod rs.
Proof.
  induction rs as [|r rs IH]; intros Hf; simpl; [lra|].
  inversion Hf as [|r' rs' [Hr1 Hr2] Hrs]; subst.
  pose proof (gamma_nonneg (r - 1) u24 ltac:(unfold u24; lra) Hr2). specialize (IH Hrs). nra.
Qed.

Lemma staged_bounds : forall rs e, Forall radix_ok rs -> staged rs e -> wf tau e ->
  Pof tau e <= kappa tau ^ (2 * length rs) * gprod rs /\ Eof tau e <= Ebound tau rs.
Proof.
  pose proof (kappa_ge1 tau Htau) as Hk.
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  induction rs as [|r rs IH]; intros e Hok Hs Hwf.
  - destruct Hs as [i ->]. simpl. lra.
  - inversion Hok as [|r' rs' [Hr1 Hr2] Hrs]; subst.
    destruct Hs as [t [f [-> [Ht Hf]]]]. destruct Hwf as [Hn Hwf].
    simpl length. simpl gprod. simpl Ebound.
    set (Pb := kappa tau ^ (2 * length rs) * gprod rs). set (Eb := Ebound tau rs).
    assert (HEb : 0 <= Eb) by (apply Ebound_nonneg; exact Hrs).
    assert (HPb : 1 <= Pb).
    { unfold Pb. pose proof (gprod_ge1 rs Hrs). assert (1 <= kappa tau ^ (2 * length rs)) by (apply pow_R1_Rle; lra). nra. }
    assert (Hch : forall i, Pof tau (f i) <= kappa tau ^ 2 * Pb /\ Eof tau (f i) <= kappa tau ^ 2 * Eb + cabs tau).
    { intros i. apply (mul2_bounds (staged rs) (f i) Pb Eb HEb HPb); [| apply Hf | apply Hwf].
      intros e' He' Hw'. apply IH; assumption. }
    assert (Hg : gamma (size t - 1) u24 <= gamma (r - 1) u24) by (apply gamma_mono; [lia | exact Hu | exact Hr2]).
    assert (Hg0 : 0 <= gamma (size t - 1) u24) by (apply gamma_nonneg; assumption).
    pose proof (pos_INR (size t)).
    assert (Hc : 0 <= kappa tau ^ 2 * Eb + cabs tau).
    { pose proof beta_nonneg. pose proof (sqrt_pos 2).
      assert (0 <= cabs tau) by (unfold cabs; apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
      assert (0 <= kappa tau ^ 2 * Eb) by (apply Rmult_le_pos; [apply pow_le|]; lra). lra. }
    split.
    + simpl Pof. replace (2 * S (length rs))%nat with (2 + 2 * length rs)%nat by lia. rewrite pow_add.
      assert (T : tmax (fun i => Pof tau (f i)) t <= kappa tau ^ 2 * Pb) by (apply tmax_le; intros i; apply Hch).
      assert (T0 : 1 <= tmax (fun i => Pof tau (f i)) t).
      { apply tmax_ge. intros i. destruct (VIDKV_lemma_F_expr x tau Hx Htau (f i) (Hwf i)) as [_ [H1 _]]. exact H1. }
      replace (kappa tau ^ 2 * kappa tau ^ (2 * length rs) * ((1 + gamma (r - 1) u24) * gprod rs))
        with ((1 + gamma (r - 1) u24) * (kappa tau ^ 2 * Pb)) by (unfold Pb; ring).
      apply Rmult_le_compat; lra.
    + simpl Eof.
      assert (T : tsum (fun i => Eof tau (f i)) t <= INR (size t) * (kappa tau ^ 2 * Eb + cabs tau))
        by (apply tsum_le_const; intros i; apply Hch).
      assert (INR (size t) <= INR r) by (apply le_INR; exact Ht).
      assert (INR (size t) * (kappa tau ^ 2 * Eb + cabs tau) <= INR r * (kappa tau ^ 2 * Eb + cabs tau))
        by (apply Rmult_le_compat_r; lra).
      assert (0 <= tsum (fun i => Eof tau (f i)) t).
      { apply tsum_nonneg. intros i. destruct (VIDKV_lemma_F_expr x tau Hx Htau (f i) (Hwf i)) as [_ [_ [HE0 _]]]. exact HE0. }
      rewrite Rmult_assoc. apply Rmult_le_compat; lra.
Qed.
Lemma Ebound_closed : forall rs, Forall radix_ok rs ->
  Ebound tau rs <= INR (nprod rs) * INR (length rs) * (kappa tau ^ (2 * length rs) * gprod rs) * cabs tau.
Proof.
  pose proof (kappa_ge1 tau Htau) as Hk. pose proof beta_nonneg. pose proof (sqrt_pos 2).
  assert (Hc : 0 <= cabs tau) by (unfold cabs; apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
  induction rs as [|r rs IH]; intros Hf; [simpl; lra|].
  simpl Ebound. simpl nprod. simpl length. simpl gprod.
  inversion Hf as [|r' rs' [Hr1 Hr2] Hrs]; subst. specialize (IH Hrs).
  pose proof (gamma_nonneg (r - 1) u24 ltac:(unfold u24; lra) Hr2) as Hg.
  assert (HN : (1 <= nprod rs)%nat).
  { clear -Hrs. induction rs as [|q rs IH]; simpl; [lia|]. inversion Hrs as [|q' rs' [Hq _] Hrs']; subst. specialize (IH Hrs'). nia. }
  apply le_INR in HN. simpl INR in HN.
  pose proof (gprod_ge1 rs Hrs) as HG1.
  set (K := kappa tau ^ (2 * length rs)) in *. assert (HK : 1 <= K) by (apply pow_R1_Rle; lra).
  set (Nn := INR (nprod rs)) in *. set (SS := INR (length rs)) in *. set (G := gprod rs) in *. set (c := cabs tau) in *.
  assert (HS : 0 <= SS) by apply pos_INR.
  replace (INR (r * nprod rs)) with (INR r * Nn) by (unfold Nn; rewrite mult_INR; reflexivity).
  replace (INR (Datatypes.S (length rs))) with (SS + 1) by (unfold SS; rewrite S_INR; reflexivity).
  replace (2 * Datatypes.S (length rs))%nat with (2 + 2 * length rs)%nat by lia. rewrite pow_add. fold K.
  replace (kappa tau ^ 2) with (kappa tau * kappa tau) by ring.
  set (k := kappa tau) in *.
  assert (Hkk : 1 <= k * k) by nra.
  pose proof (pos_INR r) as Hr.
  (* (1 + g) r (k^2 Eb + c) <= r N (S + 1) (k^2 K (1 + g) G) c *)
  assert (E1 : k * k * Ebound tau rs <= k * k * (Nn * SS * (K * G) * c)) by (apply Rmult_le_compat_l; lra).
  assert (E2 : c <= Nn * (k * k) * (K * G) * c).
  { assert (H1 : 1 <= Nn * (k * k) * (K * G)).
    { assert (1 <= K * G) by (replace 1 with (1 * 1) by ring; apply Rmult_le_compat; lra).
      assert (1 <= Nn * (k * k)) by (replace 1 with (1 * 1) by ring; apply Rmult_le_compat; lra).
      replace 1 with (1 * 1) by ring; apply Rmult_le_compat; lra. }
    rewrite <- (Rmult_1_l c) at 1. apply Rmult_le_compat_r; lra. }
  assert (E3 : k * k * Ebound tau rs + c <= Nn * (SS + 1) * (k * k * K * G) * c) by nra.
  assert (0 <= (1 + gamma (r - 1) u24) * INR r) by nra.
  replace (INR r * Nn * (SS + 1) * (k * k * K * ((1 + gamma (r - 1) u24) * G)) * c)
    with ((1 + gamma (r - 1) u24) * INR r * (Nn * (SS + 1) * (k * k * K * G) * c)) by ring.
  apply Rmult_le_compat_l; lra.
Qed.

Lemma radix_ok_all : forall rs, Forall (fun r => (1 <= r)%nat) rs -> INR (nprod rs - 1) * u24 < 1 ->
  Forall radix_ok rs.
Proof.
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  induction rs as [|r rs IH]; intros Hf HN; [constructor|].
  inversion Hf as [|r' rs' Hr Hrs]; subst. simpl in HN.
  assert (HN1 : (1 <= nprod rs)%nat) by (apply nprod_pos; exact Hrs).
  constructor.
  - split; [exact Hr|]. eapply Rle_lt_trans; [|exact HN]. apply Rmult_le_compat_r; [exact Hu|]. apply le_INR. nia.
  - apply IH; [exact Hrs|]. eapply Rle_lt_trans; [|exact HN]. apply Rmult_le_compat_r; [exact Hu|]. apply le_INR. nia.
Qed.

(* Lemma F: an output X^ of a Cooley-Tukey FFT of N = r_1 ... r_S (every r_s >= 1,
   (N - 1) u < 1) in binary32, twiddles within tau per part of unit complex numbers,
   inputs with binary32 parts, satisfies
     |X^ - X| <= A (((1 + sqrt2 tau)(1 + sqrt2 gamma_2))^(2S) (1 + gamma_{N-1}) - 1) + E,
   A = the sum of |x_n| over the paths (sum_n |x_n| when each input reaches the output
   once, as in Cooley-Tukey), and, when the factor G = kappa^(2S) (1 + gamma_{N-1}) is at
   most 2, E <= 16 N S 2^-150 (the absolute parts of the underflowing products). *)
Theorem VIDKV_lemma_F : forall rs e,
  Forall (fun r => (1 <= r)%nat) rs -> INR (nprod rs - 1) * u24 < 1 ->
  staged rs e -> wf tau e ->
  kappa tau ^ (2 * length rs) * (1 + gamma (nprod rs - 1) u24) <= 2 ->
  cmod (cdiff (flf x e) (exf x e))
  <= (kappa tau ^ (2 * length rs) * (1 + gamma (nprod rs - 1) u24) - 1) * Aof x e
     + 16 * INR (nprod rs) * INR (length rs) * / 2 ^ 150.
Proof.
  intros rs e Hr HN Hs Hwf HG.
  pose proof (radix_ok_all rs Hr HN) as Hok.
  destruct (VIDKV_lemma_F_expr x tau Hx Htau e Hwf) as [HA [_ [_ Herr]]].
  destruct (staged_bounds rs e Hok Hs Hwf) as [HP HE].
  destruct (gprod_le rs Hr HN) as [_ Hgp].
  pose proof (kappa_ge1 tau Htau) as Hk.
  assert (HA0 : 0 <= Aof x e) by (eapply Rle_trans; [apply cmod_nonneg | exact HA]).
  set (K := kappa tau ^ (2 * length rs)) in *. assert (HK : 1 <= K) by (apply pow_R1_Rle; lra).
  eapply Rle_trans; [exact Herr|]. apply Rplus_le_compat.
  - apply Rmult_le_compat_r; [exact HA0|].
    assert (K * gprod rs <= K * (1 + gamma (nprod rs - 1) u24)) by (apply Rmult_le_compat_l; lra). lra.
  - eapply Rle_trans; [exact HE|]. eapply Rle_trans; [apply Ebound_closed; exact Hok|]. fold K.
    pose proof (pos_INR (nprod rs)). pose proof (pos_INR (length rs)).
    assert (HKG : K * gprod rs <= 2).
    { assert (K * gprod rs <= K * (1 + gamma (nprod rs - 1) u24)) by (apply Rmult_le_compat_l; lra). lra. }
    destruct (length rs) as [|S] eqn:HS.
    + simpl INR. rewrite Rmult_0_r, !Rmult_0_l. rewrite Rmult_0_r, Rmult_0_l. lra.
    + (* kappa^2 <= K G <= 2, so kappa <= 3/2 and cabs <= 8 2^-150 *)
      assert (Hk2 : kappa tau * kappa tau <= 2).
      { assert (kappa tau ^ 2 <= K).
        { unfold K. replace (2 * Datatypes.S S)%nat with (2 + 2 * S)%nat by lia. rewrite pow_add.
          assert (1 <= kappa tau ^ (2 * S)) by (apply pow_R1_Rle; lra).
          assert (0 <= kappa tau ^ 2) by (apply pow_le; lra). nra. }
        pose proof (gprod_ge1 rs Hok). replace (kappa tau ^ 2) with (kappa tau * kappa tau) in H1 by ring. nra. }
      assert (Hk32 : kappa tau <= 3 / 2) by nra.
      assert (Hs2 : sqrt 2 <= 3 / 2).
      { rewrite <- (sqrt_square (3 / 2)) by lra. apply sqrt_le_1_alt. lra. }
      assert (Hc : cabs tau <= 8 * / 2 ^ 150).
      { unfold cabs, beta, a150, u24. assert (0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra).
        pose proof (sqrt_pos 2).
        assert ((1 + kappa tau) * sqrt 2 <= 5 / 2 * (3 / 2)) by (apply Rmult_le_compat; lra).
        nra. }
      pose proof beta_nonneg. pose proof (sqrt_pos 2).
      assert (Hc0 : 0 <= cabs tau) by (unfold cabs; apply Rmult_le_pos; [apply Rmult_le_pos|]; lra).
      assert (HNS : 0 <= INR (nprod rs) * INR (Datatypes.S S)) by nra.
      assert (INR (nprod rs) * INR (Datatypes.S S) * (K * gprod rs) * cabs tau
              <= INR (nprod rs) * INR (Datatypes.S S) * 2 * (8 * / 2 ^ 150)).
      { apply Rmult_le_compat; [| lra | apply Rmult_le_compat_l; lra | exact Hc].
        apply Rmult_le_pos; [lra|]. pose proof (gprod_ge1 rs Hok). nra. }
      lra.
Qed.
(* [VIDKV-B-01] for a complex Cooley-Tukey FFT of length N = r_1 ... r_S, every radix
   >= 2 and S <= L + 1 (L = floor(log2 N) gives S <= L): each part of an output is within
   A f_N + 16 N (L + 1) 2^-150 of the exact one, f_N = kappa^(2(L + 1)) (1 + gamma_N) - 1,
   when f_N <= 1 (the spec's f_N and the FFT half of c_N). *)
Theorem VIDKV_B_01_fft : forall rs e L,
  Forall (fun r => (2 <= r)%nat) rs -> (length rs <= L + 1)%nat -> INR (nprod rs) * u24 < 1 ->
  staged rs e -> wf tau e ->
  let fN := kappa tau ^ (2 * (L + 1)) * (1 + gamma (nprod rs) u24) - 1 in
  fN <= 1 ->
  Rabs (re (flf x e) - re (exf x e)) <= Aof x e * fN + 16 * INR (nprod rs) * INR (L + 1) * / 2 ^ 150 /\
  Rabs (im (flf x e) - im (exf x e)) <= Aof x e * fN + 16 * INR (nprod rs) * INR (L + 1) * / 2 ^ 150.
Proof.
  intros rs e L Hr HS HN Hs Hwf fN HfN.
  assert (Hu : 0 <= u24) by (unfold u24; lra).
  assert (Hr1 : Forall (fun r => (1 <= r)%nat) rs) by (apply (Forall_impl (P := fun r => (2 <= r)%nat)); [intros; lia | exact Hr]).
  assert (HN1 : INR (nprod rs - 1) * u24 < 1).
  { eapply Rle_lt_trans; [|exact HN]. apply Rmult_le_compat_r; [exact Hu | apply le_INR; lia]. }
  pose proof (kappa_ge1 tau Htau) as Hk.
  assert (Hg : gamma (nprod rs - 1) u24 <= gamma (nprod rs) u24) by (apply gamma_mono; [lia | exact Hu | exact HN]).
  assert (Hg0 : 0 <= gamma (nprod rs - 1) u24) by (apply gamma_nonneg; assumption).
  assert (HK : kappa tau ^ (2 * length rs) <= kappa tau ^ (2 * (L + 1))) by (apply Rle_pow; [lra | lia]).
  assert (HK1 : 1 <= kappa tau ^ (2 * length rs)) by (apply pow_R1_Rle; lra).
  assert (HG : kappa tau ^ (2 * length rs) * (1 + gamma (nprod rs - 1) u24) <= fN + 1).
  { unfold fN. replace (kappa tau ^ (2 * (L + 1)) * (1 + gamma (nprod rs) u24) - 1 + 1)
      with (kappa tau ^ (2 * (L + 1)) * (1 + gamma (nprod rs) u24)) by ring.
    apply Rmult_le_compat; lra. }
  pose proof (VIDKV_lemma_F rs e Hr1 HN1 Hs Hwf ltac:(lra)) as F.
  destruct (VIDKV_lemma_F_expr x tau Hx Htau e Hwf) as [HA _].
  assert (HA0 : 0 <= Aof x e) by (eapply Rle_trans; [apply cmod_nonneg | exact HA]).
  assert (HL : INR (length rs) <= INR (L + 1)) by (apply le_INR; exact HS).
  pose proof (pos_INR (nprod rs)).
  assert (16 * INR (nprod rs) * INR (length rs) * / 2 ^ 150 <= 16 * INR (nprod rs) * INR (L + 1) * / 2 ^ 150).
  { assert (0 < / 2 ^ 150) by (apply Rinv_0_lt_compat, pow_lt; lra).
    apply Rmult_le_compat_r; [lra|]. apply Rmult_le_compat_l; lra. }
  assert ((kappa tau ^ (2 * length rs) * (1 + gamma (nprod rs - 1) u24) - 1) * Aof x e <= Aof x e * fN)
    by (rewrite Rmult_comm; apply Rmult_le_compat_l; lra).
  pose proof (re_le (cdiff (flf x e) (exf x e))) as R. pose proof (im_le (cdiff (flf x e) (exf x e))) as I.
  replace (re (cdiff (flf x e) (exf x e))) with (re (flf x e) - re (exf x e)) in R by reflexivity.
  replace (im (cdiff (flf x e) (exf x e))) with (im (flf x e) - im (exf x e)) in I by reflexivity.
  split; lra.
Qed.

(* [VIDKV-B-01], the decision: a computed part y within rho of the exact Y, |Y| > rho,
   has the sign of Y, strictly: y >= 0 iff Y > 0. *)
Theorem VIDKV_B_01_sign : forall y Y rho, Rabs (y - Y) <= rho -> rho < Rabs Y ->
  y <> 0 /\ (0 <= y <-> 0 < Y).
Proof.
  intros y Y rho H1 H2. revert H1 H2. unfold Rabs.
  destruct (Rcase_abs (y - Y)), (Rcase_abs Y); intros; split; try split; intros.
  all: lra.
Qed.
End Staged.
