#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""loopmq bench report: guest cell files -> bench.json, results.md, PNG chart.

    bench/report.py RESULTS_DIR [--second-boot OTHER_RESULTS_DIR] [--publish [DEST]]
    bench/report.py RESULTS_DIR --compare OTHER_RESULTS_DIR
    bench/report.py --summary RESULTS_DIR...   (compact IOPS / %-of-backing table)
    bench/report.py --check-docs [FILE.md...]  (recompute the marked figures)
    bench/report.py --doc-section SET... [--short] [--into FILE.md]
                                               (the documents' current results)

Reads RESULTS_DIR/vm-*/**/bench/cells/ID.{meta,json,snap} and missing.jsonl
written by bench/guest/lib.sh (or, when they are gone, RESULTS_DIR/bench.json),
computes per-run figures from fio's JSON and the counter snapshots taken
around each run, takes the median of the runs, adds the ratios with their
intervals and verdicts, and writes bench.json, results.md and
iops-vs-backing*.png.  With --publish, copies those and meta.txt into
docs/results/<date>-<shortrev>/ (or DEST).  With --compare, prints how far
every cell's median moved between two results and each cell's spread over
both.  --check-docs and --doc-section: see docs/BENCHMARKS.md, "Result sets
and figures in the documents".
"""
import argparse
import colorsys
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(BENCH)


def table(name):
    """bench/NAME's rows as lists of '|'-separated fields (comments, blank lines dropped)."""
    rows = []
    with open(os.path.join(BENCH, name)) as f:
        for ln in f:
            ln = ln.split("#", 1)[0].strip()
            if ln:
                rows.append([x.strip() for x in ln.split("|")])
    return rows


# Workloads, backings and targets are defined in bench/workloads,
# bench/backings and bench/targets (bench/run reads them too); their order
# is the order of rows and chart bars.
WORKLOADS = [r[0] for r in table("workloads")]
SHORT = {r[0]: r[1] for r in table("workloads")}
SINGLE_JOB = {r[0] for r in table("workloads") if "--numjobs=1" in r[3].split()}
BACKINGS = [r[0] for r in table("backings")]
# Image files whose first write to a block allocates (a hole) or copies (a
# shared extent): results.md compares loopmq with stock loop's better setting
# there (loop_vs_loopmq).
FRESH_IMAGE_BACKINGS = ["xfs-sparse", "xfs-reflink"]
# Block devices loopmq remaps to without pinning, and image files it pins:
# results.md reports them against dm-linear on the raw device (targets()).
BLOCK_BACKINGS = ["ram", "nullb-mem", "lat10us"]
PINNED_BACKINGS = ["xfs-pinned", "ext4-pinned"]
# The paths a request takes, one each (the fb_* counters say why it did not
# take the inline one): a cell's share of remapped requests is remap over them.
REQUEST_PATHS = ["inline", "aio_inline", "aio_async", "kthread", "remap"]
# loopmq attached with direct I/O on (loopmq) and off (loopmq-dio-off).
LOOPMQ_TARGETS = ["loopmq", "loopmq-dio-off"]


def loopmq_modes():
    """The dispatch modes in the order of include/uapi/loopmq.h (scripts/names.sh)."""
    names = os.path.join(BENCH, "..", "scripts", "names.sh")
    try:
        r = subprocess.run([names, "modes"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("report: no mode list from %s (%s); loopmq modes in the order "
                         "the results name them\n" % (names, e))
        return []
    return r.stdout.split()


def targets():
    """(target, mode) pairs in bench/targets' order, T:* (loopmq, loopmq-dio-off)
    in every dispatch mode."""
    out = []
    for r in table("targets"):
        if r[0].endswith(":*"):
            new = [(r[0][:-2], m) for m in loopmq_modes()]
        else:
            t, _, m = r[0].partition(":")
            new = [(t, m)]
        # a target on some backings in one line and more in another
        out += [x for x in new if x not in out]
    return out


# The order of rows and chart bars; main() appends targets only the results name.
TARGETS = targets()


def key(c):
    return (c["kernel"], c["target"], c["mode"], c["backing"], c["workload"])


def tname(t, m):
    return t + ("/" + m if m else "")


def parse_snap(path):
    """-> {tag: {"pre": [block...], "post": [block...]}}, block = dict of counters."""
    runs = {}
    cur = None
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return runs
    for ln in lines:
        f = ln.split()
        if not f:
            continue
        if f[0] == "@":
            cur = {"ctxt": None, "cpu": None, "k": {}, "s": {}, "m": None}
            runs.setdefault(f[1], {"pre": [], "post": []})[f[2]].append(cur)
        elif cur is None:
            continue
        elif f[0] == "ctxt":
            cur["ctxt"] = int(f[1])
        elif f[0] == "m" and len(f) == 2:
            cur["m"] = int(f[1])
        elif f[0] in ("r", "u") and len(f) == 2 and f[1].isdigit():
            cur[f[0]] = int(f[1])
        elif f[0] == "cpu":
            cur["cpu"] = [int(x) for x in f[1:]]
        elif f[0] == "k" and len(f) == 4:
            cur["k"][f[1]] = cur["k"].get(f[1], 0) + int(f[3])
        elif f[0] == "s" and len(f) == 3:
            try:
                cur["s"][f[1]] = int(f[2])
            except ValueError:
                pass
    return runs


def snap_delta(run):
    """Earliest pre and latest post (counters are monotonic) -> deltas."""
    pre, post = run.get("pre", []), run.get("post", [])
    if not pre or not post:
        return None
    d = {}
    c0 = [b["ctxt"] for b in pre if b["ctxt"] is not None]
    c1 = [b["ctxt"] for b in post if b["ctxt"] is not None]
    d["ctxt"] = max(c1) - min(c0) if c0 and c1 else None
    p0 = [b["cpu"] for b in pre if b["cpu"]]
    p1 = [b["cpu"] for b in post if b["cpu"]]
    if p0 and p1:
        a = min(p0, key=lambda v: sum(v[:8]))
        b = max(p1, key=lambda v: sum(v[:8]))
        # user nice system idle iowait irq softirq steal
        dv = [y - x for x, y in zip(a[:8], b[:8])]
        tot = sum(dv) or 1
        d["usr"] = 100.0 * (dv[0] + dv[1]) / tot
        d["sys"] = 100.0 * (dv[2] + dv[5] + dv[6]) / tot
    k0 = [sum(b["k"].values()) for b in pre]
    k1 = [sum(b["k"].values()) for b in post]
    d["kthread"] = (max(k1) - min(k0)) if pre[0]["k"] else None
    if pre[0]["s"] and post[-1]["s"]:
        s0, s1 = {}, {}
        for b in pre:
            for n, v in b["s"].items():
                s0[n] = min(v, s0.get(n, v))
        for b in post:
            for n, v in b["s"].items():
                s1[n] = max(v, s1.get(n, v))
        # peak_inflight is a level, not a counter: report the value at the end
        d["paths"] = {n: (v if n == "peak_inflight" else v - s0.get(n, 0))
                      for n, v in s1.items()}
    else:
        d["paths"] = None
    return d


def cache_growth(snaps, tags):
    """The page cache's growth (KiB, /proc/meminfo Cached) over a cell's
    measured runs: from the first run's start to the last one's end."""
    if not tags:
        return None
    pre = [b["m"] for b in snaps.get(tags[0], {}).get("pre", []) if b.get("m") is not None]
    post = [b["m"] for b in snaps.get(tags[-1], {}).get("post", []) if b.get("m") is not None]
    return post[-1] - pre[0] if pre and post else None


def backing_cache(snaps, tags, field="r"):
    """The image file's own pages in the page cache (KiB, fincore) after a
    cell's last measured run: the lower copy of buffered loop I/O.  With
    field "u": the pages of the file fio used in the file system on the
    device (xfs-file-ext4), the upper copy."""
    if not tags:
        return None
    post = [b[field] for b in snaps.get(tags[-1], {}).get("post", [])
            if b.get(field) is not None]
    return post[-1] / 1024.0 if post else None


def dio_auto_state(path):
    """loopmq/dio_auto before and after a cell's workloads (bench/guest/lib.sh,
    run_target) -> bench.json fields: dio_setting, dio_chosen, dio_reason (after),
    dio_chosen_before, dio_switches (after), dio_costly_permille (after),
    dio_write_costly_permille (after; -1: no window of writes, absent from
    modules before the windows)."""
    st = {"before": {}, "after": {}}
    try:
        for ln in open(path):
            f = ln.split()
            if len(f) == 3 and f[0] in st:
                st[f[0]][f[1]] = f[2]
    except OSError:
        return {}
    a, b = st["after"] or st["before"], st["before"]
    if not a:
        return {}

    def num(x):
        try:
            return int(x)
        except (TypeError, ValueError):
            return None
    return {"dio_setting": a.get("setting"), "dio_chosen": a.get("chosen"),
            "dio_reason": a.get("reason"), "dio_chosen_before": b.get("chosen"),
            "dio_switches": num(a.get("switches")),
            "dio_costly_permille": num(a.get("costly_permille")),
            "dio_write_costly_permille": num(a.get("write_costly_permille"))}


def fio_runs(path, prefix):
    """-> {run: {iops, bw_kib, p50, p99, ios}} for jobs named PREFIX+rN."""
    try:
        txt = open(path).read()
    except OSError:
        return {}, "no fio output"
    i = txt.find("{")
    if i < 0:
        return {}, "fio wrote no JSON"
    try:
        j = json.loads(txt[i:])
    except ValueError as e:
        return {}, "bad fio JSON: %s" % e
    out = {}
    for job in j.get("jobs", []):
        tag = job.get("jobname", "")
        if not tag.startswith(prefix + "r"):
            continue
        tag = tag[len(prefix):]
        r, w = job["read"], job["write"]
        d = r if r["total_ios"] >= w["total_ios"] else w
        pct = d.get("clat_ns", {}).get("percentile", {})
        o = out.setdefault(tag, {"iops": 0.0, "bw_kib": 0.0, "ios": 0, "p50": [], "p99": [],
                                 "error": 0})
        o["iops"] += r["iops"] + w["iops"]
        o["bw_kib"] += r["bw"] + w["bw"]
        o["ios"] += r["total_ios"] + w["total_ios"]
        o["p50"].append(pct.get("50.000000", 0) / 1000.0)
        o["p99"].append(pct.get("99.000000", 0) / 1000.0)
        o["error"] = o["error"] or job.get("error", 0)
        o["usr_fio"] = job.get("usr_cpu")
        o["sys_fio"] = job.get("sys_cpu")
    for o in out.values():
        o["p50"] = max(o["p50"]) if o["p50"] else None
        o["p99"] = max(o["p99"]) if o["p99"] else None
    return out, None


def fio_totals(path, prefix):
    """-> (I/Os, seconds) over every job named PREFIX* (warm-up and measured runs)."""
    try:
        txt = open(path).read()
        j = json.loads(txt[txt.find("{"):])
    except (OSError, ValueError):
        return None, None
    ios, ms = 0, 0
    for job in j.get("jobs", []):
        if job.get("jobname", "").startswith(prefix):
            ios += job["read"]["total_ios"] + job["write"]["total_ios"]
            ms += job.get("job_runtime", 0)
    return ios, ms / 1000.0


def writeback_lines(resdir):
    """-> {cell id: (dirty KiB, sync us)} from the guest logs' "before cell N: sync:"
    lines (xfs-sparse, xfs-reflink: bench/guest/lib.sh, bench-sync), keyed by the
    cell whose warm-up that sync preceded."""
    out = {}
    for lf in glob.glob(os.path.join(resdir, "vm-*", "**", "guest.log"), recursive=True):
        kern = os.path.basename(lf.split(os.sep + "bench" + os.sep)[0]).replace("vm-", "", 1)
        for ln in open(lf, errors="replace"):
            f = ln.split()
            # bench[G]: before cell N: sync: D KiB dirty, T us guest time
            if len(f) >= 9 and f[1:3] == ["before", "cell"] and f[4] == "sync:":
                try:
                    out["%s-%03d" % (kern, int(f[3].rstrip(":")))] = (int(f[5]), int(f[8]))
                except ValueError:
                    pass
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def r3(x, n=3):
    return None if x is None else round(x, n)


def load(resdir):
    cells = {}
    seen = set()
    for meta in sorted(glob.glob(os.path.join(resdir, "vm-*", "**", "cells", "*.meta"),
                                 recursive=True)):
        try:
            m = json.loads(open(meta).read())
        except ValueError:
            continue
        if m["id"] in seen:
            continue
        seen.add(m["id"])
        base = os.path.join(os.path.dirname(meta), m.get("fio", m["id"]))
        prefix = m.get("tag", "")
        fr, err = fio_runs(base + ".json", prefix)
        if os.path.exists(base + ".rc"):
            err = "fio exit " + open(base + ".rc").read().strip()
        snaps = {t[len(prefix):]: v for t, v in parse_snap(base + ".snap").items()
                 if t.startswith(prefix)}
        runs = []
        for tag in sorted(fr, key=lambda t: int(t[1:]) if t[1:].isdigit() else 0):
            f = fr[tag]
            s = snap_delta(snaps.get(tag, {})) or {}
            ios = f["ios"]
            runs.append({
                "rep": tag, "iops": f["iops"], "bw_kib": f["bw_kib"],
                "lat_p50_us": f["p50"], "lat_p99_us": f["p99"], "ios": ios,
                "error": f["error"],
                "ctxsw": s.get("ctxt"),
                "ctxsw_per_io": s["ctxt"] / ios if s.get("ctxt") is not None and ios else None,
                "kthread_ctxsw": s.get("kthread"),
                "kthread_ctxsw_per_io": (s["kthread"] / ios
                                         if s.get("kthread") is not None and ios else None),
                "cpu_usr_pct": s.get("usr"), "cpu_sys_pct": s.get("sys"),
                "paths": s.get("paths"),
            })
        c = dict(m)
        c["_totals"] = fio_totals(base + ".json", prefix)
        tags = sorted(fr, key=lambda t: int(t[1:]) if t[1:].isdigit() else 0)
        c["cache_growth_kib"] = cache_growth(snaps, tags)
        c["backing_cache_kib"] = backing_cache(snaps, tags)
        c["upper_cache_kib"] = backing_cache(snaps, tags, "u")
        c.update(dio_auto_state(base + ".dio"))
        c["runs_detail"] = runs
        good = [r for r in runs if not r["error"] and r["ios"] > 0]
        c["ok"] = bool(good) and len(good) == len(runs)
        c["error"] = None if c["ok"] else (err or "fio reported an error")
        c["runs"] = len(good)
        if good:
            iops = [r["iops"] for r in good]
            c["iops"] = r3(med(iops), 1)
            c["iops_runs"] = [round(x, 1) for x in iops]
            c["spread_pct"] = r3(100.0 * (max(iops) - min(iops)) / med(iops), 2)
            for f in ("bw_kib", "lat_p50_us", "lat_p99_us", "ctxsw_per_io",
                      "kthread_ctxsw_per_io", "cpu_usr_pct", "cpu_sys_pct"):
                c[f] = r3(med([r[f] for r in good]), 4 if "per_io" in f else 2)
            # paths: the run whose IOPS is the median
            mid = sorted(good, key=lambda r: r["iops"])[len(good) // 2]
            c["paths"] = mid["paths"]
        cells[key(c)] = c
    # What a workload left dirty, and the guest time sync took to write it back
    # before the next workload of the same target (same fio process) began.
    wb = writeback_lines(resdir)
    byid = {c["id"]: c for c in cells.values() if "id" in c}
    for c in byid.values():
        kern, _, num = c["id"].rpartition("-")
        nxt = byid.get("%s-%03d" % (kern, int(num) + 1))
        w = wb.get("%s-%03d" % (kern, int(num) + 1))
        if not (w and nxt and nxt.get("fio") == c.get("fio") and c.get("ok")):
            continue
        c["dirty_after_kib"], c["writeback_after_us"] = w
        ios, secs = c["_totals"]
        if ios and secs:
            c["iops_all_runs"] = r3(ios / secs, 1)
            c["iops_incl_writeback"] = r3(ios / (secs + w[1] / 1e6), 1)
    for c in cells.values():
        c.pop("_totals", None)
    for mf in glob.glob(os.path.join(resdir, "vm-*", "**", "missing.jsonl"), recursive=True):
        for ln in open(mf):
            try:
                m = json.loads(ln)
            except ValueError:
                continue
            k = key(m)
            if k in cells and cells[k].get("ok"):
                # fio failed in a later run of the same cell: keep the reason
                cells[k]["ok"] = False
                cells[k]["error"] = m.get("error")
            elif k not in cells:
                m["runs"] = 0
                cells[k] = m
            else:
                cells[k]["error"] = m.get("error") or cells[k].get("error")
    return cells


def ok_cell(cells, k, t, m, b, w):
    c = cells.get((k, t, m, b, w))
    return c if c and c.get("ok") and c.get("iops") else None


def loop_best(cells, k, b, w):
    """-> (cell, "dio-on" | "dio-off"): stock loop's better setting in a cell
    (kernel, backing, workload), or (None, None) when neither was measured."""
    on = ok_cell(cells, k, "loop", "dio-on", b, w)
    off = ok_cell(cells, k, "loop", "dio-off", b, w)
    if on and (not off or on["iops"] >= off["iops"]):
        return on, "dio-on"
    if off:
        return off, "dio-off"
    return None, None


# What a cell's IOPS is compared with (bench.json: ratio_to_X, its interval
# ratio_to_X_interval and the verdict vs_X):
#   backing      fio directly on the same device or file
#   dm_linear    dm-linear on the same raw device (for an image file: the raw
#                device under its file system, "raw")
#   dm_mpath_rq  request-based dm (multipath, one path) on the same raw device
#   loop_best    stock loop with its better setting, dio-on or dio-off (loop_best)
#   loop_dio     stock loop with direct I/O on (kept for older readers)
#   null_blk     null_blk without storage, the floor of a blk-mq driver
REFS = ["backing", "dm_linear", "dm_mpath_rq", "loop_best", "loop_dio", "null_blk"]
REF_LABEL = {"backing": "backing", "dm_linear": "dm-linear", "dm_mpath_rq": "dm-mpath-rq",
             "loop_best": "loop best", "loop_dio": "loop dio-on", "null_blk": "null_blk"}


def ref_of(cells, c, ref):
    """The reference cell REF (REFS) of cell c, or None."""
    k, b, w = c["kernel"], c["backing"], c["workload"]
    rawb = c.get("raw") or b
    if ref == "backing":
        return c if c["target"] == "null_blk" else ok_cell(cells, k, "backing", "", b, w)
    if ref == "dm_linear":
        return ok_cell(cells, k, "dm-linear", "", rawb, w)
    if ref == "dm_mpath_rq":
        return ok_cell(cells, k, "dm-mpath-rq", "", rawb, w)
    if ref == "loop_best":
        return loop_best(cells, k, b, w)[0]
    if ref == "loop_dio":
        return ok_cell(cells, k, "loop", "dio-on", b, w)
    if ref == "null_blk":
        return ok_cell(cells, k, "null_blk", "", "null_blk", w)
    raise ValueError(ref)


def runs_of(c):
    return c.get("iops_runs") or ([c["iops"]] if c.get("iops") else [])


def noise_bound(a, b):
    """How far a ratio of two cells moves between boots under icount: 1% for
    single-job cells without a thread hop, 3% for the others (the bounds of
    --compare; docs/BENCHMARKS.md, "Noise, intervals and verdicts")."""
    hop = max(a.get("ctxsw_per_io") or 0, b.get("ctxsw_per_io") or 0) >= 0.5
    single = a["workload"] in SINGLE_JOB and b["workload"] in SINGLE_JOB
    return 0.01 if single and not hop else 0.03


def ratio_stats(a, b):
    """Cell a's IOPS over cell b's -> (ratio of the medians, lowest, highest,
    verdict).  The interval is the lowest and highest ratio of any run of a to
    any run of b (min(a)/max(b), max(a)/min(b)).  Verdict: "tie" when the
    interval includes 1.0, or the ratio is within the two cells' spreads
    added, or within the cross-boot bound (noise_bound); else "ahead" or
    "behind"."""
    r = a["iops"] / b["iops"]
    ra, rb = runs_of(a), runs_of(b)
    lo, hi = min(ra) / max(rb), max(ra) / min(rb)
    sp = ((a.get("spread_pct") or 0) + (b.get("spread_pct") or 0)) / 100.0
    if lo <= 1.0 <= hi or abs(r - 1.0) <= max(sp, noise_bound(a, b)):
        v = "tie"
    else:
        v = "ahead" if r > 1.0 else "behind"
    return r, lo, hi, v


def add_ratios(cells):
    for c in cells.values():
        mine = c if c.get("ok") and c.get("iops") else None
        for ref in REFS:
            o = ref_of(cells, c, ref) if mine else None
            if o is None:
                c["ratio_to_" + ref] = None
                c["ratio_to_%s_interval" % ref] = None
                c["vs_" + ref] = None
                continue
            r, lo, hi, v = ratio_stats(mine, o)
            c["ratio_to_" + ref] = round(r, 4)
            c["ratio_to_%s_interval" % ref] = [round(lo, 4), round(hi, 4)]
            c["vs_" + ref] = v
        c["loop_best"] = loop_best(cells, c["kernel"], c["backing"], c["workload"])[1]


def order(c):
    kern = {"6.12": 0, "6.1": 1}.get(c["kernel"], 2)
    bi = BACKINGS.index(c["backing"]) if c["backing"] in BACKINGS else 99
    wi = WORKLOADS.index(c["workload"]) if c["workload"] in WORKLOADS else 99
    ti = TARGETS.index((c["target"], c["mode"])) if (c["target"], c["mode"]) in TARGETS else 99
    return (kern, bi, wi, ti)


def fmt(x, kind=""):
    if x is None:
        return ""
    if kind == "k":
        return "%.1fK" % (x / 1000.0)
    if kind == "r":
        return "%.1f%%" % (100.0 * x)
    if kind == "c":
        return "%.3f" % x
    if kind == "p":
        return "%.1f" % x
    return str(x)


def rfmt(c, ref):
    """A ratio for results.md: "87.6% (86.9-88.3) tie", and for loop best the
    setting it was; empty where there is none or the reference is c itself."""
    r = c.get("ratio_to_" + ref)
    me = (c["target"], c["mode"])
    if r is None or (ref == "backing" and c["target"] in ("backing", "null_blk")) or \
            me == {"null_blk": ("null_blk", ""), "dm_linear": ("dm-linear", ""),
                   "dm_mpath_rq": ("dm-mpath-rq", ""), "loop_dio": ("loop", "dio-on"),
                   "loop_best": ("loop", c.get("loop_best"))}.get(ref):
        return ""
    lo, hi = c.get("ratio_to_%s_interval" % ref) or (r, r)
    out = "%.1f%% (%.1f-%.1f) %s" % (100 * r, 100 * lo, 100 * hi, c.get("vs_" + ref) or "")
    if ref == "loop_best" and c.get("loop_best"):
        out += " " + c["loop_best"]
    return out


def markdown(cells, meta_txt):
    out = ["# loopmq bench results", ""]
    out += ["```", meta_txt.strip(), "```", ""]
    out.append("Every figure counts guest instructions: IOPS under `-icount shift=0,sleep=off` "
               "on one vCPU are a nearly repeatable inverse of the guest instructions spent "
               "per I/O, not wall-clock speed. They count a context switch's instructions "
               "but not its cache/TLB cost on real hardware, which is why context switches "
               "per I/O (system-wide from /proc/stat, and the loopmq kthread's own) are "
               "reported beside them. Medians of the runs; spread = (max-min)/median. "
               "Ratios: IOPS over the backing itself (fio directly on the same device or "
               "file), over dm-linear and over request-based dm (`dm-mpath-rq`) on the same "
               "raw device, over stock loop at its better setting (`loop best`: dio-on or "
               "dio-off, named), over null_blk. Each ratio carries its interval (the lowest "
               "and highest ratio of any run to any run) and a verdict: `tie` when the "
               "interval includes 1.0, or the ratio is within the two cells' spreads added "
               "or within the cross-boot bound (1% for single-job cells without a thread "
               "hop, 3% for others); else `ahead` or `behind`. fio's I/O buffers are "
               "hugetlb pages (mem=shmhuge), so the per-page cost of pinning user memory is "
               "the same in every boot.")
    out.append("")
    cs = sorted(cells.values(), key=order)
    groups = []
    for c in cs:
        g = (c["kernel"], c["backing"])
        if not groups or groups[-1][0] != g:
            groups.append((g, []))
        groups[-1][1].append(c)
    for (kern, back), rows in groups:
        out.append("## Linux %s, backing `%s`" % (kern, back))
        out.append("")
        out.append("| workload | target | IOPS | spread | /backing | /dm-linear | /dm-mpath-rq | "
                   "/loop best | /null_blk | p50 us | p99 us | ctxsw/IO | kthread ctxsw/IO | "
                   "usr% | sys% |")
        out.append("|" + " --- |" * 15)
        for c in rows:
            t = tname(c["target"], c["mode"])
            if not c.get("ok"):
                why = (c.get("error") or "missing").replace("|", "/")
                out.append("| %s | %s | missing | %s |%s" % (
                    c["workload"], t, why[:110], " |" * 11))
                continue
            out.append("| %s | %s | %s | %s%% | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                c["workload"], t, fmt(c["iops"], "k"), fmt(c.get("spread_pct"), "p"),
                rfmt(c, "backing"), rfmt(c, "dm_linear"), rfmt(c, "dm_mpath_rq"),
                rfmt(c, "loop_best"), rfmt(c, "null_blk"),
                fmt(c.get("lat_p50_us"), "p"), fmt(c.get("lat_p99_us"), "p"),
                fmt(c.get("ctxsw_per_io"), "c"), fmt(c.get("kthread_ctxsw_per_io"), "c"),
                fmt(c.get("cpu_usr_pct"), "p"), fmt(c.get("cpu_sys_pct"), "p")))
        out.append("")
    paths = [c for c in cs if c["target"] in LOOPMQ_TARGETS and c.get("ok") and c.get("paths")]
    if paths:
        out.append("## loopmq dispatch paths (counter deltas over the median run)")
        out.append("")
        names = []
        for c in paths:
            for n in c["paths"]:
                if n not in names:
                    names.append(n)
        out.append("| kernel | backing | workload | target | " + " | ".join(names) + " |")
        out.append("|" + " --- |" * (4 + len(names)))
        for c in paths:
            out.append("| %s | %s | %s | %s | %s |" % (
                c["kernel"], c["backing"], c["workload"], tname(c["target"], c["mode"]),
                " | ".join(str(c["paths"].get(n, "")) for n in names)))
        out.append("")
    out += remap_targets(cs)
    out += floor_section(cs)
    out += loop_vs_loopmq(cs)
    out += loop_vs_loopmq(cs, "iops_incl_writeback")
    out += dio_auto_section(cs)
    return "\n".join(out)


def remap_share(c):
    """Remapped requests over all requests of a loopmq cell's median run, or None."""
    p = c.get("paths") or {}
    n = sum(p.get(x, 0) for x in REQUEST_PATHS)
    return p.get("remap", 0) / n if n else None


def remap_targets(cs):
    """The remap path's targets against dm-linear on the raw device: loopmq auto
    >= 95% on the block devices (ram, nullb-mem, lat10us) and >= 93% on the pinned xfs and
    ext4 files, whose table shows every mode (only auto is held to the target:
    kthread pays its hop by design).  Reported, never asserted; nothing when
    neither was measured."""
    goals = [("auto on block devices", BLOCK_BACKINGS, ["auto"], 0.95),
             ("auto on pinned files", PINNED_BACKINGS, None, 0.93)]
    out, verdict = [], []
    for name, backs, modes, goal in goals:
        have = [c for c in cs if c["target"] == "loopmq" and c["backing"] in backs and
                (modes is None or c["mode"] in modes)]
        if not have:
            continue
        if not out:
            out = ["## The remap path against dm-linear", ""]
            out.append("loopmq IOPS over dm-linear's on the same raw device (for a pinned "
                       "file: the RAM disk under its file system, `raw` in bench.json), and "
                       "the share of requests that took the remap path (`remap` over all "
                       "requests in the median run's path counters). **Bold** with `<` marks "
                       "a cell below the target; the target column is empty for modes not held to "
                       "one.")
            out.append("")
            out.append("| kernel | backing | workload | mode | IOPS | dm-linear | ratio | "
                       "target | remapped |")
            out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        kernels = []
        for c in have:
            if c["kernel"] not in kernels:
                kernels.append(c["kernel"])
        for kern in kernels:
            below, n, missing, worst = [], 0, 0, None
            for c in have:
                if c["kernel"] != kern:
                    continue
                r = c.get("ratio_to_dm_linear")
                share = remap_share(c) if c.get("ok") else None
                judged = c["mode"] == "auto"
                if not judged:
                    rs = "" if r is None else "%.1f%%" % (100 * r)
                elif r is None:
                    missing += 1
                    rs = "missing"
                else:
                    n += 1
                    worst = r if worst is None else min(worst, r)
                    rs = "%.1f%%" % (100 * r)
                    if r < goal:
                        below.append("%s %s %s" % (c["backing"], c["mode"], c["workload"]))
                        rs = "**%s** `<`" % rs
                dm = c.get("iops") / r if c.get("ok") and r else None
                out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    kern, c["backing"], c["workload"], c["mode"],
                    fmt(c.get("iops"), "k") if c.get("ok") else "missing",
                    fmt(dm, "k"), rs, "%d%%" % round(100 * goal) if judged else "",
                    "" if share is None else "%.1f%%" % (100 * share)))
            verdict.append("- Linux %s, %s: %d of %d cells below %d%% of dm-linear%s%s%s" % (
                kern, name, len(below), n, round(100 * goal),
                " (lowest %.1f%%)" % (100 * worst) if worst is not None else "",
                ": " + "; ".join(below) if below else "",
                "; %d not compared (missing)" % missing if missing else ""))
    if out:
        out.append("")
        out += verdict
        out.append("")
    return out


def floor_section(cs):
    """Where request-based dm (dm-mpath-rq) was measured: per kernel, backing and
    workload, the device, dm-linear, dm-mpath-rq, stock loop's better setting,
    and each loopmq mode over dm-mpath-rq and dm-linear with intervals and
    verdicts.  The goal: loopmq auto at or above dm-mpath-rq (not behind) and
    within 2% of it or better.  Nothing when dm-mpath-rq was not measured."""
    floors = [c for c in cs if c["target"] == "dm-mpath-rq"]
    if not floors:
        return []
    cell = {key(c): c for c in cs}
    out = ["## The request-based floor", ""]
    out.append("Request-based device-mapper (`dm-mpath-rq`: multipath with one path, "
               "round-robin, `queue_mode mq`) is the kernel's own blk-mq stacking: a "
               "request is allocated on the dm device and a clone of it on the device "
               "below. Per cell the IOPS of the device itself, dm-linear (bio-based), "
               "dm-mpath-rq and stock loop's better setting, then each loopmq mode as "
               "IOPS, over dm-mpath-rq and over dm-linear (interval, verdict). Goal: "
               "`auto` not behind dm-mpath-rq, and at 98% of it or more.")
    out.append("")
    modes = [m for t, m in TARGETS if t == "loopmq"]
    out.append("| kernel | backing | workload | backing | dm-linear | dm-mpath-rq | loop best | " +
               " | ".join("loopmq/%s: IOPS, /dm-mpath-rq, /dm-linear" % m for m in modes) + " |")
    out.append("|" + " --- |" * (7 + len(modes)))
    verdict = []
    groups = []
    for f in floors:
        g = (f["kernel"], f["backing"])
        if g not in groups:
            groups.append(g)
    for kern, back in groups:
        tally = {"ahead": 0, "tie": 0, "behind": 0}
        below98, n, missing = [], 0, 0
        for f in [f for f in floors if (f["kernel"], f["backing"]) == (kern, back)]:
            w = f["workload"]

            def iops(t, m=""):
                c = cell.get((kern, t, m, back, w))
                return fmt(c["iops"], "k") if c and c.get("ok") else "missing"
            lb = cell.get((kern, "loop", "dio-on", back, w)) or {}
            best = ""
            if lb.get("loop_best"):
                b = cell.get((kern, "loop", lb["loop_best"], back, w))
                best = "%s (%s)" % (fmt(b["iops"], "k"), lb["loop_best"])
            vals = []
            for m in modes:
                c = cell.get((kern, "loopmq", m, back, w))
                if not c or not c.get("ok"):
                    vals.append("missing")
                    if m == "auto":
                        missing += 1
                    continue
                vals.append("%s, %s, %s" % (fmt(c["iops"], "k"), rfmt(c, "dm_mpath_rq") or "-",
                                             rfmt(c, "dm_linear") or "-"))
                if m == "auto" and c.get("vs_dm_mpath_rq"):
                    n += 1
                    tally[c["vs_dm_mpath_rq"]] += 1
                    if c["ratio_to_dm_mpath_rq"] < 0.98:
                        below98.append("%s %.1f%%" % (w, 100 * c["ratio_to_dm_mpath_rq"]))
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                kern, back, w, iops("backing"), iops("dm-linear"),
                iops("dm-mpath-rq") if f.get("ok") else "missing: " +
                (f.get("error") or "")[:80].replace("|", "/"),
                best or "missing", " | ".join(vals)))
        verdict.append("- Linux %s, `%s`: loopmq auto against dm-mpath-rq in %d cells: %d ahead, "
                       "%d tie, %d behind; %d below 98%%%s%s" % (
                           kern, back, n, tally["ahead"], tally["tie"], tally["behind"],
                           len(below98), ": " + "; ".join(below98) if below98 else "",
                           "; %d not compared (missing)" % missing if missing else ""))
    out.append("")
    out += verdict
    out.append("")
    return out


