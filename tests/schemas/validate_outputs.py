#!/usr/bin/env python3
"""Every JSON tiletune writes, checked against its JSON Schema in schemas/.

Runs the real binary offline (--gpu h100-sxm --dry-run, no GPU needed) for
each kind of output: gemm, gemm --suite, --export's ID.json, batch (a plan
that fits and one that does not), compare, devices --json, db list --json
(empty and filled), db calibrate --json, db export --format json; and gemm --suite --devices and a
measured batch with the test binary tiletune_standins (stand-in GPUs and the
stand-in worker). Then every JSON file shipped in
profiles/. Then shows that the check can fail: for each output a planted
defect (a required key removed, a key of the wrong type, a value outside its
enum or below its minimum) must be rejected.

Exit 0: all valid and every planted defect rejected; 1: a failure (listed);
77: Python's jsonschema module is missing (ctest reports the test skipped).
Usage: validate_outputs.py --binary TILETUNE [--standins TILETUNE_STANDINS --fake-worker FAKE_WORKER]
                           --schemas DIR --profiles DIR --work DIR
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    print("SKIPPED: Python's jsonschema module is not installed (Debian: python3-jsonschema)")
    sys.exit(77)


def load_schemas(folder):
    schemas = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.schema.json"))]
    for s in schemas:
        Draft202012Validator.check_schema(s)
    try:  # jsonschema >= 4.18 resolves $ref through a registry
        from referencing import Registry, Resource

        registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
        Draft202012Validator({}, registry=registry)

        def make(s):
            return Draft202012Validator(s, registry=registry)
    except (ImportError, TypeError):  # older jsonschema (Debian 12 has 4.10): a resolver with a store
        store = {s["$id"]: s for s in schemas}

        def make(s):
            return Draft202012Validator(s, resolver=jsonschema.RefResolver.from_schema(s, store=store))

    # The "schema" key of a document picks its JSON Schema.
    by_name = {}
    for s in schemas:
        key = s.get("properties", {}).get("schema", {})
        for name in ([key["const"]] if "const" in key else key.get("enum", [])):
            by_name[name] = make(s)
    return by_name


class Checker:
    def __init__(self, validators):
        self.validators = validators
        self.failures = []
        self.checked = 0

    def errors(self, doc):
        name = doc.get("schema") if isinstance(doc, dict) else None
        if name not in self.validators:
            return [f'no schema in schemas/ for "schema": {name!r}']
        return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
                for e in self.validators[name].iter_errors(doc)]

    def valid(self, doc, where):
        self.checked += 1
        errs = self.errors(doc)
        if errs:
            self.failures.append(f"{where}: {len(errs)} error(s):\n    " + "\n    ".join(errs[:10]))
        return not errs

    def rejected(self, doc, where, what):
        if not self.errors(doc):
            self.failures.append(f"{where}: the planted defect ({what}) was accepted")


def run(binary, env, *args, ok_codes=(0,)):
    r = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=600)
    if r.returncode not in ok_codes:
        raise SystemExit(f"FAILED: tiletune {' '.join(args)} exited {r.returncode}\n{r.stderr}")
    return r.stdout


def produce(binary, standins, fake_worker, work, profiles):
    """Runs the binary for each kind of output: {label: document}."""
    env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"))
    out = {}
    offline = ["--gpu", "h100-sxm", "--dry-run", "--quiet"]
    gemm = work / "gemm.json"
    run(binary, env, "gemm", "--m", "1000", "--n", "3000", "--k", "777", "--batch", "2", "--dtype", "bf16",
        "--layout", "nt", "--only", "mma_64x64x32_w2x2_s3,mma_128x128x32_w2x2_s3", *offline, "--out", str(gemm),
        "--export", str(work / "export"))
    out["gemm --out"] = json.loads(gemm.read_text())
    for manifest in sorted((work / "export").glob("*.json")):
        out[f"gemm --export: {manifest.name}"] = json.loads(manifest.read_text())

    # K-major copies (tf32 nn on wgmma): the export's launch.prologue and the maps of the copies.
    copies = work / "copies.json"
    run(binary, env, "gemm", "--m", "512", "--n", "384", "--k", "1024", "--dtype", "tf32", "--layout", "nn",
        "--only", "wgmma_128x128x32_c2_s4_cl1x1_g8m_kc", *offline, "--out", str(copies), "--export",
        str(work / "export-copies"))
    out["gemm k-major copies"] = json.loads(copies.read_text())
    for manifest in sorted((work / "export-copies").glob("*.json")):
        out[f"gemm k-major copies --export: {manifest.name}"] = json.loads(manifest.read_text())

    # A grouped GEMM (issue 36): problem.groups, and the export's group_rows parameter.
    grouped = work / "grouped.json"
    run(binary, env, "gemm", "--groups", "4", "--m-per-group", "100,0,37,300", "--n", "512", "--k", "256",
        "--group-layout", "masked", "--only", "wgmma_128x128x64_c1_s4_cl1x1_g8m_grp", *offline, "--out",
        str(grouped), "--export", str(work / "export-grouped"))
    out["gemm --groups"] = json.loads(grouped.read_text())
    for manifest in sorted((work / "export-grouped").glob("*.json")):
        out[f"gemm --groups --export: {manifest.name}"] = json.loads(manifest.read_text())

    # fp8 of two types (a gradient GEMM's e5m2 x e4m3), as a suite problem and its result.
    mixed = work / "mixed-fp8-suite.json"
    mixed.write_text(json.dumps({"schema": "tiletune.suite/1", "name": "mixed-fp8", "problems": [
        {"name": "gradient", "m": 256, "n": 256, "k": 256, "dtype": "e5m2_e4m3"},
        {"name": "forward of a wider B", "m": 128, "n": 256, "k": 256, "dtype": "e4m3_e5m2"}]}))
    mixed_out = work / "mixed-fp8-out.json"
    run(binary, env, "gemm", "--suite", str(mixed), "--top", "2", *offline, "--out", str(mixed_out))
    out["gemm --suite of mixed fp8"] = json.loads(mixed_out.read_text())
    out["suite input of mixed fp8"] = json.loads(mixed.read_text())

    suite = work / "suite.json"
    suite.write_text(json.dumps({"schema": "tiletune.suite/1", "name": "schema-test", "problems": [
        {"name": "small", "m": 64, "n": 64, "k": 64, "dtype": "bf16"},
        {"name": "odd", "m": 127, "n": 129, "k": 264, "dtype": "bf16", "layout": "nt"}]}))
    suite_out = work / "suite-out.json"
    run(binary, env, "gemm", "--suite", str(suite), "--only", "mma_64x64x32_w2x2_s3", *offline,
        "--out", str(suite_out))
    out["gemm --suite"] = json.loads(suite_out.read_text())
    out["suite input"] = json.loads(suite.read_text())
    model_out = work / "model-out.json"
    run(binary, env, "gemm", "--model", "gpt2", "--tokens", "64", "--phase", "train", "--only", "mma_64x64x32_w2x2_s3",
        *offline, "--out", str(model_out))
    out["gemm --model"] = json.loads(model_out.read_text())
    # --devices on three stand-in GPUs with the stand-in worker (the test binary tiletune_standins), where
    # the "odd" problem crashes every worker: ran_on, devices (two retired) and failed.
    if standins:
        devices_out = work / "suite-devices-out.json"
        run(standins, dict(env, TILETUNE_FAKE_CRASH_M="127"),
            "--standin-gpus", "h100-sxm,h100-sxm,h100-sxm", "--standin-worker", fake_worker,
            "gemm", "--suite", str(suite), "--only", "mma_64x64x32_w2x2_s3", "--devices", "all", "--quiet",
            "--out", str(devices_out), ok_codes=(3,))
        out["gemm --suite --devices (stand-ins)"] = json.loads(devices_out.read_text())
        # batch on a stand-in GPU: its measured plan (the stand-in worker's timings).
        out["batch (measured, stand-ins)"] = json.loads(run(standins, env, "--standin-gpus", "h100-sxm",
                                                            "--standin-worker", fake_worker, "batch", "--model",
                                                            "gpt2", "--json"))

    out["batch (fits)"] = json.loads(run(binary, env, "batch", "--model", "gpt2", "--gpu", "h100-sxm", "--json"))
    out["batch (--framework torchtune, LoRA)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b", "--gpu",
                                                                "h100-sxm", "--lora-rank", "8", "--framework",
                                                                "torchtune", "--json"))
    out["batch (--optimizer-in-backward, lion)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b", "--gpu",
                                                            "h100-sxm", "--precision", "bf16", "--optimizer-in-backward",
                                                            "--optimizer", "lion",
                                                            "--global-batch", "2", "--json"))
    out["batch (--offload optimizer+params)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b", "--gpu",
                                                               "h100-sxm", "--world-size", "8", "--zero", "3",
                                                               "--offload", "optimizer+params", "--json"))
    out["batch (--quantize nf4)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b", "--gpu", "h100-sxm",
                                                   "--lora-rank", "16", "--quantize", "nf4", "--json"))
    out["batch (--tensor-parallel, --sequence-parallel)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b",
                                                                        "--gpu", "h100-sxm", "--world-size", "8",
                                                                        "--tensor-parallel", "4", "--sequence-parallel",
                                                                        "--zero", "1", "--json"))
    out["batch (--pipeline-parallel, --tensor-parallel)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b",
                                                                        "--gpu", "h100-sxm", "--world-size", "8",
                                                                        "--tensor-parallel", "2", "--pipeline-parallel",
                                                                        "2", "--zero", "1", "--global-batch", "16",
                                                                        "--json"))
    out["batch (--packing)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b", "--gpu", "h100-sxm",
                                              "--seq-len", "8192", "--packing", "2048", "--json"))
    # Composer's fp16-mixed LoRA: the base loaded as float16 (the schema had refused it).
    out["batch (--framework composer, LoRA, fp16-mixed)"] = json.loads(run(binary, env, "batch", "--model", "gpt2",
                                                                           "--gpu", "h100-sxm", "--framework",
                                                                           "composer", "--lora-rank", "16", "--json"))
    out["batch (nothing fits)"] = json.loads(run(binary, env, "batch", "--model", "llama-3-8b", "--gpu", "l4",
                                                 "--precision", "fp32", "--json"))
    out["compare"] = json.loads(run(binary, env, "compare", str(gemm), str(gemm), "--json"))
    measured = sorted((profiles / "measured").glob("*/gemm/4096x4096x4096-bf16-nt.json"))
    if len(measured) >= 2:
        out["compare (measured files)"] = json.loads(run(binary, env, "compare", str(measured[0]),
                                                         str(measured[1]), "--json", ok_codes=(0, 1)))
    out["devices --json"] = json.loads(run(binary, env, "devices", "--json"))

    db = work / "tuning.sqlite3"
    # The default database before anything is measured lists empty (a --db that is not there is refused).
    empty = dict(env, XDG_CACHE_HOME=str(work / "empty-cache"))
    out["db list --json (no database)"] = json.loads(run(binary, empty, "db", "list", "--json"))
    imports = sorted((profiles / "measured").glob("h100-2026-11-23/gemm/*bf16-nt.json"))[:4]
    run(binary, env, "db", "import", "--db", str(db), *map(str, imports))
    out["db list --json"] = json.loads(run(binary, env, "db", "list", "--db", str(db), "--json"))
    out["db show --json"] = json.loads(run(binary, env, "db", "show", "--db", str(db), "--problem", "bf16 nt",
                                           "--json"))
    out["db calibrate --json"] = json.loads(run(binary, env, "db", "calibrate", "--db", str(db), "--gpu",
                                                "h100-sxm", "--json"))
    out["db export --format json"] = json.loads(run(binary, env, "db", "export", "--db", str(db), "--format", "json"))
    return out


def wrong_type(value):
    return 7 if value is None or isinstance(value, str) else "wrong"


# Defects every schema must catch: (what, function that plants it; None when it does not apply).
def required_key(doc, validators):
    """A key the document's schema requires at the top (not "schema" itself)."""
    return next(k for k in validators[doc["schema"]].schema.get("required", []) if k != "schema" and k in doc)


