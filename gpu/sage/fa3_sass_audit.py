#!/usr/bin/env python3
"""fa3_sass_audit.py -- the instruction audit of the FA3 core's consumer per-block loop
(spec/sage.md [SAGE-DEV-13]) from the SASS of the sm_90a object, no device needed.

    cuobjdump -sass build/gpu/sage/sage_fa3.o > fa3.sass
    python3 gpu/sage/fa3_sass_audit.py fa3.sass [LEVEL ...]     (default: 3 4 5)

For each level it takes the ping-pong instance given V~ (sage_fa3_kernel<false, true,
LEVEL, true>, the form the pipeline runs), finds the consumer's main loop (the longest
conditional backward branch: one step i with block i's QK and block i - 1's P~V) and splits it at
the markers the compiler leaves:
  prologue     the loop head to the FULL dispatch (`@!P BRA P, T`: every row of the
               warpgroup sees the whole block): barrier waits, the turn, the wgmma
               descriptors and issue, the waits for QK (and the scores when the compiler
               computes them above the dispatch, for both paths)
  softmax      FULL: T to the join J (the target of the non-FULL path's last branch);
               the non-FULL path (the diagonal and the last block) between
  tail         J to the back edge: P~V's wait and the stage's release, the flush, the
               rescale (behind the warp vote `VOTE.ALL` and its branch) and P~'s codes
Each instruction gets a kind from its opcode and operands (below), and the report gives
the instructions a thread issues for one steady block (FULL, buffer 128: a flush every
other block) by kind -- with the rescale skipped (no row maximum of the warp moved) and
taken -- against the pinned minimum of [SAGE-DEV-13] (32 scores a thread and block).
A flush whose instructions are predicated (not branched around) is issued every block.
Exit status 2 when a level's instance or a marker is not found (nothing printed for it).
"""
import collections
import re
import sys

KINDS = [
    ("score", "the score: the exact int->float (IADD 0x4b400000, FADD -1.5*2^23), RN32(qsc sk), the fma with dS"),
    ("max", "the row maxima: FMNMX"),
    ("reduce", "the quad reductions: SHFL.BFLY"),
    ("ex2", "the exponent: FADD s - m and MUFU.EX2"),
    ("sum", "l's block sums and l's update: FADD, FMUL l alpha"),
    ("conv", "P~: the product by 448, F2FP (two codes), PRMT (packing the A fragment)"),
    ("rescale", "the rescale of acc and buf by alpha: FMUL"),
    ("flush", "the buffer flush: FADD buf + acc, CS2R acc = 0"),
    ("wgmma", "wgmma: IGMMA / QGMMA, WARPGROUP.ARRIVE / DEPBAR"),
    ("barrier", "barriers: SYNCS (mbarrier wait / arrive), BAR (the turn), WARPSYNC"),
    ("desc", "wgmma descriptors: R2UR and the uniform-register moves"),
    ("lds", "shared loads: LDS (K scales, dS)"),
    ("addr", "integer / address arithmetic: IADD3, IMAD, LEA, SHF, LOP3 (not to a predicate), VIADD, LDC"),
    ("pred", "predication and visibility: ISETP, FSETP, P2R / R2P, LOP3 to a predicate, SEL, VOTE, PLOP3"),
    ("move", "register moves: MOV, IMAD.MOV, CS2R outside the flush"),
    ("control", "control: BRA, BSSY, BSYNC, YIELD"),
    ("other", "anything else"),
]

# the pinned minimum a thread and block (32 scores): [SAGE-DEV-13]
PINNED = {
    "score": 32 * 3 + 2,   # IADD + FADD (exact int->float) + FFMA a score; RN32(qsc sk) once a row (2)
    "max": 32 + 2 * 2 + 2,  # a max a score, the quad butterfly's 2 a row, the running max a row
    "reduce": 8,           # 2 rows x (max, sum) x 2 butterfly steps
    "ex2": 32 * 2 + 2 * 2,  # FADD s - m and EX2 a score; alpha = EX2(m_old - m_new) a row
    "sum": 30 + 4 + 4,     # the block sum (a row's first term as it is), the butterfly's 2 adds a row, l a row
    "conv": 32 + 16 + 8,   # 448 P a score, one F2FP a pair, 8 PRMT for the 8 A registers
    "flush": 64 // 2,      # 64 FADD buf + acc every other block (buffer 128)
    "wgmma": 4 + 2 + 2 + 2,  # 4 IGMMA (k32 steps), 2 QGMMA, 2 arrive, 2 waits
    "lds": 4 + 1,          # dS by four 16-byte loads, the K scale by one
}


