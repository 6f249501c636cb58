"""One small replay for the policy tests of this folder: a CSV trace and a
cluster written to a scratch folder, muster-sim run on them under the
invariant checker (--check), and the placements read back."""
import json, os, subprocess, tempfile


def replay(sim, rows, cluster, args=('--policy', 'muster')):
    """rows: the CSV's lines (header first); cluster: the --cluster JSON
    object; args: muster-sim's policy arguments. Returns the placements
    (dicts with start and end, among others), in the order written."""
    with tempfile.TemporaryDirectory() as d:
        trace, cl, pl = (os.path.join(d, n) for n in ('t.csv', 'c.json', 'p.jsonl'))
        with open(trace, 'w') as f:
            f.write('\n'.join(rows) + '\n')
        with open(cl, 'w') as f:
            json.dump(cluster, f)
        subprocess.run([sim, '--csv', trace, '--cluster', cl, '--check', '--quiet',
                        '--placements-out', pl] + list(args), check=True)
        with open(pl) as f:
            return [json.loads(line) for line in f]


def starts_by_duration(placements):
    """{duration: start} (the tests give their jobs distinct durations)."""
    return {r['end'] - r['start']: r['start'] for r in placements}


def start_runs(placements):
    """Sorted (start, duration) pairs."""
    return sorted((r['start'], r['end'] - r['start']) for r in placements)