def plant_missing_key(doc, validators):
    d = copy.deepcopy(doc)
    key = required_key(doc, validators)
    del d[key]
    return f'"{key}" removed', d


def plant_wrong_type(doc, validators):
    d = copy.deepcopy(doc)
    key = required_key(doc, validators)
    d[key] = wrong_type(d[key])
    return f'"{key}" of the wrong type', d


def plant_specific(label, doc):
    """A defect deep in the document, where the kind of output has one."""
    d = copy.deepcopy(doc)
    name = d.get("schema")
    if name == "tiletune.gemm/1" and d["variants"]:
        d["variants"][0]["status"] = "fine"
        return "a variant status outside the enum", d
    if name == "tiletune.gemm-suite/1":
        d["results"][0]["problem"]["m"] = -4
        return "a negative m", d
    if name == "tiletune.kernel/1":
        d["launch"]["grid"] = [1, 2]
        return "a grid of two dimensions", d
    if name == "tiletune.batch/1":
        d["setup"]["zero_stage"] = 4
        return "ZeRO stage 4", d
    if name == "tiletune.compare/1" and d["rows"]:
        d["rows"][0]["verdict"] = "BETTER"
        return "a verdict outside the enum", d
    if name == "tiletune.devices/1":
        d["presets"][0]["sm_count"] = "132"
        return "sm_count as a string", d
    if name == "tiletune.tuning-db-list/1" and d["records"]:
        d["records"][0]["tflops"] = -1.0
        return "negative TFLOP/s", d
    if name == "tiletune.tuning-db-show/1" and d["records"]:
        d["records"][0]["variants"][0]["status"] = "fine"
        return "a stored variant's status outside the enum", d
    if name == "tiletune.tuning-export/1" and d["configs"]:
        d["configs"][0]["triton"]["num_warps"] = 0
        return "zero Triton warps", d
    if name == "tiletune.calibration/2":
        d["mean"]["calibrated"]["spearman"] = 1.5
        return "a Spearman correlation above 1", d
    if name == "tiletune.suite/1":
        d["problems"][0]["dtype"] = "fp8"
        return "an unknown dtype", d
    return None, None


