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

const group = '/apis/kubeflow.org/v1';
export const paths = {
  jobs: () => `${group}/tfjobs`,
  job: (ns, name) => `${group}/namespaces/${enc(ns)}/tfjobs/${enc(name)}`,
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
