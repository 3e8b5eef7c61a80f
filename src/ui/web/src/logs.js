// The Logs page: one replica's log, followed live (server-sent events), restart lines marked,
// searchable, downloadable; "previous run" shows the run before the last restart.
import { getJson, getText, locateJob, paths } from './api.js';
import { h, replaceChildren } from './util.js';

const restartPrefix = '===== cohort: restart ';
const maxLines = 5000;

export function logsPage(root, ns, name, replica, setStatus) {
  const tabs = h('nav', { class: 'tabs' });
  const search = h('input', { id: 'log-search', type: 'search', placeholder: 'Search',
    oninput: () => applySearch() });
  const previousButton = h('button', { id: 'previous', onclick: () => showPrevious() },
    'Previous run');
  const liveButton = h('button', { id: 'live', onclick: () => follow() }, 'Live');
  const download = h('a', { id: 'download', class: 'button' }, 'Download');
  const mode = h('span', { class: 'muted' });
  const output = h('pre', { id: 'log', class: 'log' });
  replaceChildren(root, h('section', {},
    h('div', { class: 'toolbar' },
      h('h1', {}, h('a', { href: `#/jobs/${ns}/${name}` }, name), ' logs'),
      search, liveButton, previousButton, download, mode),
    tabs, output));

  let source = null;
  let current = replica;

  function lineElement(text) {
    const restart = text.startsWith(restartPrefix);
    return h('div', { class: restart ? 'line restart-marker' : 'line' }, text);
  }

  function append(lines) {
    const fragment = document.createDocumentFragment();
    for (const line of lines) fragment.append(lineElement(line));
    const atBottom = output.scrollTop + output.clientHeight >= output.scrollHeight - 20;
    output.append(fragment);
    while (output.childElementCount > maxLines) output.firstElementChild.remove();
    applySearch();
    if (atBottom) output.scrollTop = output.scrollHeight;
  }

  function applySearch() {
    const term = search.value.toLowerCase();
    for (const line of output.children) {
      const match = !term || line.textContent.toLowerCase().includes(term);
      line.classList.toggle('hidden', !match);
      line.classList.toggle('match', Boolean(term) && match);
    }
  }

  function close() {
    if (source) source.close();
    source = null;
  }

  function follow() {
    close();
    if (!current) return;
    output.replaceChildren();
    mode.textContent = 'live';
    const pod = `${name}-${current}`;
    source = new EventSource(paths.log(ns, pod, { follow: true, allRuns: true, tailLines: 1000 }));
    source.onmessage = (event) => append(event.data.split('\n'));
    // The server's last event for a log that will not grow: stop, rather than reconnect.
    source.addEventListener('end', () => {
      close();
      mode.textContent = 'ended';
    });
    source.onerror = () => {
      mode.textContent = source && source.readyState === EventSource.CLOSED
        ? 'ended' : 'reconnecting';
    };
  }

  async function showPrevious() {
    close();
    const pod = `${name}-${current}`;
    try {
      const text = await getText(paths.log(ns, pod, { previous: true }));
      output.replaceChildren();
      mode.textContent = 'previous run';
      append(text.split('\n'));
    } catch (error) {
      setStatus(error.message, true);
    }
  }

  async function refresh() {
    await locateJob(ns, name);
    const replicas = await getJson(paths.replicas(ns, name));
    const names = (replicas.items ?? []).map((r) => r.name);
    if (!current && names.length) {
      current = names[0];
      follow();
    }
    replaceChildren(tabs, (replicas.items ?? []).map((r) =>
      h('a', { href: `#/jobs/${ns}/${name}/logs/${r.name}`,
        class: r.name === current ? 'tab active' : 'tab' },
        r.name, r.restarts > 0 ? h('span', { class: 'badge restart-badge' }, r.restarts) : '')));
    if (current) {
      download.setAttribute('href', paths.log(ns, `${name}-${current}`, { allRuns: true }));
      download.setAttribute('download', `${name}-${current}.log`);
    }
  }
  if (current) follow();
  return { refresh, interval: 3000, leave: close };
}