def jsonschema_version():
    try:
        from importlib.metadata import version

        return version("jsonschema")
    except Exception:  # noqa: BLE001 - only for the report line
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--schemas", required=True)
    ap.add_argument("--profiles", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--standins", help="tiletune_standins, for the outputs of gemm --devices")
    ap.add_argument("--fake-worker", help="the stand-in worker tiletune_standins measures with")
    a = ap.parse_args()
    if bool(a.standins) != bool(a.fake_worker):
        ap.error("--standins and --fake-worker go together")
    work = Path(a.work)
    shutil.rmtree(work / "export", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    profiles = Path(a.profiles)

    checker = Checker(load_schemas(a.schemas))
    outputs = produce(a.binary, a.standins, a.fake_worker, work, profiles)
    for label, doc in outputs.items():
        checker.valid(doc, label)
    shipped = sorted(profiles.rglob("*.json"))
    for path in shipped:
        checker.valid(json.loads(path.read_text()), str(path.relative_to(profiles.parent)))

    planted = 0
    for label, doc in outputs.items():
        for plant in (plant_missing_key, plant_wrong_type):
            what, bad = plant(doc, checker.validators)
            checker.rejected(bad, label, what)
            planted += 1
        what, bad = plant_specific(label, doc)
        if bad is not None:
            checker.rejected(bad, label, what)
            planted += 1
    kinds = sorted({d.get("schema") for d in outputs.values()})
    print(f"{checker.checked} documents checked ({len(outputs)} outputs of the binary, {len(shipped)} files of "
          f"profiles/) against {len(checker.validators)} schemas; {planted} planted defects; kinds: "
          f"{', '.join(kinds)}; jsonschema {jsonschema_version()}")
    if checker.failures:
        print("FAILED:\n" + "\n".join(checker.failures))
        return 1
    print("all valid, every planted defect rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
