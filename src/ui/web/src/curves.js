// The Curves page: every training figure the job's replicas write to TensorBoard event files
// (loss, accuracy, validation figures, AUC, samples/s, step time...) against the global step, one
// chart per figure, a line per replica and run, updated while the job trains.
import { getJson, locateJob, paths } from './api.js';
import { SeriesChart, seriesLabel } from './charts.js';
import { h, replaceChildren } from './util.js';

export function curvesPage(root, ns, name, setStatus) {
  const grid = h('div', { id: 'curves', class: 'charts' });
  const note = h('p', { class: 'note' });
  replaceChildren(root, h('section', {},
    h('div', { class: 'toolbar' },
      h('h1', {}, h('a', { href: `#/jobs/${ns}/${name}` }, name), ' curves')),
    note, grid));
  const charts = new Map();  // tag -> {chart, box}

  async function refresh() {
    await locateJob(ns, name);
    const list = await getJson(paths.scalars(ns, name, { max_points: 1500 }));
    const byTag = new Map();
    for (const s of list.items ?? []) {
      if (!byTag.has(s.tag)) byTag.set(s.tag, []);
      byTag.get(s.tag).push({ label: seriesLabel(s), points: s.points });
    }
    note.textContent = byTag.size ? '' : 'No training figures yet: they appear once the ' +
      'replicas write TensorBoard event files.';
    for (const tag of [...byTag.keys()].sort()) {
      const series = byTag.get(tag);
      let entry = charts.get(tag);
      if (entry && entry.chart.sameLabels(series)) {
        entry.chart.update(series);
        continue;
      }
      if (entry) entry.chart.destroy();
      const box = entry?.box ?? h('div', { class: 'chart', 'data-tag': tag });
      if (!entry) grid.append(box);
      charts.set(tag, { chart: new SeriesChart(box, tag, series), box });
    }
  }
  return {
    refresh,
    interval: 3000,
    leave: () => { for (const { chart } of charts.values()) chart.destroy(); },
  };
}
