(* Accum.v -- spec/bounds/cert.md §7 step 5, [CERT-AR-01]: a recursive binary32
   accumulation has the form step 5 assumes.  One online-softmax pass keeps
   l_{k+1} = RN32(RN32(l_k alpha_k) + p_k) and, per channel c,
   acc_{k+1,c} = RN32(RN32(acc_{k,c} alpha_k) + RN32(p_k v_{k,c})): each rounding a
   relative error of at most u (binary32 sums of binary32 numbers are exact to that
   model; products that underflow are step 5's separate absolute part).  Then every
   term k sits in the result as w_k P_k, w_k = p_k alpha_{k+1} ... alpha_{n-1} its
   effective weight (the same computed alphas for l and acc), P_k a product of at most
   2n factors (1 +- u): l~ = W (1 + f), acc~ = sum w_k v_k + E, |f| <= gamma_D,
   norm(E) <= gamma_D W Vh for 2n <= D (the spec's D = 2 nS + 1). *)
From Coq Require Import Reals Lra Lia Psatz.
From KvqCoq Require Import Sums Arith.
Open Scope R_scope.

Lemma pow_le_one : forall a k, 0 <= a <= 1 -> a ^ k <= 1.
Proof. intros a k H. induction k; simpl; [lra|]. assert (0 <= a ^ k) by (apply pow_le; lra). nra. Qed.

Section Rec.
Variables (a t rho sg pp : nat -> R).

(* effective weight of term k after n steps *)
Fixpoint weff (n k : nat) : R :=
  match n with
  | O => 0
  | S n' => if Nat.ltb k n' then weff n' k * a n' else t n'
  end.

(* the recursion: r_{n+1} = ((r_n a_n)(1 + rho_n) + t_n (1 + pp_n))(1 + sg_n) *)
Fixpoint racc (n : nat) : R :=
  match n with
  | O => 0
  | S n' => (racc n' * a n' * (1 + rho n') + t n' * (1 + pp n')) * (1 + sg n')
  end.

Lemma racc_form : forall u n, 0 <= u < 1 ->
  (forall k, (k < n)%nat -> Rabs (rho k) <= u /\ Rabs (sg k) <= u /\ Rabs (pp k) <= u) ->
  exists P, (forall k, (k < n)%nat -> (1 - u) ^ (2 * n) <= P k <= (1 + u) ^ (2 * n)) /\
    racc n = sum n (fun k => weff n k * P k).
Proof.
  intros u n Hu. induction n as [|n IH]; intros H.
  - exists (fun _ => 1). split; [intros; lia | reflexivity].
  - destruct IH as [P [HP E]]; [intros; apply H; lia|].
    destruct (H n ltac:(lia)) as [Hr [Hs Hp]].
    assert (B : forall x, Rabs x <= u -> 1 - u <= 1 + x <= 1 + u)
      by (intros x Hx; revert Hx; unfold Rabs; destruct (Rcase_abs x); intros; lra).
    destruct (B _ Hr) as [r0 r1]. destruct (B _ Hs) as [s0 s1]. destruct (B _ Hp) as [p0 p1].
    exists (fun k => if Nat.ltb k n then P k * ((1 + rho n) * (1 + sg n)) else (1 + pp n) * (1 + sg n)).
    split.
    + intros k Hk.
      replace (2 * S n)%nat with (S (S (2 * n))) by lia.
      assert (L2 : (1 - u) ^ S (S (2 * n)) = (1 - u) ^ (2 * n) * ((1 - u) * (1 - u))) by (simpl; ring).
      assert (U2 : (1 + u) ^ S (S (2 * n)) = (1 + u) ^ (2 * n) * ((1 + u) * (1 + u))) by (simpl; ring).
      assert (0 <= (1 - u) ^ (2 * n)) by (apply pow_le; lra).
      assert (1 <= (1 + u) ^ (2 * n)) by (apply pow_R1_Rle; lra).
      assert ((1 - u) ^ (2 * n) <= 1) by (apply pow_le_one; lra).
      rewrite L2, U2.
      destruct (Nat.ltb_spec k n) as [Hkn|Hkn].
      * destruct (HP k Hkn) as [P0 P1].
        split; apply Rmult_le_compat; try nra.
      * assert (A1 : (1 - u) * (1 - u) <= (1 + pp n) * (1 + sg n)) by (apply Rmult_le_compat; lra).
        assert (A2 : (1 + pp n) * (1 + sg n) <= (1 + u) * (1 + u)) by (apply Rmult_le_compat; lra).
        assert (0 <= (1 - u) * (1 - u)) by nra.
        split; nra.
    + simpl racc. rewrite E.
      simpl sum. simpl weff. rewrite Nat.ltb_irrefl.
      rewrite Rmult_plus_distr_r. f_equal.
      * rewrite <- (sum_scal_r n).
        rewrite !Rmult_assoc, <- sum_scal_r. apply sum_ext. intros k Hk.
        destruct (Nat.ltb_spec k n) as [_|Hkn]; [ring | lia].
      * ring.
Qed.
End Rec.

(* the effective weight of the channel's terms p_k v_{k,c} is w_k v_{k,c} *)
Lemma weff_scale : forall a t s n k, (k < n)%nat ->
  weff a (fun i => t i * s i) n k = weff a t n k * s k.
Proof.
  intros a t s n. induction n as [|n IH]; intros k Hk; [lia|]. simpl.
  destruct (Nat.ltb_spec k n) as [Hkn|Hkn]; [rewrite IH by exact Hkn; ring|].
  replace k with n by lia. reflexivity.
Qed.

Lemma weff_nonneg : forall a t n k, (forall i, 0 <= a i) -> (forall i, 0 <= t i) -> 0 <= weff a t n k.
Proof.
  intros a t n k Ha Ht. induction n as [|n IH]; simpl; [lra|].
  destruct (Nat.ltb k n); [apply Rmult_le_pos; [exact IH | apply Ha] | apply Ht].
Qed.

Lemma prod_const : forall n x, prod n (fun _ => x) = x ^ n.
Proof. induction n as [|n IH]; intros x; simpl; [reflexivity | rewrite IH; ring]. Qed.

Lemma pow_gamma : forall D u, 0 <= u -> INR D * u < 1 ->
  1 - gamma D u <= (1 - u) ^ D /\ (1 + u) ^ D <= 1 + gamma D u.
Proof.
  intros D u Hu HD. split.
  - pose proof (spec_gamma_n D u (fun _ => - u) (fun _ => false) Hu HD) as G.
    simpl in G. rewrite prod_const in G. replace (1 + - u) with (1 - u) in G by ring.
    apply G. intros. rewrite Rabs_Ropp, Rabs_right by lra. lra.
  - pose proof (spec_gamma_n D u (fun _ => u) (fun _ => false) Hu HD) as G.
    simpl in G. rewrite prod_const in G. apply G. intros. rewrite Rabs_right by lra. lra.
Qed.

(* Step 5's form.  Terms p_k >= 0 (the exps), rescalings alpha_k >= 0, values v_k with
   norm(v_k) <= Vh; l~ and each acc~_c are the recursion with their own roundings
   (rho, sg: the rescale product and the addition; pp: the product p_k v_{k,c}, none for l~),
   all within u; n terms, 2n <= D, D u < 1.  With w_k = weff alpha p n k and W = sum w_k:
   l~ = W (1 + f), |f| <= gamma_D, and E = acc~ - sum w_k v_k has norm(E) <= gamma_D W Vh. *)
Theorem CERT_AR_01_recursive : forall d n D u Vh (alpha p rl sl : nat -> R)
    (ra sa pa : nat -> nat -> R) (v : nat -> vec),
  0 <= u < 1 -> (2 * n <= D)%nat -> INR D * u < 1 ->
  (forall k, 0 <= alpha k) -> (forall k, 0 <= p k) ->
  (forall k, (k < n)%nat -> norm d (v k) <= Vh) ->
  (forall k, (k < n)%nat -> Rabs (rl k) <= u /\ Rabs (sl k) <= u) ->
  (forall c k, (c < d)%nat -> (k < n)%nat -> Rabs (ra c k) <= u /\ Rabs (sa c k) <= u /\ Rabs (pa c k) <= u) ->
  let w := weff alpha p n in
  let W := sum n w in
  let l := racc alpha p rl sl (fun _ => 0) n in
  let E := fun c => racc alpha (fun k => p k * v k c) (ra c) (sa c) (pa c) n - sum n (fun k => w k * v k c) in
  (exists f, l = W * (1 + f) /\ Rabs f <= gamma D u) /\ norm d E <= gamma D u * W * Vh.
Proof.
  intros d n D u Vh alpha p rl sl ra sa pa v [Hu Hu1] HnD HD Ha Hp Hv Hl Hc w W l E.
  destruct (pow_gamma D u Hu HD) as [G0 G1].
  assert (Hg : 0 <= gamma D u) by (unfold gamma; apply div_nonneg; [apply Rmult_le_pos; [apply pos_INR | lra] | lra]).
  assert (Lo : (1 - u) ^ D <= (1 - u) ^ (2 * n)).
  { replace D with (2 * n + (D - 2 * n))%nat by lia. rewrite pow_add.
    assert (0 <= (1 - u) ^ (2 * n)) by (apply pow_le; lra).
    assert ((1 - u) ^ (D - 2 * n) <= 1) by (apply pow_le_one; lra).
    assert (0 <= (1 - u) ^ (D - 2 * n)) by (apply pow_le; lra). nra. }
  assert (Hi : (1 + u) ^ (2 * n) <= (1 + u) ^ D) by (apply Rle_pow; [lra | lia]).
  (* a term's factor within gamma_D of 1 *)
  assert (Pg : forall P : nat -> R, (forall k, (k < n)%nat -> (1 - u) ^ (2 * n) <= P k <= (1 + u) ^ (2 * n)) ->
             forall k, (k < n)%nat -> Rabs (P k - 1) <= gamma D u).
  { intros P HP k Hk. destruct (HP k Hk). unfold Rabs. destruct (Rcase_abs (P k - 1)); lra. }
  assert (Hw : forall k, 0 <= w k) by (intros; unfold w; apply weff_nonneg; assumption).
  split.
  - destruct (racc_form alpha p rl sl (fun _ => 0) u n (conj Hu Hu1)) as [P [HP El]].
    { intros k Hk. destruct (Hl k Hk). rewrite Rabs_R0. repeat split; lra. }
    assert (HW : 0 <= W) by (apply sum_nonneg; intros; apply Hw).
    destruct (Req_dec W 0) as [W0|W0].
    + exists 0. split; [|rewrite Rabs_R0; exact Hg].
      unfold l. rewrite El. fold w. rewrite W0, Rmult_0_l.
      assert (Z : forall k, (k < n)%nat -> w k = 0).
      { intros k Hk. pose proof (sum_ge_term n w k Hk) as T. 
        assert (forall i, (i < n)%nat -> 0 <= w i) by (intros; apply Hw). 
        specialize (T H). fold W in T. pose proof (Hw k). lra. }
      rewrite (sum_ext n _ (fun _ => 0)); [apply sum_const0|]. intros k Hk. rewrite Z by exact Hk. ring.
    + exists ((l - W) / W). split; [field; exact W0|].
      assert (Hd : Rabs (l - W) <= gamma D u * W).
      { unfold l. rewrite El. fold w. unfold W. rewrite <- sum_minus.
        eapply Rle_trans; [apply sum_abs|]. rewrite <- sum_scal. apply sum_le. intros k Hk.
        replace (w k * P k - w k) with (w k * (P k - 1)) by ring.
        rewrite Rabs_mult, Rabs_right by (apply Rle_ge, Hw).
        pose proof (Pg P HP k Hk). pose proof (Hw k). nra. }
      unfold Rdiv. rewrite Rabs_mult, Rabs_inv, (Rabs_right W) by lra.
      apply Rmult_le_reg_r with W; [lra|]. rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra. exact Hd.
  - (* per channel: E_c = sum w_k v_{k,c} (P_{k,c} - 1) *)
    assert (Ec : forall c, (c < d)%nat -> exists P : nat -> R,
               (forall k, (k < n)%nat -> Rabs (P k - 1) <= gamma D u) /\
               E c = sum n (fun k => w k * (v k c * (P k - 1)))).
    { intros c Hcd. destruct (racc_form alpha (fun k => p k * v k c) (ra c) (sa c) (pa c) u n (conj Hu Hu1)) as [P [HP Er]].
      { intros k Hk. apply (Hc c k Hcd Hk). }
      exists P. split; [apply Pg; exact HP|].
      unfold E. rewrite Er, <- sum_minus. apply sum_ext. intros k Hk.
      rewrite weff_scale by exact Hk. fold w. ring. }
    (* norm(E) <= sum_k w_k norm(v_k (P_k - 1)) <= sum_k w_k gamma Vh *)
    set (gm := gamma D u).
    assert (Hb : forall c, (c < d)%nat -> Rabs (E c) <= sum n (fun k => w k * (gm * Rabs (v k c)))).
    { intros c Hcd. destruct (Ec c Hcd) as [P [HP ->]]. eapply Rle_trans; [apply sum_abs|].
      apply sum_le. intros k Hk. rewrite !Rabs_mult, (Rabs_right (w k)) by (apply Rle_ge, Hw).
      apply Rmult_le_compat_l; [apply Hw|]. rewrite Rmult_comm. apply Rmult_le_compat_r; [apply Rabs_pos|].
      apply HP, Hk. }
    set (F := vsum n (fun k => vscal (w k) (vscal gm (fun c => Rabs (v k c))))).
    apply Rle_trans with (norm d F).
    + apply norm_le_comp. intros c Hcd. unfold F, vsum, vscal.
      rewrite (Rabs_right (sum n _)).
      * apply Hb, Hcd.
      * apply Rle_ge, sum_nonneg. intros k _. apply Rmult_le_pos; [apply Hw|]. apply Rmult_le_pos; [unfold gm; exact Hg | apply Rabs_pos].
    + unfold F. eapply Rle_trans; [apply norm_wsum|].
      unfold W. rewrite Rmult_assoc, (Rmult_comm (sum n w)), <- Rmult_assoc, <- sum_scal.
      apply sum_le. intros k Hk. rewrite norm_scal, Rabs_right by (apply Rle_ge, Hw).
      rewrite (Rabs_right gm) by (apply Rle_ge; unfold gm; exact Hg).
      assert (Nv : norm d (fun c => Rabs (v k c)) = norm d (v k)).
      { unfold norm, dot. f_equal. apply sum_ext. intros c _. rewrite <- Rabs_mult, Rabs_right by (apply Rle_ge, Rle_0_sqr). reflexivity. }
      rewrite Nv. pose proof (Hw k). pose proof (Hv k Hk). pose proof (norm_nonneg d (v k)).
      replace (gm * Vh * w k) with (w k * (gm * Vh)) by ring.
      apply Rmult_le_compat_l; [lra|]. apply Rmult_le_compat_l; [unfold gm; exact Hg | lra].
Qed.
