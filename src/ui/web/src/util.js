// Small helpers the pages share: elements, ages, job states and their colours.

// h('td', {class: 'x'}, 'text', child...) -> an element.
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function age(timestamp, now = Date.now()) {
  if (!timestamp) return '';
  let seconds = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

// The job's state as `cohort get` prints it: the type of its last condition that holds.
export function jobState(job) {
  const conditions = (job.status?.conditions ?? []).filter((c) => c.status === 'True');
  return conditions.length ? conditions[conditions.length - 1].type : 'Created';
}

export function stateBadge(state) {
  return h('span', { class: `state state-${state.toLowerCase()}` }, state);
}

export function replicaCounts(job) {
  const counts = { active: 0, succeeded: 0, failed: 0 };
  for (const replica of Object.values(job.status?.replicaStatuses ?? {})) {
    counts.active += replica.active ?? 0;
    counts.succeeded += replica.succeeded ?? 0;
    counts.failed += replica.failed ?? 0;
  }
  return counts;
}

export function replaceChildren(element, ...children) {
  element.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}
