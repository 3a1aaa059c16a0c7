#!/usr/bin/env python3
"""fa3_schedule.py -- the barrier protocol of the FA3 core (gpu/sage/sage_fa3.cu,
spec/sage.md [SAGE-DEV-12..13]) as a model, run to completion or to a deadlock
for every tile of 1..--max-blocks key blocks and every split of them between the
two consumer warpgroups (causal tiles: one consumer sees fewer blocks).

The agents and their waits, as the kernel orders them:
  producer (its first thread, which the others follow: a block's V~ is marked
  only when all 128 have arrived) -- the first four blocks loaded; per block kb:
  levels 0..2: wait full(kb), transpose, mark vfull(kb), then wait empty(kb)
  (both consumers) and load block kb + 4 into its stage; level 3: wait empty(kb - 2)
  and load block kb + 2 into its stage first, then wait full(kb), transpose,
  mark vfull(kb); level 6: wait full(kb), mark vfull(kb), then wait empty(kb - 2)
  and load block kb + 2 into its stage.
  consumer c (nbw blocks of its own, steps 0..nb) -- step i: wait full(i) (QK),
  vfull(i - 1) (P~V), its turn (a named barrier), issue, pass the turn; levels
  0..2: release block i - 1 (empty), then wait vfull(i) for the softmax; level 3:
  wait vfull(i) for the softmax first (under P~V(i - 1)), then release block
  i - 1; a step past its own blocks takes the turn, passes it and releases the
  block (levels 3 to 6 alike).  Loads complete at once (a delay changes no order).

Exit 0 when the kernel's orders finish on every tile and the order of commit
faf5076 (level-3 consumers with the producer of levels 0..2) deadlocks on some
tile -- the model can fail; 1 otherwise; 2 on a usage error.
usage: fa3_schedule.py [--max-blocks N]   (default 16)
"""
import sys

STAGES = 4


def run(nb, nbw, consumer3, producer):
    """producer: 0 (levels 0..2), 3 (levels 3..5) or 6 (level 6)"""
    full, vfull, empty = set(), set(), {}
    tokens = [1, 0]                       # warpgroup 1 gives warpgroup 0 the first turn
    prog = [("load", kb) for kb in range(min(STAGES, nb))]
    for kb in range(nb):
        reload = [("wempty", kb - 2), ("load", kb + 2)] if kb >= 2 and kb + 2 < nb else []
        if producer == 3:
            prog += reload
        prog += [("wfull", kb), ("vfull", kb)]
        if producer == 6:
            prog += reload
        if producer == 0 and kb + STAGES < nb:
            prog += [("wempty", kb), ("load", kb + STAGES)]
    steps = nb + 1

    def consumer(c, own):
        p = []
        for i in range(steps):
            active = own > 0 and i <= own
            qk, pv = active and i < own, active and i >= 1
            if qk:
                p.append(("wfull", i))
            if pv:
                p.append(("wvfull", i - 1))
            p.append(("sync", c))
            if c == 0 or i + 1 < steps:
                p.append(("pass", 1 - c))
            past = [("wvfull", i), ("aempty", i)] if own <= i < nb else []
            if consumer3:
                p += ([("wvfull", i)] if qk else []) + ([("aempty", i - 1)] if pv else []) + past
            else:
                p += ([("aempty", i - 1)] if pv else []) + past + ([("wvfull", i)] if qk else [])
        return p

    progs = [prog, consumer(0, nbw[0]), consumer(1, nbw[1])]
    pc = [0, 0, 0]
    while True:
        moved = False
        for a in range(3):
            while pc[a] < len(progs[a]):
                op, x = progs[a][pc[a]]
                if op == "load":
                    full.add(x)
                elif op == "wfull" and x not in full:
                    break
                elif op == "vfull":
                    vfull.add(x)
                elif op == "wvfull" and x not in vfull:
                    break
                elif op == "wempty" and empty.get(x, 0) < 2:
                    break
                elif op == "aempty":
                    empty[x] = empty.get(x, 0) + 1
                elif op == "sync":
                    if tokens[x] < 1:
                        break
                    tokens[x] -= 1
                elif op == "pass":
                    tokens[x] += 1
                pc[a] += 1
                moved = True
        if all(pc[a] == len(progs[a]) for a in range(3)):
            return None
        if not moved:
            return [progs[a][pc[a]] if pc[a] < len(progs[a]) else "done" for a in range(3)]


def tiles(maxb):
    for nb in range(1, maxb + 1):
        for n0 in range(0, nb + 1):
            for n1 in range(n0, nb + 1):
                if max(n0, n1) == nb:
                    yield nb, (n0, n1)


def main():
    maxb = 16
    a = sys.argv[1:]
    if a:
        if len(a) != 2 or a[0] != "--max-blocks" or not a[1].isdigit() or not 1 <= int(a[1]) <= 256:
            sys.stderr.write("fa3_schedule: usage: fa3_schedule.py [--max-blocks N] (N in 1..256)\n")
            return 2
        maxb = int(a[1])
    rc = 0
    for name, c3, p3, want in (("levels 0..2", False, 0, True), ("levels 3..5", True, 3, True),
                               ("level 6", True, 6, True),
                               ("faf5076's level 3 (the old producer)", True, 0, False)):
        dead = [(nb, nbw, w) for nb, nbw in tiles(maxb) for w in [run(nb, nbw, c3, p3)] if w]
        n = sum(1 for _ in tiles(maxb))
        ok = (not dead) if want else bool(dead)
        first = f"; first: {dead[0][0]} blocks, split {dead[0][1]}, waiting at {dead[0][2]}" if dead else ""
        print(f"fa3_schedule: {name}: {len(dead)} of {n} tiles deadlock{first}: "
              f"{'as it must' if ok else 'NOT as it must'}")
        rc |= 0 if ok else 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
