#!/usr/bin/env bash
# Draws loss / lr / grad-norm / throughput curves of metrics.jsonl files into
# a PNG (scripts/plot_metrics.py), with matplotlib from PyPI installed once
# into scripts/.venv-plot.
#   bash scripts/plot-metrics.sh RUN/metrics.jsonl [MORE.jsonl ...] --out curves.png
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-plot"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet matplotlib
fi
exec "$venv/bin/python" "$here/plot_metrics.py" "$@"