def parse(path):
    funcs, cur = {}, None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            funcs[cur].append((int(m.group(1), 16), m.group(2).strip()))
    return funcs


def opcode(text):
    t = re.sub(r"^@!?U?P(?:T|\d)\s+", "", text)
    return t.split()[0], t


def target(text):
    m = re.search(r"\bBRA(?:\.\w+)*\s+(?:!?U?P\d,\s*)?0x([0-9a-f]+)", text)
    return int(m.group(1), 16) if m else None


def kind(op, t, region, score_mul=False):
    if op.startswith(("IGMMA", "QGMMA", "HGMMA", "WARPGROUP")):
        return "wgmma"
    if op.startswith(("SYNCS", "BAR", "WARPSYNC")):
        return "barrier"
    if op.startswith("R2UR") or op.startswith("UMOV") or op.startswith("UIADD") or op.startswith("ULOP") or op.startswith("USHF"):
        return "desc"
    if op.startswith("LDS"):
        return "lds"
    if op.startswith("SHFL"):
        return "reduce"
    if op.startswith("FMNMX"):
        return "max"
    if op.startswith("MUFU"):
        return "ex2"
    if op.startswith("F2FP") or (op.startswith("PRMT") and region == "pack"):
        return "conv"
    if op.startswith(("BRA", "BSSY", "BSYNC", "YIELD", "EXIT", "NOP")):
        return "control"
    if op == "FFMA":
        return "score"
    if op in ("IADD3", "VIADD") and "0x4b400000" in t:
        return "score"
    if op == "FADD":
        if "-12582912" in t:
            return "score"
        if region == "flush":
            return "flush"
        if re.search(r",\s*-R\d+", t) or re.search(r"FADD\s+R\d+,\s*-R\d+", t):
            return "ex2"
        return "sum"
    if op == "FMUL":
        if re.search(r",\s*448\b", t):
            return "conv"
        if region == "rescale":
            return "rescale"
        if region == "softmax":
            return "score" if score_mul else "sum"
        if region == "prologue":
            return "score"                       # level 4: RN32(qsc sk), once a row, scheduled early
        return "other"
    if op == "CS2R":
        return "flush" if region == "flush" else "move"
    if op in ("MOV", "IMAD.MOV.U32", "IMAD.MOV"):
        return "move"
    if op.startswith(("ISETP", "FSETP", "P2R", "R2P", "SEL", "VOTE", "PLOP3", "FSEL")):
        return "pred"
    if op.startswith("LOP3") and re.match(r"LOP3\.LUT\s+!?P\d", t):
        return "pred"
    if op.startswith(("IADD3", "IMAD", "LEA", "SHF", "LOP3", "VIADD", "LDC", "ULDC", "S2R", "MOV", "PRMT", "IABS", "ISCADD")):
        return "addr"
    return "other"


