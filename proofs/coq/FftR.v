(* FftR.v -- spec/bounds/vidkv.md §2: the extra butterfly of a real-input (R2C) transform
   built on a half-length complex FFT.  Lemma F (Fft.v) with inputs that are themselves
   approximations (the half-length FFT's outputs), and the post-processing of one output,
     X_k = ((Z_k + conj Z_{M-k}) + w (Z_k - conj Z_{M-k})) / 2,   w = -i W^k, |w| = 1,
   as an FFT expression over the two leaves Z^_k and conj Z^_{M-k} (a conjugation is exact:
   the leaf is the conjugated binary32 value), followed by a binary32 halving of each part. *)
From Coq Require Import Reals Lra Lia Psatz ZArith.
From Flocq Require Import Core.
From KvqCoq Require Import Sums Arith KeyQuant Vidkv Fft.
Open Scope R_scope.
Local Instance prec24r : Prec_gt_0 24 := eq_refl.

(* the exact evaluation is linear with unit twiddles: it moves by at most the sum over the
   paths of the inputs' moves *)
Lemma exf_diff : forall x X tau e, wf tau e ->
  cmod (cdiff (exf x e) (exf X e)) <= Aof (fun i => cdiff (x i) (X i)) e.
Proof.
  intros x X tau e. induction e as [i | w wh e' IH | t f IH]; intros Hwf; simpl.
  - lra.
  - destruct Hwf as [Hw [_ [_ Hwf]]].
    replace (cmod (cdiff (cmul w (exf x e')) (cmul w (exf X e')))) with (cmod (cmul w (cdiff (exf x e') (exf X e')))).
    + rewrite cmod_mul, Hw, Rmult_1_l. apply IH, Hwf.
    + apply cmod_ext; unfold cdiff, cmul, cmk, re, im; simpl; ring.
  - destruct Hwf as [_ Hwf]. eapply Rle_trans; [apply cex_diff|]. apply tsum_le. intros i. apply IH, Hwf.
Qed.

Lemma Aof_nonneg : forall x e, 0 <= Aof x e.
Proof.
  intros x e. induction e as [i | w wh e' IH | t f IH]; simpl; [apply cmod_nonneg | exact IH |].
  apply tsum_nonneg. exact IH.
Qed.

Lemma Aof_tri : forall x X e, Aof x e <= Aof X e + Aof (fun i => cdiff (x i) (X i)) e.
Proof.
  intros x X e. induction e as [i | w wh e' IH | t f IH]; simpl; [apply cmod_le_plus | exact IH |].
  rewrite <- tsum_plus. apply tsum_le. exact IH.
Qed.

(* Lemma F with approximate inputs x of exact X:
   |X^ - X| <= (P - 1) A(X) + E + P A(x - X) *)
Theorem VIDKV_lemma_F_approx : forall x X tau e,
  (forall i, format32 (re (x i)) /\ format32 (im (x i))) -> 0 <= tau -> wf tau e ->
  cmod (cdiff (flf x e) (exf X e))
  <= (Pof tau e - 1) * Aof X e + Eof tau e + Pof tau e * Aof (fun i => cdiff (x i) (X i)) e.
Proof.
  intros x X tau e Hx Htau Hwf.
  destruct (VIDKV_lemma_F_expr x tau Hx Htau e Hwf) as [_ [HP [HE Herr]]].
  pose proof (exf_diff x X tau e Hwf) as D. pose proof (Aof_tri x X e) as T.
  pose proof (Aof_nonneg (fun i => cdiff (x i) (X i)) e) as N.
  pose proof (cmod_sub_tri (flf x e) (exf x e) (exf X e)) as S.
  fold (cdiff (flf x e) (exf X e)) (cdiff (flf x e) (exf x e)) (cdiff (exf x e) (exf X e)) in S.
  assert ((Pof tau e - 1) * Aof x e <= (Pof tau e - 1) * (Aof X e + Aof (fun i => cdiff (x i) (X i)) e))
    by (apply Rmult_le_compat_l; lra).
  lra.
Qed.

(* ---- the post-processing butterfly -------------------------------------------------- *)

Definition tr2 (neg : bool) : stree := SNode (SLeaf 0 false) (SLeaf 1 neg).

(* (Z + Z') + w (Z - Z') over the leaves 0 (Z^_k) and 1 (conj Z^_{M-k}) *)
Definition r2c (w wh : vec) : fexp :=
  FSum (tr2 false) (fun i => match i with O => FSum (tr2 false) FLeaf | _ => FMul w wh (FSum (tr2 true) FLeaf) end).

Definition half (v : vec) : vec := cmk (re v / 2) (im v / 2).
Definition half32 (v : vec) : vec := cmk (RN32 (re v / 2)) (RN32 (im v / 2)).

(* halving a binary32 value: exact unless the result is below 2^-125, then within 2^-150 *)
Lemma half_err : forall y, format32 y -> Rabs (RN32 (y / 2) - y / 2) <= / 2 ^ 150.
Proof.
  intros y Hy. rewrite <- bpow_m150.
  destruct (Rlt_le_dec (Rabs (y / 2)) (bpow radix2 (-149 + 24))) as [Hs|Hn].
  - unfold RN32. eapply Rle_trans; [apply (error_le_half_ulp radix2 (FLT_exp (-149) 24))|].
    rewrite (ulp_FLT_small radix2 (-149) 24) by exact Hs.
    replace (-150)%Z with (-149 + -1)%Z by lia. rewrite bpow_plus. simpl. unfold Z.pow_pos. simpl. lra.
  - unfold RN32. rewrite round_generic; [rewrite Rminus_diag_eq, Rabs_R0 by reflexivity; apply bpow_ge_0 | auto with typeclass_instances|].
    destruct (FLT_format_generic radix2 (-149) 24 y Hy) as [[m e] Ey Hm He]. simpl in Hm, He.
    assert (He1 : (-148 <= e)%Z).
    { destruct (Z.eq_dec e (-149)) as [E|E]; [|lia]. exfalso.
      assert (Rabs y < bpow radix2 (-125)).
      { rewrite Ey. unfold F2R. cbn [Fnum Fexp]. rewrite E, Rabs_mult, (Rabs_pos_eq (bpow radix2 (-149))) by apply bpow_ge_0.
        replace (-125)%Z with (24 + -149)%Z by lia. rewrite bpow_plus.
        apply Rmult_lt_compat_r; [apply bpow_gt_0|]. rewrite <- abs_IZR.
        change (bpow radix2 24) with (IZR (Zpower radix2 24)). apply IZR_lt. exact Hm. }
      unfold Rdiv in Hn. rewrite Rabs_mult, (Rabs_pos_eq (/ 2)) in Hn by lra.
      change (-149 + 24)%Z with (-125)%Z in Hn. pose proof (bpow_gt_0 radix2 (-125)). lra. }
    apply generic_format_FLT. apply (FLT_spec radix2 (-149) 24 (y / 2) (Float radix2 m (e - 1))); [| exact Hm | simpl; lia].
    rewrite Ey. unfold F2R. cbn [Fnum Fexp]. replace (e - 1)%Z with (e + -1)%Z by lia. rewrite bpow_plus.
    change (bpow radix2 (-1)) with (/ IZR (Z.pow_pos 2 1)). unfold Z.pow_pos. simpl. field.
Qed.

(* [bounds/vidkv.md §2] the R2C butterfly: from Z^_k, conj Z^_{M-k} (binary32, within D of
   the exact Z_k, conj Z_{M-k}, A = |Z_k| + |Z_{M-k}|), the output
   X^_k = half32(fl((Z^ + Z'^) + fl(w^ (Z^ - Z'^)))) is within
     (P - 1) 2 A / 2 + P 2 D / 2 + E / 2 + sqrt2 2^-150,
   P = (1 + gamma_1)^2 kappa, E = (1 + gamma_1) sqrt2 beta, of the exact X_k: the
   butterfly's relative part multiplies the half-length FFT's by (1 + gamma_1)^2 kappa, and
   its path sum is 2 A -- each input of the half-length FFT reaches X_k along four paths of
   gain 1/2, through Z_k and through Z_{M-k}. *)
Theorem VIDKV_lemma_F_r2c : forall (x X : nat -> vec) tau w wh,
  (forall i, format32 (re (x i)) /\ format32 (im (x i))) -> 0 <= tau ->
  cmod w = 1 -> Rabs (re wh - re w) <= tau -> Rabs (im wh - im w) <= tau ->
  let A := cmod (X 0%nat) + cmod (X 1%nat) in
  let D := cmod (cdiff (x 0%nat) (X 0%nat)) + cmod (cdiff (x 1%nat) (X 1%nat)) in
  let P := (1 + gamma 1 u24) * ((1 + gamma 1 u24) * kappa tau) in
  cmod (cdiff (half32 (flf x (r2c w wh))) (half (exf X (r2c w wh))))
  <= ((P - 1) * (2 * A) + P * (2 * D) + (1 + gamma 1 u24) * (sqrt 2 * beta)) / 2 + sqrt 2 * / 2 ^ 150.
Proof.
  intros x X tau w wh Hx Htau Hw Hr Hi A D P.
  assert (Hwf : wf tau (r2c w wh)).
  { assert (Hu1 : 1 * u24 < 1) by (unfold u24; lra).
    simpl. split; [exact Hu1|]. intros [|i]; simpl; [split; [exact Hu1 | intros; exact I]|].
    split; [exact Hw|]. split; [exact Hr|]. split; [exact Hi|]. split; [exact Hu1 | intros; exact I]. }
  pose proof (VIDKV_lemma_F_approx x X tau (r2c w wh) Hx Htau Hwf) as F.
  assert (Hg : 0 <= gamma 1 u24) by (apply gamma_nonneg; [unfold u24; lra | simpl INR; unfold u24; lra]).
  pose proof kappa_ge1 as Hk. specialize (Hk tau Htau).
  assert (EP : Pof tau (r2c w wh) = P).
  { unfold P. simpl. rewrite (Rmax_left 1 1) by lra. rewrite !Rmult_1_r, Rmax_right; [ring|]. nra. }
  assert (EA : Aof X (r2c w wh) = 2 * A) by (unfold A; simpl; ring).
  assert (ED : Aof (fun i => cdiff (x i) (X i)) (r2c w wh) = 2 * D) by (unfold D; simpl; ring).
  assert (EE : Eof tau (r2c w wh) = (1 + gamma 1 u24) * (sqrt 2 * beta))
    by (simpl; ring).
  rewrite EP, EA, ED, EE in F.
  set (v := flf x (r2c w wh)) in *. set (V := exf X (r2c w wh)) in *.
  assert (Fv : format32 (re v) /\ format32 (im v)) by (apply flf_format; exact Hx).
  (* the halving: each part within 2^-150, the rest is half the butterfly's error *)
  assert (H1 : cmod (cdiff (half32 v) (half v)) <= sqrt 2 * / 2 ^ 150).
  { assert (E1 : cmod (cdiff (half32 v) (half v))
                 = cmod (cmk (RN32 (re v / 2) - re v / 2) (RN32 (im v / 2) - im v / 2)))
      by (apply cmod_ext; reflexivity).
    rewrite E1, <- cmod_const by (apply Rlt_le, Rinv_0_lt_compat, pow_lt; lra).
    apply cmod_le; [apply half_err, Fv | apply half_err, Fv]. }
  assert (H2 : cmod (cdiff (half v) (half V)) = / 2 * cmod (cdiff v V)).
  { replace (cmod (cdiff v V)) with (cmod (cmk (re v - re V) (im v - im V))) by reflexivity.
    rewrite <- (cmod_scal (/ 2)) by lra. apply cmod_ext; unfold cdiff, half, cmk, re, im; simpl; field. }
  pose proof (cmod_sub_tri (half32 v) (half v) (half V)) as S.
  fold (cdiff (half32 v) (half V)) (cdiff (half32 v) (half v)) (cdiff (half v) (half V)) in S.
  lra.
Qed.
