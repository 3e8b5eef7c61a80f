// The Job page: state and actions (suspend, resume, delete, confirmed), the replica table,
// conditions as a timeline, the training loss, events and the spec as YAML; refreshed every two
// seconds.
import { getJson, getText, locateJob, paths, post } from './api.js';
import { SeriesChart, seriesLabel } from './charts.js';
import { age, h, jobState, replaceChildren, stateBadge } from './util.js';

const lossTags = 'batch_loss,epoch_loss,loss';

export function jobPage(root, ns, name, setStatus) {
  const title = h('h1', {}, name);
  const state = h('span');
  const message = h('p', { class: 'message' });
  const actions = h('div', { class: 'actions' },
    h('button', { id: 'suspend', onclick: () => act('suspend') }, 'Suspend'),
    h('button', { id: 'resume', onclick: () => act('resume') }, 'Resume'),
    h('button', { id: 'delete', class: 'danger', onclick: () => act('delete') }, 'Delete'));
  const replicaBody = h('tbody');
  const conditions = h('ol', { id: 'conditions', class: 'timeline' });
  const eventBody = h('tbody');
  const spec = h('pre', { id: 'spec', class: 'yaml' });
  const lossBox = h('div', { id: 'loss-chart', class: 'chart', 'data-points': '0' });
  const lossNote = h('p', { class: 'note' });
  replaceChildren(root, h('section', {},
    h('div', { class: 'toolbar' }, title, state, actions),
    h('p', { class: 'links' },
      h('a', { href: `#/jobs/${ns}/${name}/logs` }, 'Logs'), ' · ',
      h('a', { href: `#/jobs/${ns}/${name}/curves` }, 'Curves'), ' · ',
      h('span', { class: 'muted' }, `namespace ${ns}`)),
    message,
    h('h2', {}, 'Replicas'),
    h('table', { id: 'replicas', class: 'grid' },
      h('thead', {}, h('tr', {}, ['Replica', 'Phase', 'Restarts', 'Exit code', 'Reason', 'PID',
        'Port', 'Started', 'Log'].map((c) => h('th', {}, c)))),
      replicaBody),
    h('h2', {}, 'Conditions'), conditions,
    h('h2', {}, 'Training loss'), lossBox, lossNote,
    h('h2', {}, 'Events'),
    h('table', { id: 'events', class: 'grid' },
      h('thead', {}, h('tr', {}, ['Type', 'Reason', 'Age', 'Message'].map((c) => h('th', {}, c)))),
      eventBody),
    h('details', {}, h('summary', {}, 'Spec (YAML)'), spec)));

  let chart = null;
  let specLoaded = false;

  async function act(action) {
    const question = action === 'delete'
      ? `Delete job ${ns}/${name}? Its replicas are stopped and its state, logs included, removed.`
      : `${action[0].toUpperCase()}${action.slice(1)} job ${ns}/${name}?`;
    if (!window.confirm(question)) return;
    try {
      await post(`${paths.job(ns, name)}/${action}`);
      setStatus(`${action} ${ns}/${name}: done`);
      if (action === 'delete') window.location.hash = '#/';
      else await refresh();
    } catch (error) {
      setStatus(`${action} failed: ${error.message}`, true);
    }
  }

  function renderReplicas(items) {
    replaceChildren(replicaBody, items.map((r) => h('tr', { 'data-replica': r.name },
      h('td', {}, r.name),
      h('td', {}, h('span', { class: `phase phase-${(r.phase || 'pending').toLowerCase()}` },
        r.phase || 'Pending')),
      h('td', { class: 'number restarts' },
        r.restarts > 0 ? h('span', { class: 'badge restart-badge' }, r.restarts) : '0'),
      h('td', { class: 'number' }, r.exitCode ?? ''),
      h('td', {}, r.reason ?? ''),
      h('td', { class: 'number' }, r.pid || ''),
      h('td', { class: 'number' }, r.port || ''),
      h('td', {}, r.startedAt ? `${age(r.startedAt)} ago` : ''),
      h('td', {}, h('a', { href: `#/jobs/${ns}/${name}/logs/${r.name}` }, 'log')))));
  }

  function renderConditions(job) {
    replaceChildren(conditions, (job.status?.conditions ?? []).map((c) =>
      h('li', { class: `condition ${c.status === 'True' ? 'holds' : 'past'}` },
        stateBadge(c.type),
        h('span', { class: 'when' }, c.lastTransitionTime ?? ''),
        h('span', { class: 'reason' }, c.reason ?? ''),
        h('span', { class: 'text' }, c.message ?? ''))));
  }

  function renderEvents(items) {
    const rows = items.slice(-200).reverse().map((e) =>
      h('tr', { class: e.type === 'Warning' ? 'warning' : '' },
        h('td', {}, e.type), h('td', {}, e.reason), h('td', {}, age(e.lastTimestamp)),
        h('td', {}, e.message)));
    replaceChildren(eventBody, rows);
  }

  async function refreshLoss() {
    const list = await getJson(paths.scalars(ns, name, { tag: lossTags, max_points: 1000 }));
    const byTag = new Map();
    for (const s of list.items ?? []) {
      if (s.run && s.run !== 'train') continue;
      if (!byTag.has(s.tag)) byTag.set(s.tag, []);
      byTag.get(s.tag).push(s);
    }
    const tag = lossTags.split(',').find((t) => byTag.has(t));
    if (!tag) {
      lossNote.textContent = 'No training figures yet.';
      return;
    }
    lossNote.textContent = `${tag} by replica`;
    const series = byTag.get(tag).map((s) => ({ label: seriesLabel(s), points: s.points }));
    if (chart && chart.sameLabels(series)) {
      chart.update(series);
    } else {
      if (chart) chart.destroy();
      chart = new SeriesChart(lossBox, tag, series);
    }
  }

  async function refresh() {
    await locateJob(ns, name);
    const [job, replicas, events] = await Promise.all([
      getJson(paths.job(ns, name)), getJson(paths.replicas(ns, name)),
      getJson(`${paths.events(ns, name)}&limit=200`)]);
    const current = jobState(job);
    replaceChildren(state, stateBadge(current));
    const last = (job.status?.conditions ?? []).slice(-1)[0];
    message.textContent = last?.message ?? '';
    const suspended = job.spec?.runPolicy?.suspend === true;
    const finished = current === 'Succeeded' || current === 'Failed';
    actions.querySelector('#suspend').disabled = suspended || finished;
    actions.querySelector('#resume').disabled = !suspended;
    renderReplicas(replicas.items ?? []);
    renderConditions(job);
    renderEvents(events.items ?? []);
    if (!specLoaded) {
      spec.textContent = await getText(paths.job(ns, name), 'application/yaml');
      specLoaded = true;
    }
    try {
      await refreshLoss();
    } catch (error) {
      lossNote.textContent = `Training figures unavailable: ${error.message}`;
    }
  }
  return { refresh, interval: 2000, leave: () => chart?.destroy() };
}