def audit(funcs, level):
    name = next((f for f in funcs if re.search(r"sage_fa3_kernelILb0ELb1ELi%dELb1E" % level, f)), None)
    if name is None:
        return None, "no instance sage_fa3_kernel<false, true, %d, true>" % level
    ins = funcs[name]
    addr = [a for a, _ in ins]
    # the main loop: the longest conditional backward branch (the unconditional ones return
    # from the out-of-line retry paths of the barrier waits)
    best = None
    for a, t in ins:
        tg = target(t)
        if tg is not None and tg < a and t.startswith("@") and (best is None or a - tg > best[1] - best[0]):
            best = (tg, a)
    if best is None:
        return None, "no loop"
    lo, hi = best
    body = [(a, t) for a, t in ins if lo <= a <= hi]
    # FULL dispatch: a branch on two predicates
    disp = next(((a, t) for a, t in body if re.search(r"\bBRA\s+!?P\d,\s*0x", opcode(t)[1])), None)
    if disp is None:
        return None, "no FULL dispatch"
    T = target(disp[1])
    # the join: the target of the last unconditional forward BRA before T
    j = None
    for a, t in body:
        if disp[0] < a < T and opcode(t)[0] == "BRA" and not t.startswith("@") and target(t) > T:
            j = target(t)
    if j is None:
        return None, "no join"
    tail = [(a, t) for a, t in body if a >= j]
    # the rescale: VOTE.ALL then `@P BRA R`; issued with F != 0: up to the unconditional
    # BRA R when there are two variants (level 4), else the whole region
    # (level 5 votes on the flush before it: when a vote comes before the tail's first FADD,
    # the rescale's is the first vote after the first CS2R that follows that FADD)
    fa0 = next((i for i, (a, t) in enumerate(tail) if opcode(t)[0] == "FADD"), None)
    cs0 = next((i for i in range(fa0, len(tail)) if opcode(tail[i][1])[0] == "CS2R"), None) if fa0 is not None else None
    vote = next((i for i, (a, t) in enumerate(tail) if opcode(t)[0].startswith("VOTE")), None)
    if vote is not None and fa0 is not None and cs0 is not None and vote < fa0:
        vote = next((i for i in range(cs0, len(tail)) if opcode(tail[i][1])[0].startswith("VOTE")), None)
    if vote is None:
        return None, "no rescale vote"
    # the rescale: from the first vote to P~'s codes (the first F2FP after it), walked twice:
    # a branch guarded by a vote's predicate is taken when the rescale is skipped and not
    # taken when it runs; any other conditional branch is not taken (F != 0: the buffer's
    # variant); an unconditional one is followed
    pk = next((i for i in range(vote, len(tail)) if opcode(tail[i][1])[0].startswith("F2FP")), None)
    if pk is None:
        return None, "no P~ conversion after the rescale"
    span = {tail[i][0]: i for i in range(vote, pk)}
    vpred = set()
    for i in range(vote, pk):
        op, tt = opcode(tail[i][1])
        if op.startswith("VOTE"):
            vpred.add(re.findall(r"\bP\d\b", tt)[0])

    def walk(skip):
        seen, i = [], vote
        while i < pk and len(seen) < 4 * (pk - vote):
            a, t = tail[i]
            seen.append(i)
            op, tt = opcode(t)
            if op == "BRA":
                tg = target(t)
                g = re.match(r"@!?(P\d)\s", t)
                take = g is None or (skip and g.group(1) in vpred)
                if take:
                    if tg >= tail[pk][0]:
                        break
                    if tg not in span:
                        return None
                    i = span[tg]
                    continue
            i += 1
        return seen
    vb = next(i for i in range(vote, pk) if opcode(tail[i][1])[0] == "BRA")
    w_skip, w_take = walk(True), walk(False)
    if w_skip is None or w_take is None:
        return None, "the rescale's branches leave it"
    extra = collections.Counter(w_take) - collections.Counter(w_skip)
    # the flush: from the first FADD of the tail to the last CS2R before the vote's branch
    fadd = [i for i in range(vb) if opcode(tail[i][1])[0] == "FADD"]
    cs2r = [i for i in range(vb) if opcode(tail[i][1])[0] == "CS2R"]
    if not fadd or not cs2r:
        return None, "no flush"
    f0, f1 = fadd[0], cs2r[-1]
    # guarded: a conditional forward branch shortly before f0 jumping past f1
    # (inside the loop: not a barrier wait's out-of-line retry path)
    guarded = any(opcode(tail[i][1])[0] == "BRA" and tail[i][1].startswith("@") and
                  tail[f1][0] < target(tail[i][1]) <= hi for i in range(max(0, f0 - 8), f0))
    # pack: the F2FP/PRMT after the rescale
    counts = {k: collections.Counter() for k in ("prologue", "softmax", "nonfull", "tail", "flush", "rescale")}

    def add(region, t, creg, score_mul=False):
        op, tt = opcode(t)
        counts[creg][kind(op, tt, region, score_mul)] += 1

    # the softmax's FMULs: the score's product RN32(qsc sk) feeds an FFMA (its result is the
    # FFMA's second operand); the others (l alpha) are sums
    sm = [(a, t) for a, t in body if T <= a < j]
    ffma_ops = set()
    for a, t in sm:
        op, tt = opcode(t)
        if op == "FFMA":
            ops = re.findall(r"R\d+", tt)
            if len(ops) >= 3:
                ffma_ops.add(ops[2])
    for a, t in sm:
        op, tt = opcode(t)
        add("softmax", t, "softmax", op == "FMUL" and re.findall(r"R\d+", tt)[0] in ffma_ops)
    for a, t in body:
        if lo <= a <= disp[0]:
            add("prologue", t, "prologue")
        elif disp[0] < a < T:
            add("nonfull", t, "nonfull")
    skip_set = collections.Counter(w_skip)
    for i, (a, t) in enumerate(tail):
        if f0 <= i <= f1:
            add("flush", t, "flush")
        elif vote <= i < pk:
            for _ in range(skip_set[i]):
                add("tail", t, "tail")            # issued whether or not the rescale runs
            for _ in range(extra[i]):
                add("rescale", t, "rescale")      # issued only when it runs (F != 0)
        else:
            add("pack" if i >= pk else "tail", t, "tail")
    info = {"name": name, "loop": (lo, hi), "disp": disp[0], "T": T, "J": j, "guarded": guarded,
            "flush": (tail[f0][0], tail[f1][0]), "rescale": (tail[vote][0], tail[pk][0]), "static": len(body)}
    return (counts, info), None


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: fa3_sass_audit.py SASS [LEVEL ...]\n")
        return 2
    levels = [int(x) for x in sys.argv[2:]] or [3, 4, 5]
    funcs = parse(sys.argv[1])
    res = {}
    for lv in levels:
        r, err = audit(funcs, lv)
        if err:
            sys.stderr.write("fa3_sass_audit: %s: level %d: %s\n" % (sys.argv[1], lv, err))
            return 2
        res[lv] = r
    print("# kinds")
    for k, d in KINDS:
        print("#   %-8s %s" % (k, d))
    for lv in levels:
        counts, info = res[lv]
        print("\nlevel %d: %s" % (lv, info["name"][:60] + "..."))
        print("  main loop 0x%x..0x%x (%d instructions); FULL dispatch at 0x%x; FULL softmax 0x%x..0x%x; "
              "flush 0x%x..0x%x (%s); rescale (votes and branches) 0x%x..0x%x" % (
                  info["loop"][0], info["loop"][1], info["static"], info["disp"], info["T"], info["J"],
                  info["flush"][0], info["flush"][1],
                  "branched around when no row flushes" if info["guarded"] else "predicated: issued every block",
                  info["rescale"][0], info["rescale"][1]))
        print("  %-8s %9s %8s %8s %8s %8s | %8s %8s %8s" % ("kind", "prologue", "softmax", "tail", "flush",
                                                                "rescale", "skipped", "taken", "pinned"))
        fl = 0.5 if info["guarded"] else 1.0
        tot = collections.Counter()
        for k, _ in KINDS:
            p, s, t, f, r = (counts[x][k] for x in ("prologue", "softmax", "tail", "flush", "rescale"))
            skipped = p + s + t + fl * f
            taken = skipped + r
            tot["p"] += p; tot["s"] += s; tot["t"] += t; tot["f"] += f; tot["r"] += r
            tot["skip"] += skipped; tot["take"] += taken; tot["pin"] += PINNED.get(k, 0)
            if p + s + t + f + r:
                print("  %-8s %9d %8d %8d %8d %8d | %8.1f %8.1f %8s" % (k, p, s, t, f, r, skipped, taken,
                                                                     PINNED.get(k, "")))
        print("  %-8s %9d %8d %8d %8d %8d | %8.1f %8.1f %8d" % ("total", tot["p"], tot["s"], tot["t"], tot["f"],
                                                             tot["r"], tot["skip"], tot["take"], tot["pin"]))
        print("  per score (32 a thread and block): %.2f (rescale skipped), %.2f (taken); pinned %.2f (%.2f with "
              "the rescale's 128 products); "
              "the non-FULL softmax (diagonal and last blocks): %d instructions" % (
                  tot["skip"] / 32, tot["take"] / 32, tot["pin"] / 32, (tot["pin"] + 128) / 32,
                  sum(counts["nonfull"].values())))
        print("  (flush weighted %.1f a block; 'skipped'/'taken': the rescale behind the warp vote)" % fl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
