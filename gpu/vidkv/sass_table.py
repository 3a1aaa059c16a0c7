#!/usr/bin/env python3
"""sass_table.py -- static instructions per element and bytes in flight per SM of
the VIDKV kernels the benchmark times [VIDKV-DEV-06], from the SASS of the built
objects (cuobjdump -sass, -res-usage).

usage: gpu/vidkv/sass_table.py [--cuobjdump PATH] [BUILD_DIR]     (default build/gpu)

For every kernel of KERNELS (data: the kernel, its block size, and the elements
one unit of its code handles):
  loop    the kernel streams in a loop: the unit is the largest loop body that
          loads from global memory (a backward branch's span), elements = the
          elements one trip of that body handles (unroll x vector width);
  first   as loop, the first such loop in the code (the full-tile path, ahead
          of its remainder loop);
  loads   as loop, the loop that loads the most bytes a trip (the unrolled
          full-tile path; a tie goes to the smaller body);
  thread  the kernel is straight-line per thread (its loop fully unrolled): the
          unit is the whole kernel, every path counted, so instr/element is an
          upper bound of what one thread executes.
instr/element = instructions of the unit / its elements.  Bytes in flight per SM
= global-load bytes of the unit (LDG widths) x threads a block x blocks an SM
holds (the registers and shared memory of -res-usage against sm_90's 64K
registers, 2048 threads, 32 blocks, 228 KiB of shared memory a SM).  The
budget: at 4.8 TB/s, 132 SMs x 4 schedulers at ~1.7 GHz issue ~0.19 warp
instructions a byte, ~25-30 thread instructions a 4-byte element (read and
written once); a stream at full rate needs ~30-40 KiB in flight a SM (latency
~0.8 us x 4.8 TB/s / 132).  Exit 2 when an object or a kernel of KERNELS is
missing (a table half-read is not a table).
"""
import os
import re
import shutil
import subprocess
import sys

# (label, mangled-name regex, object, threads a block, basis, elements a unit, floor note)
KERNELS = [
    ("split: channel ranges (columns)", r"^_Z19vk_range_col_kernel", "vidkv/split.o", 256, "thread", 32,
     "keys 0.52 (2 reads)"),
    ("keys: 2-bit / 1-bit groups, G=32", r"^_Z18vk_keygroup_kernelILj32ELb0E", "vidkv/groups.o", 128, "thread", 32,
     "keys 0.52 (2 reads)"),
    ("keys: groups, ranges handed in, G=32", r"^_Z18vk_keygroup_kernelILj32ELb1E", "vidkv/groups.o", 128, "thread",
     32, "keys 1.0 (1 read)"),
    ("keys: dequantize groups, G=32", r"^_Z24vk_keys_deq_group_kernelILj32E", "vidkv/groups.o", 128, "thread", 32,
     "0.97"),
    ("keys: metadata checks", r"^_Z21vk_meta_check4_kernel", "vidkv/groups.o", 256, "loop", 1, "0.97"),
    ("values: ternary, G=32 base3 RAW", r"^_Z19vk_tern_fast_kernelILj32ELj0ELb0ELb0E", "vidkv/ternary.o", 128,
     "thread", 32, "1.00"),
    ("values: ternary list (STP), G=32", r"^_Z20vk_tern_listg_kernelILj32ELj0ELb0E", "vidkv/ternary.o", 128, "thread", 32,
     "0.97"),
    ("values: dequantize, G=32 base3 RAW", r"^_Z23vk_tern_deq_fast_kernelILj32ELj0ELb0E", "vidkv/ternary.o", 128,
     "thread", 32, "0.95"),
    ("STP: score inputs check", r"^_Z18vk_xs_check_kernel", "vidkv/stp.o", 256, "loop", 1, "-"),
    ("STP: text sums t_c (tiles)", r"^_Z14vk_tsum_kernel", "vidkv/stp.o", 256, "first", 32, "-"),
    ("FFT: gather (x, 0) rows", r"^_Z16vk_gather_kernel", "vidkv/fft/fft.o", 64, "loads", 16, "0.17"),
    ("FFT: component groups, G=32", r"^_Z14vk_comp_kernelILj32E", "vidkv/fft/fft.o", 128, "thread", 32, "0.17"),
    ("FFT: build a + ib rows", r"^_Z15vk_build_kernel", "vidkv/fft/fft.o", 64, "loads", 32, "0.21"),
    ("FFT: dequantized rows whole", r"^_Z14vk_rows_kernel", "vidkv/fft/fft.o", 128, "thread", 16, "0.21"),
]

LDG_BYTES = {"128": 16, "64": 8, "U8": 1, "S8": 1, "U16": 2, "S16": 2}


def die(msg):
    sys.stderr.write("sass_table: %s\n" % msg)
    sys.exit(2)