# On the sparse and reflinked images, the loopmq modes held to stock loop's
# better setting: kthread is shown, but it is the stock driver's own model
# (every request through a thread), kept as the reference, not for speed.
PICKED_MODES = ["direct", "aio", "auto"]


def loop_vs_loopmq(cs, field="iops"):
    """On sparse and reflinked images: per kernel, backing and workload, the stock
    loop driver's better setting (dio on or off) and every loopmq mode, attached
    with direct I/O on (loopmq) and off (loopmq-dio-off), as a ratio of it.  The
    verdict holds each mode a user would pick (PICKED_MODES) to it with the better
    of its two settings.  Nothing when no such backing was measured.
    field iops_incl_writeback: the write cells again, counting the writeback
    that followed them."""
    have = [c for c in cs if c["backing"] in FRESH_IMAGE_BACKINGS and
            (field == "iops" or c.get(field) is not None and c.get("dirty_after_kib") is not None)]
    if field != "iops":
        wrote = {(c["kernel"], c["backing"], c["workload"]) for c in have
                 if c["target"] == "loop" and c["dirty_after_kib"] > 0}
        have = [c for c in have if (c["kernel"], c["backing"], c["workload"]) in wrote]
    if not have:
        return []
    cols = [(t, m) for t, m in TARGETS if t in LOOPMQ_TARGETS and
            any(c["target"] == t and c["mode"] == m for c in have)]
    for c in have:
        if c["target"] in LOOPMQ_TARGETS and (c["target"], c["mode"]) not in cols:
            cols.append((c["target"], c["mode"]))
    modes = []
    for _, m in cols:
        if m not in modes:
            modes.append(m)
    cell = {key(c): c for c in have}

    def iops(k, t, m, b, w):
        c = cell.get((k, t, m, b, w))
        return c.get(field) if c and c.get("ok") else None

    if field == "iops":
        out = ["## Sparse and reflinked images: loopmq against stock loop's better setting", ""]
        out.append("Per cell, stock loop's IOPS with direct I/O on and off, the better of the "
                   "two, and each loopmq mode's IOPS, attached with direct I/O on (`loopmq`) "
                   "and off (`loopmq-dio-off`), as a ratio of that better one; **bold** with "
                   "`<1` marks a loopmq cell slower than it. The verdict holds each mode a "
                   "user would pick for speed (%s; `kthread` is stock loop's own model, kept "
                   "as the reference) to it with the better of its two settings. The image "
                   "is made anew before every target (xfs-sparse: a sparse file, never "
                   "written; xfs-reflink: a reflink copy of a fully written file), so the "
                   "workload's first write to each block allocates or copies."
                   % ", ".join("`%s`" % m for m in PICKED_MODES))
    else:
        out = ["### The same, counting the writeback the write cells left behind", ""]
        out.append("Before each workload the guest writes back what the previous one left "
                   "dirty (`sync`, outside the measured runs; `dirty_after_kib`, "
                   "`writeback_after_us` in bench.json). Here every run of the workload, "
                   "warm-up included, over its run time plus that writeback "
                   "(`iops_incl_writeback`), for the workloads after which stock loop left "
                   "dirty data.")
    out.append("")
    out.append("| kernel | backing | workload | loop dio-on | loop dio-off | better | " +
               " | ".join(tname(t, m) for t, m in cols) + " |")
    out.append("|" + " --- |" * (6 + len(cols)))
    verdict = []
    kernels = []
    for c in have:                      # cs is in the report's order
        if c["kernel"] not in kernels:
            kernels.append(c["kernel"])
    for kern in kernels:
        for b in FRESH_IMAGE_BACKINGS:
            wls = [w for w in WORKLOADS if any(c["kernel"] == kern and c["backing"] == b and
                                               c["workload"] == w for c in have)]
            wls += sorted({c["workload"] for c in have if c["kernel"] == kern and
                           c["backing"] == b and c["workload"] not in WORKLOADS})
            below, n, missing = {}, 0, 0
            for w in wls:
                on = iops(kern, "loop", "dio-on", b, w)
                off = iops(kern, "loop", "dio-off", b, w)
                best = max([x for x in (on, off) if x is not None], default=None)
                which = "" if best is None else (" (dio-on)" if best == on else " (dio-off)")
                vals = []
                for t, m in cols:
                    x = iops(kern, t, m, b, w)
                    if x is None:
                        vals.append("missing")
                    elif best is None:
                        vals.append(fmt(x, "k"))
                    else:
                        r = x / best
                        # four places where three would round a shortfall up to 1.000
                        rs = "%.4f" % r if r < 1.0 and round(r, 3) >= 1.0 else "%.3f" % r
                        if r < 1.0:
                            vals.append("%s **%s** `<1`" % (fmt(x, "k"), rs))
                        else:
                            vals.append("%s %s" % (fmt(x, "k"), rs))
                for m in modes:
                    if m not in PICKED_MODES:
                        continue
                    xs = [iops(kern, t, m, b, w) for t in LOOPMQ_TARGETS
                          if (t, m) in cols]
                    xs = [x for x in xs if x is not None]
                    if best is None or not xs:
                        missing += 1
                        continue
                    n += 1
                    if max(xs) < best:
                        below.setdefault(m, []).append(w)
                out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    kern, b, w, fmt(on, "k") or "missing", fmt(off, "k") or "missing",
                    (fmt(best, "k") + which) if best is not None else "missing",
                    " | ".join(vals)))
            if wls:
                nb = sum(len(v) for v in below.values())
                verdict.append("- Linux %s, `%s`: %d of %d (mode, workload) pairs where the "
                               "better loopmq setting is below stock loop's better one%s%s%s" % (
                                   kern, b, nb, n,
                                   ": " + "; ".join("%s (%s)" % (m, ", ".join(below[m]))
                                                    for m in modes if m in below)
                                   if below else "",
                                   "; %d not compared (missing)" % missing if missing else "",
                                   " (counting writeback)" if field != "iops" else ""))
    out.append("")
    out += verdict
    out.append("")
    return out


