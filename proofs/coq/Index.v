(* proofs/coq/Index.v -- the integer content of the KIVI index goals that WP
   leaves to proofs/accepted.txt ([TR-GOAL-NONLIN], [TR-GOAL-KIVI-LAYOUT] of
   proofs/TRUSTED.md), over Z.

   The ACSL definitions are copied below under their own names, each with the
   file:line of its ACSL text; a C operation on size_t / uint64_t is
   to_uint64 (the value mod 2^64, as WP's typed model reads it), one on
   uint32_t is to_uint32.  ACSL's / and % truncate toward zero and Coq's
   Z.div / Z.modulo round toward minus infinity: they agree on the
   nonnegative operands of every statement here (each theorem's hypotheses
   make them so).  Each theorem's comment lists under `Goals:` the WP
   goals of proofs/accepted.txt whose content it proves (proofs/coq/check.sh
   checks the list against accepted.txt's `coq:` column, both ways) and says
   which part of the goal stays with the context WP proves (memory framing,
   validity, the other invariants). *)

From Coq Require Import ZArith Lia.
Open Scope Z_scope.

(* ---- the C machine: unsigned wrap *)
Definition to_uint64 (x : Z) : Z := x mod 2 ^ 64.
Definition to_uint32 (x : Z) : Z := x mod 2 ^ 32.

(* ---- include/kvq_layout.h *)
(* include/kvq_layout.h:39-40 *)
Definition KVQ_GROUP_CHANNEL : Z := 0.
Definition KVQ_GROUP_TOKEN : Z := 1.
(* include/kvq_layout.h:47-49 *)
Definition KVQ_MAX_GROUP : Z := 4096.
Definition KVQ_MAX_DIM : Z := 2 ^ 24.
Definition KVQ_MAX_ELEMS : Z := 2 ^ 36.
(* include/kvq_layout.h:65 *)
Definition kvq_valid_bits (b : Z) : Prop := b = 1 \/ b = 2 \/ b = 4 \/ b = 8.
(* include/kvq_layout.h:66-68 *)
Definition kvq_pow2_l (k : Z) : Z :=
  if Z.eqb k 0 then 1 else if Z.eqb k 1 then 2 else if Z.eqb k 2 then 4 else
  if Z.eqb k 3 then 8 else if Z.eqb k 4 then 16 else if Z.eqb k 5 then 32 else
  if Z.eqb k 6 then 64 else if Z.eqb k 7 then 128 else 256.
(* include/kvq_layout.h:70-71 *)
Definition kvq_code_byte_l (i b : Z) : Z := (i * b) / 8.
Definition kvq_code_shift_l (i b : Z) : Z := (i * b) mod 8.
(* include/kvq_layout.h:73-74 *)
Definition kvq_field_l (y k b : Z) : Z := (y / kvq_pow2_l k) mod kvq_pow2_l b.
(* include/kvq_layout.h:76-77: the byte array grp at label L is a function
   from index to byte value *)
Definition kvq_code_l (grp : Z -> Z) (i b : Z) : Z :=
  kvq_field_l (grp (kvq_code_byte_l i b)) (kvq_code_shift_l i b) b.

(* ---- ref/fast/kivi.c, axiomatic KviLayout *)
(* ref/fast/kivi.c:33-36 (kvq_valid_bits, the group and the grouping; the
   meta format plays no part in the index facts and is left out) *)
Definition kvq_kivi_params_l (b G grouping : Z) : Prop :=
  kvq_valid_bits b /\ 8 <= G <= KVQ_MAX_GROUP /\ G mod 8 = 0 /\
  (grouping = KVQ_GROUP_CHANNEL \/ grouping = KVQ_GROUP_TOKEN).
(* ref/fast/kivi.c:37-39 *)
Definition kvq_kivi_extent_l (T D G grouping : Z) : Prop :=
  0 < T <= KVQ_MAX_DIM /\ 0 < D <= KVQ_MAX_DIM /\ T * D <= KVQ_MAX_ELEMS /\
  (if Z.eqb grouping KVQ_GROUP_CHANNEL then T mod G = 0 else D mod G = 0).
(* ref/fast/kivi.c:40-44 *)
Definition kvq_kivi_groups_l (T D G : Z) : Z := (T * D) / G.
Definition kvq_kivi_gbytes_l (G b : Z) : Z := (G * b) / 8.
Definition kvq_kivi_stride_l (D grouping : Z) : Z :=
  if Z.eqb grouping KVQ_GROUP_CHANNEL then D else 1.
(* ref/fast/kivi.c:45-48 *)
Definition kvq_kivi_base_l (D G grouping g : Z) : Z :=
  if Z.eqb grouping KVQ_GROUP_CHANNEL then (g / D) * G * D + g mod D else g * G.
Definition kvq_kivi_index_l (D G grouping g i : Z) : Z :=
  kvq_kivi_base_l D G grouping g + i * kvq_kivi_stride_l D grouping.

(* ---- helpers *)
Lemma to_uint64_id : forall x, 0 <= x < 2 ^ 64 -> to_uint64 x = x.
Proof. intros x H. unfold to_uint64. apply Z.mod_small. exact H. Qed.

Lemma to_uint32_id : forall x, 0 <= x < 2 ^ 32 -> to_uint32 x = x.
Proof. intros x H. unfold to_uint32. apply Z.mod_small. exact H. Qed.

(* a D + r = a2 D + r2 with both remainders in [0, D) fixes a and r *)
Lemma divmod_inj : forall D a r a2 r2,
  0 <= r < D -> 0 <= r2 < D -> a * D + r = a2 * D + r2 -> a = a2 /\ r = r2.
Proof.
  intros D a r a2 r2 Hr Hr2 E.
  destruct (Z.lt_total a a2) as [Hlt|[Heq|Hgt]].
  - exfalso. assert (a * D + D <= a2 * D) by nia. lia.
  - subst. lia.
  - exfalso. assert (a2 * D + D <= a * D) by nia. lia.
Qed.

(* Per channel ([KIVI-L-03]): with G | T there are (T / G) D groups, and group
   g < T D / G is token block g / D < T / G of channel g % D < D. *)
Lemma channel_group : forall T D G g,
  0 < G -> 0 < D -> T mod G = 0 -> 0 <= g < T * D / G ->
  T = G * (T / G) /\ 0 <= g < (T / G) * D /\ 0 <= g / D < T / G /\ 0 <= g mod D < D.
Proof.
  intros T D G g HG HD Hdiv Hg.
  assert (ET : T = G * (T / G)) by (apply Z_div_exact_2; lia).
  assert (Hn : T * D / G = (T / G) * D).
  { rewrite ET at 1. replace (G * (T / G) * D) with (T / G * D * G) by ring.
    apply Z.div_mul. lia. }
  rewrite Hn in Hg.
  split; [exact ET|]. split; [exact Hg|]. split.
  - split; [apply Z.div_pos; lia|]. apply Z.div_lt_upper_bound; lia.
  - apply Z.mod_pos_bound. lia.
Qed.

Lemma pow2_pos : forall k, 0 < kvq_pow2_l k.
Proof.
  intro k. unfold kvq_pow2_l.
  repeat (match goal with |- context [Z.eqb ?a ?b] => destruct (Z.eqb a b) end); lia.
Qed.

(* ---- [TR-GOAL-NONLIN] *)

(* [TR-GOAL-NONLIN] the loop invariant at_index of group_minmax
   (ref/fast/kivi.c:494) and of kvq_kivi_quantize_group (ref/fast/kivi.c:547):
   `at == i * stride && at <= i * KVQ_MAX_ELEMS` is preserved by the step
   `i++, at += stride` with i and at unsigned (uint32_t, size_t): under the
   invariant, the loop test i < group <= KVQ_MAX_GROUP and the precondition
   1 <= stride <= KVQ_MAX_ELEMS, the machine sum to_uint64(at + stride) is the
   exact (i + 1) stride (below 2^48: no wrap), the machine i + 1 is i + 1,
   and the bound moves with it.  The goals' other hypotheses (i_range,
   finite, order; the frame of the loop body) stay with WP's proved context.
   Goals: typed_group_minmax_loop_invariant_at_index_preserved
          typed_kvq_kivi_quantize_group_loop_invariant_at_index_preserved *)
Theorem TR_GOAL_NONLIN_at_index : forall i group stride a,
  0 <= i < group -> group <= KVQ_MAX_GROUP ->
  1 <= stride <= KVQ_MAX_ELEMS ->
  a = i * stride -> a <= i * KVQ_MAX_ELEMS ->
  to_uint64 (a + stride) = (i + 1) * stride /\
  to_uint32 (i + 1) = i + 1 /\
  to_uint64 (a + stride) <= (i + 1) * KVQ_MAX_ELEMS.
Proof.
  intros i group stride a Hi Hg Hs Hat Hle.
  unfold KVQ_MAX_GROUP, KVQ_MAX_ELEMS in *.
  assert (Hsum : to_uint64 (a + stride) = (i + 1) * stride).
  { rewrite to_uint64_id; [lia|]. subst a. split; [nia|].
    assert (i * stride + stride <= 4096 * 2 ^ 36) by nia. lia. }
  split; [exact Hsum|]. split.
  - apply to_uint32_id. lia.
  - rewrite Hsum. nia.
Qed.

(* [TR-GOAL-NONLIN] the assertion elem of group_minmax (ref/fast/kivi.c:502)
   and of kvq_kivi_quantize_group (ref/fast/kivi.c:554):
   `\valid_read(v + a) && \is_finite(v[a])` inside the loop, from the
   precondition kvq_group_in(v, stride, group) (include/kvq.h:119-122), which
   says it of v + k * stride for every 0 <= k < group.  Its integer content:
   the offset a (= i * stride by at_index) is the instance k := i of that
   quantifier, and lies below group * KVQ_MAX_ELEMS <= 2^48, so the element
   v + a is the element v + i * stride (no wrap of the offset).  Validity and
   finiteness of that element are the precondition's, read by WP.
   Goals: typed_group_minmax_assert_elem
          typed_kvq_kivi_quantize_group_assert_elem *)
Theorem TR_GOAL_NONLIN_elem : forall i group stride a,
  0 <= i < group -> group <= KVQ_MAX_GROUP ->
  1 <= stride <= KVQ_MAX_ELEMS ->
  a = i * stride -> a <= i * KVQ_MAX_ELEMS ->
  (exists k, 0 <= k < group /\ a = k * stride) /\
  0 <= a < 2 ^ 48 /\ to_uint64 a = a.
Proof.
  intros i group stride a Hi Hg Hs Hat Hle.
  unfold KVQ_MAX_GROUP, KVQ_MAX_ELEMS in *.
  assert (0 <= a < 2 ^ 48).
  { subst a. split; [nia|]. assert (i * stride <= 4095 * 2 ^ 36) by nia. lia. }
  split; [exists i; split; [lia|exact Hat]|].
  split; [exact H|]. apply to_uint64_id. lia.
Qed.

(* [TR-GOAL-NONLIN] the loop invariant zero_codes of kvq_kivi_quantize_group
   (ref/fast/kivi.c:540-541) is established on entry to the packing loop.  WP's
   goal has the clearing loop's exit (ref/fast/kivi.c:536): its invariants
   b_range 0 <= b <= group * bits / 8 and cleared (ref/fast/kivi.c:532) every
   byte k < b is 0, and the failed test to_uint32(group * bits) / 8 <= b
   (the uint32_t product, against the invariant's exact one); it asks that
   element j < group's code reads 0.  The uint32_t product does not wrap
   (group * bits <= 8 KVQ_MAX_GROUP), so b = group bits / 8; element j's byte
   (j bits)/8 lies below it (8 | group, bits in {1,2,4,8}), and every field of
   a zero byte is 0.  grp is the byte array at the loop's exit (WP's havoc of
   grp[0 .. group bits / 8 - 1]): the frame stays with WP's proved context.
   Goals: typed_kvq_kivi_quantize_group_loop_invariant_zero_codes_established *)
Theorem TR_GOAL_NONLIN_zero_codes : forall (grp : Z -> Z) group bits b,
  8 <= group <= KVQ_MAX_GROUP -> group mod 8 = 0 -> kvq_valid_bits bits ->
  0 <= b <= group * bits / 8 -> to_uint32 (group * bits) / 8 <= b ->
  (forall k, 0 <= k < b -> grp k = 0) ->
  forall j, 0 <= j < group -> kvq_code_l grp j bits = 0.
Proof.
  intros grp group bits b Hg Hm Hb Hb0 Hexit Hclr j Hj.
  assert (Hgb : 0 <= group * bits <= 8 * 4096)
    by (unfold KVQ_MAX_GROUP in Hg; destruct Hb as [ Hb | [ Hb | [ Hb | Hb ] ] ]; subst bits; lia).
  rewrite (to_uint32_id (group * bits)) in Hexit by lia.
  unfold kvq_code_l, kvq_field_l.
  assert (Hin : 0 <= kvq_code_byte_l j bits < b).
  { cut (0 <= kvq_code_byte_l j bits < group * bits / 8); [lia|].
    unfold kvq_code_byte_l.
    assert (E : group = 8 * (group / 8)) by (apply Z_div_exact_2; lia).
    set (m := group / 8) in E. rewrite E in Hj. rewrite E.
    assert (Hm0 : 0 < m) by lia.
    unfold kvq_valid_bits in Hb.
    replace (8 * m * bits) with ((m * bits) * 8) by ring.
    rewrite Z.div_mul by lia.
    split; [apply Z.div_pos; lia|].
    apply Z.div_lt_upper_bound; [lia|].
    destruct Hb as [ Hb | [ Hb | [ Hb | Hb ] ] ]; subst bits; lia. }
  rewrite (Hclr _ Hin), Z.div_0_l by (pose proof (pow2_pos (kvq_code_shift_l j bits)); lia).
  apply Z.mod_0_l. pose proof (pow2_pos bits). lia.
Qed.

(* [TR-GOAL-NONLIN] the loop invariant cleared of the clearing loop of
   kvq_kivi_quantize_group (ref/fast/kivi.c:532, loop at :536) is preserved.
   WP's goal: under the invariant (0 <= b, every byte k < b zero) and the test
   b < to_uint32(group * bits) / 8 (uint32_t), after grp[b] = 0 every byte
   k < to_uint32(b + 1) is 0.  group * bits <= 8 KVQ_MAX_GROUP does not wrap,
   so b lies below the exact group bits / 8 and b + 1 does not wrap; the bytes
   below b are 0 by the invariant, byte b by the store.  grp' is the byte
   array after the store; that the store writes grp[b] and nothing else (the
   memory update) stays with WP.
   Goals: typed_kvq_kivi_quantize_group_loop_invariant_cleared_preserved *)
Theorem TR_GOAL_NONLIN_cleared : forall (grp grp' : Z -> Z) group bits b,
  8 <= group <= KVQ_MAX_GROUP -> kvq_valid_bits bits ->
  0 <= b -> b < to_uint32 (group * bits) / 8 ->
  (forall k, 0 <= k < b -> grp k = 0) ->
  (forall k, grp' k = if Z.eqb k b then 0 else grp k) ->
  b < group * bits / 8 /\ to_uint32 (b + 1) = b + 1 /\
  (forall k, 0 <= k < to_uint32 (b + 1) -> grp' k = 0).
Proof.
  intros grp grp' group bits b Hg Hb Hb0 Hlt Hclr Hupd.
  unfold KVQ_MAX_GROUP in Hg. unfold kvq_valid_bits in Hb.
  assert (Hgb : 0 <= group * bits <= 8 * 4096) by (destruct Hb as [ Hb | [ Hb | [ Hb | Hb ] ] ]; subst bits; lia).
  rewrite (to_uint32_id (group * bits)) in Hlt by lia.
  assert (Hq : 0 <= group * bits / 8 <= 4096).
  { split; [apply Z.div_pos; lia|]. apply Z.div_le_upper_bound; lia. }
  assert (Hs : to_uint32 (b + 1) = b + 1) by (apply to_uint32_id; lia).
  split; [exact Hlt|]. split; [exact Hs|].
  rewrite Hs. intros k Hk. rewrite Hupd. destruct (Z.eqb_spec k b) as [->|Hne]; [reflexivity|].
  apply Hclr. lia.
Qed.

(* ---- [TR-GOAL-KIVI-LAYOUT] *)

(* [KIVI-L-03] the postcondition def of kvq_kivi_group_base (contract
   ref/fast/kivi.c:208-214, body include/kvq_layout.h:274-281): the uint64_t
   computation as WP states it -- per channel tb = to_uint64(g / D),
   c = to_uint64(g % D), to_uint64(c + to_uint64(to_uint64(tb * G) * D));
   per token to_uint64(g * G) -- equals
   kvq_kivi_base_l(D, G, grouping, g) for every group g below T D / G of a
   shape within the extent: every intermediate is at most T D <= 2^36.  The
   reads of s's fields (s valid, the values the logic names) stay with WP.
   Goals: typed_kvq_kivi_group_base_ensures_def *)
Theorem KIVI_L_03_group_base_def : forall b T D G grouping g,
  kvq_kivi_params_l b G grouping -> kvq_kivi_extent_l T D G grouping ->
  0 <= g < kvq_kivi_groups_l T D G ->
  (if Z.eqb grouping KVQ_GROUP_CHANNEL
   then to_uint64 (to_uint64 (g mod D) + to_uint64 (to_uint64 (to_uint64 (g / D) * G) * D))
   else to_uint64 (g * G)) = kvq_kivi_base_l D G grouping g.
Proof.
  intros b T D G grouping g Hp He Hg.
  unfold kvq_kivi_params_l, kvq_kivi_extent_l, kvq_kivi_groups_l, kvq_kivi_base_l,
    KVQ_MAX_GROUP, KVQ_MAX_DIM, KVQ_MAX_ELEMS in *.
  destruct Hp as (_ & HG & _ & _). destruct He as (HT & HD & HTD & Hdiv).
  destruct (Z.eqb grouping KVQ_GROUP_CHANNEL).
  - (* T = G t, g < t D, so g / D < t and (g / D) G D + g % D < T D *)
    destruct (channel_group T D G g ltac:(lia) ltac:(lia) ltac:(assumption) Hg)
      as (ET & Hg' & Hq & Hr); clear Hg; rename Hg' into Hg.
    assert (H1 : 0 <= (g / D) * G <= T) by nia.
    assert (H2 : 0 <= (g / D) * G * D + g mod D < T * D) by nia.
    rewrite (to_uint64_id (g / D)) by lia.
    rewrite (to_uint64_id (g mod D)) by lia.
    rewrite (to_uint64_id ((g / D) * G)) by lia.
    rewrite (to_uint64_id ((g / D) * G * D)) by nia.
    rewrite to_uint64_id by lia. lia.
  - assert (ED : D = G * (D / G)) by (apply Z_div_exact_2; lia).
    assert (Hn : T * D / G = T * (D / G)).
    { rewrite ED at 1. replace (T * (G * (D / G))) with (T * (D / G) * G) by ring.
      apply Z.div_mul. lia. }
    rewrite Hn in Hg.
    apply to_uint64_id. nia.
Qed.

(* [KIVI-L-03] the lemma kvq_kivi_index_in (ref/fast/kivi.c:74-78): element
   i < G of group g < T D / G is at an index below T D, per channel
   ((g / D) G + i) D + g % D, per token g G + i.  A lemma: WP's goal is this
   statement, nothing else.
   Goals: typed_lemma_kvq_kivi_index_in *)
Theorem KIVI_L_03_index_in : forall T D G grouping g i,
  8 <= G -> kvq_kivi_extent_l T D G grouping ->
  (grouping = KVQ_GROUP_CHANNEL \/ grouping = KVQ_GROUP_TOKEN) ->
  0 <= g < kvq_kivi_groups_l T D G -> 0 <= i < G ->
  0 <= kvq_kivi_index_l D G grouping g i < T * D.
Proof.
  intros T D G grouping g i HG He _ Hg Hi.
  unfold kvq_kivi_extent_l, kvq_kivi_groups_l, kvq_kivi_index_l, kvq_kivi_base_l,
    kvq_kivi_stride_l in *.
  destruct He as (HT & HD & _ & Hdiv).
  destruct (Z.eqb grouping KVQ_GROUP_CHANNEL).
  - destruct (channel_group T D G g ltac:(lia) ltac:(lia) ltac:(assumption) Hg)
      as (ET & Hg' & Hq & Hr); clear Hg; rename Hg' into Hg.
    assert (Hrow : (g / D) * G + i + 1 <= T) by nia.
    nia.
  - assert (ED : D = G * (D / G)) by (apply Z_div_exact_2; lia).
    assert (Hn : T * D / G = T * (D / G)).
    { rewrite ED at 1. replace (T * (G * (D / G))) with (T * (D / G) * G) by ring.
      apply Z.div_mul. lia. }
    rewrite Hn in Hg.
    assert (g * G + G <= T * D) by nia.
    nia.
Qed.

(* [KIVI-L-03] the lemma kvq_kivi_index_distinct (ref/fast/kivi.c:81-86): no
   two (group, element) pairs of a shape within the extent share an index.
   Per channel the index is ((g / D) G + i) D + g % D with g % D < D and i < G:
   index fixes g % D and (g / D) G + i, which fixes g / D and i, hence g.  Per
   token g G + i with i < G.  A lemma: WP's goal is this statement.
   Goals: typed_lemma_kvq_kivi_index_distinct *)
Theorem KIVI_L_03_index_distinct : forall T D G grouping g i g2 i2,
  8 <= G -> kvq_kivi_extent_l T D G grouping ->
  (grouping = KVQ_GROUP_CHANNEL \/ grouping = KVQ_GROUP_TOKEN) ->
  0 <= g < kvq_kivi_groups_l T D G -> 0 <= i < G ->
  0 <= g2 < kvq_kivi_groups_l T D G -> 0 <= i2 < G -> (g2 <> g \/ i2 <> i) ->
  kvq_kivi_index_l D G grouping g2 i2 <> kvq_kivi_index_l D G grouping g i.
Proof.
  intros T D G grouping g i g2 i2 HG He _ Hg Hi Hg2 Hi2 Hne E.
  unfold kvq_kivi_extent_l, kvq_kivi_index_l, kvq_kivi_base_l, kvq_kivi_stride_l in *.
  destruct He as (HT & HD & _ & _).
  destruct (Z.eqb grouping KVQ_GROUP_CHANNEL).
  - pose proof (Z.mod_pos_bound g D ltac:(lia)) as Hr.
    pose proof (Z.mod_pos_bound g2 D ltac:(lia)) as Hr2.
    assert (E' : ((g2 / D) * G + i2) * D + g2 mod D = ((g / D) * G + i) * D + g mod D) by lia.
    destruct (divmod_inj D _ _ _ _ Hr2 Hr E') as [Ea Er].
    destruct (divmod_inj G (g2 / D) i2 (g / D) i ltac:(lia) ltac:(lia) ltac:(lia)) as [Eq Ei].
    assert (g2 = g).
    { rewrite (Z.div_mod g2 D), (Z.div_mod g D) by lia. rewrite Eq, Er. reflexivity. }
    lia.
  - assert (E' : g2 * G + i2 = g * G + i) by lia.
    destruct (divmod_inj G g2 i2 g i ltac:(lia) ltac:(lia) E') as [Eg Ei]. lia.
Qed.

(* [KIVI-L-04] the lemma kvq_kivi_block_end (ref/fast/kivi.c:70-71): group
   g < ng's B bytes start at g B >= 0 and end within the ng B bytes.  A lemma:
   WP's goal is this statement.
   Goals: typed_lemma_kvq_kivi_block_end *)
Theorem KIVI_L_04_block_end : forall g ng B,
  0 <= g < ng -> 0 <= B -> 0 <= g * B /\ g * B + B <= ng * B.
Proof. intros g ng B Hg HB. split; nia. Qed.
