// The dashboard's single page: a router over the location's hash that shows one page at a time
// and refreshes it on the page's interval.
//   #/                          Jobs
//   #/jobs/NS/NAME              Job
//   #/jobs/NS/NAME/logs[/REPLICA]  Logs
//   #/jobs/NS/NAME/curves       Curves
import './style.css';
import { curvesPage } from './curves.js';
import { jobPage } from './job.js';
import { jobsPage } from './jobs.js';
import { logsPage } from './logs.js';

const root = document.getElementById('app');
const statusLine = document.getElementById('status');
let page = null;
let timer = null;

function setStatus(text, error = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle('error', error);
}

function route() {
  if (timer) clearTimeout(timer);
  if (page?.leave) page.leave();
  const parts = window.location.hash.replace(/^#\/?/, '').split('/').filter(Boolean)
    .map(decodeURIComponent);
  if (parts[0] === 'jobs' && parts.length >= 3) {
    const [, ns, name, view, replica] = parts;
    if (view === 'logs') page = logsPage(root, ns, name, replica, setStatus);
    else if (view === 'curves') page = curvesPage(root, ns, name, setStatus);
    else page = jobPage(root, ns, name, setStatus);
  } else {
    page = jobsPage(root, setStatus);
  }
  const current = page;
  const tick = async () => {
    try {
      await current.refresh();
      if (current === page) setStatus(`updated ${new Date().toLocaleTimeString()}`);
    } catch (error) {
      if (current === page) setStatus(error.message, true);
    }
    if (current === page) timer = setTimeout(tick, current.interval);
  };
  tick();
}

window.addEventListener('hashchange', route);
route();
