#!/usr/bin/env python3
"""proofs/gate.py -- the bookkeeping of proofs/run.sh: run stamps, goal
statements, the summary and the goal inventory (proofs/inventory.txt).

  gate.py stamps RUNS.tsv SETTINGS TOOLS     print "stamp RUN HASH" and
                                             "source PATH SHA256" lines
  gate.py stmt GEN.log OUT.stmt              the statement hash of every goal
                                             of one WP generation pass
  gate.py report MODE RES ACCEPTED INVENTORY RUNS.tsv STAMPS RERUN SECS PAR META.json
                                             summary.txt/json, and the
                                             inventory compared (MODE check)
                                             or written (MODE write)

RUNS.tsv: one line a run, "NAME<TAB>SOURCE<TAB>FUNCTIONS<TAB>PROPERTIES<TAB>EXTRA"
in scope order; the pseudo-run "enum" stands for the finite-domain enumeration
(its SOURCE: the enumeration programs, space-separated).  Exit status of
report: 0 every goal proved or accepted and (check) the goals equal the
inventory's; 1 an unaccepted unproved goal or a difference from the
inventory (each named); 2 a missing log or an unreadable input.
"""
import hashlib
import json
import os
import re
import subprocess
import sys

HASH_LEN = 16  # hex digits of sha256 kept in the inventory: a stamp or a statement


def die(msg, code=2):
    print(f'gate.py: {msg}')
    sys.exit(code)


