#!/usr/bin/env python3
"""sass-count.py -- instructions per element and bytes in flight of the PKV dequantizer
kernels, counted in their SASS (cuobjdump -sass of build/gpu/pkv/pkv_dequant.o).

usage: gpu/pkv/sass-count.py [OBJDIR]   (default build/gpu/pkv; needs cuobjdump on PATH)

For each writer kernel the counted region is its write loop: of the loops of the
function (a backward branch and its target), the smallest that holds a global store
(the token writers' loop over a row's pieces in their form for 4 whole rows, whose
4 index loads a step sit just outside it; the tile writers' loop over items); a
kernel without one (pkv_dequant_channel_kernel: one group a thread, unrolled) is
counted whole.  `elems` is what one pass of that region writes a thread at the
benchmark's shape (d = 128, G = 128, bits 2 and 4: gpu/pkv/pkv_bench.cu), so
instr/elem = the region's instructions (NOPs left out) / elems; the memory columns
are its global loads and stores a pass and their bytes.  Static counts: a branch
not taken at that shape (saturation, raw tokens) still counts, which is an upper
bound.  Bytes in flight a SM = the loads one pass issues x the threads an SM holds
(registers a thread from --dump-resource-usage, 64K registers and 64 warps an SM,
256-register allocation units a warp, the kernel's block size): what the loads of a
pass put in flight when every resident thread issues them before its first use.
Exit 2 (with the reason) when cuobjdump or the object is missing or a kernel of the
table is not found.
"""
import re
import subprocess
import sys

# (mangled-name prefix, template bits, label, block size, elements a pass)
KERNELS = [
    ("_Z29pkv_dequant_token_coop_kernelILi{b}E", "values, one kernel: token_coop (4 tokens a warp a step)", 256, 16),
    ("_Z24pkv_dequant_token_kernelILi{b}E", "values, two kernels: token (4 tokens a warp a step)", 256, 16),
    ("_Z29pkv_dequant_ktile_coop_kernelILi{b}E", "keys, one kernel: ktile_coop (32 tokens x 4 channels)", 256, 128),
    ("_Z24pkv_dequant_ktile_kernelILi{b}E", "keys, two kernels: ktile (32 tokens x 4 channels)", 256, 128),
    ("_Z31pkv_dequant_channel_coop_kernelILi{b}ELi128E", "keys, one kernel, earlier: channel_coop (a group a thread)", 128, 128),
    ("_Z26pkv_dequant_channel_kernelILi{b}ELi128E", "keys, two kernels, earlier: channel (a group a thread)", 128, 128),
]

LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")


def die(msg):
    print("sass-count: " + msg, file=sys.stderr)
    sys.exit(2)


def run(args):
    try:
        return subprocess.run(args, check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        die("cuobjdump not found on PATH")
    except subprocess.CalledProcessError as e:
        die("%s failed: %s" % (" ".join(args), e.stderr.strip()[:200]))


def functions(sass):
    """name -> [(addr, opcode, text)]"""
    out, cur = {}, None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        m = LINE.search(line)
        if m and cur is not None:
            text = m.group(2).strip()
            body = re.sub(r"^@!?U?P(?:T|\d)\s+", "", text)
            op = body.split()[0] if body else ""
            cur.append((int(m.group(1), 16), op, body))
    return out


def regs_of(usage):
    out = {}
    for m in re.finditer(r"Function (\S+):\s*\n?\s*REG:(\d+)", usage):
        out[m.group(1)] = int(m.group(2))
    return out


def width(op):
    for suf, w in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1)):
        if suf in op:
            return w
    return 4


def region(ins):
    """The write loop: the smallest backward-branch region holding an STG (or all)."""
    best = None
    for i, (a, op, body) in enumerate(ins):
        if not op.startswith("BRA"):
            continue
        m = re.search(r"0x([0-9a-f]+)", body)
        if not m:
            continue
        tgt = int(m.group(1), 16)
        if tgt >= a:
            continue
        part = [x for x in ins if tgt <= x[0] <= a]
        if any(x[1].startswith("STG") for x in part) and (best is None or len(part) < len(best)):
            best = part
    return best if best is not None else ins


def warps_per_sm(regs, bs):
    per_warp = -(-regs * 32 // 256) * 256
    wb = bs // 32
    blocks = min(65536 // (per_warp * wb), 32, 64 // wb)
    return blocks * wb


def main():
    objdir = sys.argv[1] if len(sys.argv) > 1 else "build/gpu/pkv"
    obj = objdir.rstrip("/") + "/pkv_dequant.o"
    sass = functions(run(["cuobjdump", "-sass", obj]))
    regs = regs_of(run(["cuobjdump", "--dump-resource-usage", obj]))
    print("# SASS count of the PKV dequantizer kernels (gpu/pkv/sass-count.py, cuobjdump -sass of %s)" % obj)
    print("# region: the write loop (the smallest loop holding a global store; whole kernel if none);")
    print("# elems: values one pass writes a thread at d = 128, G = 128; in flight: loads of a pass x threads an SM")
    print("%-4s %-62s %5s %5s %7s %6s %9s %6s %9s %5s %10s" % (
        "bits", "kernel", "regs", "elems", "instr", "/elem", "LDG(B)", "/elem", "STG(B)", "warps", "in flight"))
    for b in (2, 4):
        for pre, label, bs, elems in KERNELS:
            p = pre.format(b=b)
            names = [n for n in sass if n.startswith(p)]
            if len(names) != 1:
                die("kernel %s: %d matches in %s" % (p, len(names), obj))
            n = names[0]
            part = [x for x in region(sass[n]) if x[1] != "NOP"]
            ldg = [x for x in part if x[1].startswith("LDG")]
            stg = [x for x in part if x[1].startswith("STG")]
            lb = sum(width(x[1]) for x in ldg)
            sb = sum(width(x[1]) for x in stg)
            r = regs.get(n, 0)
            w = warps_per_sm(r, bs) if r else 0
            print("%-4d %-62s %5d %5d %7d %6.1f %4d(%3d) %6.2f %4d(%3d) %5d %7.1f KiB" % (
                b, label, r, elems, len(part), len(part) / elems, len(ldg), lb, len(ldg) / elems,
                len(stg), sb, w, w * 32 * lb / 1024.0))


if __name__ == "__main__":
    main()