# Direct I/O auto (loopmq-dio-auto: dio_default=auto) on every file backing:
# its goals against stock loop's better setting and loopmq's own.
DIO_AUTO_BACKINGS = ["xfs-file", "ext4-file", "tmpfs-file", "xfs-sparse", "xfs-reflink",
                     "xfs-filling", "xfs-file-ext4", "xfs-file-ext4-discard"]
DIO_AUTO_OWN_GOAL = 0.98        # of the better of loopmq's own two settings
DIO_AUTO_FILL_GOAL = 0.02       # xfs-filling: within 2% of loopmq attached with dio on


def dio_auto_section(cs):
    """results.md's "Direct I/O auto": per kernel, file backing and workload, what
    auto chose (and why, and its switches), its IOPS against stock loop's better
    setting (verdict: ahead, tie, behind) and against the better of loopmq's own
    two settings (goal: DIO_AUTO_OWN_GOAL), and the page cache each target grew
    by over its measured runs.  Nothing when no loopmq-dio-auto cell was measured."""
    cell = {key(c): c for c in cs}
    have = [c for c in cs if c["target"] == "loopmq-dio-auto" and c["backing"] in DIO_AUTO_BACKINGS]
    if not have:
        return []

    def ok(k, t, m, b, w):
        c = cell.get((k, t, m, b, w))
        return c if c and c.get("ok") and c.get("iops") else None

    def mib(c, f="cache_growth_kib"):
        g = c.get(f) if c else None
        return "" if g is None else "%.1f" % (g / 1024.0)

    def image_mib(c):
        return mib(c, "backing_cache_kib")
    out = ["## Direct I/O auto", ""]
    out.append("`loopmq-dio-auto`: loopmq (mode `auto`) with direct I/O `auto` "
               "(`dio_default=auto`, an unmodified `losetup`), beside stock loop and loopmq "
               "(mode `auto`) with direct I/O on and off, in the same boot. *chose*: what auto "
               "used during the workloads (`loopmq/dio_auto`: chosen, reason, switches since "
               "the attach). Goals: at or above stock loop's better setting within the spread "
               "(verdict `tie` or `ahead`), and at or above %d%% of the better of loopmq's own "
               "two settings. `xfs-filling`: a sparse image filled through each target before "
               "its workloads; auto must have switched (1) and be within %d%% of loopmq "
               "attached with direct I/O on (the final setting). *cache MiB*: the page "
               "cache's growth over the cell's measured runs (`cache_growth_kib`), for auto, "
               "loopmq on / off and stock loop on / off: buffered I/O keeps the data in the "
               "device's and the backing's page cache. *image cached MiB*: the image file's "
               "own pages in the page cache after the cell (`backing_cache_kib`, fincore), "
               "the same five: the lower copy, which direct I/O does not keep."
               % (round(100 * DIO_AUTO_OWN_GOAL), round(100 * DIO_AUTO_FILL_GOAL)))
    out.append("")
    out.append("| kernel | backing | workload | chose | auto | loop best | auto / loop best | "
               "loopmq best | auto / loopmq best | cache MiB: auto, mq on, mq off, loop on, loop off | "
               "image cached MiB: the same |")
    out.append("|" + " --- |" * 11)
    verdict = []
    kernels = []
    for c in have:
        if c["kernel"] not in kernels:
            kernels.append(c["kernel"])
    for kern in kernels:
        behind, own_low, n, fill = [], [], 0, []
        for b in DIO_AUTO_BACKINGS:
            for w in WORKLOADS + sorted({c["workload"] for c in have} - set(WORKLOADS)):
                a = ok(kern, "loopmq-dio-auto", "auto", b, w)
                if not (a or cell.get((kern, "loopmq-dio-auto", "auto", b, w))):
                    continue
                lb, which = loop_best(cell, kern, b, w)
                on = ok(kern, "loopmq", "auto", b, w)
                off = ok(kern, "loopmq-dio-off", "auto", b, w)
                own = max([x for x in (on, off) if x], key=lambda x: x["iops"], default=None)
                own_which = "" if not own else ("dio-on" if own is on else "dio-off")
                chose = ""
                if a:
                    chose = "%s (%s%s)" % (a.get("dio_chosen") or "?", a.get("dio_reason") or "?",
                                           ", %s switches" % a["dio_switches"]
                                           if a.get("dio_switches") else "")
                rl = ro = ""
                if a and lb:
                    r, lo, hi, v = ratio_stats(a, lb)
                    rl = "%.3f %s" % (r, v)
                    n += 1
                    if v == "behind":
                        behind.append("%s %s %.3f" % (b, w, r))
                if a and own:
                    r = a["iops"] / own["iops"]
                    ro = "%.3f" % r
                    if r < DIO_AUTO_OWN_GOAL:
                        ro = "**%s** `<%d%%`" % (ro, round(100 * DIO_AUTO_OWN_GOAL))
                        own_low.append("%s %s %.3f" % (b, w, r))
                if b == "xfs-filling" and a and on:
                    r = a["iops"] / on["iops"]
                    fill.append((w, r, a.get("dio_switches"), a.get("dio_chosen")))
                cmp5 = (a, on, off, ok(kern, "loop", "dio-on", b, w), ok(kern, "loop", "dio-off", b, w))
                out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    kern, b, w, chose, fmt(a["iops"], "k") if a else "missing",
                    (fmt(lb["iops"], "k") + " (%s)" % which) if lb else "missing", rl,
                    (fmt(own["iops"], "k") + " (%s)" % own_which) if own else "missing", ro,
                    ", ".join(mib(x) for x in cmp5), ", ".join(image_mib(x) for x in cmp5)))
        verdict.append("- Linux %s: auto behind stock loop's better setting in %d of %d cells%s; "
                       "below %d%% of loopmq's better own setting in %d%s" % (
                           kern, len(behind), n, (": " + "; ".join(behind)) if behind else "",
                           round(100 * DIO_AUTO_OWN_GOAL), len(own_low),
                           (": " + "; ".join(own_low)) if own_low else ""))
        for b, w in [(b, w) for b in ("xfs-file-ext4", "xfs-file-ext4-discard")
                     for w in WORKLOADS]:
            a = ok(kern, "loopmq-dio-auto", "auto", b, w)
            off = ok(kern, "loopmq-dio-off", "auto", b, w)
            if not (a and off):
                continue
            verdict.append("- Linux %s, `%s` `%s` (ext4 on the device, fio on a "
                           "file in it): auto chose %s, at %.3f of loopmq with direct I/O off; "
                           "the file in ext4's page cache: %s MiB (auto), %s MiB (off); the "
                           "image in the page cache below it: %s MiB (auto), %s MiB (off)" % (
                               kern, b, SHORT.get(w, w), a.get("dio_chosen") or "?",
                               a["iops"] / off["iops"], mib(a, "upper_cache_kib"),
                               mib(off, "upper_cache_kib"), image_mib(a), image_mib(off)))
        if fill:
            bad = [f for f in fill if abs(f[1] - 1.0) > DIO_AUTO_FILL_GOAL or f[2] != 1 or
                   f[3] != "on"]
            verdict.append("- Linux %s, `xfs-filling`: auto / loopmq dio-on %s; switched once "
                           "and on direct I/O in %d of %d cells; %d outside the %d%% goal%s" % (
                               kern, "-".join("%.3f" % x for x in (min(f[1] for f in fill),
                                                                   max(f[1] for f in fill))),
                               sum(1 for f in fill if f[2] == 1 and f[3] == "on"), len(fill),
                               len(bad), round(100 * DIO_AUTO_FILL_GOAL),
                               (": " + "; ".join("%s %.3f (switches %s, %s)" % f for f in bad))
                               if bad else ""))
    out.append("")
    out += verdict
    out.append("")
    return out


