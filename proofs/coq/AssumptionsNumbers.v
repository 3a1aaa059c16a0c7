(* AssumptionsNumbers.v -- the axioms the worked numbers of Numbers.v rest on:
   those of the real numbers and, through Coq-Interval, those of the kernel's
   primitive integers and floats (ADMITTED.md). *)
From KvqCoq Require Import Numbers.

Print Assumptions CERT_EK_03_ekey_paper.
Print Assumptions CERT_EK_03_ekey_e3.
Print Assumptions CERT_EK_03_A.
Print Assumptions CERT_EK_03_t.
Print Assumptions CERT_EK_03_sparse.
Print Assumptions CERT_EK_03_paper_variant.
