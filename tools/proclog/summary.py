"""CPU-seconds of the processes in a proclog file (see sitecustomize.py here), by test file or notebook, then by test; then
when each file's or notebook's processes ran (seconds from the first start), which shows the tail of the suite.

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
    timed = [r for r in recs if 'end' in r and r['origin']]  # logs written before `end` was recorded have no times
    if not timed: return
    t0, spans = min(r['end'] - r['wall_s'] for r in timed), collections.defaultdict(list)
    for r in timed: spans[r['origin'].split('::')[0]].append((r['end'] - r['wall_s'] - t0, r['end'] - t0))
    print(f"\n{'from':>6} {'to':>6}  when the processes of each file or notebook ran (s)")
    for name, s in sorted(spans.items(), key=lambda kv: min(a for a, _ in kv[1])):
        print(f"{min(a for a, _ in s):6.0f} {max(b for _, b in s):6.0f}  {name[:110]}")

if __name__ == '__main__': main()
