"""CPU-seconds of the processes in a proclog file (see sitecustomize.py here), by test file or notebook, then by test.

    python tools/proclog/summary.py /tmp/proclog.jsonl [--top 30]
"""
import argparse, collections, json

def totals(recs, key) -> list:
    out = collections.defaultdict(lambda: [0, 0.])
    for r in recs: out[key(r)][0] += 1; out[key(r)][1] += r['cpu_s']
    return sorted(out.items(), key=lambda kv: -kv[1][1])

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('log'); p.add_argument('--top', type=int, default=30)
    a = p.parse_args()
    recs = [json.loads(l) for l in open(a.log) if l.strip()]
    print(f"{len(recs)} processes logged, {sum(r['cpu_s'] for r in recs):.0f} CPU-s")
    origin = lambda r: r['origin'] or '(the suite itself) ' + r['argv'][:50]
    for title, key in (('by test file or notebook', lambda r: origin(r).split('::')[0]), ('by test', origin)):
        print(f"\n{'CPU-s':>8} {'procs':>5}  {title}")
        for name, (n, cpu) in totals(recs, key)[:a.top]: print(f"{cpu:8.1f} {n:5d}  {name[:110]}")

if __name__ == '__main__': main()