# The chart's first colours; more targets get colours spread around the hue circle.
PALETTE = ["#999999", "#4477aa", "#cc6677", "#ddaa77", "#117733", "#44aa99",
           "#88ccee", "#332288"]


def color(j):
    if j < len(PALETTE):
        return PALETTE[j]
    h = (j - len(PALETTE)) * 0.618034 % 1.0     # golden-ratio steps: far from the last
    r, g, b = colorsys.hsv_to_rgb(h, 0.6, 0.75)
    return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))


def add_targets(cells):
    """Append the (target, mode) pairs the results name but TARGETS lacks."""
    for k in sorted(cells):
        t = (k[1], k[2])
        if t not in TARGETS:
            TARGETS.append(t)


def chart(cells, resdir, kernel, png):
    """One panel per backing: IOPS / backing per workload, one bar per target/mode."""
    targets = [t for t in TARGETS if t != ("backing", "")]
    panels = []
    for b in BACKINGS[1:]:
        wls = [w for w in WORKLOADS if cells.get((kernel, "backing", "", b, w), {}).get("ok")]
        if wls:
            panels.append((b, wls))
    if not panels:
        return None
    dat = os.path.join(resdir, "chart-%s.dat" % kernel)
    with open(dat, "w") as f:
        for b, wls in panels:
            f.write("# backing %s\n" % b)
            f.write("# workload " + " ".join(tname(t, m) for t, m in targets) + "\n")
            for w in wls:
                vals = []
                for t, m in targets:
                    c = cells.get((kernel, t, m, b if t != "null_blk" else "null_blk", w))
                    v = None
                    if c and c.get("ok"):
                        if t == "null_blk":
                            base = cells.get((kernel, "backing", "", b, w), {}).get("iops")
                            v = c["iops"] / base if base else None
                        else:
                            v = c.get("ratio_to_backing")
                    vals.append("%.4f" % v if v is not None else "0")
                f.write('"%s" %s\n' % (SHORT.get(w, w), " ".join(vals)))
            f.write("\n\n")
    n = len(panels)
    gp = ["set terminal pngcairo noenhanced size 1100,%d font 'sans,10'" % (330 * n + 40),
          "set output '%s'" % png,
          "set multiplot layout %d,1 title 'loopmq bench, Linux %s: IOPS as a fraction of the "
          "backing itself (1.0 = fio directly on it); bars at 0 = missing'" % (n, kernel),
          "set style data histogram", "set style histogram cluster gap 1",
          "set style fill solid 0.9 border -1", "set boxwidth 0.9",
          "set yrange [0:1.2]", "set offsets 0.5, 0.5, 0, 0", "set grid ytics", "set key outside right top vertical",
          "set ylabel 'IOPS / backing'", "set xtics nomirror",
          "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#000000'"]
    for i, (b, wls) in enumerate(panels):
        gp.append("set title 'backing: %s'" % b)
        plots = []
        for j, (t, m) in enumerate(targets):
            title = tname(t, m)
            plots.append("'%s' index %d using %d:xtic(1) title '%s' lc rgb '%s'" % (
                dat, i, j + 2, title, color(j)))
        gp.append("plot " + ", ".join(plots))
    gp.append("unset multiplot")
    gpf = os.path.join(resdir, "chart-%s.gp" % kernel)
    open(gpf, "w").write("\n".join(gp) + "\n")
    r = subprocess.run(["gnuplot", gpf], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("gnuplot failed: %s\n" % r.stderr)
        return None
    return png


def load_any(d):
    """A run's cells from its guest files, or from its bench.json (a committed set)."""
    cells = load(d)
    if not cells and os.path.isfile(os.path.join(d, "bench.json")):
        cells = load_set(d)
    return cells


def compare(a, b):
    """Print how far the medians of two results (two boots) moved, and each
    cell's cross-boot spread: (max - min) / median over the runs of both."""
    ca, cb = load_any(a), load_any(b)
    # docs/BENCHMARKS.md, Method, "Noise, intervals and verdicts": across
    # boots a single-job cell without a thread hop is expected to move by
    # well under 1%, a cell whose I/O hops to another thread (ctxsw/IO >= 0.5)
    # or with several jobs by more; the bounds below are 1% and 3%.
    worst = {"single": 0.0, "multi": 0.0}
    wspread = {"single": 0.0, "multi": 0.0}
    n = {"single": 0, "multi": 0}
    lines = ["%-5s %-10s %-16s %-30s %10s %10s %7s %7s" % (
        "kern", "backing", "target", "workload", "A", "B", "move", "spread")]
    for k in sorted(ca, key=lambda k: order(ca[k])):
        x, y = ca[k], cb.get(k)
        if not (x.get("ok") and y and y.get("ok")):
            continue
        d = 100.0 * (y["iops"] - x["iops"]) / x["iops"]
        both = runs_of(x) + runs_of(y)
        sp = 100.0 * (max(both) - min(both)) / statistics.median(both)
        hop = max(x.get("ctxsw_per_io") or 0, y.get("ctxsw_per_io") or 0) >= 0.5
        cls = "single" if k[4] in SINGLE_JOB and not hop else "multi"
        worst[cls] = max(worst[cls], abs(d))
        wspread[cls] = max(wspread[cls], sp)
        n[cls] += 1
        lim = 1.0 if cls == "single" else 3.0
        lines.append("%-5s %-10s %-16s %-30s %10.1f %10.1f %+6.2f%% %6.2f%% %s" % (
            k[0], k[3], tname(k[1], k[2]), k[4], x["iops"], y["iops"], d, sp,
            "" if abs(d) <= lim else "OUT OF BOUND (%.0f%%)" % lim))
    print("\n".join(lines))
    print("largest move: %d single-job cells without thread hop %.2f%% (bound 1%%), "
          "%d thread-hop or multi-job cells %.2f%% (bound 3%%)" % (
              n["single"], worst["single"], n["multi"], worst["multi"]))
    print("largest cross-boot spread (max-min)/median over both runs' reps: %.2f%% and %.2f%%"
          % (wspread["single"], wspread["multi"]))
    return 0 if worst["single"] <= 1.0 and worst["multi"] <= 3.0 else 1


def summary(dirs):
    """Compact table over one or more results: IOPS and % of backing per kernel/workload."""
    cells = {}
    for d in dirs:
        c = load_any(d)
        add_ratios(c)
        cells.update(c)
    cols = []
    for c in sorted(cells.values(), key=order):
        col = (c["kernel"], c["workload"])
        if col not in cols:
            cols.append(col)
    rows = []
    for c in sorted(cells.values(), key=order):
        r = (c["backing"], c["target"], c["mode"])
        if r not in rows:
            rows.append(r)
    rows.sort(key=lambda r: (BACKINGS.index(r[0]) if r[0] in BACKINGS else 99,
                             TARGETS.index((r[1], r[2])) if (r[1], r[2]) in TARGETS else 99))
    out = ["| backing | target | " + " | ".join("%s %s" % (k, SHORT.get(w, w)) for k, w in cols)
           + " |", "|" + " --- |" * (2 + len(cols))]
    for b, t, m in rows:
        vals = []
        for k, w in cols:
            c = cells.get((k, t, m, b, w))
            if not c:
                vals.append("")
            elif not c.get("ok"):
                vals.append("missing")
            else:
                v = fmt(c["iops"], "k")
                if t not in ("backing", "null_blk") and c.get("ratio_to_backing"):
                    v += " (%s)" % fmt(c["ratio_to_backing"], "r")
                vals.append(v)
        out.append("| %s | %s | %s |" % (b, tname(t, m), " | ".join(vals)))
    print("\n".join(out))
    return 0


# ---- result sets: meta.txt, publishing, figures in the documents -------------

def read_meta(d):
    """meta.txt of a result set -> dict.  "key: value" lines (bench/run); an
    older meta.txt's "git: REV[-dirty]  loopmq built from REV (SHORT)" gives
    revision (the one loopmq was built from) and dirty."""
    m = {}
    try:
        lines = open(os.path.join(d, "meta.txt")).read().splitlines()
    except OSError:
        return None
    for ln in lines:
        k, sep, v = ln.partition(":")
        if sep:
            m.setdefault(k.strip(), v.strip())
    if "revision" not in m and "cells" in m:
        g = re.search(r"git: (\S+)", m["cells"])
        b = re.search(r"loopmq built from (\S+)", m["cells"])
        if g:
            m["dirty"] = "dirty" if g.group(1).endswith("-dirty") else "no"
            m["revision"] = b.group(1) if b else g.group(1)
            m["revisions"] = " ".join(x for x in (g.group(1).replace("-dirty", ""),
                                                  b.group(1) if b else "") if x)
    if "date" not in m and m.get("started"):
        m["date"] = m["started"][:10]
    return m


def git(*args, root=TOP):
    return subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True)