def run(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except OSError as e:
        die("%s: %s" % (cmd[0], e))
    if r.returncode != 0:
        die("%s failed (exit %d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()[:300]))
    return r.stdout


INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def functions(sass):
    """name -> list of (addr, text)"""
    out, cur = {}, None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        m = INSN.search(line)
        if m and cur is not None:
            out[cur].append((int(m.group(1), 16), m.group(2)))
    return out


def resources(text):
    """name -> (regs, shared bytes)"""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            cur = m.group(1)
            continue
        m = re.search(r"REG:(\d+).*SHARED:(\d+)", line)
        if m and cur is not None:
            out[cur] = (int(m.group(1)), int(m.group(2)))
    return out


def opcode(text):
    t = re.sub(r"^@!?U?P\w+\s+", "", text)
    return t.split()[0] if t.split() else ""


def ldg_bytes(insns):
    b = 0
    for _, t in insns:
        op = opcode(t)
        if op.startswith("LDG"):
            w = 4
            for part in op.split(".")[1:]:
                if part in LDG_BYTES:
                    w = LDG_BYTES[part]
            b += w
    return b


def counted(insns):
    """the instructions, less NOPs and the closing branch-to-self"""
    out = []
    for a, t in insns:
        op = opcode(t)
        if op == "NOP":
            continue
        m = re.match(r"(?:@!?U?P\w+\s+)?BRA\s+(?:`?\(?\.?L?_?x?_?)?0x([0-9a-f]+)", t)
        if op == "BRA" and m and int(m.group(1), 16) == a:
            continue
        out.append((a, t))
    return out


def largest_loop(insns, first=False, loads=False):
    """the largest (first: the lowest-addressed; loads: the most load bytes) backward-branch
    span that loads from global memory"""
    best = None
    for a, t in insns:
        if opcode(t) != "BRA":
            continue
        m = re.search(r"0x([0-9a-f]+)", t.split("BRA", 1)[1])
        if not m:
            continue
        tgt = int(m.group(1), 16)
        if tgt >= a:
            continue
        body = [(x, y) for x, y in insns if tgt <= x <= a]
        if ldg_bytes(body) == 0:
            continue
        if loads:
            better = best is None or ldg_bytes(body) > ldg_bytes(best) or \
                (ldg_bytes(body) == ldg_bytes(best) and len(body) < len(best))
        else:
            better = best is None or (body[0][0] < best[0][0] if first else len(body) > len(best))
        if better:
            best = body
    return best


def blocks_per_sm(regs, smem, threads):
    warps = (threads + 31) // 32
    regs_warp = ((max(regs, 1) * 32 + 255) // 256) * 256
    by_regs = (65536 // regs_warp) // warps
    by_thr = 2048 // threads
    by_smem = (228 * 1024) // (smem + 1024) if smem else 32
    return max(0, min(32, by_regs, by_thr, by_smem))


def main():
    args = sys.argv[1:]
    cuobjdump = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if len(args) >= 2 and args[0] == "--cuobjdump":
        cuobjdump = args[1]
        args = args[2:]
    if len(args) > 1 or (args and args[0].startswith("-")):
        die("usage: sass_table.py [--cuobjdump PATH] [BUILD_DIR]")
    bdir = args[0] if args else "build/gpu"
    cache = {}
    rows = []
    for label, rx, obj, threads, basis, elems, floor in KERNELS:
        path = os.path.join(bdir, obj)
        if not os.path.isfile(path):
            die("%s: no such object (build it first: make build/gpu/kvq_vidkv_bench)" % path)
        if path not in cache:
            cache[path] = (functions(run([cuobjdump, "-sass", path])),
                           resources(run([cuobjdump, "-res-usage", path])))
        funcs, res = cache[path]
        names = [n for n in funcs if re.search(rx, n)]
        if len(names) != 1:
            die("%s: %d kernels match %s (want 1)" % (path, len(names), rx))
        name = names[0]
        insns = counted(funcs[name])
        if basis in ("loop", "first", "loads"):
            unit = largest_loop(insns, basis == "first", basis == "loads")
            if unit is None:
                die("%s: no loop that loads from global memory" % name)
        else:
            unit = insns
        regs, smem = res.get(name, (0, 0))
        bps = blocks_per_sm(regs, smem, threads)
        inflight = ldg_bytes(unit) * threads * bps
        rows.append((label, basis, len(unit), elems, len(unit) / elems, ldg_bytes(unit), regs, bps, inflight,
                     floor))
    print("# static SASS (cuobjdump -sass of %s, sm_90a): instructions of the unit / its elements;" % bdir)
    print("#   loop: the largest loop body that loads (one trip); thread: the whole straight-line kernel,")
    print("#   every path counted (an upper bound); budget ~25-30 a 4-byte element; in flight: load bytes of")
    print("#   the unit x threads a block x blocks a SM (registers, shared memory); ~30-40 KiB a SM streams")
    print("%-36s %-6s %6s %5s %10s %6s %5s %6s %12s  %s" % ("kernel", "unit", "instr", "elems", "instr/elem",
                                                          "ldB", "regs", "blk/SM", "inflight/SM", "floor"))
    for r in rows:
        print("%-36s %-6s %6d %5d %10.1f %6d %5d %6d %10.1f KiB  %s" % (r[0], r[1], r[2], r[3], r[4], r[5], r[6],
                                                                      r[7], r[8] / 1024.0, r[9]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
