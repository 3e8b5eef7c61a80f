// The dashboard's requests: the JSON API of `cohort ui` (src/ui/dashboard_api.h), with the token that the
// server put in the page for requests that change state.
const token = document.querySelector('meta[name="cohort-token"]')?.content ?? '';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function check(response) {
  if (response.ok) return response;
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body.message) message = body.message;
  } catch (_) {
    // not a Status object
  }
  throw new ApiError(response.status, message);
}

export async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: 'application/json' } });
  return (await check(response)).json();
}

export async function getText(path, accept = 'text/plain') {
  const response = await fetch(path, { headers: { Accept: accept } });
  return (await check(response)).text();
}

export async function post(path, method = 'POST') {
  const response = await fetch(path, {
    method,
    headers: { 'X-Cohort-Token': token, Accept: 'application/json' },
  });
  return (await check(response)).json();
}

// The job kinds' resources come from the server (GET /apis/kubeflow.org/v1, an
// APIResourceList), so the pages name no kind: each job's plural is remembered as it is listed
// or found (locateJob).
const group = '/apis/kubeflow.org/v1';
let plurals;  // a promise of the kinds' plurals, in the server's order
const pluralOf = new Map();  // "ns/name" -> the plural of that job's kind

export function jobPlurals() {
  if (!plurals) {
    plurals = getJson(group).then((list) => (list.resources ?? []).map((r) => r.name));
  }
  return plurals;
}

// Every job of every kind, as one List.
export async function listJobs() {
  const names = await jobPlurals();
  const lists = await Promise.all(names.map((plural) => getJson(`${group}/${plural}`)));
  const items = [];
  lists.forEach((list, i) => {
    for (const job of list.items ?? []) {
      pluralOf.set(`${job.metadata.namespace}/${job.metadata.name}`, names[i]);
      items.push(job);
    }
  });
  return { apiVersion: 'v1', kind: 'List', items };
}

// Finds which kind the job ns/name is, so that paths.job can name its resource.
export async function locateJob(ns, name) {
  const key = `${ns}/${name}`;
  if (pluralOf.has(key)) return;
  for (const plural of await jobPlurals()) {
    const response = await fetch(`${group}/namespaces/${enc(ns)}/${plural}/${enc(name)}`,
      { headers: { Accept: 'application/json' } });
    if (response.ok) {
      pluralOf.set(key, plural);
      return;
    }
  }
}

export const paths = {
  job: (ns, name) =>
    `${group}/namespaces/${enc(ns)}/${pluralOf.get(`${ns}/${name}`) ?? 'unknown'}/${enc(name)}`,
  replicas: (ns, name) => `${paths.job(ns, name)}/replicas`,
  scalars: (ns, name, query) => `${paths.job(ns, name)}/scalars?${new URLSearchParams(query)}`,
  events: (ns, name) =>
    `/api/v1/namespaces/${enc(ns)}/events?fieldSelector=${enc('involvedObject.name=' + name)}`,
  pods: (query) => `/api/v1/pods${query ? `?${new URLSearchParams(query)}` : ''}`,
  log: (ns, pod, query) =>
    `/api/v1/namespaces/${enc(ns)}/pods/${enc(pod)}/log?${new URLSearchParams(query)}`,
};

function enc(text) {
  return encodeURIComponent(text);
}