def meta_problems(m, root=TOP):
    """-> what keeps a result set from being cited: no meta.txt, a dirty tree,
    a revision git does not know or that is not an ancestor of HEAD."""
    if m is None:
        return ["no meta.txt"]
    bad = []
    if m.get("dirty", "no") != "no":
        bad.append("its tree was dirty")
    revs = (m.get("revisions") or m.get("revision") or "").split()
    if not revs:
        bad.append("meta.txt names no revision")
    for r in revs:
        full = git("rev-parse", "--verify", "-q", r + "^{commit}", root=root)
        if full.returncode != 0:
            bad.append("revision %s is not in this repository" % r)
        elif git("merge-base", "--is-ancestor", full.stdout.strip(), "HEAD",
                 root=root).returncode != 0:
            bad.append("revision %s is not an ancestor of HEAD" % r)
    return bad


PUBLISHED = ["bench.json", "results.md", "meta.txt"]


def publish(resdir, dest):
    """Copy a reported run's bench.json, results.md, meta.txt and charts (no raw
    fio output) into docs/results/<date>-<shortrev>/ or DEST."""
    m = read_meta(resdir)
    bad = meta_problems(m)
    if bad:
        sys.stderr.write("report: %s cannot be published: %s\n" % (resdir, "; ".join(bad)))
        return 1
    if not dest:
        short = git("rev-parse", "--short", m["revision"]).stdout.strip()
        dest = os.path.join(TOP, "docs", "results", "%s-%s" % (m["date"], short))
    if os.path.exists(dest):
        sys.stderr.write("report: %s exists; publish into a new directory\n" % dest)
        return 1
    os.makedirs(dest)
    files = PUBLISHED + sorted(os.path.basename(p) for p in
                               glob.glob(os.path.join(resdir, "*.png")))
    for f in files:
        shutil.copy(os.path.join(resdir, f), os.path.join(dest, f))
    print("report: published %s into %s: %s" % (resdir, os.path.relpath(dest), " ".join(files)))
    print("report: cite it in a figure as <!-- fig %s: ... -->" %
          os.path.relpath(dest, os.path.join(TOP, "docs", "results")))
    return 0


# A figure in a document, marked by an HTML comment right after it:
#   87.6%<!-- fig RUN: [AGG] FUNC ARG [key=value...] fmt=FMT -->
# RUN: a directory under docs/results/ holding bench.json and meta.txt.
# AGG: min | max | median | range (min-max), over every selected cell; count:
#      how many selected cells there are (with is=: how many of them have a
#      verdict or setting in the list); none: the selectors must pick exactly
#      one cell.
# FUNC ARG: iops T | ratio T/T | p50 T | p99 T | spread T | interval T/T |
#      verdict T/T | ctxsw T | kctxsw T | setting loop:best, where T is
#      target[:mode] (loopmq:auto, dm-linear, loop:dio-off) or loop:best
#      (stock loop's better setting in that cell).  ctxsw: system-wide context
#      switches per I/O, kctxsw: the loopmq kthread's own, setting: which of
#      stock loop's settings was the better one (dio-on, dio-off).  cache:
#      the page cache's growth over the cell's measured runs, MiB; imagecache:
#      the image file's own pages in the page cache after the cell, MiB;
#      uppercache: on xfs-file-ext4, the pages of the file in ext4 on the
#      device after the cell, MiB; switches,
#      chosen, reason: direct I/O auto's (loopmq/dio_auto after the cell).
#      bootmove: how far the cell's median moved from the first boot to the
#      second (a set published with --second-boot), as a fraction.
# key=value: kernel=, backing=, workload= (comma-separated lists; "*" or
#      absent: every one); except=BACKING/WORKLOAD,... leaves those cells out
#      (each must be a selected cell: the text names them); is=WORD,... (with
#      count).
# fmt: .N% (ratio as percent), .Nx (ratio with an x), .NK (thousands),
#      .N (plain), "word" (verdict, setting); N decimals.
FIG_RE = re.compile(r"<!--\s*fig\s+(\S+?):\s*(.*?)\s*-->", re.S)
AGGS = ("min", "max", "median", "range", "count")
FUNCS = ("iops", "ratio", "p50", "p99", "spread", "interval", "verdict", "ctxsw", "kctxsw",
         "setting", "cache", "imagecache", "uppercache", "switches", "chosen", "reason",
         "bootmove")
WORD_FUNCS = ("verdict", "setting", "chosen", "reason")


def fmt_fig(x, spec):
    m = re.fullmatch(r"\.(\d+)([%xKM]?)", spec)
    if not m:
        raise ValueError("bad fmt=%s" % spec)
    n, unit = int(m.group(1)), m.group(2)
    v = x * {"%": 100.0, "K": 1e-3, "M": 1e-6}.get(unit, 1.0)
    return "%.*f" % (n, v), unit


def parse_target(t):
    name, _, mode = t.partition(":")
    return name, mode


