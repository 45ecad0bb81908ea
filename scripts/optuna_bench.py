#!/usr/bin/python3
"""Run Optuna's samplers over the truth that cmd/searchbench wrote, for comparison.

    go run ./cmd/searchbench -oracle /tmp/oracles
    /usr/bin/python3 scripts/optuna_bench.py /tmp/oracles/*.json

Each JSON file (one per space and truth) lists every configuration the plan's rules allow,
with its objectives and feasibility under the truth. For every file this runs Optuna's TPESampler (multivariate,
two directions, constraints_func) and NSGAIISampler (constraints_func) over the same seeds
and budgets as searchbench and prints the hypervolume ratios in the same format.

Treatment, to match frontier's: a configuration the rules do not allow, or one the engine
cannot start (frontier's memory pre-screen rejects it before any GPU time), is told to Optuna
as an infeasible trial (constraint 1, the worst objectives) but does not count against the
budget; at most 20 times the budget are asked in all. A configuration Optuna proposes again
counts as a trial (Optuna would measure it again). Range knobs are suggested as ranges
(suggest_int or suggest_float, with their step and log scale) and snapped to the nearest
value of the knob; list knobs with suggest_categorical.

Needs Optuna 3.1 (apt-get install -y python3-optuna); not needed by the tests.
"""

import json
import math
import statistics
import sys
import time
import warnings

import optuna

warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def hv2(points, ref):
    """Hypervolume of 2-D points in minimisation form."""
    pts = sorted(p for p in points if p[0] < ref[0] and p[1] < ref[1])
    vol, last_y = 0.0, ref[1]
    for x, y in pts:
        if y < last_y:
            vol += (ref[0] - x) * (last_y - y)
            last_y = y
    return vol


def hv(points, ref):
    """Hypervolume of points in minimisation form (exact, by slicing the last coordinate)."""
    d = len(ref)
    pts = [p for p in points if all(p[j] < ref[j] for j in range(d))]
    if not pts:
        return 0.0
    if d == 1:
        return ref[0] - min(p[0] for p in pts)
    if d == 2:
        return hv2(pts, ref)
    pts.sort(key=lambda p: p[-1])
    vol = 0.0
    for i, p in enumerate(pts):
        nxt = pts[i + 1][-1] if i + 1 < len(pts) else ref[-1]
        depth = nxt - p[-1]
        if depth > 0:
            vol += depth * hv([q[:-1] for q in pts[: i + 1]], ref[:-1])
    return vol


class Oracle:
    def __init__(self, path):
        with open(path) as f:
            self.data = json.load(f)
        d = self.data
        self.maximize = [o["maximize"] for o in d["objectives"]]
        self.by_index = {tuple(c["index"]): c for c in d["configs"]}
        worst = []
        for j, mx in enumerate(self.maximize):
            vals = [c["objectives"][j] for c in d["configs"] if c.get("objectives")]
            worst.append(min(vals) if mx else max(vals))
        self.worst = worst

    def orient(self, values):
        return [-v if m else v for v, m in zip(values, self.maximize)]

    def ratio(self, found):
        d = self.data
        ref = [1.1] * len(d["ideal"])
        norm = []
        for p in found:
            q = self.orient(p)
            norm.append([(q[j] - d["ideal"][j]) / max(d["nadir"][j] - d["ideal"][j], 1e-12) for j in range(len(q))])
        return hv(norm, ref) / d["true_hv"]

    def suggest(self, trial):
        idx = []
        for k in self.data["knobs"]:
            vals = k["values"]
            if k["kind"] == "list":
                v = trial.suggest_categorical(k["name"], vals)
                idx.append(vals.index(v))
                continue
            step = k.get("step") or None
            log = bool(k.get("log"))
            if k["kind"] == "int":
                v = trial.suggest_int(k["name"], int(k["min"]), int(k["max"]),
                                      step=1 if log or not step else int(step), log=log)
            else:
                v = trial.suggest_float(k["name"], k["min"], k["max"], step=None if log else step, log=log)
            idx.append(min(range(len(vals)), key=lambda i: abs(vals[i] - v)))
        return tuple(idx)


def constraints(trial):
    return [trial.user_attrs["violation"]]


def run(oracle, make_sampler, seed, budget):
    """Returns the hypervolume ratio after each counted trial."""
    n_obj = len(oracle.maximize)
    study = optuna.create_study(directions=["maximize" if m else "minimize" for m in oracle.maximize],
                                sampler=make_sampler(seed))
    counted, asked, curve, found = 0, 0, [], []
    while counted < budget and asked < 20 * budget:
        asked += 1
        trial = study.ask()
        idx = oracle.suggest(trial)
        c = oracle.by_index.get(idx)
        if c is None or not c["started"]:
            trial.set_user_attr("violation", 1.0)
            study.tell(trial, oracle.worst[:n_obj])
            continue
        counted += 1
        viol = 0.0 if c["feasible"] else max(c["violation"], 1e-3)
        trial.set_user_attr("violation", viol)
        values = c.get("objectives") or oracle.worst
        study.tell(trial, values)
        if c["feasible"]:
            found.append(values)
        curve.append(oracle.ratio(found))
    while len(curve) < budget:
        curve.append(curve[-1] if curve else 0.0)
    return curve


def main(paths):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    samplers = [
        ("optuna tpe (multivariate)", lambda s: optuna.samplers.TPESampler(
            seed=s, multivariate=True, constraints_func=constraints)),
        ("optuna nsga-ii", lambda s: optuna.samplers.NSGAIISampler(seed=s, constraints_func=constraints)),
    ]
    print(f"optuna_bench: optuna {optuna.__version__}")
    for path in paths:
        oracle = Oracle(path)
        d = oracle.data
        budgets = sorted(d["budgets"])
        print(f"\n{d['space']}: {len(d['configs'])} configurations the rules allow, "
              f"{sum(1 for c in d['configs'] if c['feasible'])} feasible under the truth")
        head = "".join(f" {str(b) + ' med':>7} {str(b) + ' min':>7}" for b in budgets)
        print(f"{'sampler':<36}{head} {'to 95%':>9}")
        for name, make in samplers:
            t0 = time.time()
            ratios = {b: [] for b in budgets}
            reach = []
            for seed in range(1, d["seeds"] + 1):
                curve = run(oracle, make, seed, budgets[-1])
                for b in budgets:
                    ratios[b].append(curve[b - 1])
                r = next((i + 1 for i, x in enumerate(curve) if x >= 0.95), budgets[-1] + 1)
                reach.append(r)
            row = "".join(f" {statistics.median(ratios[b]):7.3f} {min(ratios[b]):7.3f}" for b in budgets)
            m = statistics.median_low(reach) if len(reach) % 2 else math.ceil(statistics.median(reach))
            reach_text = f">{budgets[-1]}" if m > budgets[-1] else str(m)
            print(f"{name:<36}{row} {reach_text:>9}   ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: optuna_bench.py ORACLE.json...")
    main(sys.argv[1:])
