// The Jobs page: every job with its state, age, replica counts and restarts, a loss sparkline,
// filtered by state, refreshed every two seconds.
import { getJson, listJobs, paths } from './api.js';
import { sparkline } from './charts.js';
import { age, h, jobState, replaceChildren, replicaCounts, stateBadge } from './util.js';

const states = ['All', 'Created', 'Running', 'Restarting', 'Suspended', 'Succeeded', 'Failed'];
const lossTags = 'batch_loss,epoch_loss,loss';

export function jobsPage(root, setStatus) {
  let filter = sessionStorage.getItem('cohort-state-filter') ?? 'All';
  const select = h('select', {
    id: 'state-filter',
    onchange: () => {
      filter = select.value;
      sessionStorage.setItem('cohort-state-filter', filter);
      render();
    },
  }, states.map((s) => h('option', { value: s, selected: s === filter }, s)));
  const body = h('tbody');
  const table = h('table', { id: 'jobs', class: 'grid' },
    h('thead', {}, h('tr', {},
      ['Name', 'Namespace', 'Kind', 'State', 'Age', 'Active', 'Succeeded', 'Failed', 'Restarts',
        'Loss'].map((c) => h('th', {}, c)))),
    body);
  replaceChildren(root, h('section', {},
    h('div', { class: 'toolbar' }, h('h1', {}, 'Jobs'), h('label', {}, 'State ', select)),
    table));

  let jobs = [];
  let restarts = new Map();
  const sparks = new Map();  // "ns/name" -> {values, fetched}

  function render() {
    const now = Date.now();
    const rows = jobs.filter((job) => filter === 'All' || jobState(job) === filter).map((job) => {
      const ns = job.metadata.namespace;
      const name = job.metadata.name;
      const key = `${ns}/${name}`;
      const counts = replicaCounts(job);
      const restartCount = restarts.get(key) ?? 0;
      const spark = sparks.get(key);
      return h('tr', { 'data-job': key },
        h('td', {}, h('a', { href: `#/jobs/${ns}/${name}` }, name)),
        h('td', {}, ns),
        h('td', {}, job.kind),
        h('td', {}, stateBadge(jobState(job))),
        h('td', {}, age(job.metadata.creationTimestamp, now)),
        h('td', { class: 'number' }, counts.active),
        h('td', { class: 'number' }, counts.succeeded),
        h('td', { class: 'number' }, counts.failed),
        h('td', { class: 'number restarts' },
          restartCount > 0 ? h('span', { class: 'badge restart-badge' }, restartCount) : '0'),
        h('td', {}, spark ? sparkline(spark.values) : ''));
    });
    replaceChildren(body, rows.length ? rows : h('tr', {}, h('td', { colspan: 10, class: 'empty' },
      jobs.length ? `No ${filter} jobs.` : 'No jobs yet: cohort submit FILE')));
  }

  async function refreshSparklines() {
    const now = Date.now();
    for (const job of jobs.slice(0, 50)) {
      const key = `${job.metadata.namespace}/${job.metadata.name}`;
      const state = jobState(job);
      const previous = sparks.get(key);
      const live = state === 'Running' || state === 'Restarting' || state === 'Created';
      if (previous && (!live || now - previous.fetched < 10000)) continue;
      try {
        const list = await getJson(paths.scalars(job.metadata.namespace, job.metadata.name,
          { tag: lossTags, max_points: 60 }));
        const series = pickLossSeries(list.items ?? []);
        sparks.set(key, { values: series ? series.points.map((p) => p[2]) : [], fetched: now });
      } catch (_) {
        sparks.set(key, { values: [], fetched: now });
      }
    }
  }

  async function refresh() {
    const [jobList, podList] = await Promise.all([listJobs(),
      getJson(paths.pods({ includeRemoved: 'true' }))]);
    jobs = jobList.items ?? [];
    // Every replica's restarts, those cleanPodPolicy removed too, as `cohort get` counts them.
    restarts = new Map();
    for (const pod of podList.items ?? []) {
      const key = `${pod.metadata.namespace}/${pod.metadata.labels['training.kubeflow.org/job-name']}`;
      const count = pod.status?.containerStatuses?.[0]?.restartCount ?? 0;
      restarts.set(key, (restarts.get(key) ?? 0) + count);
    }
    render();
    await refreshSparklines();
    render();
  }
  return { refresh, interval: 2000 };
}

// The loss series a sparkline shows: the chief's or first worker's training loss.
export function pickLossSeries(items) {
  const tags = lossTags.split(',');
  for (const tag of tags) {
    const candidates = items.filter((s) => s.tag === tag && s.points.length > 0 &&
      (!s.run || s.run === 'train'));
    if (candidates.length) return candidates[0];
  }
  return null;
}