class FigError(Exception):
    pass


def fig_cells(cells, sel, t):
    """(kernel, backing, workload) triples where target t was planned, filtered."""
    name, mode = parse_target(t)
    if (name, mode) == ("loop", "best"):
        name, mode = "loop", "dio-on"
    out = []
    for (k, tn, tm, b, w) in cells:
        if (tn, tm) != (name, mode):
            continue
        if all(v == ["*"] or x in v for x, v in
               ((k, sel.get("kernel", ["*"])), (b, sel.get("backing", ["*"])),
                (w, sel.get("workload", ["*"])))):
            out.append((k, b, w))
    return sorted(set(out))


def fig_cell(cells, k, b, w, t):
    name, mode = parse_target(t)
    if (name, mode) == ("loop", "best"):
        c = loop_best(cells, k, b, w)[0]
    else:
        c = ok_cell(cells, k, name, mode, b, w)
    if c is None:
        raise FigError("no measured %s cell for %s %s %s" % (t, k, b, w))
    return c


def fig_value(cells, func, arg, k, b, w):
    if func in ("ratio", "interval", "verdict"):
        if "/" not in arg:
            raise FigError("%s needs TARGET/TARGET" % func)
        ta, tb = arg.split("/", 1)
        r, lo, hi, v = ratio_stats(fig_cell(cells, k, b, w, ta), fig_cell(cells, k, b, w, tb))
        return {"ratio": r, "interval": (lo, hi), "verdict": v}[func]
    if func == "setting":
        if arg != "loop:best":
            raise FigError("setting takes loop:best")
        fig_cell(cells, k, b, w, arg)
        return loop_best(cells, k, b, w)[1]
    c = fig_cell(cells, k, b, w, arg)
    if func == "bootmove":
        rb = c.get("iops_runs_boots")
        if not rb or len(rb) != 2 or not rb[0] or not rb[1]:
            raise FigError("%s was measured in one boot" % arg)
        return abs(statistics.median(rb[1]) / statistics.median(rb[0]) - 1.0)
    f = {"iops": "iops", "p50": "lat_p50_us", "p99": "lat_p99_us",
         "spread": "spread_pct", "ctxsw": "ctxsw_per_io",
         "kctxsw": "kthread_ctxsw_per_io", "cache": "cache_growth_kib",
         "imagecache": "backing_cache_kib", "uppercache": "upper_cache_kib",
         "switches": "dio_switches", "chosen": "dio_chosen", "reason": "dio_reason"}[func]
    if c.get(f) is None:
        raise FigError("%s has no %s" % (arg, f))
    if func in ("cache", "imagecache", "uppercache"):
        return c[f] / 1024.0
    return c[f] / 100.0 if func == "spread" else c[f]


def fig_eval(cells, expr):
    """A marker's expression -> the figure as the document must print it."""
    toks = expr.split()
    agg = toks.pop(0) if toks and toks[0] in AGGS else None
    if len(toks) < 2 or toks[0] not in FUNCS:
        raise FigError("expected [%s] %s TARGET ...: %r" % ("|".join(AGGS), "|".join(FUNCS), expr))
    func, arg = toks[0], toks[1]
    sel, spec, excl, want = {}, None, [], None
    for t in toks[2:]:
        k, sep, v = t.partition("=")
        if not sep or k not in ("kernel", "backing", "workload", "fmt", "except", "is"):
            raise FigError("unknown selector %r" % t)
        if k == "fmt":
            spec = v
        elif k == "except":
            excl = [tuple(x.split("/", 1)) for x in v.split(",")]
        elif k == "is":
            want = v.split(",")
        else:
            sel[k] = v.split(",")
    if spec is None:
        raise FigError("no fmt=")
    first = arg.split("/")[0]
    where = fig_cells(cells, sel, first)
    for k, vals in sel.items():
        for v in vals:
            if v != "*" and not any(v == x[("kernel", "backing", "workload").index(k)]
                                    for x in where):
                raise FigError("no %s cell with %s=%s" % (first, k, v))
    for e in excl:
        if len(e) != 2 or not any((b, w) == e for _, b, w in where):
            raise FigError("except=%s is not a selected %s cell" % ("/".join(e), first))
    where = [x for x in where if (x[1], x[2]) not in excl]
    if not where:
        raise FigError("no %s cell matches" % first)
    if agg is None and len(where) != 1:
        raise FigError("%d cells match, and no min/max/median/range/count" % len(where))
    if (want is not None) != (agg == "count" and func in WORD_FUNCS):
        raise FigError("is= goes with count over verdict or setting")
    vals = [fig_value(cells, func, arg, *x) for x in where]
    if agg == "count":
        if spec != ".0":
            raise FigError("count takes fmt=.0")
        return "%d" % (len(vals) if want is None else sum(1 for v in vals if v in want))
    if func in WORD_FUNCS:
        if agg or spec != "word":
            raise FigError("%s takes no aggregate (but count) and fmt=word" % func)
        return vals[0]
    if func == "interval":
        if agg:
            raise FigError("interval takes no aggregate")
        lo, hi = vals[0]
        a, unit = fmt_fig(lo, spec)
        z, _ = fmt_fig(hi, spec)
        return "%s-%s%s" % (a, z, unit)
    if agg in (None, "median"):
        x, unit = fmt_fig(statistics.median(vals), spec)
        return x + unit
    if agg == "min":
        x, unit = fmt_fig(min(vals), spec)
        return x + unit
    if agg == "max":
        x, unit = fmt_fig(max(vals), spec)
        return x + unit
    a, unit = fmt_fig(min(vals), spec)
    z, _ = fmt_fig(max(vals), spec)
    return "%s-%s%s" % (a, z, unit)


def load_set(d):
    """A committed result set's cells (bench.json) with their ratios."""
    cs = json.load(open(os.path.join(d, "bench.json")))
    cells = {key(c): c for c in cs}
    return cells


def doc_markers(path):
    """-> [(line, text before the marker on its line, run, expr)], outside code."""
    out = []
    fence = False
    text = open(path).read()
    # blank out code spans and fenced blocks, keeping offsets
    masked = []
    for ln in text.split("\n"):
        if ln.lstrip().startswith("```"):
            fence = not fence
            masked.append(" " * len(ln))
        elif fence:
            masked.append(" " * len(ln))
        else:
            masked.append(re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), ln))
    mtext = "\n".join(masked)
    for m in FIG_RE.finditer(mtext):
        line = mtext.count("\n", 0, m.start()) + 1
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        out.append((line, before, m.group(1), text[m.start(2):m.end(2)]))
    return out


def check_docs(files, root=TOP):
    """Recompute every marked figure in FILES from its committed run; TAP."""
    if not files:
        files = [os.path.join(root, "README.md")] + sorted(
            glob.glob(os.path.join(root, "docs", "*.md")))
    resroot = os.path.join(root, "docs", "results")
    sets = {}
    n = npass = 0
    for f in files:
        rel = os.path.relpath(f, root)
        try:
            marks = doc_markers(f)
        except OSError as e:
            n += 1
            print("not ok %d - %s: %s" % (n, rel, e))
            continue
        for line, before, run, expr in marks:
            n += 1
            fig = "?"
            try:
                d = os.path.normpath(os.path.join(resroot, run))
                if run.startswith("/") or ".." in run.split("/") or \
                        not os.path.isfile(os.path.join(d, "bench.json")):
                    raise FigError("no run docs/results/%s (with a bench.json)" % run)
                if run not in sets:
                    bad = meta_problems(read_meta(d), root)
                    sets[run] = (load_set(d) if not bad else None, bad)
                cells, bad = sets[run]
                if bad:
                    raise FigError("run %s: %s" % (run, "; ".join(bad)))
                fig = fig_eval(cells, expr)
                ok = before.endswith(fig) and not re.search(r"[\d.]$", before[:-len(fig)])
                if not ok:
                    raise FigError("the text says %r, the data %s" % (
                        before.split()[-1] if before.split() else "", fig))
                npass += 1
                print("ok %d - %s:%d %s (%s: %s)" % (n, rel, line, fig, run, expr))
            except (FigError, ValueError, KeyError, OSError) as e:
                print("not ok %d - %s:%d figure %s (%s: %s): %s" % (n, rel, line, fig, run,
                                                                    expr, e))
    print("%d passed, %d failed" % (npass, n - npass))
    return 0 if npass == n else 1


# ---- the current results in the documents -----------------------------------
# bench/report.py --doc-section SET... [--short] [--into FILE]: the "Current
# results" section of docs/BENCHMARKS.md (or, --short, README.md's summary)
# from one or more published sets, every figure followed by its marker, so
# that --check-docs recomputes it.  --into replaces the text between FILE's
# <!-- NAME:begin --> and <!-- NAME:end --> lines (NAME: DOC_BLOCKS).
DOC_BLOCKS = {"current-results": False, "performance-summary": True}
# A dm ratio more than this far (relative) from the median of its group is
# named as an exception, not hidden in a range; a context-switch figure more
# than CTXSW_OUTLIER switches per I/O from its group's median likewise.
RATIO_OUTLIER = 0.05
CTXSW_OUTLIER = 0.5
# The 512 B sync-write cell: loopmq below this share of dm-linear on brd is
# "low", and the sentence under its table says whose the low ratio is.
LOW_512_PCT = 75
FILE_BACKINGS = ["xfs-file", "ext4-file", "tmpfs-file", "xfs-sparse", "xfs-reflink",
                 "xfs-pinned", "ext4-pinned"]


