(* Assumptions.v -- the axioms every theorem of proofs/coq rests on.  check.sh
   fails when one is not listed in ADMITTED.md ("Axioms of the libraries"). *)
From KvqCoq Require Import Sums Softmax KeyTerm Value Arith Earith KeyQuant Scores Tail Sage.

Print Assumptions paper_lemma_A1.
Print Assumptions paper_lemma_A1_tilt.
Print Assumptions kvq_lemma_K1.
Print Assumptions kvq_lemma_K1_tilt.
Print Assumptions paper_lemma_A2.
Print Assumptions kvq_lemma_K2.
Print Assumptions paper_eq14.
Print Assumptions paper_thm43_eq7.
Print Assumptions paper_lemma_A3_eq20.
Print Assumptions paper_lemma_A3_eq21.
Print Assumptions paper_lemma_A3_l1.
Print Assumptions paper_lemma_A3.
Print Assumptions CERT_EK_04.
Print Assumptions paper_eq15_ge_CERT_EK_04.
Print Assumptions CERT_VAR_03.
Print Assumptions kvq_thm_K3_TV.
Print Assumptions CERT_EK_01.
Print Assumptions paper_thm41.
Print Assumptions CERT_EV_01.
Print Assumptions CERT_EV_03.
Print Assumptions kvq_thm_K5.
Print Assumptions CERT_CON_01_paper.
Print Assumptions CERT_CON_01_sparse.
Print Assumptions spec_RN32_model.
Print Assumptions spec_RN32_normal.
Print Assumptions spec_RN64_model.
Print Assumptions spec_gamma_n.
Print Assumptions CERT_AR_01_accumulation.
Print Assumptions CERT_AR_01_division.
Print Assumptions CERT_DLT_03.
Print Assumptions CERT_DLT_03_logmass.
Print Assumptions CERT_DLT_05.
Print Assumptions tail_mass_blocks.
Print Assumptions CERT_SEL_02_slack.
Print Assumptions CERT_EK_05.
Print Assumptions SAGE_ATT_07_a_weight.
Print Assumptions SAGE_ATT_07_a_output.
Print Assumptions SAGE_ATT_07_a_B1.
Print Assumptions SAGE_ATT_07_f.
Print Assumptions SAGE_ATT_07.
Print Assumptions CERT_K8_04_real.
Print Assumptions CERT_K8_04.
Print Assumptions CERT_AR_01_weights.
Print Assumptions CERT_AR_01_sum.
