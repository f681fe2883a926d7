#!/usr/bin/env python3
"""Benchmark (not a test; no GPU): what one NVRTC compile costs, per family and
phase, with and without the code-preserving knobs of issue 22 part 3, and
whether each knob leaves the SASS byte-identical.

Driven by scripts/bench/bench_compile_times.sh, which exports a sample of variants
per family and dtype with `tiletune gemm --export` (the source tiletune
compiles, its entry renamed) and passes their directories here. Each source is
compiled through libnvrtc (ctypes, in one process like tiletune's own
compiles) with NVRTC's `--time` table (front end, NVVM optimise + PTX, ptxas),
A/B interleaved (ABAB..., the order flipped each round) so that the load of a
shared machine falls alike on both sides; medians are reported. The SASS check
compares, per kernel, the instructions and their encodings that
`cuobjdump -sass` prints (offset, instruction, 64-bit encoding words; spacing
collapsed): nothing else is ignored.

Knobs:
  minimal   NVRTC -minimal (no texture/surface/cudadevrt/driver-type builtins;
            the templates include no header and use none of them)
  pch       automatic precompiled headers (-pch): the rendered source includes
            no header, so there is nothing to precompile; measured to show it
  combined  every sampled variant of a family in one NVRTC program (each in its
            own namespace, macros undefined between them); per-kernel cost is
            the program's phases divided by the kernel count
"""
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = {"CUDA C++ Frontend": "front_end", "NVVM Optimizer": "nvvm_opt_ptx", "PTX Translation": "ptxas"}


class Nvrtc:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = f"nvrtc {major.value}.{minor.value}"
        self.tmp = tempfile.mkdtemp(prefix="tt_nvrtc_time_")

    def compile(self, source, name, options):
        """(phases ms, wall ms, cubin bytes); raises on a compile error."""
        lib = self.lib
        table = os.path.join(self.tmp, "time.csv")
        if os.path.exists(table):
            os.remove(table)
        prog = ctypes.c_void_p()
        if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None) != 0:
            raise RuntimeError("nvrtcCreateProgram failed")
        opts = list(options) + [f"--time={table}"]
        argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        t0, c0 = time.perf_counter(), time.thread_time()
        rc = lib.nvrtcCompileProgram(prog, len(opts), argv)
        cpu = (time.thread_time() - c0) * 1e3
        size = ctypes.c_size_t()
        cubin = b""
        if rc == 0:
            lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetCUBIN(prog, buf)
            cubin = buf.raw
        wall = (time.perf_counter() - t0) * 1e3
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        if rc != 0:
            raise RuntimeError(f"{name}: nvrtcCompileProgram {rc}:\n{log.value.decode(errors='replace')[-3000:]}")
        phases = {}
        with open(table) as f:
            for row in f.read().splitlines()[1:]:
                cells = [c.strip() for c in row.split(",")]
                if len(cells) >= 3 and cells[1] in PHASES:
                    phases[PHASES[cells[1]]] = phases.get(PHASES[cells[1]], 0.0) + float(cells[2])
        phases["total"] = sum(phases.values())
        # The CPU time of this thread (NVRTC compiles in the caller's thread): less moved by
        # other processes on a shared machine than the phases' wall times.
        phases["cpu"] = cpu
        return phases, wall, cubin


def sass_by_function(cuobjdump, cubin_bytes, workdir):
    path = os.path.join(workdir, "probe.cubin")
    with open(path, "wb") as f:
        f.write(cubin_bytes)
    out = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True, check=True).stdout
    funs, cur = {}, None
    code = re.compile(r"\s*/\*[0-9a-f]{4,}\*/|\s*/\* 0x[0-9a-f]{16} \*/")
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = funs.setdefault(m.group(1), [])
        elif cur is not None and code.match(line):
            cur.append(" ".join(line.split()))
    return funs