class DocSet:
    """The cells of one or more published sets, and figures with their markers."""

    def __init__(self, sets, root):
        self.cells, self.run, self.meta = {}, {}, {}
        resroot = os.path.join(root, "docs", "results")
        for d in sets:
            if not os.path.isdir(d) and os.path.isdir(os.path.join(resroot, d)):
                d = os.path.join(resroot, d)
            name = os.path.relpath(os.path.abspath(d), resroot)
            if name.startswith("..") or not os.path.isfile(os.path.join(d, "bench.json")):
                raise FigError("%s: not a published set under docs/results/ (with a "
                               "bench.json)" % d)
            bad = meta_problems(read_meta(d), root)
            if bad:
                raise FigError("%s: %s" % (name, "; ".join(bad)))
            cells = load_set(d)
            for c in cells.values():
                k = c["kernel"]
                if self.run.get(k, name) != name:
                    raise FigError("kernel %s is in %s and in %s" % (k, self.run[k], name))
                self.run[k] = name
            self.cells.update(cells)
            self.meta[name] = read_meta(d)
        self.kernels = sorted(self.run, key=lambda k: {"6.12": 0, "6.1": 1}.get(k, 2))
        self.modes = [m for t, m in TARGETS if t == "loopmq"]
        for c in self.cells.values():
            if c["target"] == "loopmq" and c["mode"] not in self.modes:
                self.modes.append(c["mode"])

    def f(self, k, expr):
        """The figure EXPR of kernel k's set, followed by its marker."""
        return "%s<!-- fig %s: %s -->" % (fig_eval(self.cells, expr), self.run[k], expr)

    def has(self, k, t, b, w=None):
        name, mode = parse_target(t)
        return any(ok_cell(self.cells, k, name, mode, b, x) for x in
                   ([w] if w else WORKLOADS))

    def backs(self, k, t, among):
        return [b for b in among if self.has(k, t, b)]

    def span(self, k, func, arg, backs, fmt, outlier=None, agg="range", quiet=False):
        """FUNC ARG over every cell of kernel k on BACKS: the range (AGG) over the
        cells, the ones OUTLIER picks named with their own figure, and the cells
        where ARG's reference was not measured named too.  None: no cell."""
        ta = arg.split("/")[0]
        cand = fig_cells(self.cells, {"kernel": [k], "backing": backs}, ta)
        vals, missing = {}, []
        for _, b, w in cand:
            try:
                vals[(b, w)] = fig_value(self.cells, func, arg, k, b, w)
            except FigError:
                missing.append((b, w))
        if not vals:
            return None
        odd = set()
        if outlier:
            mid = statistics.median(vals.values())
            odd = {x for x, v in vals.items() if outlier(v, mid)}
            if 2 * len(odd) >= len(vals):      # no majority to stand out from
                odd = set()
        main = [x for x in vals if x not in odd]
        bl = [b for b in BACKINGS if any(x[0] == b for x in main)]
        bl += sorted({x[0] for x in main} - set(bl))
        out = [x for x in odd | set(missing) if x[0] in bl]
        cond = "kernel=%s backing=%s" % (k, ",".join(bl))
        if out:
            cond += " except=" + ",".join("%s/%s" % x for x in sorted(out, key=self.cellorder))
        a = agg if len(main) > 1 or agg == "count" else ""
        txt = self.f(k, " ".join(x for x in (a, func, arg, cond, "fmt=" + fmt) if x))
        if quiet:
            return txt
        notes = []
        for b, w in sorted(odd, key=self.cellorder):
            notes.append("%s: %s" % (self.label(b, w, len(backs) > 1), self.f(
                k, "%s %s kernel=%s backing=%s workload=%s fmt=%s" % (func, arg, k, b, w, fmt))))
        for b, w in sorted(missing, key=self.cellorder):
            notes.append("%s: no `%s` cell" % (self.label(b, w, len(backs) > 1),
                                               arg.split("/")[1] if "/" in arg else arg))
        return txt + (" (except " + "; ".join(notes) + ")" if notes else "")

    def count(self, k, func, arg, backs, word):
        """How many cells of kernel k on BACKS have verdict/setting WORD."""
        ta = arg.split("/")[0]
        cand = fig_cells(self.cells, {"kernel": [k], "backing": backs}, ta)
        out = []
        for _, b, w in cand:
            try:
                fig_value(self.cells, func, arg, k, b, w)
            except FigError:
                out.append((b, w))
        bl = [b for b in backs if any(x[1] == b and x[1:] not in out for x in cand)]
        if not bl:
            return None
        cond = "kernel=%s backing=%s" % (k, ",".join(bl))
        out = [x for x in out if x[0] in bl]
        if out:
            cond += " except=" + ",".join("%s/%s" % x for x in out)
        return self.f(k, "count %s %s %s is=%s fmt=.0" % (func, arg, cond, word))

    def tally(self, k, arg, backs):
        v = [self.count(k, "verdict", arg, backs, w) for w in ("ahead", "tie", "behind")]
        return None if None in v else "%s ahead, %s tie, %s behind" % tuple(v)

    def one_setting(self, k, backs):
        """The cells of loopmq auto on BACKS where stock loop ran with one setting only."""
        return [self.label(b, w, True) for b in backs for w in WORKLOADS
                if self.has(k, "loopmq:auto", b, w) and
                self.has(k, "loop:dio-on", b, w) != self.has(k, "loop:dio-off", b, w)]

    @staticmethod
    def cellorder(x):
        b, w = x
        return (BACKINGS.index(b) if b in BACKINGS else 99,
                WORKLOADS.index(w) if w in WORKLOADS else 99)

    @staticmethod
    def label(b, w, with_backing):
        return ("`%s` " % b if with_backing else "") + "`%s`" % SHORT.get(w, w)


def rel_out(v, mid):
    return abs(v / mid - 1.0) > RATIO_OUTLIER if mid else False


def abs_out(v, mid):
    return abs(v - mid) > CTXSW_OUTLIER


def doc_header(ds, k):
    run = ds.run[k]
    m = ds.meta[run]
    krel = next((c.get("krel") for c in ds.cells.values() if c["kernel"] == k and
                 c.get("krel")), "")
    method = m.get("method") or m.get("timing", "")
    mine = [c for c in ds.cells.values() if c["kernel"] == k and c.get("ok")]
    backs = [b for b in BACKINGS if any(c["backing"] == b for c in mine)]
    wls = [w for w in WORKLOADS if any(c["workload"] == w for c in mine)]
    return ["### Linux %s%s" % (k, " (`%s`)" % krel if krel else ""), "",
            "Set [`%s`](results/%s/) (its results.md has every cell, the missing ones "
            "with their reason): revision `%s`, date `%s`, method `%s`. Backings measured: "
            "%s; workloads: %s." % (
                run, run, (m.get("revision") or "")[:12], m.get("date", ""), method,
                ", ".join("`%s`" % b for b in backs), ", ".join("`%s`" % w for w in wls)), ""]


def doc_full(ds):
    out = ["Every figure below is followed by a marker that `bench/report.py --check-docs` "
           "recomputes from the set it names. Guest instructions, not wall-clock time: "
           "TCG with icount on one vCPU, medians of the runs of each cell (see "
           "[Method](#method)); it leaves out the cache and TLB cost of a context switch "
           "(hence the context switches per I/O below) and contention between CPUs. A "
           "range is the lowest and highest figure over the cells named; a cell more than "
           "%d%% from its group's median (%s context switch per I/O for the context-switch "
           "figures) is named beside it with its own figure. Verdicts are results.md's: "
           "`tie` when the ratio's interval includes 1.0 or the ratio is within the two "
           "cells' spreads or the cross-boot bound." % (int(100 * RATIO_OUTLIER + 0.5),
                                                       "half a" if CTXSW_OUTLIER == 0.5
                                                       else CTXSW_OUTLIER), ""]
    for k in ds.kernels:
        out += doc_header(ds, k)
        out += doc_stacking(ds, k)
        out += doc_loop(ds, k)
        out += doc_ctxsw(ds, k)
        out += doc_512(ds, k)
    return out


def doc_stacking(ds, k):
    backs = ds.backs(k, "dm-linear", BLOCK_BACKINGS)
    if not backs:
        return []
    out = ["**loopmq against the kernel's stackings on block devices**: IOPS over "
           "dm-linear (bio-based: a bio clone and a remap, the cheapest stacking) and over "
           "dm-mpath-rq (request-based dm: a request and its clone, the request-based "
           "floor) on the same device, over the workloads measured on it.", "",
           "| backing | loopmq mode | / dm-linear | / dm-mpath-rq | vs dm-mpath-rq |",
           "| --- | --- | --- | --- | --- |"]
    for b in backs:
        mp = ds.has(k, "dm-mpath-rq", b)
        for m in ds.modes:
            t = "loopmq:" + m
            if not ds.has(k, t, b):
                continue
            lin = ds.span(k, "ratio", t + "/dm-linear", [b], ".1%", rel_out) or "not measured"
            if mp:
                rq = ds.span(k, "ratio", t + "/dm-mpath-rq", [b], ".1%", rel_out)
                v = ds.tally(k, t + "/dm-mpath-rq", [b])
            else:
                rq = "not measured" + (" (brd is bio-based: request-based dm refuses it)"
                                       if b == "ram" else "")
                v = ""
            out.append("| `%s` | `%s` | %s | %s | %s |" % (b, m, lin, rq, v or ""))
    return out + [""]


def doc_loop(ds, k):
    backs = ds.backs(k, "loop:dio-on", BACKINGS) or ds.backs(k, "loop:dio-off", BACKINGS)
    if not backs:
        return []
    out = ["**loopmq against stock loop at its better setting** (dio-on or dio-off, per "
           "cell: the count says which) and against the backing itself (fio directly on "
           "the device or file), loopmq `auto`; on the sparse and reflinked images also "
           "loopmq attached with direct I/O off.", "",
           "| backing | loopmq | stock loop's better setting | / loop best: median | "
           "range | verdicts | / backing |", "| --- | --- | --- | --- | --- | --- | --- |"]
    one = []
    for b in backs:
        for t in ("loopmq:auto", "loopmq-dio-off:auto"):
            if not ds.has(k, t, b):
                continue
            setting = "%s dio-on, %s dio-off" % (ds.count(k, "setting", "loop:best", [b], "dio-on"),
                                  ds.count(k, "setting", "loop:best", [b], "dio-off"))
            if t == "loopmq:auto":
                one += ds.one_setting(k, [b])
            out.append("| `%s` | `%s` | %s | %s | %s | %s | %s |" % (
                b, "auto" if t == "loopmq:auto" else "auto`, `dio-off", setting,
                ds.span(k, "ratio", t + "/loop:best", [b], ".2x", agg="median", quiet=True),
                ds.span(k, "ratio", t + "/loop:best", [b], ".2x"),
                ds.tally(k, t + "/loop:best", [b]),
                ds.span(k, "ratio", t + "/backing", [b], ".1%") if b != "null_blk" else ""))
    out.append("")
    if one:
        out += ["Stock loop was measured with one setting only in %s: there its ratio is to "
                "that setting." % ", ".join(one), ""]
    rows = []
    for m in ds.modes:
        t = "loopmq:" + m
        bl = [b for b in backs if ds.has(k, t, b)]
        med = ds.span(k, "ratio", t + "/loop:best", bl, ".2x", agg="median", quiet=True)
        if med:
            rows.append("| `%s` | %s | %s | %s | %s |" % (
                m, ds.span(k, "ratio", t + "/loop:best", bl, ".0", agg="count", quiet=True),
                med, ds.span(k, "ratio", t + "/loop:best", bl, ".2x"),
                ds.tally(k, t + "/loop:best", bl)))
    if rows:
        out += ["Every backing, each mode (attached with direct I/O on), over stock loop's "
                "better setting:", "", "| loopmq mode | cells | median | range | verdicts |",
                "| --- | --- | --- | --- | --- |"] + rows + [""]
    return out


def doc_ctxsw(ds, k):
    rows = []
    for t, what in [("backing", "the backing itself"), ("loop:dio-on", "stock loop dio-on"),
                    ("loop:dio-off", "stock loop dio-off")] + \
            [("loopmq:" + m, "loopmq `%s`" % m) for m in ds.modes]:
        bl = ds.backs(k, t, BACKINGS)
        if not bl:
            continue
        sw = ds.span(k, "ctxsw", t, bl, ".3", abs_out)
        kt = ds.span(k, "kctxsw", t, bl, ".3", abs_out) if t.startswith("loopmq") else ""
        rows.append("| %s | %s | %s |" % (what, sw, kt or ""))
    if not rows:
        return []
    return ["**Context switches per I/O** (system-wide, and the loopmq kthread's own), "
            "over every backing measured; each inline mode against the kthread:", "",
            "| target | system-wide | loopmq kthread |", "| --- | --- | --- |"] + rows + [""]


def doc_512(ds, k):
    w = "randwrite-512-sync-qd1"
    if not (ds.has(k, "loopmq:auto", "ram", w) and ds.has(k, "dm-linear", "ram", w)):
        return []

    def fig(expr, b):
        try:
            return ds.f(k, "%s kernel=%s backing=%s workload=%s" % (expr.split(" fmt=")[0], k, b, w)
                        + " fmt=" + expr.split(" fmt=")[1])
        except FigError:
            return None

    def val(func, arg, b):
        try:
            return fig_value(ds.cells, func, arg, k, b, w)
        except FigError:
            return None
    out = ["**512 B sync writes (`%s`) on brd (`ram`, bio-based) and on `nullb-mem` "
           "(null_blk with memory, blk-mq)**: IOPS of the device, each stacking over "
           "dm-linear, and context switches per I/O." % SHORT[w], "",
           "| backing | device IOPS | dm-linear / device | dm-mpath-rq / dm-linear | loopmq "
           "`auto` / dm-linear | loopmq `auto` / dm-mpath-rq | ctxsw/IO: device, dm-linear, "
           "dm-mpath-rq, loopmq `auto` |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for b in ("ram", "nullb-mem"):
        if not ds.has(k, "dm-linear", b, w):
            continue
        na = "not measured"
        out.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
            b, fig("iops backing fmt=.1K", b) or na,
            fig("ratio dm-linear/backing fmt=.1%", b) or na,
            fig("ratio dm-mpath-rq/dm-linear fmt=.1%", b) or na,
            fig("ratio loopmq:auto/dm-linear fmt=.1%", b) or na,
            fig("ratio loopmq:auto/dm-mpath-rq fmt=.1%", b) or na,
            ", ".join(fig("ctxsw %s fmt=.3" % t, b) or "-" for t in
                      ("backing", "dm-linear", "dm-mpath-rq", "loopmq:auto"))))
    out.append("")
    low = LOW_512_PCT / 100.0
    r_ram = val("ratio", "loopmq:auto/dm-linear", "ram")
    r_nb = val("ratio", "loopmq:auto/dm-linear", "nullb-mem")
    mp = val("ratio", "dm-mpath-rq/dm-linear", "nullb-mem")
    v_mp = None
    try:
        v_mp = fig_value(ds.cells, "verdict", "loopmq:auto/dm-mpath-rq", k, "nullb-mem", w)
    except FigError:
        pass
    if r_ram >= low:
        s = ("On brd loopmq `auto` is not far behind dm-linear here (at least %d%% of it): "
             "this kernel has no low 512 B cell." % LOW_512_PCT)
    elif r_nb is None or mp is None:
        s = ("loopmq `auto` is below %d%% of dm-linear on brd; without dm-mpath-rq on "
             "`nullb-mem` this set cannot say whether any request-based driver pays the "
             "same." % LOW_512_PCT)
    elif mp < low:
        s = ("loopmq `auto` is below %d%% of dm-linear on brd, and request-based dm is below "
             "it too on `nullb-mem`: the low ratio is any request-based driver's, not "
             "loopmq's%s." % (LOW_512_PCT, {"ahead": " (loopmq is ahead of request-based "
                                                   "dm there)", "tie": " (loopmq ties with "
                                                   "request-based dm there)",
                                                   "behind": " (though loopmq is behind "
                                                   "request-based dm there)"}.get(v_mp, "")))
    elif r_nb >= low:
        s = ("loopmq `auto` is below %d%% of dm-linear on brd but not on `nullb-mem`, where "
             "the device below is blk-mq too and request-based dm is not below it either: "
             "the low ratio on brd comes with putting a blk-mq request over a bio-based "
             "device, which request-based dm cannot do at all, not with loopmq's remap." %
             LOW_512_PCT)
    else:
        s = ("loopmq `auto` is below %d%% of dm-linear on brd and on `nullb-mem`, where "
             "request-based dm is not: the low ratio is loopmq's own." % LOW_512_PCT)
    sw = val("ctxsw", "loopmq:auto", "ram")
    sb = val("ctxsw", "backing", "ram")
    if r_ram < low and sw is not None and sb is not None and sw - sb >= 0.5:
        s += (" On brd loopmq `auto` switches context %s times per I/O, brd itself %s: the "
              "512 B sync write does not stay in the writer's context once a blk-mq queue "
              "is under it." % (fig("ctxsw loopmq:auto fmt=.3", "ram"),
                                fig("ctxsw backing fmt=.3", "ram")))
    return out + [s, ""]


