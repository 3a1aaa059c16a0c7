(* Numbers.v -- the worked numbers of spec/cert.md [CERT-EK-03] and
   spec/bounds/cert.md §6a, evaluated from the definitions the theorems use
   (Aodds, ekey_sparse, ekey_paper_variant, c2) by Coq-Interval: each printed
   6-decimal value p satisfies p - 1/2 10^-6 <= value < p + 1/2 10^-6.
   Delta = 0.18, alpha^ = 1 - tau = 0.005, Vmax = 1. *)
From Coq Require Import Reals Lra.
From Interval Require Import Tactic.
From KvqCoq Require Import Sums Softmax KeyTerm.
Open Scope R_scope.

Lemma tanh_def : forall x, tanh x = ((exp x - exp (- x)) / 2) / ((exp x + exp (- x)) / 2).
Proof. reflexivity. Qed.

(* the paper's Eq. 15 term, 2 e^{2 Delta} alpha^ (e^{2 Delta} - 1) = 0.006211 *)
Theorem CERT_EK_03_ekey_paper :
  0.0062105 <= 2 * 1 * exp (2 * 0.18) * 0.005 * (exp (2 * 0.18) - 1) < 0.0062115.
Proof. split; interval. Qed.

(* the e^{3 Delta} form (Eq. 12) = 0.007436 *)
Theorem CERT_EK_03_ekey_e3 :
  0.0074355 <= 2 * 1 * exp (3 * 0.18) * 0.005 * (exp (2 * 0.18) - 1) < 0.0074365.
Proof. split; interval. Qed.

(* A(0.005, 0.18) = 0.007151 and t = tanh(0.09) = 0.089758 *)
Theorem CERT_EK_03_A : 0.0071505 <= Aodds 0.005 0.18 < 0.0071515.
Proof. unfold Aodds. split; interval. Qed.

Theorem CERT_EK_03_t : 0.0897575 <= tanh (0.18 / 2) < 0.0897585.
Proof. rewrite tanh_def. split; interval. Qed.

(* the sparse variant's sound E_key [CERT-EK-01] = 0.192534 *)
Theorem CERT_EK_03_sparse : 0.1925335 <= ekey_sparse 1 0.18 0.005 < 0.1925345.
Proof. unfold ekey_sparse, Aodds. rewrite tanh_def. split; interval. Qed.

(* the paper variant's sound E_key [CERT-EK-04] = 0.004509 (the A c_2 branch of the min) *)
Theorem CERT_EK_03_paper_variant : 0.0045085 <= ekey_paper_variant 1 0.18 0.005 < 0.0045095.
Proof.
  unfold ekey_paper_variant.
  assert (Hmin : Aodds 0.005 0.18 * c2 0.18 <= tanh (0.18 / 2)).
  { unfold Aodds, c2. rewrite tanh_def. interval. }
  rewrite Rmin_right by exact Hmin.
  unfold Aodds, c2. split; interval.
Qed.
