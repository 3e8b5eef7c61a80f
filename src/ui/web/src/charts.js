// Charts: uPlot line charts of scalar series against the global step, and SVG sparklines.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { tickLabels } from './ticks.mjs';
import { h } from './util.js';

const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

// Joins series of [step, wall_time, value] points on their steps, as uPlot wants: one x array and
// one y array per series (null where a series has no point at that step).
export function alignSeries(seriesList) {
  const steps = new Set();
  for (const series of seriesList) for (const point of series.points) steps.add(point[0]);
  const xs = [...steps].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = seriesList.map((series) => {
    const y = new Array(xs.length).fill(null);
    for (const point of series.points) y[index.get(point[0])] = point[2];
    return y;
  });
  return [xs, ...ys];
}

// A chart of `seriesList` (each {label, points}) titled `title`, in `container`; call update()
// with new series of the same labels to redraw.
export class SeriesChart {
  constructor(container, title, seriesList, { width = 560, height = 240 } = {}) {
    this.container = container;
    this.labels = seriesList.map((s) => s.label);
    const options = {
      title,
      width,
      height,
      scales: { x: { time: false } },
      axes: [{ label: 'step' }, { values: (plot, splits) => tickLabels(splits) }],
      series: [{ label: 'step' }, ...this.labels.map((label, i) => ({
        label,
        stroke: palette[i % palette.length],
        width: 1.5,
        spanGaps: true,
      }))],
    };
    this.plot = new uPlot(options, alignSeries(seriesList), container);
    this.setPointCount(seriesList);
  }

  sameLabels(seriesList) {
    return seriesList.length === this.labels.length &&
      seriesList.every((s, i) => s.label === this.labels[i]);
  }

  update(seriesList) {
    this.plot.setData(alignSeries(seriesList));
    this.setPointCount(seriesList);
  }

  setPointCount(seriesList) {
    const count = seriesList.reduce((total, s) => total + s.points.length, 0);
    this.container.dataset.points = String(count);
  }

  destroy() {
    this.plot.destroy();
  }
}

// A small SVG line of `values` (the newest last).
export function sparkline(values, { width = 100, height = 22 } = {}) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('width', width);
  svg.setAttribute('height', height);
  svg.setAttribute('class', 'sparkline');
  if (values.length < 2) return svg;
  const min = Math.min(...values);
  const max = Math.max(...values);
  const span = max - min || 1;
  const points = values.map((v, i) => {
    const x = (i / (values.length - 1)) * (width - 2) + 1;
    const y = height - 1 - ((v - min) / span) * (height - 2);
    return `${x.toFixed(1)},${y.toFixed(1)}`;
  });
  const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
  line.setAttribute('points', points.join(' '));
  svg.append(line);
  svg.append(h('title', {}, `loss ${values[values.length - 1].toPrecision(4)}`));
  return svg;
}

export function seriesLabel(series) {
  return series.run && series.run !== 'train' ? `${series.replica} ${series.run}` : series.replica;
}
