// Tick labels for a chart's value axis: each tick written with the fewest significant digits
// that still tell every tick apart, so that ticks 0.0015 apart never read "0.002, 0.002, 0.001".
// Pure, so that node can test it without a page (tests/ui_web).

// The labels of `values` (a chart's tick positions, ascending).
export function tickLabels(values) {
  for (let digits = 1; digits <= 15; digits += 1) {
    const labels = values.map((value) => String(Number(value.toPrecision(digits))));
    if (new Set(labels).size === labels.length) return labels;
  }
  return values.map(String);
}