def combine(sources):
    """One program of several rendered variants: each in a namespace of its own
    (their entries already have distinct extern "C" names), every macro it
    defines undefined before the next."""
    out = []
    for i, s in enumerate(sources):
        names = sorted(set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", s, re.M)))
        out.append(f"namespace tt_program_{i} {{\n{s}\n}}\n" + "".join(f"#undef {n}\n" for n in names))
    return "".join(out)


def main():
    spec = json.load(open(sys.argv[1]))  # {"families": {name: [{"id","source","arch","options"}]}, ...}
    out_path, rounds, cuobjdump = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    nv = Nvrtc(spec["nvrtc_library"])
    work = tempfile.mkdtemp(prefix="tt_sass_")
    # ptxas_cheap: ptxas without its expensive optimisations (-O1 and -Ofc change the SASS, probed 2026-11-23).
    knobs = {"minimal": ["-minimal"], "pch": ["-pch", f"--pch-dir={tempfile.mkdtemp(prefix='tt_pch_')}"],
             "ptxas_cheap": ["-Xptxas=--allow-expensive-optimizations=false"]}
    results = []
    for family, variants in spec["families"].items():
        sources = [open(v["source"]).read() for v in variants]
        base_opts = [[f"--gpu-architecture={v['arch']}"] + v["options"] for v in variants]
        samples = {k: [] for k in ["base", *knobs, "combined_base", "combined"]}
        sass_ok = {k: True for k in [*knobs, "combined"]}
        reference = {}
        nv.compile(sources[0], "warm.cu", base_opts[0])  # the first NVRTC call pays its loading
        for r in range(rounds):
            sides = ["base", *knobs] if r % 2 == 0 else [*knobs][::-1] + ["base"]
            for i, (src, opts) in enumerate(zip(sources, base_opts)):
                for side in sides:
                    extra = [] if side == "base" else knobs[side]
                    ph, wall, cubin = nv.compile(src, variants[i]["id"] + ".cu", opts + extra)
                    ph["wall"] = wall
                    samples[side].append(ph)
                    if r == 0:
                        funs = sass_by_function(cuobjdump, cubin, work)
                        if side == "base":
                            reference.update(funs)
                        elif funs != {k: reference[k] for k in funs} or not funs:
                            sass_ok[side] = False
            # several variants in one program against the same variants one by one, in alternating order
            pair = ["separate", "combined"] if r % 2 == 0 else ["combined", "separate"]
            for side in pair:
                if side == "separate":
                    tot = {}
                    for i, (src, opts) in enumerate(zip(sources, base_opts)):
                        ph, wall, _ = nv.compile(src, variants[i]["id"] + ".cu", opts)
                        ph["wall"] = wall
                        for k, v in ph.items():
                            tot[k] = tot.get(k, 0.0) + v / len(sources)
                    samples["combined_base"].append(tot)
                else:
                    ph, wall, cubin = nv.compile(combine(sources), "combined.cu", base_opts[0])
                    ph["wall"] = wall
                    samples["combined"].append({k: v / len(sources) for k, v in ph.items()})
                    if r == 0:
                        funs = sass_by_function(cuobjdump, cubin, work)
                        if set(funs) != set(reference) or any(funs[k] != reference[k] for k in funs):
                            sass_ok["combined"] = False
        med = {side: {k: round(statistics.median(s[k] for s in rows), 1) for k in rows[0]}
               for side, rows in samples.items()}
        row = {"family": family, "variants": [v["id"] for v in variants], "rounds": rounds,
               "before_ms": med["base"], "issue_table_total_ms": spec["issue_table"].get(family),
               "knobs": {}}
        for k in knobs:
            row["knobs"][k] = {"after_ms": med[k], "sass_identical": sass_ok[k],
                               "change_pct": round(100 * (med[k]["total"] / med["base"]["total"] - 1), 1),
                               "cpu_change_pct": round(100 * (med[k]["cpu"] / med["base"]["cpu"] - 1), 1)}
        row["knobs"]["combined"] = {
            "before_ms": med["combined_base"], "after_ms": med["combined"], "sass_identical": sass_ok["combined"],
            "change_pct": round(100 * (med["combined"]["total"] / med["combined_base"]["total"] - 1), 1),
            "cpu_change_pct": round(100 * (med["combined"]["cpu"] / med["combined_base"]["cpu"] - 1), 1),
            "note": f"{len(sources)} variants in one program; ms per kernel"}
        results.append(row)
        print(f"{family:11} base {med['base']['total']:5.0f} ms (cpu {med['base']['cpu']:5.0f})  " +
              "  ".join(f"{k} {row['knobs'][k]['change_pct']:+5.1f}% (cpu {row['knobs'][k]['cpu_change_pct']:+5.1f}%, "
                        f"front end {row['knobs'][k]['after_ms']['front_end'] - (med['combined_base'] if k == 'combined' else med['base'])['front_end']:+4.0f} ms) "
                        f"sass {'same' if row['knobs'][k]['sass_identical'] else 'DIFFERS'}"
                        for k in row["knobs"]), flush=True)
    json.dump({"nvrtc": nv.version, "results": results}, open(out_path, "w"), indent=2)


if __name__ == "__main__":
    main()