def doc_short(ds):
    out = []
    for k in ds.kernels:
        parts = []
        if ds.has(k, "dm-linear", "ram"):
            parts.append("%s of dm-linear on a RAM disk" % ds.span(
                k, "ratio", "loopmq:auto/dm-linear", ["ram"], ".1%", rel_out))
        if ds.has(k, "dm-mpath-rq", "nullb-mem"):
            parts.append("%s of request-based dm on null_blk with memory (%s)" % (
                ds.span(k, "ratio", "loopmq:auto/dm-mpath-rq", ["nullb-mem"], ".1%", rel_out),
                ds.tally(k, "loopmq:auto/dm-mpath-rq", ["nullb-mem"])))
        bl = ds.backs(k, "loopmq:auto", BACKINGS)
        med = ds.span(k, "ratio", "loopmq:auto/loop:best", bl, ".2x", agg="median", quiet=True)
        one = ds.one_setting(k, bl)
        if med:
            parts.append("a median %s stock loop at its better setting%s, range %s over %s "
                         "cells (%s)" % (
                             med, " (where both were measured; with one setting only in %s)"
                             % ", ".join(one) if one else "",
                             ds.span(k, "ratio", "loopmq:auto/loop:best", bl, ".2x"),
                             ds.span(k, "ratio", "loopmq:auto/loop:best", bl, ".0",
                                     agg="count", quiet=True),
                             ds.tally(k, "loopmq:auto/loop:best", bl)))
        mine = [c for c in ds.cells.values() if c["kernel"] == k and c.get("ok")]
        backs = [b for b in BACKINGS if any(c["backing"] == b for c in mine)]
        wls = [w for w in WORKLOADS if any(c["workload"] == w for c in mine)]
        part = ""
        if set(BACKINGS) - set(backs) - ({"tmpfs-file"} if k == "6.1" else set()):
            part = ", a part of the matrix: %s; %s" % (
                ", ".join("`%s`" % b for b in backs),
                ", ".join("`%s`" % SHORT.get(w, w) for w in wls))
        if parts:
            out.append("- Linux %s (set [`%s`](docs/results/%s/)%s): loopmq `auto` at %s." % (
                k, ds.run[k], ds.run[k], part, "; ".join(parts)))
    if out:
        out = ["Measured (guest instructions under TCG icount on one vCPU, medians of the "
               "runs; every figure marked and recomputed by `make check`; the method, the "
               "other backings and the details in docs/BENCHMARKS.md, *Current results*):",
               ""] + out
    return out


def doc_section(sets, short, into, root):
    try:
        ds = DocSet(sets, root)
        lines = doc_short(ds) if short else doc_full(ds)
    except FigError as e:
        sys.stderr.write("report: %s\n" % e)
        return 1
    text = "\n".join(lines).rstrip("\n") + "\n"
    if not into:
        sys.stdout.write(text)
        return 0
    doc = open(into).read()
    for name, is_short in DOC_BLOCKS.items():
        m = re.search(r"(<!-- %s:begin -->[^\n]*\n)(.*?)(<!-- %s:end -->)" % (name, name),
                      doc, re.S)
        if m:
            break
    else:
        sys.stderr.write("report: %s has no <!-- NAME:begin --> ... <!-- NAME:end --> "
                         "block (NAME: %s)\n" % (into, ", ".join(DOC_BLOCKS)))
        return 1
    if is_short != short:
        try:
            lines = doc_short(ds) if is_short else doc_full(ds)
        except FigError as e:
            sys.stderr.write("report: %s\n" % e)
            return 1
        text = "\n".join(lines).rstrip("\n") + "\n"
    doc = doc[:m.start(2)] + text + doc[m.end(2):]
    open(into, "w").write(doc)
    print("report: %s: block %s written from %s" % (into, name, " ".join(ds.run[k] for k in
                                                                         ds.kernels)))
    return 0

def merge_boots(cells, resdir, other):
    """Every cell measured in both boots gets the other boot's runs: its median,
    spread, intervals and verdicts then cover both (iops_runs_boots holds each
    boot's runs, boots says how many boots measured it).  The other fields
    (latency, context switches, paths) stay this boot's.  The two runs must be
    of the same revision.  meta.txt gets a second boot: line."""
    ma, mb = read_meta(resdir) or {}, read_meta(other) or {}
    if ma.get("revision") != mb.get("revision") or ma.get("dirty") != mb.get("dirty"):
        sys.stderr.write("report: %s and %s are not of the same revision\n" % (resdir, other))
        return False
    if any(c.get("iops_runs_boots") for c in cells.values()):
        sys.stderr.write("report: %s already holds two boots\n" % resdir)
        return False
    ob = load_any(other)
    for k, c in cells.items():
        o = ob.get(k)
        c["boots"] = 1
        if not (c.get("ok") and o and o.get("ok")):
            continue
        ra, rb = runs_of(c), runs_of(o)
        both = ra + rb
        c["iops_runs_boots"] = [ra, rb]
        c["iops_runs"] = both
        c["iops"] = r3(statistics.median(both), 1)
        c["spread_pct"] = r3(100.0 * (max(both) - min(both)) / statistics.median(both), 2)
        c["runs"] = c.get("runs", len(ra)) + o.get("runs", len(rb))
        c["boots"] = 2
    if "second boot" not in ma:         # the report again: one line
        with open(os.path.join(resdir, "meta.txt"), "a") as f:
            f.write("second boot: %s (%s cells of both boots merged: medians, spreads and "
                    "intervals over the runs of both)\n" % (
                        os.path.basename(os.path.normpath(other)),
                        sum(1 for c in cells.values() if c.get("boots") == 2)))
    return True


def main():
    ap = argparse.ArgumentParser(
        description="loopmq bench report: guest cell files -> bench.json, "
                    "results.md, PNG chart.")
    ap.add_argument("results", nargs="*", metavar="RESULTS_DIR",
                    help="a bench/run output directory (several with --summary; "
                         "Markdown files with --check-docs)")
    ap.add_argument("--compare", metavar="OTHER_RESULTS_DIR",
                    help="print how far every cell's median moved from "
                         "RESULTS_DIR to OTHER_RESULTS_DIR")
    ap.add_argument("--summary", action="store_true",
                    help="a compact IOPS / %%-of-backing table of the results")
    ap.add_argument("--publish", nargs="?", const="", metavar="DEST",
                    help="after the report, copy bench.json, results.md, meta.txt and "
                         "the charts into DEST (default docs/results/<date>-<shortrev>/); "
                         "refused for a dirty tree or a revision not in HEAD's history")
    ap.add_argument("--second-boot", metavar="OTHER_RESULTS_DIR",
                    help="a second boot of the same plan and revision: every cell's "
                         "median, spread, interval and verdict over the runs of both")
    ap.add_argument("--check-docs", action="store_true",
                    help="recompute every marked figure in the Markdown files given "
                         "(default README.md and docs/*.md) from its committed run")
    ap.add_argument("--doc-section", action="store_true",
                    help="the Current results section of docs/BENCHMARKS.md from the "
                         "published sets given (docs/results/NAME, one per kernel or one "
                         "with both), every figure marked; printed, or see --into")
    ap.add_argument("--short", action="store_true",
                    help="with --doc-section: README.md's performance summary instead")
    ap.add_argument("--into", metavar="FILE.md",
                    help="with --doc-section: replace the text between FILE's "
                         "<!-- current-results:begin/end --> (the section) or "
                         "<!-- performance-summary:begin/end --> (the summary) lines")
    ap.add_argument("--root", default=TOP, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.check_docs:
        return check_docs(a.results, os.path.abspath(a.root))
    if a.doc_section:
        if not a.results:
            ap.error("--doc-section needs one or more published sets")
        return doc_section(a.results, a.short, a.into, os.path.abspath(a.root))
    if a.short or a.into:
        ap.error("--short and --into go with --doc-section")
    if not a.results:
        ap.error("RESULTS_DIR is required")
    if a.summary:
        if a.compare:
            ap.error("--summary and --compare are mutually exclusive")
        return summary(a.results)
    if len(a.results) != 1:
        ap.error("one RESULTS_DIR, except with --summary")
    if a.compare:
        return compare(a.results[0], a.compare)
    resdir = a.results[0]
    cells = load(resdir)
    if not cells and os.path.isfile(os.path.join(resdir, "bench.json")):
        cells = load_set(resdir)        # raw cell files gone: the report again
    if not cells:
        print("report: no cells found under %s" % resdir)
        return 1
    if a.second_boot and not merge_boots(cells, resdir, a.second_boot):
        return 1
    if not a.second_boot and "second boot" in (read_meta(resdir) or {}) and \
            not any(c.get("boots") == 2 for c in cells.values()):
        sys.stderr.write("report: meta.txt names a second boot, but this report has one "
                         "boot: give --second-boot again to keep both\n")
    add_ratios(cells)
    add_targets(cells)
    cs = sorted(cells.values(), key=order)
    json.dump(cs, open(os.path.join(resdir, "bench.json"), "w"), indent=1)
    try:
        meta_txt = open(os.path.join(resdir, "meta.txt")).read()
    except OSError:
        meta_txt = ""
    md = markdown(cells, meta_txt)
    kernels = []
    for c in cs:
        if c["kernel"] not in kernels:
            kernels.append(c["kernel"])
    pngs = []
    for i, k in enumerate(kernels):
        name = "iops-vs-backing.png" if i == 0 else "iops-vs-backing-%s.png" % k
        p = chart(cells, resdir, k, os.path.join(resdir, name))
        if p:
            pngs.append(os.path.basename(p))
    md += "\n" + "\n".join("![%s](%s)" % (p, p) for p in pngs) + "\n"
    open(os.path.join(resdir, "results.md"), "w").write(md)
    print(md)
    ok = sum(1 for c in cs if c.get("ok"))
    print("report: %d cells, %d measured, %d missing; bench.json, results.md, %s in %s" % (
        len(cs), ok, len(cs) - ok, ", ".join(pngs) or "no chart", resdir))
    if a.publish is not None:
        return publish(resdir, a.publish)
    return 0


if __name__ == "__main__":
    sys.exit(main())
