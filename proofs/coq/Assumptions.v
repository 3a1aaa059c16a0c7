(* Assumptions.v -- the axioms every theorem of proofs/coq rests on.  check.sh
   fails when one is not listed in ADMITTED.md ("Axioms of the libraries"). *)
From KvqCoq Require Import Sums Softmax.

Print Assumptions paper_lemma_A1.
Print Assumptions paper_lemma_A1_tilt.
Print Assumptions kvq_lemma_K1.
Print Assumptions kvq_lemma_K1_tilt.
Print Assumptions paper_lemma_A2.
Print Assumptions kvq_lemma_K2.
Print Assumptions paper_eq14.