def sha_file(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_runs(path):
    runs = []
    for n, line in enumerate(open(path), 1):
        parts = line.rstrip('\n').split('\t')
        if len(parts) != 5:
            die(f'{path}:{n}: expected 5 tab-separated fields, got {len(parts)}')
        runs.append(dict(name=parts[0], src=parts[1], fct=parts[2], prop=parts[3], extra=parts[4]))
    return runs


# ---- stamps ------------------------------------------------------------------
def deps(src):
    """The project files SOURCE reads: itself and every header it includes
    (the preprocessor's closure with run.sh's include options; system headers
    are Frama-C's own and come with its version)."""
    cc = os.environ.get('CC', 'cc')
    cmd = [cc, '-MM', '-MT', 'x', '-Iinclude', '-include', 'proofs/libm_spec.h', src]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        die(f'{" ".join(cmd)} failed:\n{p.stderr}')
    text = p.stdout.replace('\\\n', ' ')
    files = text.split(':', 1)[1].split()
    return sorted(set(os.path.normpath(f) for f in files))


def cmd_stamps(runs_tsv, settings, tools):
    sources = {}
    for r in read_runs(runs_tsv):
        srcs = r['src'].split()
        if not all(os.path.exists(s) for s in srcs):
            # a scratch copy without this source (a mutation test of another
            # run): no stamp, so the run can never match the inventory's
            print(f"stamp {r['name']} no-source")
            continue
        files = sorted(set(f for s in srcs for f in deps(s)))
        h = hashlib.sha256()
        h.update(f'settings {settings}\ntools {tools}\n'.encode())
        h.update(f"run {r['name']}\t{r['src']}\t{r['fct']}\t{r['prop']}\t{r['extra']}\n".encode())
        for f in files:
            sources.setdefault(f, sha_file(f))
            h.update(f'{sources[f]}  {f}\n'.encode())
        print(f"stamp {r['name']} {h.hexdigest()[:HASH_LEN]}")
    for f in sorted(sources):
        print(f'source {f} {sources[f]}')


# ---- statements --------------------------------------------------------------
PRE_RE = re.compile(r'^\[wp\] \[Qed\] Goal (\S+) preprocessing$')
QED_RE = re.compile(r'^\[wp\] \[Qed\] Goal (\S+) : Valid')
CLUSTER_RE = re.compile(r"^--- Context '([^']*)' Cluster '([^']*)'")
USE_RE = re.compile(r'^\s*\(\* use (\S+) \*\)\s*$')
FAILURE_RE = re.compile(r'^\[wp\] Failure: (.*)$')


def cmd_stmt(log_path, out_path):
    """A generation pass (-wp-gen -wp-par 1, print-generated) prints, goal by
    goal, "Goal G preprocessing" and then Qed's verdict, or the Why3 theory
    WP hands to the provers (after the local theories, "clusters", it uses,
    printed once), or WP's failure to translate the goal.  The statement of G
    is its theory and the text of every local theory it uses, directly or
    through another: a change of the goal or of a definition it uses changes
    the hash.  Theory names carry a number WP gives them in the order it
    prints them (Axiomatic4, int.Int3): the hash ignores these numbers and the
    order of the imports.  A goal Qed closes has the statement "qed"; a goal
    WP cannot translate (a "Failure:" line; such a goal is unproved) the hash
    of the failure message."""
    lines = open(log_path).read().split('\n')
    clusters = {}  # theory name as printed -> (uses, text)
    order, qed, block, failure = [], set(), {}, {}
    cur, i = None, 0

    def body_of(lines_):
        """(the use-lines' names, the other lines): the theory's own line,
        numbers and import order left out"""
        uses, text = set(), []
        for l in lines_:
            m = USE_RE.match(l)
            if m:
                uses.add(m.group(1))
            elif not re.match(r'^\s*theory \S+\s*$', l):
                text.append(l)
        return uses, '\n'.join(text)

    while i < len(lines):
        l = lines[i]
        m = CLUSTER_RE.match(l)
        if m:
            j = i + 2  # the dashes after the header, then "theory NAME"
            tm = re.match(r'^theory (\S+)\s*$', lines[j]) if j < len(lines) else None
            if not tm:
                die(f'{log_path}:{j + 1}: expected "theory NAME" after the cluster header')
            body = []
            while j < len(lines) and lines[j] != 'end':
                body.append(lines[j]); j += 1
            if j == len(lines):
                die(f'{log_path}:{i + 1}: cluster {tm.group(1)} has no end')
            clusters[tm.group(1)] = body_of(body)
            i = j + 1
            continue
        m = PRE_RE.match(l)
        if m:
            cur = m.group(1); order.append(cur); i += 1; continue
        m = QED_RE.match(l)
        if m:
            qed.add(m.group(1)); i += 1; continue
        m = FAILURE_RE.match(l)
        if m:
            if cur is None or cur in block or cur in qed or cur in failure:
                die(f'{log_path}:{i + 1}: a failure that follows no goal of its own')
            failure[cur] = m.group(1); i += 1; continue
        if l.startswith('[wp:print-generated]'):
            if cur is None or cur in block or cur in qed or cur in failure:
                die(f'{log_path}:{i + 1}: a generated theory that follows no goal of its own')
            j = i + 1
            body = []
            while j < len(lines) and lines[j] != '  end':
                body.append(lines[j]); j += 1
            if j == len(lines):
                die(f'{log_path}:{i + 1}: the theory of {cur} has no end')
            block[cur] = body
            i = j + 1
            continue
        i += 1

    def plain(name):
        return re.sub(r'\d+$', '', name)

    out = []
    for g in order:
        if g in qed:
            out.append((g, 'qed')); continue
        if g in failure:
            h = hashlib.sha256(f'failure {failure[g]}'.encode())
            out.append((g, h.hexdigest()[:HASH_LEN])); continue
        if g not in block:
            die(f'{log_path}: goal {g} has neither a generated theory, nor a Qed verdict, nor a failure')
        uses, text = body_of(block[g])
        seen, todo = set(), [u for u in uses if u in clusters]
        while todo:  # the local theories used, directly or through another
            u = todo.pop()
            if u not in seen:
                seen.add(u); todo += [v for v in clusters[u][0] if v in clusters]
        h = hashlib.sha256(text.encode())
        for u in sorted({plain(u) for u in uses | {v for c in seen for v in clusters[c][0]}}):
            h.update(f'\nuse {u}'.encode())
        for name, t in sorted((plain(c), clusters[c][1]) for c in seen):
            h.update(f'\ntheory {name}\n{t}'.encode())
        out.append((g, h.hexdigest()[:HASH_LEN]))
    if len(set(g for g, _ in out)) != len(out):
        die(f'{log_path}: a goal is generated twice')
    with open(out_path + '.tmp', 'w') as o:
        for g, h in sorted(out):
            o.write(f'{g} {h}\n')
    os.replace(out_path + '.tmp', out_path)


# ---- logs --------------------------------------------------------------------
GOAL_RE = re.compile(r'^\[wp\] \[([^\]]+)\] Goal (\S+) : (\S+)')
FAIL_RE = re.compile(r'^\[wp\] \[(Failed|Unknown|Timeout|Stepout)\] Goal (\S+)')


def prover_of(tag):
    if tag == 'Qed':
        return 'Qed'
    return tag.split()[0]  # "Z3 4.8.12 (pinned)" -> Z3, "CVC4 1.8 (nofp)" -> CVC4


def parse_log(path):
    """goal -> (proved, prover), and the totals WP prints."""
    goals = {}
    tot = proved = None
    for l in open(path).read().splitlines():
        m = re.search(r'Proved goals:\s+(\d+) / (\d+)', l)
        if m:
            proved, tot = int(m.group(1)), int(m.group(2))
            continue
        m = FAIL_RE.match(l)
        if m:
            goals.setdefault(m.group(2), (False, '-'))
            continue
        m = GOAL_RE.match(l)
        if m:
            tag, g, verdict = m.groups()
            if verdict == 'Valid':
                goals[g] = (True, prover_of(tag))
            else:
                goals.setdefault(g, (False, '-'))
    return goals, tot, proved


# ---- inventory ---------------------------------------------------------------
INV_HEAD = """\
# proofs/inventory.txt -- every WP goal of the proof scope (proofs/run.sh), as
# the last deliberate refresh (make proofs-inventory) proved it.  `make proofs`
# reruns the runs whose stamp changed and fails on a goal lost, a goal not
# listed here, a status changed or a statement changed, naming each.
#   stamp RUN HASH      sha256 (16 hex digits) of the run's settings, the tool
#                       versions and every source file it reads
#   goal RUN GOAL STATUS PROVER STATEMENT
#       STATUS     proved | accepted (unproved; proofs/accepted.txt lists it)
#       PROVER     Qed | Z3 | CVC4 | Script (a run with -wp-auto: WP's tactic
#                  and the solvers on its subgoals) | - (accepted); which solver
#                  wins a goal both close is a race, so the prover is not compared
#       STATEMENT  sha256 (16 hex digits) of the goal's Why3 theory and the
#                  local theories it uses, as WP generates it; qed when WP's
#                  simplifier closes the goal
# Sorted (LC_ALL=C) by kind, run and goal: a diff reads goal by goal.
"""


def read_inventory(path):
    stamps, goals = {}, {}
    if not os.path.exists(path):
        return stamps, goals, False
    for n, line in enumerate(open(path), 1):
        s = line.split('#', 1)[0].split()
        if not s:
            continue
        if s[0] == 'stamp' and len(s) == 3:
            stamps[s[1]] = s[2]
        elif s[0] == 'goal' and len(s) == 6:
            if s[3] not in ('proved', 'accepted'):
                die(f'{path}:{n}: status "{s[3]}" is neither proved nor accepted')
            goals.setdefault(s[1], {})[s[2]] = (s[3], s[4], s[5])
        else:
            die(f'{path}:{n}: expected "stamp RUN HASH" or "goal RUN GOAL STATUS PROVER STATEMENT": {line.strip()}')
    return stamps, goals, True


def write_inventory(path, stamps, goals):
    lines = [f'stamp {r} {h}' for r, h in stamps.items()]
    for r, gs in goals.items():
        for g, (st, pv, sh) in gs.items():
            lines.append(f'goal {r} {g} {st} {pv} {sh}')
    lines.sort()
    tmp = path + '.tmp'
    with open(tmp, 'w') as o:
        o.write(INV_HEAD)
        o.write('\n'.join(lines) + '\n')
    os.replace(tmp, path)


def cmd_report(mode, res, accepted_path, inv_path, runs_tsv, stamps_path, rerun_list, secs, par, meta_path):
    runs = [r for r in read_runs(runs_tsv) if r['name'] != 'enum']
    names = [r['name'] for r in runs]
    rerun = set(rerun_list.split())
    accepted = {}
    for n, line in enumerate(open(accepted_path), 1):
        s = line.split('#', 1)[0].split()
        if s:
            if len(s) < 2:
                die(f'{accepted_path}:{n}: expected "GOAL TRUSTED-ENTRY"')
            accepted[s[0]] = s[1]
    stamps, sources = {}, {}
    for line in open(stamps_path):
        k, a, b = line.split()
        (stamps if k == 'stamp' else sources)[a] = b
    meta = json.load(open(meta_path))
    inv_stamps, inv_goals, inv_exists = read_inventory(inv_path)

    rows, unproved_all, used, missing = [], [], set(), []
    now = {}  # run -> goal -> (status, prover, statement); status proved|accepted|unproved
    def res_stamp(n):
        try:
            return open(f'{res}/{n}.stamp').read().strip()
        except OSError:
            return None
    current, old_res = [], []  # runs whose results are from the current stamp; from another
    for n in names:
        have = os.path.exists(f'{res}/{n}.log') and os.path.exists(f'{res}/{n}.stmt')
        if not have and n not in rerun and n in inv_goals and inv_stamps.get(n) == stamps.get(n):
            # not rerun, its stamp the inventory's, no results here (a clone
            # without results/): the inventory's goals stand for the run
            goals = {g: (st == 'proved', pv) for g, (st, pv, _) in inv_goals[n].items()}
            stmt = {g: h for g, (_, _, h) in inv_goals[n].items()}
            tot, proved = len(goals), sum(ok for ok, _ in goals.values())
        elif not have:
            missing.append(n); continue
        else:
            (current if res_stamp(n) == stamps.get(n) else old_res).append(n)
            goals, tot, proved = parse_log(f'{res}/{n}.log')
            if tot is None:
                die(f'{res}/{n}.log: no "Proved goals" line (an interrupted run?)')
            stmt = {}
            for line in open(f'{res}/{n}.stmt'):
                g, h = line.split()
                stmt[g] = h
        if set(stmt) != set(goals):
            only_log = sorted(set(goals) - set(stmt))[:3]
            only_gen = sorted(set(stmt) - set(goals))[:3]
            die(f'{res}/{n}: the proof log and the generation pass name different goals '
                f'(log only: {only_log}, generation only: {only_gen}); rerun KVQ_WP_ONLY={n}')
        bad = sorted(g for g, (ok, _) in goals.items() if not ok)
        acc = [g for g in bad if g in accepted]
        used.update(acc)
        una = [g for g in bad if g not in accepted]
        rows.append(dict(function=n, goals=tot, proved=proved, unproved=tot - proved,
                         accepted=len(acc), unaccepted=len(una), stamp=stamps.get(n),
                         unproved_goals=[dict(goal=g, accepted_as=accepted.get(g)) for g in bad]))
        unproved_all += [(n, g, accepted.get(g)) for g in bad]
        now[n] = {g: (('proved' if ok else 'accepted' if g in accepted else 'unproved'), pv, stmt[g])
                  for g, (ok, pv) in goals.items()}
    T = sum(r['goals'] for r in rows); P = sum(r['proved'] for r in rows)
    A = sum(r['accepted'] for r in rows); U = sum(r['unaccepted'] for r in rows)
    s = meta['settings']
    # the summary is rewritten when a run was rerun (or asked for): a check
    # that reran nothing leaves the committed one as it is
    out = f'{res}/summary.txt' if (mode != 'check' or rerun) else os.devnull
    with open(out + '.tmp' if out != os.devnull else out, 'w') as o:
        o.write(f"# kvq WP results: provers {s['provers']}, steps Z3 {s['steps_z3']} / CVC4 {s['steps_cvc4']} "
                f"per goal (hang guard {s['timeout_s']} s), -wp-rte, Typed+float+int\n")
        o.write(f"# tools: {', '.join(f'{k} {v}' for k, v in meta['tools'].items())}; "
                f"commit {meta['commit']}{' (with uncommitted changes)' if meta['dirty'] else ''}\n")
        o.write(f"{'function':34} {'goals':>6} {'proved':>7} {'unproved':>9} {'accepted':>9}\n")
        for r in rows:
            o.write(f"{r['function']:34} {r['goals']:6d} {r['proved']:7d} {r['unproved']:9d} {r['accepted']:9d}\n")
        o.write(f"{'TOTAL':34} {T:6d} {P:7d} {T-P:9d} {A:9d}\n")
        o.write(f'# unaccepted unproved goals: {U}\n')
        for n, g, tr in unproved_all:
            o.write(f'#   {n}: {g}  ' + (f'accepted [{tr}]' if tr else 'NOT ACCEPTED') + '\n')
        o.write(f'# sources (sha256):\n')
        for f, h in sorted(sources.items()):
            o.write(f'#   {h}  {f}\n')
    if out != os.devnull:
        os.replace(out + '.tmp', out)
    proved_now = {g for gs in now.values() for g, (st, _, _) in gs.items() if st == 'proved'}
    stale = sorted(set(accepted) & proved_now)
    unknown = sorted(set(accepted) - used - proved_now) if not missing else []
    summary = dict(settings=s, tools=meta['tools'], commit=meta['commit'], dirty=meta['dirty'],
                   sources=dict(sorted(sources.items())), stamps=stamps,
                   functions=rows,
                   totals=dict(goals=T, proved=P, unproved=T - P, accepted=A, unaccepted=U),
                   stale_accepted=stale, accepted_not_goals=unknown)
    if out != os.devnull:
        with open(f'{res}/summary.json.tmp', 'w') as o:
            json.dump(summary, o, indent=1)
        os.replace(f'{res}/summary.json.tmp', f'{res}/summary.json')
        sys.stdout.write(open(out).read().split('# sources (sha256)')[0])
    else:
        print(f'goals: {T}, proved {P}, accepted {A}, unaccepted unproved {U} (from {res}/ and the inventory)')
    if stale:
        print('note: accepted.txt lists goals that are proved (remove them):', ' '.join(stale))
    if unknown:
        print('note: accepted.txt lists goals that no run has (remove them):', ' '.join(unknown))
    if int(secs) > 0:
        print(f'wall time: {secs}s on {par} cores')
    if missing:
        print('run.sh: no log or statement file for', ' '.join(missing), '(run them: KVQ_WP_ONLY=...)')
        sys.exit(2)

    for n in old_res:
        print(f'note: {n}: its results in {res}/ are from other sources or settings (stamp): '
              f'not compared, not written (rerun it: KVQ_WP_ONLY={n})')

    # ---- the inventory -------------------------------------------------------
    diffs = []
    if mode in ('check', 'summary'):
        if not inv_exists:
            print(f'run.sh: no {inv_path}; make proofs-inventory writes it')
            sys.exit(1)
        compared = current
        for n in sorted(set(inv_goals) | set(inv_stamps)):
            if n not in names and n != 'enum':
                diffs.append(f'{n}: a run of the inventory that the scope no longer has')
        for n in compared:
            before = len(diffs)
            old, new = inv_goals.get(n, {}), now[n]
            if not old:
                diffs.append(f'{n}: not in the inventory'); continue
            for g in sorted(set(old) | set(new)):
                if g not in new:
                    diffs.append(f'{n}: {g} lost (listed {old[g][0]}, no longer generated)')
                elif g not in old:
                    diffs.append(f'{n}: {g} new, {new[g][0]}')
                else:
                    (os_, _, oh), (ns, _, nh) = old[g], new[g]
                    if os_ != ns:
                        diffs.append(f'{n}: {g} was {os_}, now {ns}')
                    if oh != nh:
                        diffs.append(f'{n}: {g} statement changed ({oh} -> {nh})')
            if len(diffs) == before and inv_stamps.get(n) != stamps.get(n) and mode == 'check':
                print(f'note: {n}: same goals as the inventory, from changed sources '
                      f'(make proofs-inventory records the new stamp)')
        for n, gs in sorted(inv_goals.items()):
            for g, (st, _, _) in sorted(gs.items()):
                if st == 'accepted' and g not in accepted:
                    diffs.append(f'{n}: {g} is accepted in the inventory, but {accepted_path} no longer lists it')
        for d in diffs:
            print(f'inventory: {d}')
        if diffs:
            print(f'run.sh: {len(diffs)} difference(s) from {inv_path}; if the change is deliberate, '
                  f'make proofs-inventory records it')
    elif mode == 'write':
        U = sum(1 for n in current for st, _, _ in now[n].values() if st == 'unproved')
        if U:
            print(f'run.sh: {inv_path} not written: {U} unaccepted unproved goal(s); prove or accept them first')
            sys.exit(1)
        new_stamps = {n: inv_stamps[n] for n in names if n in inv_stamps and n not in current}
        new_goals = {n: inv_goals[n] for n in names if n in inv_goals and n not in current}
        for n in names:
            if n in current:
                new_stamps[n] = stamps[n]
                new_goals[n] = {g: (st, pv if st == 'proved' else '-', h) for g, (st, pv, h) in now[n].items()}
        if res_stamp('enum') == stamps['enum'] or 'enum' not in inv_stamps:
            new_stamps['enum'] = stamps['enum']
        else:
            new_stamps['enum'] = inv_stamps['enum']
        write_inventory(inv_path, new_stamps, new_goals)
        ng = sum(len(v) for v in new_goals.values())
        print(f'run.sh: wrote {inv_path}: {len(new_stamps)} stamps, {ng} goals '
              f'({len(current)} run(s) from results/)')
    sys.exit(1 if U or diffs else 0)


def main(argv):
    if len(argv) >= 2 and argv[1] == 'stamps' and len(argv) == 5:
        cmd_stamps(*argv[2:])
    elif len(argv) >= 2 and argv[1] == 'stmt' and len(argv) == 4:
        cmd_stmt(*argv[2:])
    elif len(argv) >= 2 and argv[1] == 'report' and len(argv) == 12:
        cmd_report(*argv[2:])
    else:
        die('usage: gate.py stamps RUNS.tsv SETTINGS TOOLS | stmt GEN.log OUT.stmt | '
            'report MODE RES ACCEPTED INVENTORY RUNS.tsv STAMPS RERUN SECS PAR META.json')


if __name__ == '__main__':
    main(sys.argv)
