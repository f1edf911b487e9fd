#!/usr/bin/env bash
# render-recording.sh DIR — on the host, render a record-dual.sh recording with the peers:
# trace-cmd report, perf script and `perf kvm stat report --event=vmexit`, next to the binary files.
set -euo pipefail
DIR=$1
[ -s "$DIR/trace.dat" ] || { echo "render-recording: error: no $DIR/trace.dat" >&2; exit 1; }
[ -s "$DIR/perf.data" ] || { echo "render-recording: error: no $DIR/perf.data" >&2; exit 1; }
trace-cmd report -i "$DIR/trace.dat" > "$DIR/trace-cmd-report.txt" 2> "$DIR/trace-cmd-report.err"
perf script -i "$DIR/perf.data" > "$DIR/perf-script.txt" 2> "$DIR/perf-script.err"
# perf kvm stat prints its table on stderr.
perf kvm -i "$DIR/perf.data" stat report --event=vmexit > "$DIR/perf-kvm-stat-report.txt" 2>&1
