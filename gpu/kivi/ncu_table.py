#!/usr/bin/env python3
"""ncu_table.py -- one line a kernel from Nsight Compute's raw CSV (ncu --csv --page raw),
for gpu/kivi/device-quant.sh prof [KIVI-DEV-05].

usage: ncu_table.py NCU_LOG [LABELS [VALUES]]

NCU_LOG is the file ncu --log-file wrote (its ==PROF== lines are skipped); LABELS, when
given, is the profiled program's stdout, whose lines "launch I: TEXT" name the kernels in
launch order: they name the rows when there are as many as the profiled kernels (ncu was
given -k for exactly the kernels the program launches), else the rows keep ncu's names.
Columns (a metric the sections did not give prints as -):
  us        gpu__time_duration.sum
  dram%     DRAM throughput, % of peak (SpeedOfLight)
  rdMB wrMB dram__bytes_read.sum, dram__bytes_write.sum
  L2hit L1hit  lts__t_sector_hit_rate.pct, l1tex__t_sector_hit_rate.pct
  ld/rq st/rq  sectors per request of global loads and stores (4 = a warp's 128
            contiguous bytes as 32-byte sectors; 16 for 16-byte accesses)
  reg       registers a thread;  occT occA  theoretical and achieved occupancy (%)
  issue%    issue slots busy (SchedulerStats)
  elig      eligible warps a cycle (a scheduler)
  inst/v    thread instructions a value (inst_executed x 32 / VALUES; - without VALUES)
  lmem      warp instructions to local memory (spilled registers), loads + stores
  stalls    the three largest warp stall reasons, cycles a stall per issued instruction
Exit 2 when NCU_LOG holds no kernel rows.
"""
import csv
import re
import sys


def num(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return None


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: ncu_table.py NCU_LOG [LABELS [VALUES]]\n")
        return 2
    values = None
    if len(argv) > 3:
        values = num(argv[3])
        if not values or values <= 0:
            sys.stderr.write("ncu_table.py: VALUES %s: not a positive count\n" % argv[3])
            return 2
    try:
        lines = [l for l in open(argv[1], errors="replace") if not l.startswith("==")]
    except OSError as e:
        sys.stderr.write("ncu_table.py: %s: %s\n" % (argv[1], e.strerror))
        return 2
    rows = list(csv.reader(lines))
    hdr = None
    data = []
    units = None
    for r in rows:
        if hdr is None:
            if "Kernel Name" in r:
                hdr = r
            continue
        if len(r) != len(hdr):
            continue
        if units is None and (r[0] == "" or not r[0].strip().isdigit()):
            units = dict(zip(hdr, r))
            continue
        data.append(dict(zip(hdr, r)))
    if not data:
        sys.stderr.write("ncu_table.py: %s: no kernel rows (ncu failed? see its log)\n" % argv[1])
        return 2
    units = units or {}
    labels = []
    if len(argv) > 2:
        for l in open(argv[2], errors="replace"):
            m = re.match(r"launch (\d+): (.*)", l.strip())
            if m:
                labels.append(m.group(2))
    if len(labels) != len(data):
        if labels:
            print("# %d labels for %d profiled kernels: ncu's names kept" % (len(labels), len(data)))
        labels = [d.get("Kernel Name", "?").split("(")[0][:40] for d in data]

    def get(d, *names):
        for n in names:
            if n in d and num(d[n]) is not None:
                return num(d[n])
        return None

    def us(d):
        v = get(d, "gpu__time_duration.sum")
        u = units.get("gpu__time_duration.sum", "")
        if v is None:
            return None
        return v / 1000.0 if u in ("ns", "nsecond") else v * 1000.0 if u in ("ms", "msecond") else v

    def mb(d, n):
        v = get(d, n)
        if v is None:
            return None
        u = units.get(n, "byte").lower()
        f = {"byte": 1e-6, "kbyte": 1e-3, "mbyte": 1.0, "gbyte": 1e3}.get(u, 1e-6)
        return v * f

    def ratio(d, a, b, direct):
        v = get(d, direct)
        if v is not None:
            return v
        x, y = get(d, a), get(d, b)
        return x / y if x is not None and y else None

    stall_re = re.compile(r"^smsp__average_warps?_issue_stalled_(\w+?)_per_issue_active\.ratio$")
    fmt = "%-44s %8s %6s %7s %7s %6s %6s %6s %6s %4s %5s %5s %6s %5s %6s %8s  %s"
    print(fmt % ("kernel", "us", "dram%", "rdMB", "wrMB", "L2hit", "L1hit", "ld/rq", "st/rq", "reg", "occT",
                 "occA", "issue%", "elig", "inst/v", "lmem", "stalls (cycles an issue)"))

    def f(v, p=1):
        return "-" if v is None else "%.*f" % (p, v)

    for lab, d in zip(labels, data):
        st = []
        for k, v in d.items():
            m = stall_re.match(k)
            if m and num(v) is not None and m.group(1) not in ("not_selected", "selected"):
                st.append((num(v), m.group(1)))
        st.sort(reverse=True)
        print(fmt % (lab[:44], f(us(d), 1),
                     f(get(d, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                           "dram__throughput.avg.pct_of_peak_sustained_elapsed")),
                     f(mb(d, "dram__bytes_read.sum")), f(mb(d, "dram__bytes_write.sum")),
                     f(get(d, "lts__t_sector_hit_rate.pct")), f(get(d, "l1tex__t_sector_hit_rate.pct")),
                     f(ratio(d, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                             "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                             "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio")),
                     f(ratio(d, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                             "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
                             "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio")),
                     f(get(d, "launch__registers_per_thread"), 0),
                     f(get(d, "sm__maximum_warps_per_active_cycle_pct"), 0),
                     f(get(d, "sm__warps_active.avg.pct_of_peak_sustained_active"), 0),
                     f(get(d, "smsp__issue_active.avg.pct_of_peak_sustained_active")),
                     f(get(d, "smsp__warps_eligible.avg.per_cycle_active"), 2),
                     f(None if values is None or get(d, "inst_executed") is None
                       else get(d, "inst_executed") * 32.0 / values, 1),
                     f(None if get(d, "smsp__sass_inst_executed_op_local_ld.sum") is None
                       else get(d, "smsp__sass_inst_executed_op_local_ld.sum")
                       + (get(d, "smsp__sass_inst_executed_op_local_st.sum") or 0.0), 0),
                     " ".join("%s %.1f" % (n, v) for v, n in st[:3])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
