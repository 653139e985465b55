#!/usr/bin/env python3
"""Where the minutes of `make test` go: each test's seconds (setup, call and
teardown) and the CPU seconds it and its guests used, written by conftest.py
at the end of a run to out/<arch>/test-times.tsv, and read back here for the table `make test` ends with (`make test-times`
prints it again). The modules' totals also order the next run, slowest
first; tests/durations holds them for a tree that has not run yet
(`tests/timetable.py --save` refreshes it from the last run).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.environ.get("OUT", os.path.join(os.path.dirname(HERE), "out", os.environ.get("EXTRESCUE_ARCH", "x86_64")))
TIMES = os.path.join(OUT, "test-times.tsv")
# The run before this one, which orders this one (make test moves it aside
# first, as this run's serial part rewrites TIMES).
LAST = os.path.join(OUT, "test-times-last.tsv")
COMMITTED = os.path.join(HERE, "durations")


def module_of(nodeid):
    return os.path.basename(nodeid.split("::")[0])[:-len(".py")]


def record(times, append=False, wall=None):
    """Writes TIMES ({nodeid: (seconds, outcome, CPU seconds or None)}) and the run's wall time."""
    os.makedirs(OUT, exist_ok=True)
    with open(TIMES, "a" if append else "w") as f:
        if wall is not None:
            f.write(f"#wall\t{wall:.1f}\n")
        for nodeid, (seconds, outcome, cpu) in sorted(times.items()):
            f.write(f"{seconds:.2f}\t{outcome}\t{nodeid}\t{'-' if cpu is None else f'{cpu:.2f}'}\n")


def read(path=TIMES):
    """[(seconds, outcome, nodeid, CPU seconds or None)] and the walls of the run at PATH."""
    rows, walls = [], []
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "#wall":
                walls.append(float(fields[1]))
            elif len(fields) in (3, 4):          # a table from before the CPU column has three
                cpu = fields[3] if len(fields) == 4 else "-"
                rows.append((float(fields[0]), fields[1], fields[2], None if cpu == "-" else float(cpu)))
    return rows, walls


def module_seconds(rows, field=0):
    """{module: sum of FIELD (0 seconds, 3 CPU seconds) over its ROWS}."""
    totals = {}
    for row in rows:
        totals[module_of(row[2])] = totals.get(module_of(row[2]), 0.0) + row[field]
    return totals


def expected_module_seconds():
    """Each module's seconds in the last run here, else as committed."""
    totals = {}
    if os.path.exists(COMMITTED):
        with open(COMMITTED) as f:
            for line in f:
                fields = line.split()
                if len(fields) == 2 and not line.startswith("#"):
                    totals[fields[0]] = float(fields[1])
    for path in (LAST, TIMES):
        if os.path.exists(path):
            totals.update(module_seconds(read(path)[0]))
            break
    return totals


def expected_test_seconds():
    """Each test's seconds in the last run here ({nodeid: seconds}; xdist's
    "@group" suffix dropped), empty before a first run."""
    for path in (LAST, TIMES):
        if os.path.exists(path):
            return {nodeid.split("@")[0]: seconds for seconds, _, nodeid, _ in read(path)[0]}
    return {}


def minutes(seconds):
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s"


def cpu_text(seconds, cpu):
    return "" if cpu is None else f"  ({cpu:.0f} s CPU, {100 * cpu / max(seconds, 0.01):.0f}%)"


def table(rows, walls, slowest=10):
    counts = {}
    for _, outcome, _, _ in rows:
        counts[outcome] = counts.get(outcome, 0) + 1
    lines = ["test times: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
             + f"; {minutes(sum(r[0] for r in rows))} of tests"
             + (f" in {minutes(sum(walls))} of wall time" if walls else "")]
    measured = [r for r in rows if r[3] is not None]
    if measured:
        cpu, wall = sum(r[3] for r in measured), sum(r[0] for r in measured)
        lines.append(f"CPU: {minutes(cpu)} in {minutes(wall)} of tests that say "
                     f"({100 * cpu / max(wall, 0.01):.0f}%; the rest is waiting)")
    lines.append(f"the {slowest} slowest tests:")
    for seconds, outcome, nodeid, cpu in sorted(rows, reverse=True)[:slowest]:
        lines.append(f"  {seconds:8.1f} s  {nodeid}{'' if outcome == 'passed' else '  (' + outcome + ')'}"
                     + cpu_text(seconds, cpu))
    lines.append("per module:")
    cpus = module_seconds(measured, field=3)
    for m, seconds in sorted(module_seconds(rows).items(), key=lambda kv: -kv[1]):
        lines.append(f"  {seconds:8.1f} s  {m}" + cpu_text(seconds, cpus.get(m)))
    return "\n".join(lines)


def main(argv):
    if not os.path.exists(TIMES):
        print(f"timetable: no {TIMES}; run make test first", file=sys.stderr)
        return 1
    rows, walls = read()
    if argv[1:] == ["--save"]:
        with open(COMMITTED, "w") as f:
            f.write(f"# seconds per test module, make test on {time.strftime('%Y-%m-%d')}; "
                    "orders the modules of a first run (tests/timetable.py --save)\n")
            for m, seconds in sorted(module_seconds(rows).items()):
                f.write(f"{m} {seconds:.0f}\n")
        return 0
    print(table(rows, walls, slowest=int(argv[1]) if len(argv) > 1 else 10))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
